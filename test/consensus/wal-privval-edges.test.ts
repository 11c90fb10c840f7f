// The WAL's record format, repair and durability, and the double-sign guard's state file and
// refusals, pinned down to what an operator sees: exact messages, file names, byte counts and
// which writes are fsynced. Written from the mutation testing of wal.ts and privval.ts
// (docs/reliability.md, "Mutation testing"). Real files in a temporary directory; SpyFs only
// records (or, when asked, fails) the calls it passes on to the real NodeFs.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import {
  ConsensusError,
  DoubleSignError,
  type DurableFs,
  encodeVote,
  FilePV,
  NodeFs,
  parseWal,
  proposalSignBytes,
  voteExtensionSignBytes,
  voteSignBytes,
  Wal,
  type WalEntry,
} from '@noded/consensus';
import { ed25519Verify } from '@noded/crypto';
import { type Logger, type Proposal, silentLogger, type Vote } from '@noded/types';
import { CHAIN_ID, GENESIS_TIME, genesis, MS, signedVote, testKey } from './helpers.js';

const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'noded-cs-edges-'));
  dirs.push(d);
  return d;
}
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The real file system, with every call recorded; `failWriteAtomic` makes that call fail. */
class SpyFs implements DurableFs {
  readonly calls: string[] = [];
  failWriteAtomic = false;
  private readonly real = new NodeFs();
  private note(op: string, path: string): void {
    this.calls.push(`${op} ${path.slice(path.lastIndexOf('/') + 1)}`);
  }
  readFile(path: string) {
    return this.real.readFile(path);
  }
  async append(path: string, data: Uint8Array) {
    this.note('append', path);
    await this.real.append(path, data);
  }
  async sync(path: string) {
    this.note('sync', path);
    await this.real.sync(path);
  }
  async writeAtomic(path: string, data: Uint8Array) {
    this.note('writeAtomic', path);
    if (this.failWriteAtomic) throw new Error('injected: disk full');
    await this.real.writeAtomic(path, data);
  }
  async truncate(path: string, size: number) {
    this.note('truncate', path);
    await this.real.truncate(path, size);
  }
  async rename(from: string, to: string) {
    this.note('rename', to);
    await this.real.rename(from, to);
  }
  remove(path: string) {
    return this.real.remove(path);
  }
  size(path: string) {
    return this.real.size(path);
  }
  mkdirp(dir: string) {
    return this.real.mkdirp(dir);
  }
  list(dir: string) {
    return this.real.list(dir);
  }
  close() {
    return this.real.close();
  }
}

interface Warning {
  msg: string;
  fields: Record<string, unknown>;
}
function capture(): { logger: Logger; warnings: Warning[] } {
  const warnings: Warning[] = [];
  const logger: Logger = {
    ...silentLogger,
    warn: ((o: Record<string, unknown>, m?: string) =>
      warnings.push({ msg: m ?? '', fields: o })) as unknown as Logger['warn'],
    child: () => logger,
  };
  return { logger, warnings };
}

const keys = [0, 1].map(testKey);
const chain = genesis(keys);
const vote = (height: number, round: number): Vote => signedVote(chain, keys[1]!, 1, height, round, null);

/** One WAL record around `payload`, framed as the WAL frames it (crc32 | length | payload). */
function record(payload: Uint8Array | string): Buffer {
  const p = typeof payload === 'string' ? Buffer.from(payload) : Buffer.from(payload);
  const head = Buffer.alloc(8);
  head.writeUInt32BE(crc32(p) >>> 0, 0);
  head.writeUInt32BE(p.length, 4);
  return Buffer.concat([head, p]);
}
/** A binary vote payload: 0x01 | kind | height (u64 BE) | now (i64 BE) | protobuf vote. */
function votePayload(kind: number, height: bigint, now: bigint, v: Uint8Array): Uint8Array {
  const out = Buffer.alloc(18 + v.length);
  out[0] = 1;
  out[1] = kind;
  out.writeBigUInt64BE(height, 2);
  out.writeBigInt64BE(now, 10);
  out.set(v, 18);
  return out;
}
const MAX_RECORD = 160 * 1024 * 1024;

describe('WAL record format', () => {
  it('writes a vote as the compact binary payload (0x01, kind, height, now, protobuf) and an own vote with kind 1', async () => {
    const dir = tmp();
    const fs = new NodeFs();
    const wal = await Wal.open(fs, dir, silentLogger);
    const v = vote(7, 2);
    await wal.write(7, { kind: 'vote', vote: v, now: GENESIS_TIME + 5n }, false);
    await wal.write(7, { kind: 'ownVote', vote: v, now: GENESIS_TIME + 6n }, true);
    await wal.write(7, { kind: 'txsAvailable' } as WalEntry, true);
    await fs.close();
    const bytes = readFileSync(join(dir, 'wal'));
    const first = record(votePayload(0, 7n, GENESIS_TIME + 5n, encodeVote(v)));
    const second = record(votePayload(1, 7n, GENESIS_TIME + 6n, encodeVote(v)));
    assert.deepEqual(bytes.subarray(0, first.length), first);
    assert.deepEqual(bytes.subarray(first.length, first.length + second.length), second);
    // any other entry is tagged JSON
    const rest = bytes.subarray(first.length + second.length);
    assert.equal(rest.subarray(8).toString()[0], '{');
    const again = await Wal.open(new NodeFs(), dir, silentLogger);
    assert.deepEqual(
      again.entriesFor(7).map((r) => r.entry.kind),
      ['vote', 'ownVote', 'txsAvailable'],
    );
  });

  it('reads back a binary vote record written by another writer, with its kind, height and time', () => {
    const v = vote(9, 0);
    const bytes = Buffer.concat([
      record(votePayload(1, 9n, 42n, encodeVote(v))),
      record(votePayload(0, 9n, 43n, encodeVote(v))),
    ]);
    const r = parseWal(new Uint8Array(bytes));
    assert.equal(r.error, undefined);
    assert.deepEqual(r.payloads, [
      { h: 9, e: { kind: 'ownVote', vote: v, now: 42n } },
      { h: 9, e: { kind: 'vote', vote: v, now: 43n } },
    ]);
  });

  it('accepts height 0 in an end marker and in an entry', () => {
    const r = parseWal(Buffer.concat([record('{"end":0}'), record('{"h":0,"e":{"kind":"txsAvailable"}}')]));
    assert.equal(r.error, undefined);
    assert.deepEqual(r.payloads, [{ end: 0 }, { h: 0, e: { kind: 'txsAvailable' } }]);
  });

  const bad: Array<[string, Uint8Array | string, string]> = [
    ['a fractional end height', '{"end":1.5}', 'end marker height 1.5 is not a non-negative integer'],
    [
      'an end height past 2^53',
      '{"end":9007199254740993}',
      'end marker height 9007199254740992 is not a non-negative integer',
    ],
    ['an entry whose kind is a number', '{"h":1,"e":{"kind":7}}', 'entry {"kind":7} has no kind'],
    ['an entry that is an array', '{"h":1,"e":[1]}', 'entry [1] has no kind'],
    [
      'a vote record of 17 bytes',
      votePayload(0, 1n, 1n, new Uint8Array(0)).subarray(0, 17),
      'vote record of 17 bytes is too short',
    ],
    [
      'a vote record whose height is past 2^53',
      votePayload(0, 1n << 60n, 1n, encodeVote(vote(1, 0))),
      'vote record height 1152921504606847000 is not a non-negative integer',
    ],
  ];
  for (const [what, payload, message] of bad) {
    it(`names ${what} in the error and keeps the records before it`, () => {
      const good = record('{"end":3}');
      const r = parseWal(Buffer.concat([good, record(payload)]));
      assert.equal(r.error, `undecodable record at byte ${good.length}: ${message}`);
      assert.equal(r.goodLength, good.length);
      assert.deepEqual(r.payloads, [{ end: 3 }]);
    });
  }

  it('quotes at most 80 characters of a bad value', () => {
    const at80 = 'a'.repeat(78); // quoted: 80 characters
    const at81 = 'a'.repeat(79);
    assert.equal(
      parseWal(record(`{"end":"${at80}"}`)).error,
      `undecodable record at byte 0: end marker height "${at80}" is not a non-negative integer`,
    );
    assert.equal(
      parseWal(record(`{"end":"${at81}"}`)).error,
      `undecodable record at byte 0: end marker height "${at81.slice(0, 79)}... is not a non-negative integer`,
    );
  });

  it('a vote record of exactly 18 bytes (an empty vote) is not refused as too short', () => {
    const r = parseWal(record(votePayload(0, 1n, 1n, new Uint8Array(0))));
    assert.doesNotMatch(r.error ?? '', /too short/);
  });

  it('names the offset of a torn header, a torn record, an oversized length and a CRC mismatch', () => {
    const good = record('{"end":3}');
    const at = good.length;
    const header = (len: number, crc = 0) => {
      const h = Buffer.alloc(8);
      h.writeUInt32BE(crc, 0);
      h.writeUInt32BE(len, 4);
      return h;
    };
    const cases: Array<[Buffer, string]> = [
      [Buffer.concat([good, Buffer.from([1, 2, 3])]), `torn record header at byte ${at}`],
      [Buffer.concat([good, header(5)]), `torn record at byte ${at} (5 bytes announced)`],
      // 10 of 12 bytes there: torn, although the bytes before the record would make up the rest
      [Buffer.concat([good, header(12), Buffer.alloc(10)]), `torn record at byte ${at} (12 bytes announced)`],
      [
        Buffer.concat([good, header(MAX_RECORD + 1)]),
        `record length ${MAX_RECORD + 1} at byte ${at} exceeds ${MAX_RECORD}`,
      ],
      [
        Buffer.concat([good, header(MAX_RECORD)]),
        `torn record at byte ${at} (${MAX_RECORD} bytes announced)`,
      ],
      [Buffer.concat([good, header(2, 1), Buffer.from('{}')]), `crc mismatch in record at byte ${at}`],
    ];
    for (const [bytes, error] of cases) {
      const r = parseWal(bytes);
      assert.equal(r.error, error);
      assert.equal(r.goodLength, at);
      assert.deepEqual(r.payloads, [{ end: 3 }]);
    }
  });
});

describe('WAL repair, end markers and rotation', () => {
  async function damaged(dir: string, tail: Buffer): Promise<Buffer> {
    const fs = new NodeFs();
    const wal = await Wal.open(fs, dir, silentLogger);
    await wal.write(1, { kind: 'vote', vote: vote(1, 0), now: GENESIS_TIME }, true);
    await wal.close();
    await fs.close();
    const bytes = Buffer.concat([readFileSync(join(dir, 'wal')), tail]);
    writeFileSync(join(dir, 'wal'), bytes);
    return bytes;
  }

  it('logs the backup, kept and dropped bytes and the reason; a second corruption gets wal.corrupted-1', async () => {
    const dir = tmp();
    const first = await damaged(dir, Buffer.from('junk!'));
    const goodLength = first.length - 5;
    const { logger, warnings } = capture();
    const fs = new NodeFs();
    const wal = await Wal.open(fs, dir, logger);
    assert.deepEqual(warnings, [
      {
        msg: 'WAL: corrupt tail moved aside and truncated',
        fields: {
          wal: `${dir}/wal`,
          backup: `${dir}/wal.corrupted-0`,
          keptBytes: goodLength,
          droppedBytes: 5,
          reason: `torn record header at byte ${goodLength}`,
        },
      },
    ]);
    await wal.close();
    await fs.close();

    const tail = record('{"end":"x"}');
    const bytes = Buffer.concat([readFileSync(join(dir, 'wal')), tail]);
    writeFileSync(join(dir, 'wal'), bytes);
    const second = capture();
    const fs2 = new NodeFs();
    const again = await Wal.open(fs2, dir, second.logger);
    assert.equal(second.warnings.length, 1);
    assert.equal(second.warnings[0]!.fields.backup, `${dir}/wal.corrupted-1`);
    assert.equal(second.warnings[0]!.fields.droppedBytes, tail.length);
    assert.equal(
      second.warnings[0]!.fields.reason,
      `undecodable record at byte ${goodLength}: end marker height "x" is not a non-negative integer`,
    );
    assert.deepEqual(readdirSync(dir).sort(), ['wal', 'wal.corrupted-0', 'wal.corrupted-1']);
    assert.deepEqual(readFileSync(join(dir, 'wal.corrupted-0')), first, 'the first backup is kept');
    assert.deepEqual(readFileSync(join(dir, 'wal.corrupted-1')), bytes);
    assert.equal(statSync(join(dir, 'wal')).size, goodLength);
    assert.equal(again.entriesFor(1).length, 1);
    await again.close();
    await fs2.close();
  });

  it('reads an end marker that is the first record of the file', async () => {
    const dir = tmp();
    const fs = new NodeFs();
    const wal = await Wal.open(fs, dir, silentLogger);
    assert.equal(wal.lastEndHeight(), undefined);
    await wal.writeEndHeight(4);
    await wal.write(5, { kind: 'vote', vote: vote(5, 0), now: GENESIS_TIME }, true);
    await wal.close();
    await fs.close();
    const again = await Wal.open(new NodeFs(), dir, silentLogger);
    assert.equal(again.lastEndHeight(), 4);
    assert.deepEqual(
      again.entriesFor(5).map((r) => r.height),
      [5],
    );
    again.releaseReplayData();
    assert.deepEqual(again.entriesFor(5), [], 'released: nothing left to replay');
    assert.equal(again.lastEndHeight(), undefined);
  });

  it('fsyncs exactly the writes that ask for it, end markers by default, flush and the first close', async () => {
    const dir = tmp();
    const fs = new SpyFs();
    const wal = await Wal.open(fs, dir, silentLogger);
    const entry: WalEntry = { kind: 'vote', vote: vote(1, 0), now: GENESIS_TIME };
    const step = async (f: () => Promise<void>) => {
      fs.calls.length = 0;
      await f();
      return [...fs.calls];
    };
    assert.deepEqual(await step(() => wal.write(1, entry, false)), ['append wal']);
    assert.deepEqual(await step(() => wal.write(1, entry, true)), ['append wal', 'sync wal']);
    assert.deepEqual(await step(() => wal.writeEndHeight(1)), ['append wal', 'sync wal']);
    assert.deepEqual(await step(() => wal.writeEndHeight(2, false)), ['append wal']);
    assert.deepEqual(await step(() => wal.flush()), ['sync wal']);
    assert.deepEqual(await step(() => wal.close()), ['sync wal']);
    assert.deepEqual(await step(() => wal.close()), [], 'a second close does nothing');
    await assert.rejects(
      wal.write(3, entry, true),
      (e: Error) =>
        e instanceof ConsensusError && e.code === 'WAL' && e.message === `WAL ${dir}/wal is closed`,
    );
    assert.deepEqual(fs.calls, [], 'nothing is appended after close');
    await fs.close();
  });

  it('rotates to wal.1 at the first end marker that takes the file past rotateBytes, and starts afresh', async () => {
    const entry: WalEntry = { kind: 'vote', vote: vote(1, 0), now: GENESIS_TIME };
    const voteBytes = record(votePayload(0, 1n, GENESIS_TIME, encodeVote(entry.vote))).length;
    const endBytes = record('{"end":1}').length;
    const size = voteBytes + endBytes;
    for (const [rotateBytes, rotated] of [
      [size, false],
      [size - 1, true],
    ] as const) {
      const dir = tmp();
      const fs = new SpyFs();
      const wal = await Wal.open(fs, dir, silentLogger, rotateBytes);
      await wal.write(1, entry, false);
      await wal.writeEndHeight(1);
      assert.equal(statSync(join(dir, rotated ? 'wal.1' : 'wal')).size, size);
      assert.equal(existsSync(join(dir, 'wal.1')), rotated, `rotateBytes ${rotateBytes}`);
      assert.equal(fs.calls.includes('rename wal.1'), rotated);
      if (rotated) {
        // the next height goes to a new file, counted from zero
        await wal.write(2, { ...entry, vote: vote(2, 0) }, false);
        assert.equal(statSync(join(dir, 'wal')).size, voteBytes);
        assert.equal(statSync(join(dir, 'wal.1')).size, size, 'wal.1 keeps the rotated file');
      }
      await wal.close();
      await fs.close();
    }
  });

  it('counts the bytes already in the file it opens towards rotation', async () => {
    const dir = tmp();
    const entry: WalEntry = { kind: 'vote', vote: vote(1, 0), now: GENESIS_TIME };
    const fs = new NodeFs();
    const wal = await Wal.open(fs, dir, silentLogger);
    await wal.write(1, entry, true);
    await wal.close();
    await fs.close();
    const before = statSync(join(dir, 'wal')).size;
    const endBytes = record('{"end":1}').length;
    const fs2 = new NodeFs();
    const again = await Wal.open(fs2, dir, silentLogger, before + endBytes - 1);
    await again.writeEndHeight(1);
    assert.ok(existsSync(join(dir, 'wal.1')), 'rotated: the reopened file was counted');
    assert.equal(statSync(join(dir, 'wal.1')).size, before + endBytes);
    await again.close();
    await fs2.close();
  });
});

describe('FilePV state file', () => {
  const key = keys[1]!;
  async function signer(state?: unknown, fs: DurableFs = new NodeFs()) {
    const dir = tmp();
    const stateFile = join(dir, 'priv_validator_state.json');
    if (state !== undefined)
      writeFileSync(stateFile, typeof state === 'string' ? state : JSON.stringify(state));
    return { stateFile, pv: await FilePV.fromKey(key, stateFile, fs) };
  }
  const refusal = async (state: unknown, message: string) => {
    const dir = tmp();
    const stateFile = join(dir, 'priv_validator_state.json');
    writeFileSync(stateFile, typeof state === 'string' ? state : JSON.stringify(state));
    await assert.rejects(
      FilePV.fromKey(key, stateFile, new NodeFs()),
      (e: Error) =>
        e instanceof ConsensusError && e.code === 'PRIVVAL_STATE' && e.message === `${stateFile}: ${message}`,
      `${JSON.stringify(state)} -> ${message}`,
    );
    assert.equal(readFileSync(stateFile, 'utf8'), typeof state === 'string' ? state : JSON.stringify(state));
  };
  const prevote = (height: number, round: number, ts = GENESIS_TIME + 100n * MS): Vote => ({
    ...signedVote(
      chain,
      key,
      1,
      height,
      round,
      { hash: new Uint8Array(32).fill(9), partSetHeader: { total: 1, hash: new Uint8Array(32).fill(8) } },
      ts,
    ),
    signature: new Uint8Array(0),
  });

  it('refuses a state file that is not a JSON object, naming the file and the reason', async () => {
    let jsonError = '';
    try {
      JSON.parse('{"height":');
    } catch (e) {
      jsonError = (e as Error).message;
    }
    await refusal(
      '{"height":',
      `not valid JSON (${jsonError}); refusing to sign without a trustworthy last-sign state`,
    );
    for (const text of ['null', '"5"', '7', 'true']) await refusal(text, 'must be a JSON object');
  });

  it('refuses a height, round or step of the wrong type or range, with the field and the value', async () => {
    const h = (v: unknown) => `height: must be a non-negative integer string, got ${JSON.stringify(v)}`;
    for (const height of ['-1', '1.5', 'x', null, true, [], 2 ** 53])
      await refusal({ height, round: 0, step: 0 }, h(height));
    const r = (v: unknown) => `round: must be a non-negative integer, got ${JSON.stringify(v)}`;
    for (const round of [-1, 1.5, '1']) await refusal({ height: '1', round, step: 0 }, r(round));
    const s = (v: unknown) => `step: must be 0..3, got ${JSON.stringify(v)}`;
    for (const step of [-1, 4, 1.5, '2']) await refusal({ height: '1', round: 0, step }, s(step));
  });

  it('refuses sign bytes that are not hex, or present without a signature', async () => {
    const sig = Buffer.alloc(64, 1).toString('base64');
    for (const signbytes of [7, 1234, [], 'ABC', 'zz', 'zz00', '00zz', '0g'])
      await refusal(
        { height: '1', round: 0, step: 2, signature: sig, signbytes },
        'signbytes: must be a hex string',
      );
    await refusal(
      { height: '1', round: 0, step: 2, signbytes: '00' },
      'signbytes present without a signature',
    );
  });

  it('loads the boundary values and the fields CometBFT may leave out', async () => {
    assert.deepEqual((await signer({ height: '0', round: 0, step: 0 })).pv.lastSignState(), {
      height: 0,
      round: 0,
      step: 0,
      signature: new Uint8Array(0),
      signBytes: new Uint8Array(0),
    });
    const numeric = (await signer({ height: 7 })).pv.lastSignState();
    assert.deepEqual([numeric.height, numeric.round, numeric.step], [7, 0, 0]);
    assert.equal((await signer({ height: '7', round: 0, step: 3 })).pv.lastSignState().step, 3);
  });

  it('reads back the signature and sign bytes it wrote, and reuses them for the same vote after a restart', async () => {
    const { stateFile, pv } = await signer();
    const first = await pv.signVote(CHAIN_ID, prevote(5, 0));
    const reloaded = await FilePV.fromKey(key, stateFile, new NodeFs());
    const s = reloaded.lastSignState();
    assert.deepEqual(s.signature, first.signature);
    assert.deepEqual(s.signBytes, voteSignBytes(CHAIN_ID, first));
    const again = await reloaded.signVote(CHAIN_ID, prevote(5, 0, GENESIS_TIME + 500n * MS));
    assert.deepEqual(again.signature, first.signature);
    assert.equal(again.timestamp, first.timestamp);
  });

  it('refuses to sign a height/round/step marked signed when no sign bytes are stored', async () => {
    const { pv } = await signer({ height: '5', round: 0, step: 2 });
    await assert.rejects(
      pv.signVote(CHAIN_ID, prevote(5, 0)),
      (e: Error) =>
        e instanceof DoubleSignError &&
        e.message === 'already signed height 5 round 0 step 2 but no sign bytes are stored',
    );
    assert.equal(pv.storedVote(CHAIN_ID, prevote(5, 0)), undefined);
  });

  it('signs a later round at the same height even at an earlier step', async () => {
    const { pv } = await signer();
    const precommit = { ...prevote(5, 0), type: 2 as const };
    await pv.signVote(CHAIN_ID, precommit);
    const v = await pv.signVote(CHAIN_ID, prevote(5, 1));
    assert.ok(ed25519Verify(key.publicKey, voteSignBytes(CHAIN_ID, v), v.signature));
    assert.deepEqual(
      [pv.lastSignState().height, pv.lastSignState().round, pv.lastSignState().step],
      [5, 1, 2],
    );
  });

  it('writes the state atomically before answering; a failed write signs nothing', async () => {
    const fs = new SpyFs();
    const { stateFile, pv } = await signer(undefined, fs);
    fs.calls.length = 0;
    await pv.signVote(CHAIN_ID, prevote(5, 0));
    assert.deepEqual(fs.calls, ['writeAtomic priv_validator_state.json']);
    const before = readFileSync(stateFile, 'utf8');
    fs.failWriteAtomic = true;
    await assert.rejects(pv.signVote(CHAIN_ID, prevote(6, 0)), /injected: disk full/);
    assert.equal(pv.lastSignState().height, 5, 'the guard did not move');
    assert.equal(readFileSync(stateFile, 'utf8'), before);
    fs.failWriteAtomic = false;
    // the same vote is signed once the disk works again (nothing was recorded as signed)
    const v = await pv.signVote(CHAIN_ID, prevote(6, 0));
    assert.equal(pv.lastSignState().height, 6);
    assert.ok(ed25519Verify(key.publicKey, voteSignBytes(CHAIN_ID, v), v.signature));
    await fs.close();
  });

  it('address() is the address of the key', async () => {
    const { pv } = await signer();
    assert.deepEqual(pv.address(), key.address);
  });

  it('rewinds the guard for the dev chain, in memory and on disk, so the heights above are signed again', async () => {
    const { stateFile, pv } = await signer();
    await pv.signVote(CHAIN_ID, prevote(5, 1));
    await pv.rewindForDevChain(3);
    assert.deepEqual(JSON.parse(readFileSync(stateFile, 'utf8')), { height: '3', round: 0, step: 0 });
    assert.deepEqual(pv.lastSignState(), {
      height: 3,
      round: 0,
      step: 0,
      signature: new Uint8Array(0),
      signBytes: new Uint8Array(0),
    });
    const v = await pv.signVote(CHAIN_ID, prevote(4, 0));
    assert.ok(ed25519Verify(key.publicKey, voteSignBytes(CHAIN_ID, v), v.signature));
    const dir = tmp();
    const file = join(dir, 'pv.json');
    assert.deepEqual((await FilePV.rewindStateFile(new NodeFs(), file, 8)).height, 8);
    assert.equal(readFileSync(file, 'utf8'), '{\n  "height": "8",\n  "round": 0,\n  "step": 0\n}\n');
  });

  it('storedVote rebuilds the vote signed at this height/round/step, and nothing for any other', async () => {
    const { pv } = await signer();
    const signed = await pv.signVote(CHAIN_ID, prevote(5, 2));
    const nilPrevote = { ...signedVote(chain, key, 1, 5, 2, null), signature: new Uint8Array(0) };
    const stored = pv.storedVote(CHAIN_ID, nilPrevote)!;
    assert.deepEqual(stored, {
      ...nilPrevote,
      blockId: signed.blockId,
      timestamp: signed.timestamp,
      signature: signed.signature,
    });
    assert.ok(ed25519Verify(key.publicKey, voteSignBytes(CHAIN_ID, stored), stored.signature));
    assert.equal(pv.storedVote(CHAIN_ID, { ...nilPrevote, height: 6 }), undefined, 'other height');
    assert.equal(pv.storedVote(CHAIN_ID, { ...nilPrevote, height: 4 }), undefined, 'lower height');
    assert.equal(pv.storedVote(CHAIN_ID, { ...nilPrevote, round: 1 }), undefined, 'other round');
    assert.equal(pv.storedVote(CHAIN_ID, { ...nilPrevote, type: 2 }), undefined, 'precommit');
    assert.equal(pv.storedVote('other-chain', nilPrevote), undefined, 'other chain');
    const precommit = await pv.signVote(CHAIN_ID, { ...prevote(5, 2), type: 2 });
    const storedPrecommit = pv.storedVote(CHAIN_ID, { ...nilPrevote, type: 2 })!;
    assert.deepEqual(storedPrecommit.signature, precommit.signature);
    assert.equal(storedPrecommit.type, 2);
    assert.equal(pv.storedVote(CHAIN_ID, nilPrevote), undefined, 'the prevote step is past');
    // a proposal signed at this height and round is no vote
    const proposer = (await signer()).pv;
    await proposer.signProposal(CHAIN_ID, {
      height: 5,
      round: 2,
      polRound: -1,
      blockId: signed.blockId,
      timestamp: GENESIS_TIME,
      signature: new Uint8Array(0),
    });
    assert.equal(proposer.storedVote(CHAIN_ID, nilPrevote), undefined, 'a proposal at this round');
  });

  it('signs a vote extension only when asked, over the extension (empty when absent)', async () => {
    const { pv } = await signer();
    const precommit = { ...prevote(5, 0), type: 2 as const, extension: Buffer.from('ext') };
    const plain = await pv.signVote(CHAIN_ID, precommit);
    assert.equal(plain.extensionSignature, undefined);
    const bare = { ...prevote(6, 0), type: 2 as const };
    const withExt = pv.withExtensionSignature(CHAIN_ID, bare);
    assert.deepEqual(withExt.extension, new Uint8Array(0));
    assert.deepEqual(
      { ...withExt, extension: undefined, extensionSignature: undefined },
      {
        ...bare,
        extension: undefined,
        extensionSignature: undefined,
      },
    );
    assert.ok(
      ed25519Verify(
        key.publicKey,
        voteExtensionSignBytes(CHAIN_ID, { height: 6, round: 0, extension: new Uint8Array(0) }),
        withExt.extensionSignature!,
      ),
    );
    const ext = pv.withExtensionSignature(CHAIN_ID, { ...bare, extension: Buffer.from('abc') });
    assert.deepEqual(ext.extension, Buffer.from('abc'));
    assert.ok(
      ed25519Verify(
        key.publicKey,
        voteExtensionSignBytes(CHAIN_ID, { height: 6, round: 0, extension: Buffer.from('abc') }),
        ext.extensionSignature!,
      ),
    );
  });

  it('a proposal signed again with a later timestamp gets the stored signature and timestamp', async () => {
    const { pv } = await signer();
    const proposal: Proposal = {
      height: 5,
      round: 0,
      polRound: -1,
      blockId: prevote(5, 0).blockId,
      timestamp: GENESIS_TIME,
      signature: new Uint8Array(0),
    };
    const first = await pv.signProposal(CHAIN_ID, proposal);
    assert.ok(ed25519Verify(key.publicKey, proposalSignBytes(CHAIN_ID, first), first.signature));
    const again = await pv.signProposal(CHAIN_ID, { ...proposal, timestamp: GENESIS_TIME + 7n * MS });
    assert.equal(again.timestamp, GENESIS_TIME);
    assert.deepEqual(again.signature, first.signature);
    await assert.rejects(
      pv.signProposal(CHAIN_ID, { ...proposal, polRound: 0 }),
      (e: Error) =>
        e instanceof DoubleSignError &&
        e.message === 'conflicting data: height 5 round 0 step 1 was already signed for different data',
    );
  });
});
