// Indexes N value transfers (blockrun-shaped events, 1,000 a block) through TxIndexStore into a fresh
// RocksDB with tx_index.db's options, then 15 s with no writes; prints the SST bytes written (every
// .sst seen, at its largest, polled every 100 ms: a lower bound) and the process CPU per 1,000.
// usage: node bench/tx-index-sst.mjs <dist dir> <transactions> (dist: a build, e.g. .tmp/dist-<x>)

import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const dist = resolve(process.argv[2]);
const n = Number(process.argv[3] ?? 100000);
const { TxIndexStore } = await import(`${dist}/libs/rpc/src/comet/indexer.js`);
const { RocksKV } = await import(`${dist}/libs/storage/index.js`);
const { DATABASE_MEMORY } = await import(`${dist}/services/shared/src/databases.js`);
const { keccak256 } = await import(`${dist}/libs/crypto/index.js`);
const dir = mkdtempSync(join(tmpdir(), 'noded-sstidx-'));
const path = join(dir, 'tx_index.db');
const kv = await RocksKV.open(path, DATABASE_MEMORY.txIndex);
const store = new TxIndexStore(kv);
const seen = new Map();
const poll = () => {
  try {
    for (const f of readdirSync(path))
      if (f.endsWith('.sst')) {
        try {
          seen.set(f, Math.max(seen.get(f) ?? 0, statSync(join(path, f)).size));
        } catch {}
      }
  } catch {}
};
const timer = setInterval(poll, 100);
const attr = (key, value) => ({ key, value, index: true });
const cpu0 = process.cpuUsage();
const t0 = Date.now();
const per = 1000;
for (let h = 1; h <= n / per; h++) {
  const txs = [],
    txResults = [];
  for (let i = 0; i < per; i++) {
    const tx = randomBytes(110);
    txs.push(tx);
    const tm = createHash('sha256').update(tx).digest('hex').toUpperCase();
    txResults.push({
      code: 0,
      data: new Uint8Array(0),
      log: '',
      info: '',
      gasWanted: 21000n,
      gasUsed: 21000n,
      codespace: '',
      events: [
        {
          type: 'ethereum_tx',
          attributes: [
            attr('amount', '1000'),
            attr('ethereumTxHash', `0x${Buffer.from(keccak256(tx)).toString('hex')}`),
            attr('txIndex', String(i)),
            attr('txGasUsed', '21000'),
            attr('txHash', tm),
            attr('recipient', `0x${randomBytes(20).toString('hex')}`),
          ],
        },
        {
          type: 'message',
          attributes: [
            attr('action', '/noded.evm.v1.MsgEthereumTx'),
            attr('sender', `0x${(i % 19).toString(16).padStart(40, '0')}`),
            attr('module', 'evm'),
            attr('txType', '2'),
          ],
        },
      ],
    });
  }
  await store.index({ height: h, txs, txResults, events: [] });
}
const wrote = Date.now() - t0;
await new Promise((r) => setTimeout(r, 15000));
poll();
clearInterval(timer);
const cpu = process.cpuUsage(cpu0);
await kv.close();
rmSync(dir, { recursive: true, force: true });
const bytes = [...seen.values()].reduce((a, b) => a + b, 0);
console.log(
  `${process.argv[2]}: ${n} transfers indexed in ${wrote} ms; SST written ${(bytes / 1e6).toFixed(0)} MB in ${seen.size} files = ${(bytes / n).toFixed(0)} B a transfer; process CPU ${((cpu.user + cpu.system) / 1000 / (n / 1000)).toFixed(1)} ms per 1,000 (incl. RocksDB threads, 15 s after)`,
);
