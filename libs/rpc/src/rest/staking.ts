// The Cosmos SDK staking routes (x/staking v1beta1 gateway shapes) over the validator pool
// precompile (docs/staking.md): each answer is read with calls of the pool's view functions at the
// queried height, so the REST server needs no more than the EthChain it already has.
import { keccak256 } from '@noded/crypto';
import type { Hex } from '@noded/types';
import type { JsonObject } from '../comet/encode.js';
import { bech32Decode } from './bech32.js';
import { GatewayError, notFound, type RestContext, type RestRequest, type RestRoute } from './routes.js';

/** The validator pool precompile. */
export const STAKING_POOL_ADDRESS = '0x7b7c000000000000000000000000000000000011' as Hex;

/** The 4-byte function selector of `sig`, as hex without 0x. */
export const selector = (sig: string) =>
  Buffer.from(keccak256(new TextEncoder().encode(sig)).subarray(0, 4)).toString('hex');
const SEL = {
  validators: selector('validators()'),
  validator: selector('validator(address)'),
  delegation: selector('delegation(address,address)'),
  params: selector('params()'),
  validatorShares: selector('validatorShares(address)'),
  delegationShares: selector('delegationShares(address,address)'),
  signingInfo: selector('signingInfo(address)'),
  redelegations: selector('redelegations(address)'),
  unbondingEntries: selector('unbondingEntries(address)'),
  validatorStatus: selector('validatorStatus(address)'),
};
const topic = (sig: string) =>
  `0x${Buffer.from(keccak256(new TextEncoder().encode(sig))).toString('hex')}` as Hex;
/** The pool's events whose topic 1 is a delegator of the validator in topic 2 (3 for a redelegation's destination). */
const EVENT = {
  delegated: topic('Delegated(address,address,uint256)'),
  redelegated: topic('Redelegated(address,address,address,uint256,uint256)'),
  undelegated: topic('Undelegated(address,address,uint256,uint256)'),
};
/** The pool's jail end of a tombstoned validator (2^64 − 1 s), shown as the Cosmos SDK's. */
const JAILED_FOREVER = 2n ** 64n - 1n;
const COSMOS_FOREVER = '9999-12-31T23:59:59Z';
const ZERO_TIME = '1970-01-01T00:00:00Z';
const DEC_ONE = 10n ** 18n;

interface PoolValidator {
  operator: Hex;
  pubKey: Buffer;
  moniker: string;
  bonded: bigint;
  power: bigint;
  jailed: boolean;
  commissionBps: bigint;
  /** Total delegator shares (one per base unit until a slash lowers the rate). */
  shares: bigint;
  /** The SDK's BondStatus number (3 bonded, 2 unbonding, 1 unbonded) and the unbonding end (s). */
  status: bigint;
  unbondingEnd: bigint;
  /** The height of the block that took it out of the active set; 0 when bonded or unknown. */
  unbondingHeight: bigint;
}

/** The 32-byte word at byte `at` of the pool's answer; a shorter answer than that is a 500. */
function wordAt(data: Buffer, at: number): bigint {
  if (!Number.isSafeInteger(at) || at < 0 || data.length < at + 32) {
    throw new GatewayError(
      13,
      500,
      `validator pool: answered ${data.length} bytes; a word at byte ${at} was expected`,
    );
  }
  return BigInt(`0x${data.subarray(at, at + 32).toString('hex')}`);
}
export const word = (data: Buffer, i: number) => wordAt(data, i * 32);
export const addrArg = (a: Hex) => a.slice(2).padStart(64, '0');

/** Calls a view of the validator pool at `height`; its Error(string) becomes the gateway's error. */
export async function callPool(ctx: RestContext, height: bigint, data: string): Promise<Buffer> {
  const r = await ctx.chain.call({ to: STAKING_POOL_ADDRESS, data: `0x${data}` as Hex }, height, undefined, {
    gasCap: 10_000_000n,
    timeoutMs: 5000,
  });
  const out = Buffer.from(r.returnData.slice(2), 'hex');
  if (r.reverted || r.error) {
    // Error(string): the pool's reason.
    const reason =
      out.length >= 68 && out.subarray(0, 4).toString('hex') === '08c379a0'
        ? out.subarray(68, 68 + Number(word(out.subarray(4), 1))).toString('utf8')
        : (r.error ?? 'reverted');
    if (reason.startsWith('staking is not enabled')) throw new GatewayError(12, 501, reason);
    if (reason.startsWith('no validator is operated by')) throw notFound(reason);
    throw new GatewayError(13, 500, `validator pool: ${reason}`);
  }
  return out;
}

/** The ABI-encoded dynamic array whose offset is the answer's word `head`, as raw words. */
export function wordArray(out: Buffer, head: number): bigint[] {
  const off = Number(word(out, head)) / 32;
  const n = Number(word(out, off));
  if (n > 0) wordAt(out, (off + n) * 32);
  const list: bigint[] = [];
  for (let i = 0; i < n; i++) list.push(word(out, off + 1 + i));
  return list;
}
/** The ABI-encoded address[] whose offset is the answer's word `head`. */
export function addressArray(out: Buffer, head: number): Hex[] {
  return wordArray(out, head).map((w) => `0x${w.toString(16).padStart(40, '0')}` as Hex);
}

/** Operators of every validator of the pool at `height`. */
export async function operators(ctx: RestContext, height: bigint): Promise<Hex[]> {
  return addressArray(await callPool(ctx, height, SEL.validators), 0);
}

async function poolValidator(ctx: RestContext, height: bigint, operator: Hex): Promise<PoolValidator> {
  const out = await callPool(ctx, height, SEL.validator + addrArg(operator));
  const strOff = Number(word(out, 1));
  const len = Number(wordAt(out, strOff));
  return {
    operator,
    pubKey: out.subarray(0, 32),
    moniker: out.subarray(strOff + 32, strOff + 32 + len).toString('utf8'),
    bonded: word(out, 2),
    power: word(out, 3),
    jailed: word(out, 4) !== 0n,
    commissionBps: word(out, 5),
    shares: word(await callPool(ctx, height, SEL.validatorShares + addrArg(operator)), 1),
    ...(await bondStatusOf(ctx, height, operator)),
  };
}

/** The pool's validatorStatus: the SDK's bond status, the unbonding end and height. */
async function bondStatusOf(
  ctx: RestContext,
  height: bigint,
  operator: Hex,
): Promise<{ status: bigint; unbondingEnd: bigint; unbondingHeight: bigint }> {
  const out = await callPool(ctx, height, SEL.validatorStatus + addrArg(operator));
  // A pool from before the unbonding height answers two words.
  const unbondingHeight = out.length >= 96 ? word(out, 2) : 0n;
  return { status: word(out, 0), unbondingEnd: word(out, 1), unbondingHeight };
}

interface SigningInfo {
  address: Uint8Array;
  startHeight: bigint;
  indexOffset: bigint;
  jailedUntil: bigint;
  tombstoned: boolean;
  missed: bigint;
}

async function signingInfo(ctx: RestContext, height: bigint, operator: Hex): Promise<SigningInfo> {
  const out = await callPool(ctx, height, SEL.signingInfo + addrArg(operator));
  wordAt(out, 5 * 32);
  return {
    address: new Uint8Array(out.subarray(12, 32)),
    startHeight: word(out, 1),
    indexOffset: word(out, 2),
    jailedUntil: word(out, 3),
    tombstoned: word(out, 4) !== 0n,
    missed: word(out, 5),
  };
}

/** RFC 3339 of a time in seconds, as the gateway prints a Timestamp. */
function secondsJson(s: bigint): string {
  if (s === JAILED_FOREVER) return COSMOS_FOREVER;
  if (s === 0n) return ZERO_TIME;
  return new Date(Number(s) * 1000).toISOString().replace('.000Z', 'Z');
}

function signingInfoJson(i: SigningInfo, display: (a: Uint8Array) => string): JsonObject {
  return {
    address: display(i.address),
    start_height: i.startHeight.toString(),
    index_offset: i.indexOffset.toString(),
    jailed_until: secondsJson(i.jailedUntil),
    tombstoned: i.tombstoned,
    missed_blocks_counter: i.missed.toString(),
  };
}

/** A consensus address: 40 hex digits (0x optional) or bech32 "<prefix>valcons1...". */
function parseConsensusAddress(ctx: RestContext, text: string, bad: (m: string) => GatewayError): Uint8Array {
  const hex = /^(?:0x)?([0-9a-fA-F]{40})$/.exec(text);
  if (hex) return new Uint8Array(Buffer.from(hex[1]!, 'hex'));
  if (ctx.bech32Prefix) {
    const d = bech32Decode(text);
    if (d && d.hrp === `${ctx.bech32Prefix}valcons` && d.bytes.length === 20) return d.bytes;
  }
  const accepted = ctx.bech32Prefix ? ` or bech32 "${ctx.bech32Prefix}valcons1..."` : '';
  throw bad(`invalid consensus address ${JSON.stringify(text)}: expected 20-byte hex${accepted}`);
}

/** A Cosmos sdk.Dec string (18 decimals) of parts per 10^18. */
export function dec(partsPer1e18: bigint): string {
  return `${partsPer1e18 / DEC_ONE}.${(partsPer1e18 % DEC_ONE).toString().padStart(18, '0')}`;
}

function validatorJson(v: PoolValidator, minSelfBond: bigint, display: (a: Hex) => string): JsonObject {
  const rate = dec(v.commissionBps * 10n ** 14n);
  return {
    operator_address: display(v.operator),
    consensus_pubkey: { '@type': '/cosmos.crypto.ed25519.PubKey', key: v.pubKey.toString('base64') },
    jailed: v.jailed,
    status:
      v.status === 3n
        ? 'BOND_STATUS_BONDED'
        : v.status === 2n
          ? 'BOND_STATUS_UNBONDING'
          : 'BOND_STATUS_UNBONDED',
    tokens: v.bonded.toString(),
    delegator_shares: dec(v.shares * DEC_ONE),
    description: { moniker: v.moniker, identity: '', website: '', security_contact: '', details: '' },
    unbonding_height: v.unbondingHeight.toString(),
    unbonding_time: v.unbondingEnd > 0n ? secondsJson(v.unbondingEnd) : ZERO_TIME,
    commission: {
      commission_rates: { rate, max_rate: dec(DEC_ONE), max_change_rate: dec(DEC_ONE) },
      update_time: ZERO_TIME,
    },
    min_self_delegation: minSelfBond.toString(),
  };
}

async function params(ctx: RestContext, height: bigint): Promise<bigint[]> {
  const out = await callPool(ctx, height, SEL.params);
  return Array.from({ length: 9 }, (_, i) => word(out, i));
}

/**
 * Delegators that may hold `kind` ("bonded": shares, "unbonding": entries) of validator `op` at
 * `height`, sorted by address as the SDK's store keys are: the operator itself (its genesis
 * self-bond has no event) and the delegator of every Delegated / Redelegated (to `op`), or
 * Undelegated (from `op`), event of the pool up to `height`. The pool keeps no per-validator list
 * of delegators, so the events are the index; callers keep those that hold something. Without the
 * blocks from height 1 (a pruned or state-synced node) that index is incomplete: 501 with why.
 */
async function delegatorsOf(
  ctx: RestContext,
  height: bigint,
  op: Hex,
  kind: 'bonded' | 'unbonding',
): Promise<Hex[]> {
  if (height >= 1n && !(await ctx.chain.getBlockByNumber(1n))) {
    throw new GatewayError(
      12,
      501,
      "this node does not keep the blocks from height 1 (pruned or state-synced): the validator's delegators are found from the pool's events, ask an archive node",
    );
  }
  const opTopic = `0x${addrArg(op)}` as Hex;
  const filter = (topics: Array<Hex | null>) =>
    ctx.chain.getLogs({ fromBlock: 0n, toBlock: height, addresses: [STAKING_POOL_ADDRESS], topics });
  const logs =
    kind === 'bonded'
      ? [
          ...(await filter([EVENT.delegated, null, opTopic])),
          ...(await filter([EVENT.redelegated, null, null, opTopic])),
        ]
      : await filter([EVENT.undelegated, null, opTopic]);
  const found = new Set<string>(kind === 'bonded' ? [op.toLowerCase()] : []);
  for (const l of logs) {
    const t = l.topics[1];
    if (t) found.add(`0x${t.slice(-40)}`.toLowerCase());
  }
  return [...found].sort() as Hex[];
}

/** The SDK's DelegationResponse of `who`'s shares of `op`; undefined when it holds none. */
async function delegationResponse(
  ctx: RestContext,
  height: bigint,
  who: Hex,
  op: Hex,
  display: (a: Hex) => string,
): Promise<JsonObject | undefined> {
  const shares = word(await callPool(ctx, height, SEL.delegationShares + addrArg(who) + addrArg(op)), 0);
  if (shares === 0n) return undefined;
  const amount = word(await callPool(ctx, height, SEL.delegation + addrArg(who) + addrArg(op)), 0);
  return {
    delegation: {
      delegator_address: display(who),
      validator_address: display(op),
      shares: dec(shares * DEC_ONE),
    },
    balance: { denom: 'abtc', amount: amount.toString() },
  };
}

/** The SDK's UnbondingDelegation entries of `who` from each validator (all when `only` is unset). */
async function unbondingResponses(
  ctx: RestContext,
  height: bigint,
  who: Hex,
  display: (a: Hex) => string,
  only?: Hex,
): Promise<JsonObject[]> {
  const out = await callPool(ctx, height, SEL.unbondingEntries + addrArg(who));
  const ops = addressArray(out, 0);
  const [amounts, times, heights] = [1, 2, 3].map((i) => wordArray(out, i));
  const groups = new Map<Hex, JsonObject[]>();
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!.toLowerCase() as Hex;
    if (only && op !== only.toLowerCase()) continue;
    let g = groups.get(op);
    if (!g) {
      g = [];
      groups.set(op, g);
    }
    g.push({
      creation_height: heights[i]!.toString(),
      completion_time: secondsJson(times[i]!),
      // The pool keeps what an entry pays now (a slash lowers it), not what it started with.
      initial_balance: amounts[i]!.toString(),
      balance: amounts[i]!.toString(),
      unbonding_id: '0',
      unbonding_on_hold_ref_count: '0',
    });
  }
  return [...groups].map(([op, entries]) => ({
    delegator_address: display(who),
    validator_address: display(op),
    entries,
  }));
}

const STATUSES = [
  'BOND_STATUS_BONDED',
  'BOND_STATUS_UNBONDED',
  'BOND_STATUS_UNBONDING',
  'BOND_STATUS_UNSPECIFIED',
];

/**
 * The staking routes. `helpers` are routes.ts' address parsing and display, height and paging, so
 * that these answer exactly like the other routes.
 */
export function stakingRoutes(helpers: {
  parseAddress: (ctx: RestContext, text: string) => Hex;
  displayAddress: (ctx: RestContext, addr: Hex) => string;
  consensusAddress: (ctx: RestContext, address: Uint8Array) => string;
  queryHeight: (ctx: RestContext, req: RestRequest) => bigint;
  invalidArgument: (msg: string) => GatewayError;
  /** pagination.offset / limit / key of the request over `total` items. */
  pagination: (req: RestRequest, total: number) => { offset: number; limit: number; next: string | null };
}): RestRoute[] {
  const { parseAddress, displayAddress, consensusAddress, queryHeight, invalidArgument, pagination } =
    helpers;
  /** One page of `all` in the gateway's list shape under `key`. */
  const paged = (req: RestRequest, key: string, all: JsonObject[]): JsonObject => {
    const p = pagination(req, all.length);
    return {
      [key]: all.slice(p.offset, p.offset + p.limit),
      pagination: { next_key: p.next, total: String(all.length) },
    };
  };
  /** The validator `text` names at `height`: 404 (the pool's reason) when it operates none. */
  const knownValidator = async (ctx: RestContext, height: bigint, text: string): Promise<Hex> => {
    const op = parseAddress(ctx, text);
    await callPool(ctx, height, SEL.validatorShares + addrArg(op));
    return op;
  };
  return [
    {
      path: '/cosmos/staking/v1beta1/validators',
      summary: 'Every validator of the validator pool (?status=BOND_STATUS_BONDED|BOND_STATUS_UNBONDED).',
      handler: async (ctx, req) => {
        const status = req.query.get('status') ?? '';
        if (status !== '' && !STATUSES.includes(status))
          throw invalidArgument(
            `invalid validator status ${JSON.stringify(status)}: expected one of ${STATUSES.join(', ')}`,
          );
        const h = queryHeight(ctx, req);
        const [p, ops] = [await params(ctx, h), await operators(ctx, h)];
        const all: JsonObject[] = [];
        for (const op of ops) {
          const v = validatorJson(await poolValidator(ctx, h, op), p[0]!, (a) => displayAddress(ctx, a));
          if (status === '' || status === 'BOND_STATUS_UNSPECIFIED' || v.status === status) all.push(v);
        }
        return { validators: all, pagination: { next_key: null, total: String(all.length) } };
      },
    },
    {
      path: '/cosmos/staking/v1beta1/validators/{validator_addr}',
      summary: 'One validator of the pool, by its operator address.',
      handler: async (ctx, req) => {
        const op = parseAddress(ctx, req.params.validator_addr);
        const h = queryHeight(ctx, req);
        const p = await params(ctx, h);
        return {
          validator: validatorJson(await poolValidator(ctx, h, op), p[0]!, (a) => displayAddress(ctx, a)),
        };
      },
    },
    {
      path: '/cosmos/staking/v1beta1/delegations/{delegator_addr}',
      summary: "A delegator's bonded delegations, one per validator, in abtc.",
      handler: async (ctx, req) => {
        const who = parseAddress(ctx, req.params.delegator_addr);
        const h = queryHeight(ctx, req);
        const out: JsonObject[] = [];
        for (const op of await operators(ctx, h)) {
          const d = await delegationResponse(ctx, h, who, op, (a) => displayAddress(ctx, a));
          if (d) out.push(d);
        }
        return { delegation_responses: out, pagination: { next_key: null, total: String(out.length) } };
      },
    },
    {
      path: '/cosmos/staking/v1beta1/validators/{validator_addr}/delegations',
      summary:
        "A validator's delegations (delegators with shares of it), by delegator address; pagination.offset / limit / key.",
      handler: async (ctx, req) => {
        const h = queryHeight(ctx, req);
        const op = await knownValidator(ctx, h, req.params.validator_addr);
        const all: JsonObject[] = [];
        for (const who of await delegatorsOf(ctx, h, op, 'bonded')) {
          const d = await delegationResponse(ctx, h, who, op, (a) => displayAddress(ctx, a));
          if (d) all.push(d);
        }
        return paged(req, 'delegation_responses', all);
      },
    },
    {
      path: '/cosmos/staking/v1beta1/validators/{validator_addr}/delegations/{delegator_addr}',
      summary: "One delegator's delegation to a validator; 404 when it holds no shares of it.",
      handler: async (ctx, req) => {
        const h = queryHeight(ctx, req);
        const op = await knownValidator(ctx, h, req.params.validator_addr);
        const who = parseAddress(ctx, req.params.delegator_addr);
        const d = await delegationResponse(ctx, h, who, op, (a) => displayAddress(ctx, a));
        if (!d)
          throw notFound(
            `delegation with delegator ${displayAddress(ctx, who)} not found for validator ${displayAddress(ctx, op)}`,
          );
        return { delegation_response: d };
      },
    },
    {
      path: '/cosmos/staking/v1beta1/validators/{validator_addr}/unbonding_delegations',
      summary:
        "A validator's unbonding delegations not withdrawn yet, one per delegator by address; pagination.offset / limit / key.",
      handler: async (ctx, req) => {
        const h = queryHeight(ctx, req);
        const op = await knownValidator(ctx, h, req.params.validator_addr);
        const all: JsonObject[] = [];
        for (const who of await delegatorsOf(ctx, h, op, 'unbonding'))
          all.push(...(await unbondingResponses(ctx, h, who, (a) => displayAddress(ctx, a), op)));
        return paged(req, 'unbonding_responses', all);
      },
    },
    {
      path: '/cosmos/staking/v1beta1/delegators/{delegator_addr}/validators',
      summary:
        "The validators a delegator has shares of, in the order of the pool's validators(); pagination.offset / limit / key.",
      handler: async (ctx, req) => {
        const who = parseAddress(ctx, req.params.delegator_addr);
        const h = queryHeight(ctx, req);
        const [p, listed] = [await params(ctx, h), await operators(ctx, h)];
        const all: JsonObject[] = [];
        for (const op of listed) {
          const shares = word(await callPool(ctx, h, SEL.delegationShares + addrArg(who) + addrArg(op)), 0);
          if (shares === 0n) continue;
          all.push(validatorJson(await poolValidator(ctx, h, op), p[0]!, (a) => displayAddress(ctx, a)));
        }
        return paged(req, 'validators', all);
      },
    },
    {
      path: '/cosmos/staking/v1beta1/delegators/{delegator_addr}/validators/{validator_addr}',
      summary: 'A validator the delegator has shares of; 404 when it holds none.',
      handler: async (ctx, req) => {
        const who = parseAddress(ctx, req.params.delegator_addr);
        const h = queryHeight(ctx, req);
        const op = await knownValidator(ctx, h, req.params.validator_addr);
        const shares = word(await callPool(ctx, h, SEL.delegationShares + addrArg(who) + addrArg(op)), 0);
        if (shares === 0n)
          throw notFound(
            `no delegation for (address, validator) tuple: ${displayAddress(ctx, who)} holds no shares of ${displayAddress(ctx, op)}`,
          );
        const p = await params(ctx, h);
        return {
          validator: validatorJson(await poolValidator(ctx, h, op), p[0]!, (a) => displayAddress(ctx, a)),
        };
      },
    },
    {
      path: '/cosmos/staking/v1beta1/historical_info/{height}',
      summary:
        'Not kept: historical_entries is 0 (as /params says), so every height is 404 as in the SDK with no entries.',
      handler: async (_ctx, req) => {
        const text = req.params.height;
        if (!/^-?\d+$/.test(text))
          throw invalidArgument(`invalid height ${JSON.stringify(text)}: expected an integer`);
        if (text.startsWith('-')) throw invalidArgument(`height cannot be negative: ${text}`);
        throw notFound(
          `historical info for height ${text} not found: the node keeps no historical info (historical_entries is 0); read the header from /cosmos/base/tendermint/v1beta1/blocks/${text} and the validator set from /cosmos/base/tendermint/v1beta1/validatorsets/${text}`,
        );
      },
    },
    {
      path: '/cosmos/staking/v1beta1/delegators/{delegator_addr}/redelegations',
      summary:
        "A delegator's redelegations still maturing, grouped by source and destination validator; balance is what the entry's destination shares are worth now.",
      handler: async (ctx, req) => {
        const who = parseAddress(ctx, req.params.delegator_addr);
        const h = queryHeight(ctx, req);
        const out = await callPool(ctx, h, SEL.redelegations + addrArg(who));
        const [src, dst] = [addressArray(out, 0), addressArray(out, 1)];
        const [amounts, sharesDst, times, heights] = [2, 3, 4, 5].map((i) => wordArray(out, i));
        const rate = new Map<Hex, { tokens: bigint; shares: bigint }>();
        const groups = new Map<
          string,
          { src: Hex; dst: Hex; entries: JsonObject[]; withBalance: JsonObject[] }
        >();
        for (let i = 0; i < src.length; i++) {
          const d = dst[i]!;
          let r = rate.get(d);
          if (!r) {
            const v = await callPool(ctx, h, SEL.validatorShares + addrArg(d));
            r = { tokens: word(v, 0), shares: word(v, 1) };
            rate.set(d, r);
          }
          const entry = {
            creation_height: heights[i]!.toString(),
            completion_time: secondsJson(times[i]!),
            initial_balance: amounts[i]!.toString(),
            shares_dst: dec(sharesDst[i]! * DEC_ONE),
            unbonding_id: '0',
            unbonding_on_hold_ref_count: '0',
          };
          const k = `${src[i]}-${d}`;
          let g = groups.get(k);
          if (!g) {
            g = { src: src[i]!, dst: d, entries: [], withBalance: [] };
            groups.set(k, g);
          }
          g.entries.push(entry);
          const balance = r.shares === 0n ? 0n : (sharesDst[i]! * r.tokens) / r.shares;
          g.withBalance.push({ redelegation_entry: entry, balance: balance.toString() });
        }
        const responses = [...groups.values()].map((g) => ({
          redelegation: {
            delegator_address: displayAddress(ctx, who),
            validator_src_address: displayAddress(ctx, g.src),
            validator_dst_address: displayAddress(ctx, g.dst),
            entries: g.entries,
          },
          entries: g.withBalance,
        }));
        return {
          redelegation_responses: responses,
          pagination: { next_key: null, total: String(responses.length) },
        };
      },
    },
    {
      path: '/cosmos/staking/v1beta1/delegators/{delegator_addr}/unbonding_delegations',
      summary:
        "A delegator's unbonding entries not withdrawn yet, one response per validator; balance is what the entry pays (after any slash).",
      handler: async (ctx, req) => {
        const who = parseAddress(ctx, req.params.delegator_addr);
        const h = queryHeight(ctx, req);
        const responses = await unbondingResponses(ctx, h, who, (a) => displayAddress(ctx, a));
        return {
          unbonding_responses: responses,
          pagination: { next_key: null, total: String(responses.length) },
        };
      },
    },
    {
      path: '/cosmos/staking/v1beta1/params',
      summary: 'The staking parameters (genesis app_state.staking.params).',
      handler: async (ctx, req) => {
        const p = await params(ctx, queryHeight(ctx, req));
        return {
          params: {
            unbonding_time: `${p[1]}s`,
            max_validators: Number(p[2]),
            max_entries: 16,
            historical_entries: 0,
            bond_denom: 'abtc',
            min_commission_rate: dec(0n),
          },
        };
      },
    },
    {
      path: '/cosmos/slashing/v1beta1/params',
      summary: 'The slashing parameters (genesis app_state.staking.params).',
      handler: async (ctx, req) => {
        const p = await params(ctx, queryHeight(ctx, req));
        return {
          params: {
            signed_blocks_window: p[6]!.toString(),
            min_signed_per_window: dec(p[7]!),
            downtime_jail_duration: `${p[8]}s`,
            slash_fraction_double_sign: dec(p[4]!),
            slash_fraction_downtime: dec(p[5]!),
          },
        };
      },
    },
    {
      path: '/cosmos/slashing/v1beta1/signing_infos',
      summary: "Every validator's liveness record: missed blocks of the window, jail end, tombstone.",
      handler: async (ctx, req) => {
        const h = queryHeight(ctx, req);
        const info: JsonObject[] = [];
        for (const op of await operators(ctx, h))
          info.push(signingInfoJson(await signingInfo(ctx, h, op), (a) => consensusAddress(ctx, a)));
        return { info, pagination: { next_key: null, total: String(info.length) } };
      },
    },
    {
      path: '/cosmos/slashing/v1beta1/signing_infos/{cons_address}',
      summary: "One validator's liveness record, by its consensus address (hex or bech32 valcons).",
      handler: async (ctx, req) => {
        const want = parseConsensusAddress(ctx, req.params.cons_address, invalidArgument);
        const h = queryHeight(ctx, req);
        for (const op of await operators(ctx, h)) {
          const i = await signingInfo(ctx, h, op);
          if (Buffer.from(i.address).equals(Buffer.from(want)))
            return { val_signing_info: signingInfoJson(i, (a) => consensusAddress(ctx, a)) };
        }
        throw notFound(
          `no validator of the pool has the consensus address ${Buffer.from(want).toString('hex').toUpperCase()}`,
        );
      },
    },
    {
      path: '/cosmos/staking/v1beta1/pool',
      summary: 'Bonded tokens (of active validators) and not-bonded tokens (the rest the pool holds).',
      handler: async (ctx, req) => {
        const h = queryHeight(ctx, req);
        let bonded = 0n;
        for (const op of await operators(ctx, h)) {
          const v = await poolValidator(ctx, h, op);
          if (v.power > 0n) bonded += v.bonded;
        }
        const held = await ctx.chain.getBalance(STAKING_POOL_ADDRESS, h);
        return { pool: { not_bonded_tokens: (held - bonded).toString(), bonded_tokens: bonded.toString() } };
      },
    },
  ];
}
