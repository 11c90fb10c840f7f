import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { keccak256 } from '@noded/crypto';
import { Executor } from '@noded/execution';
import { RocksKV } from '@noded/storage';
import { EventBus, type Hex } from '@noded/types';
import { prng } from '../prng.js';
import { LAB_SOL } from './contracts.js';
import { compile, executorOptions, produceBlock, startNode } from './helpers.js';
import { labSelectors } from './selectors.js';
import { workloadBlocks, workloadGenesis } from './workload.js';

const BLOCKS = 150;
const SEED = 7;
const KILLS = 20;
const driver = fileURLToPath(new URL('./driver/crash-driver.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'noded-exec-crash-'));
const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Reference {
  hash: Hex;
  /** CometBFT app hash after this block (state root and next base fee). */
  appHash: string;
  stateRoot: Hex;
  txs: number;
}

/** Runs the driver; kills it with SIGKILL `killAfterCommits` commits after it starts (or lets it finish). */
function runDriver(
  codePath: string,
  killAt: number | undefined,
  delayMs: number,
): Promise<{ killed: boolean; lastSeen: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [driver, dir, String(BLOCKS), String(SEED), codePath], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let out = '';
    let err = '';
    let lastSeen = -1;
    let killed = false;
    let started = -1;
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      for (const line of out.split('\n').slice(0, -1)) {
        const m = /^(start|committed) (\d+)$/.exec(line);
        if (!m) continue;
        if (m[1] === 'start') started = Number(m[2]);
        else lastSeen = Number(m[2]);
      }
      out = out.slice(out.lastIndexOf('\n') + 1);
      if (!killed && killAt !== undefined && started >= 0 && lastSeen >= started + killAt) {
        killed = true;
        // Kill a few milliseconds into the next block: inside execution or the commit write.
        setTimeout(() => child.kill('SIGKILL'), delayMs);
      }
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      children.delete(child);
      if (signal === 'SIGKILL') resolve({ killed: true, lastSeen });
      else if (code === 0) resolve({ killed: false, lastSeen });
      else reject(new Error(`driver exited with ${code}: ${err}`));
    });
  });
}

describe('crash consistency', () => {
  it(`survives ${KILLS} SIGKILLs during block commits with state equal to a clean replay and no committed tx lost`, async () => {
    const c = compile({ 'Lab.sol': LAB_SOL });
    const code = { lab: c.Lab.bytecode, burn: c.BurnOnCreate.bytecode, selectors: labSelectors(c.Lab.abi) };
    const codePath = join(dir, 'code.json');
    writeFileSync(codePath, JSON.stringify(code));
    const blocks = workloadBlocks(BLOCKS, SEED, code, code.selectors);

    // Clean replay in-process: the reference hashes.
    const ref: Reference[] = [];
    const clean = await startNode(workloadGenesis());
    const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}`;
    ref.push({
      hash: (await clean.ex.getBlockByNumber(0n))!.hash,
      appHash: hex((await clean.ex.info()).lastBlockAppHash),
      stateRoot: (await clean.ex.getBlockByNumber(0n))!.stateRoot,
      txs: 0,
    });
    for (const txs of blocks) {
      const res = await produceBlock(clean, txs);
      const b = (await clean.ex.getBlockByNumber(clean.ex.latestHeight()))!;
      ref.push({
        hash: b.hash,
        appHash: hex(res.appHash),
        stateRoot: b.stateRoot,
        txs: b.transactions.length,
      });
    }

    const r = prng(99);
    let kills = 0;
    let last = 0;
    for (let round = 0; kills < KILLS && round < 60; round++) {
      const res = await runDriver(codePath, Math.floor(r() * 12), Math.floor(r() * 25));
      if (!res.killed) break;
      kills++;
      // Reopen as a restarted node would and check what survived.
      const kv = await RocksKV.open(join(dir, 'application.db'));
      const ex = await Executor.open(executorOptions(kv, new EventBus(), { keepRecent: 5 }));
      const info = await ex.info();
      const h = info.lastBlockHeight;
      assert.ok(h >= last, `executed height went back from ${last} to ${h}`);
      assert.ok(h >= res.lastSeen, `block ${res.lastSeen} was reported committed but the store is at ${h}`);
      last = h;
      if (h > 0) {
        assert.equal(`0x${Buffer.from(info.lastBlockAppHash).toString('hex')}`, ref[h].appHash);
        const blk = await ex.getBlockByNumber(BigInt(h));
        assert.equal(blk?.stateRoot, ref[h].stateRoot);
        for (let k = 1; k <= h; k++) {
          const b = await ex.getBlockByNumber(BigInt(k));
          assert.equal(b?.hash, ref[k].hash);
          assert.equal(b?.transactions.length, ref[k].txs);
          for (const raw of blocks[k - 1]) {
            const hash = `0x${Buffer.from(keccak256(raw)).toString('hex')}` as Hex;
            const inBlock = b!.transactions.includes(hash);
            if (inBlock)
              assert.ok(await ex.getReceipt(hash), `receipt of committed tx ${hash} (block ${k}) is missing`);
          }
        }
      }
      assert.equal(await ex.getBlockByNumber(BigInt(h + 1)), undefined);
      await ex.close();
      await kv.close();
    }
    assert.ok(kills >= KILLS, `only ${kills} kills landed before the driver finished`);
    const final = await runDriver(codePath, undefined, 0);
    assert.equal(final.killed, false);
    const kv = await RocksKV.open(join(dir, 'application.db'));
    const ex = await Executor.open(executorOptions(kv, new EventBus(), { keepRecent: 5 }));
    for (let k = 0; k <= BLOCKS; k++) assert.equal((await ex.getBlockByNumber(BigInt(k)))?.hash, ref[k].hash);
    assert.equal(ex.totalSupply(), clean.ex.totalSupply());
    await ex.close();
    await kv.close();
  });
});
