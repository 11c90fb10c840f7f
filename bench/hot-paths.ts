// In-process timings of two hot paths, for comparing builds (A/B) on a noisy machine:
//   call:    Executor.call of the token's balanceOf at the latest height, 8 in flight, as the
//            JSON-RPC's eth_call does it (no HTTP, no thread hop);
//   recover: the sender's public key from raw EIP-1559 bytes, the JSON-RPC thread's way
//            (recoverSenderPublicKey) and by building an EthereumJS transaction (decodeTx);
//   index:   TxIndexStore.index of blocks of ERC-20 transfer results (the events the executor
//            emits for one) into RocksDB, as the tx-index thread does it;
//   transfer: per value transfer, the JSON-RPC thread's admission work on its raw bytes (the fee
//            summary and the sender recovery), the main thread's keccak256 of the transaction and
//            of the sender's key, and its share of the block results saved as tagged JSON.
// Each measurement runs --rounds times; the median and the spread are printed with CPU time per
// operation, which moves less than wall time when the host is busy.
//
// Usage: node dist/bench/hot-paths.js [--what call|recover|index|transfer|all] [--calls 30000] [--rounds 5]
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeTagged } from '@noded/consensus';
import { ethAddressFromPrivateKey, keccak256 } from '@noded/crypto';
import { chainCommon } from '@noded/execution/src/evm/common.js';
import { decodeTx, recoverSenderPublicKey } from '@noded/execution/src/txs.js';
import { type IndexedBlock, Query, TxIndexStore } from '@noded/rpc';
import { summarizeRawTransaction } from '@noded/rpc/src/eth/tx-codec.js';
import { RocksKV } from '@noded/storage';
import type { AbciEvent, ExecTxResult, Hex } from '@noded/types';
import { TEST_CONSENSUS_PARAMS } from '../test/execution/helpers.js';
import { arg, compileToken, EVM_CHAIN_ID, hex, openExecutor, privKey, sign } from './exec-fixtures.js';

interface Sample {
  wallUs: number;
  cpuUs: number;
}

async function timed(n: number, body: () => Promise<void> | void): Promise<Sample> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await body();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wallUs: (wall * 1000) / n, cpuUs: (cpu.user + cpu.system) / n };
}

function report(what: string, samples: Sample[]): void {
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const wall = samples.map((s) => s.wallUs);
  const cpu = samples.map((s) => s.cpuUs);
  console.log(
    `${what}: median ${med(wall).toFixed(1)} us wall (${(1e6 / med(wall)).toFixed(0)}/s), ${med(cpu).toFixed(1)} us CPU; ` +
      `rounds ${wall.map((w) => w.toFixed(1)).join(' / ')} us wall; load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores`,
  );
}

async function callBench(calls: number, rounds: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'noded-hot-paths-'));
  const kv = await RocksKV.open(join(dir, 'application.db'));
  try {
    const holder = hex(ethAddressFromPrivateKey(privKey(0)));
    const token = '00000000000000000000000000000000000c0ffe';
    const slot = keccak256(Buffer.from(holder.padStart(64, '0') + '0'.padStart(64, '0'), 'hex'));
    const ex = await openExecutor(kv);
    await ex.initChain({
      chainId: 'chain-local',
      time: BigInt(Date.now()) * 1_000_000n,
      initialHeight: 1,
      validators: [],
      consensusParams: TEST_CONSENSUS_PARAMS,
      appState: {
        evm: {
          chain_id: EVM_CHAIN_ID.toString(),
          accounts: [
            { address: `0x${holder}`, balance: (10n ** 18n).toString() },
            {
              address: `0x${token}`,
              balance: '0',
              code: compileToken(),
              storage: { [`0x${hex(slot)}`]: '0x03e8' },
            },
          ],
        },
      },
    });
    const req = {
      from: `0x${holder}` as Hex,
      to: `0x${token}` as Hex,
      data: `0x70a08231${holder.padStart(64, '0')}` as Hex,
    };
    const opts = { gasCap: 50_000_000n, timeoutMs: 5000 };
    const height = BigInt(ex.latestHeight());
    const first = await ex.call(req, height, undefined, opts);
    if (BigInt(first.returnData) !== 1000n) throw new Error(`balanceOf returned ${first.returnData}`);
    const burst = async (n: number) => {
      let left = n;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (left-- > 0) await ex.call(req, height, undefined, opts);
        }),
      );
    };
    await burst(Math.min(calls, 3000)); // JIT and caches
    const samples: Sample[] = [];
    for (let r = 0; r < rounds; r++) samples.push(await timed(calls, () => burst(calls)));
    report(`eth_call balanceOf in process (${calls} calls x ${rounds})`, samples);
    await ex.close();
  } finally {
    await kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function recoverBench(rounds: number): Promise<void> {
  const n = 2000;
  const to = `0x${'42'.repeat(20)}` as const;
  const raws = Array.from({ length: n }, (_, i) => sign(privKey(i % 50), BigInt(i), to, 1n, '0x', 21_000n));
  const common = chainCommon(EVM_CHAIN_ID);
  const lean: Sample[] = [];
  const full: Sample[] = [];
  for (let r = 0; r <= rounds; r++) {
    const a = await timed(n, () => {
      for (const raw of raws) recoverSenderPublicKey(raw, EVM_CHAIN_ID);
    });
    const b = await timed(n, () => {
      for (const raw of raws) decodeTx(raw, common, EVM_CHAIN_ID).tx.getSenderPublicKey();
    });
    if (r === 0) continue; // warm-up round
    lean.push(a);
    full.push(b);
  }
  report('sender recovery, recoverSenderPublicKey', lean);
  report('sender recovery, EthereumJS transaction (decodeTx)', full);
}

/** What a value transfer costs on the paths it takes once per transaction (see the header). */
async function transferBench(rounds: number): Promise<void> {
  const n = 2000;
  const to = `0x${'42'.repeat(20)}` as const;
  const raws = Array.from({ length: n }, (_, i) => sign(privKey(i % 50), BigInt(i), to, 1n, '0x', 21_000n));
  const keys = raws.map((raw) => recoverSenderPublicKey(raw, EVM_CHAIN_ID)!);
  // The block results of n value transfers, as the executor reports them (blockrun.ts).
  const a = (key: string, value: string) => ({ key, value, index: true });
  const results = {
    events: [{ type: 'fee_market', attributes: [a('base_fee', '1000000000')] }],
    txResults: raws.map((raw, i) => ({
      code: 0,
      data: new Uint8Array(0),
      log: '',
      info: '',
      gasWanted: 21_000n,
      gasUsed: 21_000n,
      events: [
        {
          type: 'ethereum_tx',
          attributes: [
            a('amount', '1'),
            a('ethereumTxHash', `0x${hex(keccak256(raw))}`),
            a('txIndex', String(i)),
            a('txGasUsed', '21000'),
            a('txHash', hex(keccak256(keys[i]!)).toUpperCase()),
            a('recipient', to),
          ],
        },
        {
          type: 'message',
          attributes: [
            a('action', '/noded.evm.v1.MsgEthereumTx'),
            a('sender', `0x${hex(keccak256(keys[i]!).subarray(12))}`),
            a('module', 'evm'),
            a('txType', '2'),
          ],
        },
      ],
      codespace: '',
    })),
    validatorUpdates: [],
    consensusParamUpdates: null,
    appHash: new Uint8Array(32),
  };
  const rpc: Sample[] = [];
  const hashes: Sample[] = [];
  const tagged: Sample[] = [];
  for (let r = 0; r <= rounds; r++) {
    const x = await timed(n, () => {
      for (const raw of raws) {
        summarizeRawTransaction(raw);
        recoverSenderPublicKey(raw, EVM_CHAIN_ID);
      }
    });
    const y = await timed(n, () => {
      for (let i = 0; i < n; i++) {
        keccak256(raws[i]!);
        keccak256(keys[i]!);
      }
    });
    const z = await timed(n, () => {
      for (let k = 0; k < 5; k++) encodeTagged(results);
    });
    if (r === 0) continue; // warm-up round
    rpc.push(x);
    hashes.push(y);
    tagged.push({ wallUs: z.wallUs / 5, cpuUs: z.cpuUs / 5 });
  }
  report('value transfer, JSON-RPC thread: fee summary + sender recovery', rpc);
  report('value transfer, keccak256 of the transaction and of the sender key', hashes);
  report(`value transfer, its share of the block results as tagged JSON (${n} a block)`, tagged);
}

/** The result of one ERC-20 transfer as the executor reports it (same events and attributes). */
function transferResult(i: number, height: number, raw: Uint8Array): ExecTxResult {
  const a = (key: string, value: string, index = true) => ({ key, value, index });
  const sender = `0x${(i % 19).toString(16).padStart(40, '0')}`;
  const events: AbciEvent[] = [
    {
      type: 'ethereum_tx',
      attributes: [
        a('amount', '0'),
        a('ethereumTxHash', `0x${hex(keccak256(raw))}`),
        a('txIndex', String(i)),
        a('txGasUsed', '34718'),
        a('txHash', hex(keccak256(Uint8Array.of(height, i & 0xff, i >> 8))).toUpperCase()),
        a('recipient', `0x${'0c0ffe'.padStart(40, '0')}`),
      ],
    },
    {
      type: 'tx_log',
      attributes: [
        a(
          'txLog',
          JSON.stringify({
            address: `0x${'0c0ffe'.padStart(40, '0')}`,
            topics: [
              `0x${'ddf252ad'.padEnd(64, '1')}`,
              `0x${sender.slice(2).padStart(64, '0')}`,
              `0x${'7'.repeat(64)}`,
            ],
            data: `0x${'1'.padStart(64, '0')}`,
          }),
          false,
        ),
      ],
    },
    {
      type: 'message',
      attributes: [
        a('action', '/noded.evm.v1.MsgEthereumTx'),
        a('sender', sender),
        a('module', 'evm'),
        a('txType', '2'),
      ],
    },
  ];
  const data = new Uint8Array(32);
  data[31] = 1;
  return { code: 0, data, log: '', info: '', gasWanted: 60_000n, gasUsed: 34_718n, events, codespace: '' };
}

async function indexBench(rounds: number): Promise<void> {
  const perBlock = 1000;
  const makeBlock = (height: number): IndexedBlock => {
    const txs = Array.from({ length: perBlock }, (_, i) => {
      const raw = new Uint8Array(180);
      raw[0] = 2;
      raw.set(keccak256(Uint8Array.of(height & 0xff, height >> 8, i & 0xff, i >> 8)), 100);
      return raw;
    });
    return {
      height,
      txs,
      txResults: txs.map((raw, i) => transferResult(i, height, raw)),
      events: [{ type: 'fee_market', attributes: [{ key: 'base_fee', value: '7', index: true }] }],
    };
  };
  const dir = mkdtempSync(join(tmpdir(), 'noded-hot-paths-'));
  const kv = await RocksKV.open(join(dir, 'tx_index.db'));
  try {
    const store = new TxIndexStore(kv);
    let height = 1;
    const samples: Sample[] = [];
    for (let r = 0; r <= rounds; r++) {
      const blocks = Array.from({ length: 3 }, () => makeBlock(height++));
      const s = await timed(perBlock * blocks.length, async () => {
        for (const b of blocks) await store.index(b);
      });
      if (r > 0) samples.push(s); // the first round warms up
    }
    report(`tx index, ERC-20 transfer results (${perBlock} per block, 3 blocks x ${rounds})`, samples);
    const probe = await store.search(Query.parse('ethereum_tx.txIndex = 7 AND tx.height = 2'));
    if (probe.length !== 1) throw new Error(`index probe found ${probe.length} transactions, want 1`);
  } finally {
    await kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const what = arg('what', 'all');
const rounds = Number(arg('rounds', '5'));
const all = what === 'all' || what === 'both';
if (what === 'call' || all) await callBench(Number(arg('calls', '30000')), rounds);
if (what === 'recover' || all) await recoverBench(rounds);
if (what === 'index' || all) await indexBench(rounds);
if (what === 'transfer' || all) await transferBench(rounds);
