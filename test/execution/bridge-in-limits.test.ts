// Bridge-in safety limits through the real executor on RocksDB: the per-window inflow limit
// (genesis app_state.bridge.max_inflow_per_window) and the admin's pause switch apply to minting.
// Deposits over the limit wait, in order, for the next window (never skipped, never minted twice);
// a block that carries more than the window allows, or a mint while paused, is refused by
// ProcessProposal and mints nothing in FinalizeBlock; the state survives a restart. A deposit above
// the per-deposit cap (max_deposit_amount) is processed without a mint and never holds up the next.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { voteExtensionSignBytes } from '@noded/consensus';
import { ed25519Address, ed25519Generate, ed25519Sign, sha256 } from '@noded/crypto';
import { type Deposit, decodeBridgeTx, Executor, encodeAttestation, isBridgeTx } from '@noded/execution';
import { type KVStore, RocksKV } from '@noded/storage';
import { EventBus, type ExtendedCommitInfo, type Hex, type Logger, type Validator } from '@noded/types';
import { Interface } from 'ethers';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  initLocalChain,
  key,
  PROPOSER,
  signTx,
} from './helpers.js';

const keys = [0, 1, 2, 3].map((i) => ed25519Generate(sha256(new TextEncoder().encode(`bridge-lim-${i}`))));
const validators: Validator[] = keys.map((k) => ({
  address: ed25519Address(k.publicKey),
  pubKey: k.publicKey,
  votingPower: 10n,
  proposerPriority: 0n,
}));
const MAPPED = '0x3333333333333333333333333333333333333333';
const OTHER = '0x4444444444444444444444444444444444444444';
const ADMIN = key(7);
const alice = '0x00000000000000000000000000000000000a11ce';
const bob = '0x0000000000000000000000000000000000000b0b';
const BRIDGE = '0x7b7c000000000000000000000000000000000012' as Hex;
const abi = new Interface([
  'function setPaused(bool)',
  'function inbound() view returns (uint256,uint256,address,uint256,uint256,uint256,uint256,uint256,uint256)',
]);
// GENESIS_TIME is 1,700,000,000 s; 60-second windows start at multiples of 60: the next one at +40 s.
const T0 = GENESIS_TIME / 1_000_000_000n;
const NEXT_WINDOW = 1_700_000_040n;

const dep = (sequence: bigint, recipient: string, amount: bigint, token = MAPPED): Deposit => ({
  sequence,
  recipient,
  token,
  amount,
  sourceBlock: 0n,
  sourceTx: '',
});

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** app_state.bridge: ADMIN, 60-second windows, chain 1, and `over`. */
const bridgeGenesis = (over: Record<string, unknown>) => ({
  admin: addr(ADMIN),
  min_amount: '1',
  window_seconds: '60',
  max_outflow_per_window: '1000',
  chains: [1],
  ...over,
});

/** An executor on RocksDB with a bridge genesis; blocks at explicit times (seconds). */
async function open(bridge: Record<string, unknown>, dir?: string) {
  const path = dir ?? mkdtempSync(join(tmpdir(), 'bridge-limits-'));
  if (!dir) dirs.push(path);
  let kv: KVStore = await RocksKV.open(path);
  let ex = await Executor.open(executorOptions(kv, new EventBus()));
  if (!dir)
    await initLocalChain(ex, validators, {
      ...genesisState([{ address: addr(ADMIN), balance: ETH }]),
      bridge: bridgeGenesis({ btc_token_address: MAPPED, ...bridge }),
    });
  const n: {
    path: string;
    readonly ex: Executor;
    height: number;
    time: bigint;
    block(txs: Uint8Array[], at?: bigint): ReturnType<Executor['finalizeBlock']>;
    prepare(commit: ExtendedCommitInfo, at?: bigint): Promise<Uint8Array[]>;
    process(txs: Uint8Array[], at?: bigint): Promise<boolean>;
    balance(a: string): Promise<bigint>;
    inbound(): Promise<bigint[]>;
    restart(logger?: Logger): Promise<void>;
    readonly kv: KVStore;
    close(): Promise<void>;
  } = {
    path,
    get ex() {
      return ex;
    },
    height: Number(ex.latestHeight()),
    time: T0,
    async block(txs: Uint8Array[], at = n.time + 1n) {
      n.height++;
      n.time = at;
      const res = await ex.finalizeBlock({
        height: n.height,
        time: at * 1_000_000_000n,
        proposerAddress: PROPOSER,
        hash: sha256(new TextEncoder().encode(`b${n.height}`)),
        txs,
        misbehavior: [],
        decidedLastCommit: { round: 0, votes: [] },
      });
      await ex.commit();
      return res;
    },
    prepare(commit: ExtendedCommitInfo, at = n.time + 1n) {
      return ex.prepareProposal({
        height: n.height + 1,
        time: at * 1_000_000_000n,
        proposerAddress: PROPOSER,
        maxTxBytes: 1_000_000,
        localLastCommit: commit,
      });
    },
    process(txs: Uint8Array[], at = n.time + 1n) {
      return ex.processProposal({
        height: n.height + 1,
        time: at * 1_000_000_000n,
        proposerAddress: PROPOSER,
        hash: new Uint8Array(32),
        txs,
      });
    },
    balance: (a: string) => ex.getBalance(a as Hex, BigInt(n.height)),
    async inbound() {
      const r = await ex.call(
        { to: BRIDGE, data: abi.encodeFunctionData('inbound') as Hex },
        BigInt(n.height),
        undefined,
        { gasCap: 50_000_000n, timeoutMs: 5000 },
      );
      return abi.decodeFunctionResult('inbound', r.returnData).map((v) => BigInt(v));
    },
    async restart(logger?: Logger) {
      await ex.close();
      await kv.close();
      kv = await RocksKV.open(path);
      ex = await Executor.open(executorOptions(kv, new EventBus(), logger ? { logger } : {}));
    },
    get kv() {
      return kv;
    },
    async close() {
      await ex.close();
      await kv.close();
    },
  };
  return n;
}

/** The extended commit of `height`: validators `who` (3 of 4 by default) attest `deposits`, signed. */
function extended(height: number, deposits: Deposit[], who = [0, 1, 2]): ExtendedCommitInfo {
  const ext = encodeAttestation(deposits);
  return {
    round: 0,
    votes: validators.map((v, i) => {
      const e = who.includes(i) ? ext : new Uint8Array(0);
      return {
        validator: { address: v.address, power: v.votingPower },
        blockIdFlag: 2,
        voteExtension: e,
        extensionSignature: ed25519Sign(
          keys[i]!.seed,
          voteExtensionSignBytes('chain-local', { height, round: 0, extension: e }),
        ),
      };
    }),
  };
}

/** A Logger that keeps `level message {fields}` lines. */
function recordingLogger(lines: string[]): Logger {
  const rec = (level: string) => (o: unknown, m?: string) => {
    lines.push(`${level} ${m ?? ''} ${JSON.stringify(o)}`);
  };
  const logger: Logger = {
    trace: () => {},
    debug: () => {},
    info: rec('info') as Logger['info'],
    warn: rec('warn') as Logger['warn'],
    error: rec('error') as Logger['error'],
    child: () => logger,
  };
  return logger;
}

const sequences = (txs: Uint8Array[]) =>
  txs[0] && isBridgeTx(txs[0]) ? decodeBridgeTx(txs[0]).deposits.map((d) => d.sequence) : [];

describe('executor: bridge-in inflow limit and pause', () => {
  it('mints at most max_inflow_per_window per window; the rest wait in order for the next window, never skipped or repeated', async () => {
    const n = await open({ max_inflow_per_window: '10' });
    const unlimited = await open({});
    await n.block([]);
    await unlimited.block([]);
    const all = [
      dep(1n, alice, 4n),
      dep(2n, bob, 5n),
      dep(3n, alice, 3n),
      dep(4n, bob, 2n, OTHER),
      dep(5n, alice, 1n),
    ];
    const supply0 = n.ex.totalSupply();

    // A proposer without the limit would mint 1..5; this chain refuses that block (12 > 10) ...
    const tooMuch = await unlimited.prepare(extended(1, all));
    assert.deepEqual(sequences(tooMuch), [1n, 2n, 3n, 4n, 5n]);
    assert.equal(await n.process(tooMuch), false);
    // ... and a block that carries it anyway processes nothing (the deposits still wait).
    const refused = await n.block(tooMuch);
    assert.equal(refused.txResults[0]!.code, 1);
    assert.match(
      refused.txResults[0]!.log,
      /^bridge: minting 13 would bring the inflow of this 60-second window \(from 1699999980\) to 13, above the limit 10$/,
    );
    assert.equal(n.ex.lastInboundSequence(), 0n);
    assert.equal(n.ex.totalSupply(), supply0);

    // The limited proposer mints the leading deposits that fit: 4 + 5 = 9 <= 10, then 3 would pass it.
    const first = await n.prepare(extended(2, all));
    assert.deepEqual(sequences(first), [1n, 2n]);
    assert.equal(await n.process(first), true);
    assert.equal((await n.block(first)).txResults[0]!.log, 'bridge: processed deposits 1..2, minted 9');
    assert.equal(await n.balance(alice), 4n);
    assert.equal(await n.balance(bob), 5n);
    assert.deepEqual(n.ex.inboundLimits(n.time), {
      paused: false,
      windowInflow: 9n,
      maxInflow: 10n,
      overCapDeposits: 0n,
    });
    const [last, total, , max, windowStart, inflow] = await n.inbound();
    assert.deepEqual([last, total, max, windowStart, inflow], [2n, 9n, 10n, 1_699_999_980n, 9n]);

    // Same window: deposit 3 (3 BTC units) does not fit in the 1 left; nothing is proposed, nothing skipped.
    const rest = all.slice(2);
    assert.deepEqual(await n.prepare(extended(3, rest)), []);
    await n.block([]);
    assert.equal(n.ex.lastInboundSequence(), 2n);

    // The next window: 3 + (another token: 0) + 1 = 4 fits; 3, 4 and 5 are processed, once, in order.
    const second = await n.prepare(extended(4, rest), NEXT_WINDOW);
    assert.deepEqual(sequences(second), [3n, 4n, 5n]);
    assert.equal(await n.process(second, NEXT_WINDOW), true);
    await n.block(second, NEXT_WINDOW);
    assert.equal(await n.balance(alice), 4n + 3n + 1n);
    assert.equal(await n.balance(bob), 5n, 'the other token is skipped, never minted');
    assert.equal(n.ex.totalSupply(), supply0 + 13n);
    assert.deepEqual(n.ex.inboundLimits(NEXT_WINDOW), {
      paused: false,
      windowInflow: 4n,
      maxInflow: 10n,
      overCapDeposits: 0n,
    });
    assert.equal((await n.inbound())[5], 4n, 'the new window counts from zero');
    // Minted once: the same block again is refused and mints nothing.
    assert.equal(await n.process(second), false);

    // A deposit larger than a whole window's limit is never minted (and never skipped): it waits.
    assert.deepEqual(await n.prepare(extended(5, [dep(6n, alice, 11n)]), NEXT_WINDOW + 120n), []);

    // Everything survives a restart on the same RocksDB.
    await n.restart();
    assert.equal(n.ex.lastInboundSequence(), 5n);
    assert.deepEqual(n.ex.inboundLimits(NEXT_WINDOW), {
      paused: false,
      windowInflow: 4n,
      maxInflow: 10n,
      overCapDeposits: 0n,
    });
    await n.close();
    await unlimited.close();
  });

  it("the admin's pause stops minting; deposits wait and are minted once unpaused", async () => {
    const n = await open({});
    const other = await open({});
    await n.block([]);
    await other.block([]);
    const pause = (on: boolean, nonce: bigint) =>
      signTx(ADMIN, {
        nonce,
        to: BRIDGE,
        data: abi.encodeFunctionData('setPaused', [on]) as Hex,
        gas: 100_000n,
      });
    const paused = await n.block([pause(true, 0n)]);
    assert.equal(paused.txResults[0]!.code, 0);
    await other.block([]);
    assert.equal(n.ex.inboundLimits(n.time).paused, true);

    const ds = [dep(1n, alice, 5n)];
    assert.deepEqual(await n.prepare(extended(2, ds)), [], 'paused: no bridge transaction');
    const fromOther = await other.prepare(extended(2, ds));
    assert.deepEqual(sequences(fromOther), [1n]);
    assert.equal(await n.process(fromOther), false, 'a mint while paused is refused');
    const carried = await n.block(fromOther);
    assert.equal(carried.txResults[0]!.code, 1);
    assert.equal(carried.txResults[0]!.log, 'bridge: bridge-in is paused by the admin');
    assert.equal(await n.balance(alice), 0n);
    assert.equal(n.ex.lastInboundSequence(), 0n);

    // Unpaused: the waiting deposit is minted (once).
    await n.block([pause(false, 1n)]);
    assert.equal(n.ex.inboundLimits(n.time).paused, false);
    const mint = await n.prepare(extended(4, ds));
    assert.deepEqual(sequences(mint), [1n]);
    await n.block(mint);
    assert.equal(await n.balance(alice), 5n);
    assert.equal(n.ex.lastInboundSequence(), 1n);
    await n.close();
    await other.close();
  });

  it('a deposit above max_deposit_amount is processed without a mint, logged and counted; the next ones are minted', async () => {
    const n = await open({ max_inflow_per_window: '10', max_deposit_amount: '5' });
    const lines: string[] = [];
    await n.restart(recordingLogger(lines));
    await n.block([]);
    const supply0 = n.ex.totalSupply();
    // 50 is above the cap (and above the whole window's limit: without the cap it would block 3 and 4).
    const ds = [dep(1n, alice, 4n), dep(2n, bob, 50n), dep(3n, alice, 5n), dep(4n, bob, 1n)];

    // The over-cap deposit mints nothing, so it takes no inflow: 4 + 5 + 1 = 10 fits the window.
    const txs = await n.prepare(extended(1, ds));
    assert.deepEqual(sequences(txs), [1n, 2n, 3n, 4n]);
    assert.equal(await n.process(txs), true);
    const res = await n.block(txs);
    const r0 = res.txResults[0]!;
    assert.equal(r0.code, 0);
    assert.equal(r0.log, 'bridge: processed deposits 1..4, minted 10');
    const skip = r0.events.find((e) => e.type === 'bridge_skip');
    assert.ok(skip, JSON.stringify(r0.events.map((e) => e.type)));
    const attrs = Object.fromEntries(
      skip.attributes.map((a) => [Buffer.from(a.key).toString(), Buffer.from(a.value).toString()]),
    );
    assert.deepEqual(attrs, {
      sequence: '2',
      token: MAPPED,
      reason: 'amount above max_deposit_amount',
      recipient: bob,
      amount: '50',
    });
    assert.deepEqual(
      r0.events.filter((e) => e.type === 'bridge_mint').length,
      3,
      'deposits 1, 3 and 4 are minted',
    );
    assert.equal(await n.balance(alice), 9n);
    assert.equal(await n.balance(bob), 1n, 'only deposit 4 reached bob');
    assert.equal(n.ex.totalSupply(), supply0 + 10n, 'the supply counts the minted deposits only');
    assert.equal(n.ex.lastInboundSequence(), 4n, 'the skipped deposit is processed: nothing waits behind it');
    const warn = lines.find((l) => l.startsWith('warn bridge: deposit above max_deposit_amount'));
    assert.ok(warn, lines.join('\n'));
    assert.match(warn, /"sequence":"2"/);
    assert.match(warn, /"amount":"50","cap":"5"/);
    assert.deepEqual(n.ex.inboundLimits(n.time), {
      paused: false,
      windowInflow: 10n,
      maxInflow: 10n,
      overCapDeposits: 1n,
    });
    const [last, total, , , , inflow, cap, overCount, overAmount] = await n.inbound();
    assert.deepEqual([last, total, inflow, cap, overCount, overAmount], [4n, 10n, 10n, 5n, 1n, 50n]);

    // Never minted later either: the same bridge transaction is refused (2 is processed), and a
    // second over-cap deposit adds to the count; the counts survive a restart.
    assert.equal(await n.process(txs), false);
    const more = await n.prepare(extended(2, [dep(5n, alice, 6n)]), NEXT_WINDOW);
    assert.deepEqual(sequences(more), [5n]);
    await n.block(more, NEXT_WINDOW);
    assert.equal(await n.balance(alice), 9n);
    await n.restart();
    assert.equal(n.ex.lastInboundSequence(), 5n);
    assert.equal(n.ex.inboundLimits(NEXT_WINDOW).overCapDeposits, 2n);
    const after = await n.inbound();
    assert.deepEqual([after[7], after[8], after[5]], [2n, 56n, 0n], 'the window took nothing from them');
    await n.close();
  });

  it('genesis app_state.bridge.max_deposit_amount must be a positive integer string, at most max_inflow_per_window', async () => {
    for (const [over, why] of [
      [{ max_deposit_amount: '0' }, /app_state\.bridge\.max_deposit_amount: must be >= 1, got "0"/],
      [
        { max_inflow_per_window: '10', max_deposit_amount: '11' },
        /app_state\.bridge\.max_deposit_amount: must be <= max_inflow_per_window \(10\), got "11"/,
      ],
    ] as const) {
      const dir = mkdtempSync(join(tmpdir(), 'bridge-limits-'));
      dirs.push(dir);
      const kv = await RocksKV.open(dir);
      const ex = await Executor.open(executorOptions(kv, new EventBus()));
      await assert.rejects(
        initLocalChain(ex, validators, { ...genesisState([]), bridge: bridgeGenesis(over) }),
        why,
      );
      await ex.close();
      await kv.close();
    }
  });

  it('genesis app_state.bridge.max_inflow_per_window must be a positive integer string', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bridge-limits-'));
    dirs.push(dir);
    const kv = await RocksKV.open(dir);
    const ex = await Executor.open(executorOptions(kv, new EventBus()));
    await assert.rejects(
      initLocalChain(ex, validators, {
        ...genesisState([]),
        bridge: bridgeGenesis({ max_inflow_per_window: '0' }),
      }),
      /app_state\.bridge\.max_inflow_per_window: must be >= 1, got "0"/,
    );
    await ex.close();
    await kv.close();
  });
});

describe('executor: an application.db without recorded validator sets', () => {
  it('is reported at start with the fix, and copying the sets from consensus makes bridge transactions valid again', async () => {
    const n = await open({});
    await n.block([]);
    await n.block([]);
    // What an application.db written before bridge in recorded validator sets looks like.
    const marker = Buffer.from('bridge.valset.');
    const old: Uint8Array[] = [];
    for await (const [k] of n.kv.iterate({})) {
      if (Buffer.from(k).includes(marker)) old.push(k.slice());
    }
    assert.ok(old.length >= 3, `${old.length} sets recorded`);
    await n.kv.write(old.map((key) => ({ type: 'del' as const, key })));
    const lines: string[] = [];
    await n.restart(recordingLogger(lines));

    const ds = [dep(1n, alice, 5n)];
    assert.deepEqual(await n.prepare(extended(2, ds)), [], 'no set for height 2: nothing proposed');
    // Without a source the node only says what is wrong and how to fix it.
    assert.deepEqual(await n.ex.checkBridgeValidatorSets(), [2, 3, 4]);
    const err = lines.find((l) => l.startsWith('error bridge: application.db has no validator set'));
    assert.ok(err, lines.join('\n'));
    assert.match(err, /every bridge transaction will be refused/);
    assert.match(err, /noded start/);
    assert.match(err, /"heights":\[2,3,4\]/);

    // With consensus' sets (the all-in-one node reads data/state.db) they are copied and persist.
    const asked: number[] = [];
    const missing = await n.ex.checkBridgeValidatorSets(async (h) => {
      asked.push(h);
      return validators;
    });
    assert.deepEqual(missing, []);
    assert.deepEqual(asked, [2, 3, 4]);
    assert.ok(lines.some((l) => l.startsWith('info bridge: copied the validator sets')));
    await n.restart();
    assert.deepEqual(await n.ex.checkBridgeValidatorSets(), [], 'recorded on disk');
    const txs = await n.prepare(extended(2, ds));
    assert.deepEqual(sequences(txs), [1n]);
    assert.equal(await n.process(txs), true);
    await n.block(txs);
    assert.equal(await n.balance(alice), 5n);
    // The next heights' sets follow from the copied ones, as for any chain.
    assert.deepEqual(await n.ex.checkBridgeValidatorSets(), []);
    await n.close();
  });
});
