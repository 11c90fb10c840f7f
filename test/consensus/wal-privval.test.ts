import assert from 'node:assert/strict';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validatorKeyJson } from '@noded/config';
import {
  DoubleSignError,
  FilePV,
  NodeFs,
  parseWal,
  voteSignBytes,
  Wal,
  type WalEntry,
} from '@noded/consensus';
import { ed25519Verify } from '@noded/crypto';
import { type Logger, silentLogger } from '@noded/types';
import { blockFor, CHAIN_ID, GENESIS_TIME, genesis, MS, nilId, signedVote, testKey } from './helpers.js';

const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'noded-cs-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function capture(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const logger: Logger = {
    ...silentLogger,
    warn: ((o: unknown, m?: string) => warnings.push(`${m ?? ''} ${JSON.stringify(o)}`)) as Logger['warn'],
    child: () => logger,
  };
  return { logger, warnings };
}

const keys = [0, 1].map(testKey);
const chain = genesis(keys);
const voteEntry = (round: number): WalEntry => ({
  kind: 'vote',
  vote: signedVote(chain, keys[1]!, 1, 1, round, null),
  now: GENESIS_TIME + BigInt(round),
});

describe('WAL', () => {
  it('replays the entries of the current height after the last end marker', async () => {
    const dir = tmp();
    const fs = new NodeFs();
    const wal = await Wal.open(fs, dir, silentLogger);
    await wal.write(1, voteEntry(0), false);
    await wal.writeEndHeight(1);
    const block = blockFor(chain, keys[0]!);
    await wal.write(2, { kind: 'timeout', height: 2, round: 0, step: 'Propose', now: GENESIS_TIME }, false);
    await wal.write(2, voteEntry(3), true);
    await wal.write(
      2,
      {
        kind: 'commitCert',
        block,
        commit: { height: 1, round: 0, blockId: nilId(), signatures: [] },
        now: 5n,
      },
      true,
    );
    await wal.close();
    await fs.close();
    const again = await Wal.open(new NodeFs(), dir, silentLogger);
    const got = again.entriesFor(2);
    assert.deepEqual(
      got.map((r) => r.entry.kind),
      ['timeout', 'vote', 'commitCert'],
    );
    assert.deepEqual(got[1]!.entry, voteEntry(3));
    assert.deepEqual((got[2]!.entry as Extract<WalEntry, { kind: 'commitCert' }>).block, block);
    assert.equal(again.lastEndHeight(), 1);
    assert.deepEqual(again.entriesFor(1), [], 'height 1 ended');
  });

  it('frames every record with crc32 and length', async () => {
    const dir = tmp();
    const fs = new NodeFs();
    const wal = await Wal.open(fs, dir, silentLogger);
    await wal.write(1, voteEntry(0), true);
    await fs.close();
    const bytes = readFileSync(join(dir, 'wal'));
    const len = bytes.readUInt32BE(4);
    assert.equal(bytes.length, 8 + len);
    const { crc32 } = await import('node:zlib');
    assert.equal(bytes.readUInt32BE(0), crc32(bytes.subarray(8)) >>> 0);
  });

  for (const [what, damage] of [
    ['a torn last record', (p: string) => truncateSync(p, statSync(p).size - 5)],
    [
      'a corrupt last record',
      (p: string) => {
        const b = readFileSync(p);
        b[b.length - 3] = b[b.length - 3]! ^ 0xff;
        writeFileSync(p, b);
      },
    ],
    [
      'garbage after the last record',
      (p: string) => writeFileSync(p, Buffer.concat([readFileSync(p), Buffer.from('not a record')])),
    ],
  ] as const) {
    it(`moves ${what} aside to a backup, truncates and warns, keeping the good records`, async () => {
      const dir = tmp();
      const fs = new NodeFs();
      const wal = await Wal.open(fs, dir, silentLogger);
      await wal.write(1, voteEntry(0), false);
      await wal.write(1, voteEntry(1), true);
      const goodSize = statSync(join(dir, 'wal')).size;
      await wal.write(1, voteEntry(2), true);
      await fs.close();
      const original = readFileSync(join(dir, 'wal'));
      damage(join(dir, 'wal'));
      const damaged = readFileSync(join(dir, 'wal'));
      const { logger, warnings } = capture();
      const fs2 = new NodeFs();
      const repaired = await Wal.open(fs2, dir, logger);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /corrupt tail moved aside/);
      const backups = readdirSync(dir).filter((f) => f.startsWith('wal.corrupted-'));
      assert.equal(backups.length, 1);
      assert.deepEqual(readFileSync(join(dir, backups[0]!)), damaged);
      const kept = repaired
        .entriesFor(1)
        .map((r) => (r.entry as Extract<WalEntry, { kind: 'vote' }>).vote.round);
      if (what === 'garbage after the last record') {
        assert.deepEqual(kept, [0, 1, 2]);
        assert.equal(statSync(join(dir, 'wal')).size, original.length);
      } else {
        assert.deepEqual(kept, [0, 1]);
        assert.equal(statSync(join(dir, 'wal')).size, goodSize);
      }
      // appending continues after the repair and a second open is clean
      await repaired.write(1, voteEntry(7), true);
      await fs2.close();
      const { logger: l3, warnings: w3 } = capture();
      const third = await Wal.open(new NodeFs(), dir, l3);
      assert.equal(w3.length, 0);
      assert.equal(third.entriesFor(1).at(-1)!.entry.kind, 'vote');
    });
  }

  it('parseWal stops at the first bad record', () => {
    const r = parseWal(new Uint8Array([0, 0, 0, 0, 0, 0, 0, 9, 1, 2]));
    assert.equal(r.goodLength, 0);
    assert.match(r.error!, /torn record/);
  });
});

describe('FilePV double-sign guard', () => {
  async function pv(dir = tmp()) {
    const keyFile = join(dir, 'priv_validator_key.json');
    writeFileSync(keyFile, validatorKeyJson({ seed: keys[1]!.seed, publicKey: keys[1]!.publicKey }));
    const stateFile = join(dir, 'priv_validator_state.json');
    return { dir, keyFile, stateFile, signer: await FilePV.load(keyFile, stateFile) };
  }
  const unsigned = (round: number, type: 1 | 2, block: boolean, ts = GENESIS_TIME + 100n * MS) => {
    const v = signedVote(
      chain,
      keys[1]!,
      type,
      5,
      round,
      block
        ? { hash: new Uint8Array(32).fill(9), partSetHeader: { total: 1, hash: new Uint8Array(32).fill(8) } }
        : null,
      ts,
    );
    return { ...v, signature: new Uint8Array(0) };
  };

  it('creates a missing state file and persists each signature in CometBFT format before returning it', async () => {
    const { stateFile, signer } = await pv();
    assert.deepEqual(JSON.parse(readFileSync(stateFile, 'utf8')), { height: '0', round: 0, step: 0 });
    const v = await signer.signVote(CHAIN_ID, unsigned(2, 1, true));
    assert.ok(ed25519Verify(keys[1]!.publicKey, voteSignBytes(CHAIN_ID, v), v.signature));
    const state = JSON.parse(readFileSync(stateFile, 'utf8'));
    assert.deepEqual(Object.keys(state), ['height', 'round', 'step', 'signature', 'signbytes']);
    assert.equal(state.height, '5');
    assert.equal(state.round, 2);
    assert.equal(state.step, 2);
    assert.equal(state.signature, Buffer.from(v.signature).toString('base64'));
    assert.equal(state.signbytes, Buffer.from(voteSignBytes(CHAIN_ID, v)).toString('hex').toUpperCase());
    assert.ok(!existsSync(`${stateFile}.tmp`));
  });

  it('returns the stored signature for the same HRS, also when only the timestamp differs', async () => {
    const { signer } = await pv();
    const first = await signer.signVote(CHAIN_ID, unsigned(0, 2, true));
    const same = await signer.signVote(CHAIN_ID, unsigned(0, 2, true));
    assert.deepEqual(same.signature, first.signature);
    const later = await signer.signVote(CHAIN_ID, unsigned(0, 2, true, GENESIS_TIME + 999n * MS));
    assert.deepEqual(later.signature, first.signature);
    assert.equal(later.timestamp, first.timestamp, 'the stored timestamp is used');
  });

  it('refuses conflicting data at the same HRS and any regression, across a restart', async () => {
    const { dir, signer } = await pv();
    await signer.signVote(CHAIN_ID, unsigned(3, 1, true));
    await assert.rejects(
      signer.signVote(CHAIN_ID, unsigned(3, 1, false)),
      (e: Error) => e instanceof DoubleSignError && /conflicting data/.test(e.message),
    );
    await signer.signVote(CHAIN_ID, unsigned(3, 2, true));
    await assert.rejects(signer.signVote(CHAIN_ID, unsigned(3, 1, true)), /step regression/);
    await assert.rejects(signer.signVote(CHAIN_ID, unsigned(2, 2, true)), /round regression/);
    const reloaded = (await pv(dir)).signer;
    await assert.rejects(
      reloaded.signVote(CHAIN_ID, { ...unsigned(0, 1, true), height: 4 }),
      /height regression/,
    );
    await assert.rejects(reloaded.signVote(CHAIN_ID, unsigned(3, 2, false)), /conflicting data/);
    const p = await reloaded.signProposal(CHAIN_ID, {
      height: 6,
      round: 0,
      polRound: -1,
      blockId: unsigned(0, 1, true).blockId,
      timestamp: GENESIS_TIME,
      signature: new Uint8Array(0),
    });
    assert.equal(p.signature.length, 64);
    assert.equal(reloaded.lastSignState().step, 1);
  });

  it('refuses to start from a corrupt state file; a torn temp file from a crash is ignored', async () => {
    const { dir, keyFile, stateFile, signer } = await pv();
    await signer.signVote(CHAIN_ID, unsigned(1, 1, true));
    writeFileSync(`${stateFile}.tmp`, '{"height":"99'); // crash during the write of the next state
    const reloaded = await FilePV.load(keyFile, stateFile);
    assert.equal(reloaded.lastSignState().height, 5);
    writeFileSync(stateFile, '{"height":"5","round":1,'); // torn main file: never silently reset
    await assert.rejects(
      FilePV.load(keyFile, stateFile),
      (e: Error & { code?: string }) => e.code === 'PRIVVAL_STATE' && e.message.includes(stateFile),
    );
    writeFileSync(stateFile, JSON.stringify({ height: 'x', round: 0, step: 0 }));
    await assert.rejects(FilePV.load(keyFile, stateFile), /height: must be a non-negative integer string/);
    void dir;
  });
});
