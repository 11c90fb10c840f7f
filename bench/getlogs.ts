// eth_getLogs in process: a chain of ERC-20 transfers built through the real executor on RocksDB in
// a temp dir, then Executor.getLogs timed for three queries a dApp makes:
//   receiver  one receiver's Transfer logs over the whole chain (topic2 = receiver)
//   token     every Transfer log of the token over the last 100 blocks
//   empty     an address that never logged, over the whole chain
// Each query asks for logs_cap + 1 logs at most, as the JSON-RPC does.
//
// Usage: node dist/bench/getlogs.js [--blocks 1000] [--per-block 44] [--receivers 500] [--seconds 3]
//   [--only receiver|token|empty]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ethAddressFromPrivateKey, keccak256 } from '@noded/crypto';
import { RocksKV } from '@noded/storage';
import type { Hex, LogFilter } from '@noded/types';
import { TEST_CONSENSUS_PARAMS } from '../test/execution/helpers.js';
import { arg, compileToken, EVM_CHAIN_ID, hex, openExecutor, privKey, sign } from './exec-fixtures.js';

const LOGS_CAP = 10_000;
const TRANSFER = `0x${hex(keccak256(Buffer.from('Transfer(address,address,uint256)')))}` as Hex;
const word = (a: string) => `0x${a.padStart(64, '0')}` as Hex;

const blocks = Number(arg('blocks', '1000'));
const perBlock = Number(arg('per-block', '44'));
const receiverCount = Number(arg('receivers', '500'));
const seconds = Number(arg('seconds', '3'));
/** Only the queries whose name starts with this (receiver, token, empty). */
const only = arg('only', '');

const dir = mkdtempSync(join(tmpdir(), 'noded-getlogs-bench-'));
const kv = await RocksKV.open(join(dir, 'application.db'));
try {
  const keys = Array.from({ length: perBlock }, (_, i) => privKey(i));
  const senders = keys.map((k) => hex(ethAddressFromPrivateKey(k)));
  const receivers = Array.from({ length: receiverCount }, (_, i) =>
    hex(keccak256(Buffer.from(`receiver-${i}`)).subarray(12)),
  );
  const token = '00000000000000000000000000000000000c0ffe';
  const storage: Record<string, string> = {};
  for (const a of senders) {
    const slot = keccak256(Buffer.from(a.padStart(64, '0') + '0'.padStart(64, '0'), 'hex'));
    storage[`0x${hex(slot)}`] = `0x${(10n ** 24n).toString(16)}`;
  }
  const ex = await openExecutor(kv, { size: perBlock * 4 });
  const t0 = Date.now();
  await ex.initChain({
    chainId: 'chain-local',
    time: BigInt(t0) * 1_000_000n,
    initialHeight: 1,
    validators: [],
    consensusParams: TEST_CONSENSUS_PARAMS,
    appState: {
      evm: {
        chain_id: EVM_CHAIN_ID.toString(),
        accounts: [
          ...senders.map((a) => ({ address: `0x${a}`, balance: (10n ** 24n).toString() })),
          { address: `0x${token}`, balance: '0', code: compileToken(), storage },
        ],
      },
    },
  });

  const build = performance.now();
  const proposer = new Uint8Array(20).fill(0xaa);
  let logsWritten = 0;
  let toReceiver0 = 0;
  for (let b = 0; b < blocks; b++) {
    const txs: Uint8Array[] = [];
    for (let i = 0; i < perBlock; i++) {
      const r = (b * perBlock + i) % receiverCount;
      if (r === 0) toReceiver0++;
      const data = `0xa9059cbb${receivers[r].padStart(64, '0')}${'1'.padStart(64, '0')}` as const;
      txs.push(sign(keys[i], BigInt(b), `0x${token}`, 0n, data, 80_000n));
    }
    const height = b + 1;
    const time = BigInt(t0 + height * 1000) * 1_000_000n;
    const res = await ex.finalizeBlock({
      height,
      time,
      proposerAddress: proposer,
      hash: keccak256(Buffer.from(`block-${height}`)),
      txs,
      misbehavior: [],
      decidedLastCommit: { round: 0, votes: [] },
    });
    await ex.commit();
    const failed = res.txResults.find((x) => x.code !== 0 || x.log);
    if (failed) throw new Error(`block ${height}: a transfer failed: ${failed.log}`);
    logsWritten += perBlock;
  }
  console.log(
    `chain: ${blocks} blocks, ${logsWritten} Transfer logs (${perBlock} a block), built in ${((performance.now() - build) / 1000).toFixed(1)} s`,
  );

  const latest = BigInt(blocks);
  const queries: Array<{ name: string; filter: LogFilter; want: number }> = [
    {
      name: `receiver: topic2 = one receiver, blocks 1-${blocks}`,
      filter: {
        fromBlock: 1n,
        toBlock: latest,
        addresses: [`0x${token}`],
        topics: [TRANSFER, null, word(receivers[0])],
      },
      want: toReceiver0,
    },
    {
      name: `token: every Transfer, last 100 blocks`,
      filter: { fromBlock: latest - 99n, toBlock: latest, addresses: [`0x${token}`], topics: [TRANSFER] },
      want: Math.min(100, blocks) * perBlock,
    },
    {
      name: `empty: an address with no logs, blocks 1-${blocks}`,
      filter: { fromBlock: 1n, toBlock: latest, addresses: [`0x${'ee'.repeat(20)}`] },
      want: 0,
    },
  ];
  for (const q of queries.filter((x) => x.name.startsWith(only))) {
    const filter = { ...q.filter, limit: LOGS_CAP + 1 };
    const first = await ex.getLogs(filter);
    if (first.length !== q.want) throw new Error(`${q.name}: ${first.length} logs, expected ${q.want}`);
    const cpu0 = process.cpuUsage();
    const start = performance.now();
    let calls = 0;
    while (performance.now() - start < seconds * 1000) {
      await ex.getLogs(filter);
      calls++;
    }
    const ms = performance.now() - start;
    const cpu = process.cpuUsage(cpu0);
    console.log(
      `${q.name}: ${q.want} logs, ${calls} calls in ${(ms / 1000).toFixed(1)} s = ${((calls * 1000) / ms).toFixed(1)} calls/s, ` +
        `${(ms / calls).toFixed(2)} ms a call, ${((cpu.user + cpu.system) / 1000 / calls).toFixed(2)} ms CPU a call`,
    );
  }
  console.log(`load average ${loadavg()[0].toFixed(1)}`);
  await ex.close();
} finally {
  await kv.close();
  rmSync(dir, { recursive: true, force: true });
}
