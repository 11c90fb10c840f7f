// Executor throughput: signed native transfers and ERC-20 transfers per second through the whole
// application path a validator runs: CheckTx (mempool admission), PrepareProposal, FinalizeBlock
// (EVM execution, state root) and Commit (one synced RocksDB batch), on a real RocksKV.
//
// Usage: node dist/bench/executor-throughput.js [--senders 2000] [--blocks 6] [--kind transfer|erc20|both]
// One extra warm-up block runs first and is not counted.
// Transactions are signed before the clock starts (signing is the client's cost, not the node's).
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ethAddressFromPrivateKey, keccak256 } from '@noded/crypto';
import { RocksKV } from '@noded/storage';
import { silentLogger } from '@noded/types';
import { TEST_CONSENSUS_PARAMS } from '../test/execution/helpers.js';
import { arg, compileToken, EVM_CHAIN_ID, hex, openExecutor, privKey, sign } from './exec-fixtures.js';

const WARMUP = 1;
const benchLogger = {
  ...silentLogger,
  debug: (obj: object, msg?: string) => console.log(msg, JSON.stringify(obj)),
  child: () => benchLogger,
} as unknown as typeof silentLogger;

interface Phase {
  check: number;
  prepare: number;
  execute: number;
  commit: number;
}

async function run(kind: 'transfer' | 'erc20', senders: number, blocks: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'noded-exec-bench-'));
  const kv = await RocksKV.open(join(dir, 'application.db'));
  try {
    const keys = Array.from({ length: senders }, (_, i) => privKey(i));
    const addrs = keys.map((k) => hex(ethAddressFromPrivateKey(k)));
    const token = '00000000000000000000000000000000000c0ffe';
    const accounts: Array<Record<string, unknown>> = addrs.map((a) => ({
      address: `0x${a}`,
      balance: (10n ** 24n).toString(),
    }));
    if (kind === 'erc20') {
      const storage: Record<string, string> = {};
      for (const a of addrs) {
        const slot = keccak256(Buffer.from(a.padStart(64, '0') + '0'.padStart(64, '0'), 'hex'));
        storage[`0x${hex(slot)}`] = `0x${(10n ** 24n).toString(16)}`;
      }
      accounts.push({ address: `0x${token}`, balance: '0', code: compileToken(), storage });
    }
    const ex = await openExecutor(
      kv,
      { size: senders * 2, maxTxsPerSender: 64 },
      process.env.BENCH_DEBUG ? benchLogger : silentLogger,
    );
    const t0 = Date.now();
    await ex.initChain({
      chainId: 'chain-local',
      time: BigInt(t0) * 1_000_000n,
      initialHeight: 1,
      validators: [],
      consensusParams: TEST_CONSENSUS_PARAMS,
      appState: { evm: { chain_id: EVM_CHAIN_ID.toString(), accounts } },
    });

    const signed: Uint8Array[][] = [];
    for (let b = 0; b < blocks; b++) {
      const list: Uint8Array[] = [];
      for (let i = 0; i < senders; i++) {
        const recipient = hex(keccak256(Buffer.from(`r-${b}-${i}`)).subarray(12));
        if (kind === 'transfer') list.push(sign(keys[i], BigInt(b), `0x${recipient}`, 1000n, '0x', 21_000n));
        else {
          const data =
            `0xa9059cbb${recipient.padStart(64, '0')}${1n.toString(16).padStart(64, '0')}` as const;
          list.push(sign(keys[i], BigInt(b), `0x${token}`, 0n, data, 80_000n));
        }
      }
      signed.push(list);
    }

    const phase: Phase = { check: 0, prepare: 0, execute: 0, commit: 0 };
    const proposer = new Uint8Array(20).fill(0xaa);
    let total = 0;
    let cpu0 = process.cpuUsage();
    let start = performance.now();
    for (let b = 0; b < blocks; b++) {
      if (b === WARMUP) {
        // The first block warms the JIT and the caches; it is not counted.
        for (const k of Object.keys(phase) as Array<keyof Phase>) phase[k] = 0;
        total = 0;
        cpu0 = process.cpuUsage();
        start = performance.now();
      }
      let t = performance.now();
      for (const raw of signed[b]) {
        const r = await ex.checkTx(raw, 'new');
        if (r.code !== 0) throw new Error(`checkTx rejected a benchmark transaction: ${r.log}`);
      }
      phase.check += performance.now() - t;
      t = performance.now();
      const height = b + 1;
      const time = BigInt(t0 + height * 1000) * 1_000_000n;
      const txs = await ex.prepareProposal({ height, time, proposerAddress: proposer, maxTxBytes: 22020096 });
      phase.prepare += performance.now() - t;
      t = performance.now();
      const res = await ex.finalizeBlock({
        height,
        time,
        proposerAddress: proposer,
        hash: keccak256(Buffer.from(`block-${height}`)),
        txs,
        misbehavior: [],
        decidedLastCommit: { round: 0, votes: [] },
      });
      phase.execute += performance.now() - t;
      t = performance.now();
      await ex.commit();
      phase.commit += performance.now() - t;
      const ok = res.txResults.filter((x) => x.code === 0 && !x.log).length;
      if (ok !== senders)
        throw new Error(
          `block ${height}: ${ok}/${senders} transactions succeeded (${res.txResults.find((x) => x.log)?.log})`,
        );
      total += txs.length;
    }
    const secs = (performance.now() - start) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const cpuSecs = (cpu.user + cpu.system) / 1e6;
    const per = (ms: number) => ((ms * 1000) / total).toFixed(0);
    console.log(
      `${kind === 'transfer' ? 'signed transfers' : 'ERC-20 transfers'}: ${total} txs in ${secs.toFixed(2)} s = ${(total / secs).toFixed(0)} tx/s wall, ` +
        `${(total / cpuSecs).toFixed(0)} tx per CPU-second (per tx: check ${per(phase.check)} us, prepare ${per(phase.prepare)} us, ` +
        `execute ${per(phase.execute)} us, commit ${per(phase.commit)} us; ${senders} txs/block; load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores)`,
    );
    await ex.close();
  } finally {
    await kv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const kind = arg('kind', 'both');
const senders = Number(arg('senders', '2000'));
const blocks = Number(arg('blocks', '6')) + WARMUP;
if (kind === 'transfer' || kind === 'both') await run('transfer', senders, blocks);
if (kind === 'erc20' || kind === 'both') await run('erc20', senders, blocks);
