// The OpenAPI 3 document served at /swagger/ when [api] swagger = true, built from the route table
// so it can never list a route the server does not serve.
import type { JsonObject } from '../comet/encode.js';
import type { RestRoute } from './routes.js';

/** An address path parameter, in the formats parseAddress accepts. */
function accountParam(name: string, what: string): JsonObject {
  return {
    name,
    in: 'path',
    required: true,
    description: `${what}: 0x-prefixed 20-byte hex (EIP-55 checked when mixed case), or bech32 when a prefix is configured.`,
    schema: { type: 'string' },
  };
}

const PATH_PARAMS: Record<string, JsonObject> = {
  height: {
    name: 'height',
    in: 'path',
    required: true,
    description: 'Block height (decimal).',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  address: {
    name: 'address',
    in: 'path',
    required: true,
    description:
      'Account address: 0x-prefixed 20-byte hex (EIP-55 checked when mixed case), or bech32 when a prefix is configured.',
    schema: { type: 'string' },
  },
  validator_addr: accountParam('validator_addr', "The validator's operator address"),
  validator_address: accountParam('validator_address', "The validator's operator address"),
  delegator_addr: accountParam('delegator_addr', "The delegator's address"),
  delegator_address: accountParam('delegator_address', "The delegator's address"),
  cons_address: {
    name: 'cons_address',
    in: 'path',
    required: true,
    description:
      'Consensus address: 40 hex digits (0x optional), or bech32 <prefix>valcons1… when a prefix is configured.',
    schema: { type: 'string' },
  },
  sequence: {
    name: 'sequence',
    in: 'path',
    required: true,
    description: 'Outbound bridge entry sequence number (1, 2, 3, …).',
    schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
  },
  hash: {
    name: 'hash',
    in: 'path',
    required: true,
    description: 'Transaction hash: Ethereum (keccak256) or CometBFT (sha256), 64 hex digits, 0x optional.',
    schema: { type: 'string', pattern: '^(0x)?[0-9a-fA-F]{64}$' },
  },
};

const HEIGHT_HEADER: JsonObject = {
  name: 'x-cosmos-block-height',
  in: 'header',
  required: false,
  description: 'Read state at this height instead of the latest.',
  schema: { type: 'string' },
};

const PAGINATION: JsonObject[] = [
  { name: 'pagination.key', in: 'query', required: false, schema: { type: 'string', format: 'byte' } },
  { name: 'pagination.offset', in: 'query', required: false, schema: { type: 'string' } },
  { name: 'pagination.limit', in: 'query', required: false, schema: { type: 'string' } },
];

/** Routes that read state at x-cosmos-block-height. */
const HEIGHT_ROUTES = [
  '/cosmos/bank/',
  '/cosmos/auth/',
  '/cosmos/staking/',
  '/cosmos/slashing/',
  '/cosmos/distribution/',
  '/noded/bridge/',
];
/** List routes beside the validator sets that take pagination.offset / limit / key. */
const PAGED_ROUTES = [
  '/cosmos/staking/v1beta1/validators/{validator_addr}/delegations',
  '/cosmos/staking/v1beta1/validators/{validator_addr}/unbonding_delegations',
  '/cosmos/staking/v1beta1/delegators/{delegator_addr}/validators',
];

const ERROR_SCHEMA: JsonObject = {
  type: 'object',
  properties: {
    code: { type: 'integer', description: 'gRPC status code' },
    message: { type: 'string' },
    details: { type: 'array', items: { type: 'object' } },
  },
};

export function openApiDocument(routes: RestRoute[], version: string): JsonObject {
  const paths: JsonObject = {};
  for (const r of routes) {
    const parameters: JsonObject[] = [];
    for (const m of r.path.matchAll(/\{(\w+)\}/g)) {
      const param = PATH_PARAMS[m[1]!];
      if (!param)
        throw new Error(`openapi: route ${r.path} has the path parameter {${m[1]}} with no definition`);
      parameters.push(param);
    }
    if (HEIGHT_ROUTES.some((prefix) => r.path.startsWith(prefix)) && !r.path.includes('/historical_info/'))
      parameters.push(HEIGHT_HEADER);
    if (r.path.endsWith('/by_denom')) {
      parameters.push({
        name: 'denom',
        in: 'query',
        required: true,
        schema: { type: 'string', example: 'abtc' },
      });
    }
    if (r.path.includes('/validatorsets/') || PAGED_ROUTES.includes(r.path)) parameters.push(...PAGINATION);
    const tag = r.path.split('/').filter(Boolean).slice(0, 2).join('/');
    paths[r.path] = {
      get: {
        summary: r.summary,
        tags: [tag],
        operationId: r.path.replace(/[{}]/g, '').split('/').filter(Boolean).join('_'),
        parameters,
        responses: {
          '200': { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } },
          '400': {
            description: 'Invalid argument',
            content: { 'application/json': { schema: ERROR_SCHEMA } },
          },
          '404': { description: 'Not found', content: { 'application/json': { schema: ERROR_SCHEMA } } },
        },
      },
    };
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'noded REST API',
      version,
      description:
        'Cosmos SDK gateway-style REST API of noded (port 1317). Amounts are in abtc: 1 BTC = 10^18 abtc. ' +
        '64-bit integers are decimal strings; bytes are base64.',
    },
    paths,
  };
}
