// Fuzzing the REST API's path and query parsing (libs/rpc/src/rest): route matching with encoded
// parameters, every handler with arbitrary path parameters, query strings and height headers (only
// GatewayError: a 4xx, never a 500), addresses in EIP-55 hex and bech32, and whole requests with
// arbitrary paths against a running server (never a 500 for a client's bad URL).
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { bech32Decode, bech32Encode, defaultApiOptions, RestServer } from '@noded/rpc/src/rest/index.js';
import {
  GatewayError,
  matchRoute,
  nodeConsensus,
  parseAddress,
  REST_ROUTES,
  type RestContext,
  toChecksum,
} from '@noded/rpc/src/rest/routes.js';
import { type Hex, silentLogger } from '@noded/types';
import fc from 'fast-check';
import { EVM_CHAIN_ID, FakeChain } from '../rpc-comet/fake-node.js';
import { bytesOf, check, checkAsync, hex, onlyRejects, onlyThrows } from './fuzz.js';

const GAS = { baseFee: 1_000_000_000n, minGasPrice: 1_000_000_000n, maxGasPrice: 1_000_000_000_000n };
const PREFIX = 'bc';

/** Text of a path segment or query value: digits, hex, words, and what URLs escape. */
const piece = fc.oneof(
  fc.constantFrom('latest', '0', '1', '3', '5', '99', '-1', '1.5', '1e3', '9007199254740993', 'abtc', ''),
  fc.bigInt({ min: 0n, max: 10n ** 25n }).map(String),
  bytesOf(20).map((b) => `0x${hex(b)}`),
  bytesOf(32).map((b) => `0x${hex(b)}`),
  bytesOf(20).map((b) => bech32Encode(PREFIX, b)),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 10 }),
);

/** Percent-encodings as a client may send them, well-formed or not. */
const encodedPiece = fc.oneof(
  piece.map(encodeURIComponent),
  piece.map((p) => encodeURIComponent(p).replace(/%2F/g, '/')),
  fc.constantFrom('%', '%2', '%zz', '%E0%A4%A', '%C0%80', '%FF', '%00', '%2F', '%25', '..', '.', '%2e%2e'),
  fc.tuple(piece, fc.constantFrom('%', '%G1', '%E2%82')).map(([p, bad]) => encodeURIComponent(p) + bad),
);

const routeTemplate = fc.constantFrom(...REST_ROUTES.map((r) => r.path));

/** A path from a route template, each {param} filled with an encoded piece. */
const routePath = fc
  .tuple(routeTemplate, fc.array(encodedPiece, { minLength: 3, maxLength: 3 }))
  .map(([t, fill]) => {
    let i = 0;
    return t.replace(/\{[a-z]+\}/g, () => fill[i++]!);
  });

const queryString = fc
  .array(
    fc.tuple(
      fc.constantFrom('pagination.offset', 'pagination.limit', 'denom', 'pagination.key', 'x'),
      encodedPiece,
    ),
    { maxLength: 3 },
  )
  .map((kv) => (kv.length === 0 ? '' : `?${kv.map(([k, v]) => `${k}=${v}`).join('&')}`));

/** Routes answered by a chain module's precompile (view calls through eth_call). */
const MODULE_ROUTE = /^\/(noded\/bridge|cosmos\/(staking|slashing|distribution))\//;

let chain: FakeChain;
let ctx: RestContext;

describe('fuzz: REST path and query parsing', () => {
  before(async () => {
    chain = await FakeChain.create();
    ctx = {
      consensus: nodeConsensus(chain),
      chain,
      logger: silentLogger,
      evmChainId: EVM_CHAIN_ID,
      gas: GAS,
      bech32Prefix: PREFIX,
      appVersion: { name: 'noded', version: 'fuzz', gitCommit: '' },
    };
  });

  it('matchRoute finds the route of a filled template and decodes its parameters', () => {
    check(
      fc.property(
        routeTemplate,
        fc.array(
          piece.filter((p) => p !== ''),
          { minLength: 2, maxLength: 2 },
        ),
        (t, fill) => {
          let i = 0;
          const values: string[] = [];
          const path = t.replace(/\{[a-z_]+\}/g, () => {
            values.push(fill[i]!);
            return encodeURIComponent(fill[i++]!);
          });
          const m = matchRoute(REST_ROUTES, path);
          assert.ok(m, `no route for ${path}`);
          // A literal route wins over a parameter of the same shape (/blocks/latest).
          if (m.route.path !== t) {
            assert.ok(!m.route.path.includes('{'), `${path} matched ${m.route.path}, not ${t}`);
            return;
          }
          const names = [...t.matchAll(/\{([a-z_]+)\}/g)].map((x) => x[1]!);
          assert.deepStrictEqual(m.params, Object.fromEntries(names.map((n, k) => [n, values[k]])));
        },
      ),
    );
  });

  it('matchRoute on any path: a route, none, or a GatewayError (400) for a malformed escape', () => {
    check(
      fc.property(
        fc.oneof(
          routePath,
          fc.string({ maxLength: 60 }).map((s) => `/${s}`),
        ),
        (path) => {
          const r = onlyThrows(() => matchRoute(REST_ROUTES, path), GatewayError);
          if (!r.ok) assert.equal((r.error as GatewayError).httpStatus, 400);
        },
      ),
    );
  });

  it('every handler answers any parameters, query and height header, or fails with a GatewayError', async () => {
    const names = ['height', 'address', 'hash'];
    await checkAsync(
      fc.asyncProperty(
        fc.constantFrom(...REST_ROUTES),
        fc.array(piece, { minLength: 3, maxLength: 3 }),
        queryString,
        fc.option(fc.oneof(piece, fc.array(piece, { maxLength: 2 })), { nil: undefined }),
        async (route, values, qs, height) => {
          // The route's own parameters (a router always fills them), plus the usual names.
          const own = [...route.path.matchAll(/\{([a-z_]+)\}/g)].map((x) => x[1]!);
          const all = [...new Set([...own, ...names])];
          const params = Object.fromEntries(all.map((n, i) => [n, values[i % values.length]!]));
          const r = await onlyRejects(
            () =>
              route.handler(ctx, {
                params,
                query: new URL(`http://x/${qs}`).searchParams,
                headers: { 'x-cosmos-block-height': height },
              }),
            GatewayError,
          );
          const status = r.ok ? 200 : (r.error as GatewayError).httpStatus;
          // A module route may also answer 500 or 501 on the fake chain (see MODULE_ROUTE).
          if (!r.ok && MODULE_ROUTE.test(route.path)) assert.ok([400, 404, 500, 501].includes(status));
          else if (!r.ok) assert.ok([400, 404].includes(status), `${route.path} -> ${status}`);
          else JSON.stringify(r.value);
        },
      ),
      2,
    );
  });

  it('addresses: EIP-55 hex and bech32 of any 20 bytes parse to the lowercase address', () => {
    check(
      fc.property(bytesOf(20), (b) => {
        const lower = `0x${hex(b)}` as Hex;
        assert.equal(parseAddress(ctx, lower), lower);
        assert.equal(parseAddress(ctx, toChecksum(lower)), lower);
        assert.equal(parseAddress(ctx, bech32Encode(PREFIX, b)), lower);
        assert.equal(parseAddress(ctx, bech32Encode(PREFIX, b).toUpperCase()), lower);
      }),
    );
  });

  it('bech32: decode inverts encode; any one changed character is detected; nothing throws', () => {
    const hrp = fc.stringMatching(/^[a-z0-9]{1,10}$/);
    check(
      fc.property(
        hrp,
        fc.uint8Array({ maxLength: 40 }),
        fc.nat(),
        fc.nat(31),
        fc.string({ maxLength: 100 }),
        (h, data, at, sym, junk) => {
          const text = bech32Encode(h, data);
          if (text.length <= 90) assert.deepStrictEqual(bech32Decode(text), { hrp: h, bytes: data });
          const i = h.length + 1 + (at % (text.length - h.length - 1));
          const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
          const swapped = text.slice(0, i) + CHARSET[sym] + text.slice(i + 1);
          if (swapped !== text) assert.equal(bech32Decode(swapped), undefined, `${swapped} accepted`);
          assert.ok(onlyThrows(() => bech32Decode(junk)).ok);
        },
      ),
    );
  });
});

describe('fuzz: REST server with arbitrary URLs', () => {
  let server: RestServer;
  let port: number;

  before(async () => {
    chain ??= await FakeChain.create();
    server = new RestServer({
      consensus: nodeConsensus(chain),
      chain,
      logger: silentLogger,
      options: { ...defaultApiOptions, enable: true },
      evmChainId: EVM_CHAIN_ID,
      gas: GAS,
      bech32Prefix: PREFIX,
    });
    port = await server.listen('127.0.0.1', 0);
  });
  after(async () => {
    await server.close();
  });

  /** A raw GET (no client-side checks of the target), its status and body. */
  function get(target: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (c: string) => {
        text += c;
      });
      socket.on('error', reject);
      socket.on('close', () => {
        const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
        resolve({ status: m ? Number(m[1]) : 0, body: text.slice(text.indexOf('\r\n\r\n') + 4) });
      });
      socket.end(`GET ${target} HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n`, 'latin1');
    });
  }

  it('no request path or query makes the server answer 500', async () => {
    const absolute = fc.constantFrom(
      'http://[',
      'http://[::1',
      'http://x:99999/',
      'http://%zz/',
      '//',
      '//x/y',
      '/\\\\x',
      '*',
    );
    // Any bytes but those that end the request line (space, CR, LF).
    const junk = fc.string({ unit: 'binary', maxLength: 30 }).map((t) =>
      Buffer.from(t)
        .toString('latin1')
        .replace(/[ \r\n]/g, '_'),
    );
    const path = fc.oneof(
      fc.tuple(routePath, queryString).map(([p, q]) => p + q),
      absolute,
      fc.tuple(absolute, routePath).map(([a, p]) => a + p),
      fc.tuple(routePath, junk).map(([p, j]) => p + j),
    );
    await checkAsync(
      fc.asyncProperty(path, async (p) => {
        const { status, body } = await get(p);
        // The chain modules' routes read their precompile through eth_call, which the fake chain
        // answers as a chain without contracts: a 500 naming the short answer, never a crash.
        // Their real answers are tested against a node (test/e2e/bridge-out, test/e2e/staking,
        // test/e2e/rewards).
        if (status === 500 && MODULE_ROUTE.test(p)) {
          assert.match(
            body,
            /precompile answered|validator pool|reward stake/,
            `${JSON.stringify(p)} -> ${body}`,
          );
          return;
        }
        assert.ok(status >= 200 && status < 500, `${JSON.stringify(p)} -> ${status} ${body}`);
      }),
      4,
    );
  });
});
