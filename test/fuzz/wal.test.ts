// Fuzzing the consensus WAL reader (libs/consensus/src/wal.ts): what Wal writes, parseWal reads back
// record for record; a damaged log (torn, bit-flipped, spliced) or records with a valid CRC around
// payloads that are not WAL entries never make the reader throw: it keeps the good prefix, reports
// where it stopped, and Wal.open repairs the file to that prefix.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crc32 } from 'node:zlib';
import { encodeTagged, parseWal, Wal, type WalEntry } from '@noded/consensus';
import { toTaggedJson } from '@noded/consensus/src/codec/json.js';
import { MemFs } from '@noded/consensus/src/sim/memfs.js';
import { silentLogger } from '@noded/types';
import fc from 'fast-check';
import { block, commit, evidence, height, proposal, round, vote } from './consensus-arbitraries.js';
import { applyMutations, bytesOf, checkAsync, int64, mutated, mutations, rec } from './fuzz.js';

const now = int64;
const nonNegativeHeight = height;

const walEntry: fc.Arbitrary<WalEntry> = fc.oneof(
  rec({ kind: fc.constant('vote' as const), vote, now }),
  rec({ kind: fc.constant('ownVote' as const), vote, now }),
  rec({
    kind: fc.constant('timeout' as const),
    height,
    round,
    step: fc.constantFrom('NewHeight', 'Propose', 'PrevoteWait', 'PrecommitWait') as fc.Arbitrary<'Propose'>,
    now,
  }),
  rec({ kind: fc.constant('proposal' as const), proposal, block, now }),
  rec({ kind: fc.constant('ownProposal' as const), proposal, block, now }),
  rec({ kind: fc.constant('commitCert' as const), block, commit, now }),
  rec({ kind: fc.constant('txsAvailable' as const), now }),
  rec({
    kind: fc.constant('proposalTxs' as const),
    height,
    round,
    txs: fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 4 }),
    evidence: fc.array(evidence, { maxLength: 1 }),
    now,
  }),
  rec({
    kind: fc.constant('blockValidated' as const),
    height,
    blockHash: bytesOf(32),
    valid: fc.boolean(),
    now,
  }),
);

type Op = { h: number; e: WalEntry } | { end: number };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: rec({ h: nonNegativeHeight, e: walEntry }) },
  { weight: 1, arbitrary: rec({ end: nonNegativeHeight }) },
);
const ops = fc.array(op, { maxLength: 8 });

const DIR = '/fuzz/data/cs.wal';
const PATH = `${DIR}/wal`;

async function writeLog(list: Op[]): Promise<Uint8Array> {
  const fs = new MemFs();
  const wal = await Wal.open(fs, DIR, silentLogger);
  for (const o of list) {
    if ('end' in o) await wal.writeEndHeight(o.end);
    else await wal.write(o.h, o.e, false);
  }
  await wal.close();
  return (await fs.readFile(PATH)) ?? new Uint8Array(0);
}

/** A record as wal.ts frames it: crc32 (BE) | length (BE) | payload. */
function record(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, crc32(payload) >>> 0);
  view.setUint32(4, payload.length);
  out.set(payload, 8);
  return out;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isHeight = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** What replay relies on: an end marker with a height, or an entry with a height and a kind. */
function wellFormed(p: unknown): boolean {
  if (!isObject(p)) return false;
  if ('end' in p) return isHeight(p.end);
  return isHeight(p.h) && isObject(p.e) && typeof p.e.kind === 'string';
}

/** The reader's contract on any bytes; returns what it parsed. */
function checkReader(bytes: Uint8Array) {
  const parsed = parseWal(bytes);
  assert.ok(parsed.goodLength >= 0 && parsed.goodLength <= bytes.length);
  assert.equal(parsed.error === undefined, parsed.goodLength === bytes.length, 'an error iff bytes are left');
  for (const p of parsed.payloads) if (!wellFormed(p)) assert.fail(`ill-formed payload ${toTaggedJson(p)}`);
  const prefix = parseWal(bytes.subarray(0, parsed.goodLength));
  assert.equal(prefix.error, undefined);
  assert.equal(prefix.goodLength, parsed.goodLength);
  assert.deepStrictEqual(prefix.payloads, parsed.payloads);
  return parsed;
}

/** Wal.open on `bytes`: repairs to the good prefix, and replay's reads do not throw. */
async function checkOpen(bytes: Uint8Array): Promise<void> {
  const fs = new MemFs();
  await fs.mkdirp();
  fs.corrupt(PATH, bytes);
  const wal = await Wal.open(fs, DIR, silentLogger);
  const parsed = parseWal(bytes);
  const kept = (await fs.readFile(PATH)) ?? new Uint8Array(0);
  assert.equal(kept.length, parsed.goodLength);
  const heights = new Set<number>([0, 1]);
  for (const p of parsed.payloads) if ('h' in p) heights.add(p.h);
  for (const h of heights) wal.entriesFor(h);
  wal.lastEndHeight();
  await wal.close();
}

/** Payloads framed with a valid CRC that are not (all) WAL entries. */
const foreignPayload: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.json().map((t) => new TextEncoder().encode(t)),
  fc.jsonValue().map((v) => encodeTagged(v)),
  rec({ h: fc.jsonValue(), e: fc.jsonValue() }).map((v) => encodeTagged(v)),
  rec({ end: fc.jsonValue() }).map((v) => encodeTagged(v)),
  fc.uint8Array({ maxLength: 64 }).map((b) => Uint8Array.from([0x01, ...b])),
  fc.uint8Array({ maxLength: 64 }),
);

describe('fuzz: consensus WAL reader', () => {
  it('parseWal reads back every record Wal wrote, in order', async () => {
    await checkAsync(
      fc.asyncProperty(ops, async (list) => {
        const bytes = await writeLog(list);
        const parsed = checkReader(bytes);
        assert.equal(parsed.error, undefined);
        assert.deepStrictEqual(parsed.payloads, list);
        // Replay: the entries after the last end marker, of the height asked for.
        const fs = new MemFs();
        fs.corrupt(PATH, bytes);
        const wal = await Wal.open(fs, DIR, silentLogger);
        const lastEnd = list.findLastIndex((o) => 'end' in o);
        const tail = list.slice(lastEnd + 1) as Array<{ h: number; e: WalEntry }>;
        for (const h of new Set(tail.map((o) => o.h))) {
          assert.deepStrictEqual(
            wal.entriesFor(h),
            tail.filter((o) => o.h === h).map((o) => ({ height: o.h, entry: o.e })),
          );
        }
        const end = lastEnd < 0 ? undefined : (list[lastEnd] as { end: number }).end;
        assert.equal(wal.lastEndHeight(), end);
      }),
      4,
    );
  });

  it('a damaged log never makes the reader throw; Wal.open keeps the good prefix', async () => {
    await checkAsync(
      fc.asyncProperty(ops, mutations, async (list, ms) => {
        const bytes = applyMutations(await writeLog(list), ms);
        checkReader(bytes);
        await checkOpen(bytes);
      }),
      4,
    );
  });

  it('arbitrary bytes, and spliced records with a valid CRC, never make the reader throw', async () => {
    const framed = fc.array(foreignPayload, { maxLength: 3 }).map((ps) => Buffer.concat(ps.map(record)));
    await checkAsync(
      fc.asyncProperty(fc.oneof(fc.uint8Array({ maxLength: 300 }), mutated(framed)), async (bytes) => {
        checkReader(bytes);
        await checkOpen(bytes);
      }),
      2,
    );
  });

  it('records with a valid CRC around foreign payloads: rejected as a corrupt tail, never replayed', async () => {
    await checkAsync(
      fc.asyncProperty(
        ops,
        fc.array(foreignPayload, { minLength: 1, maxLength: 3 }),
        async (list, foreign) => {
          const good = await writeLog(list);
          const bytes = Buffer.concat([good, ...foreign.map(record)]);
          const parsed = checkReader(bytes);
          assert.ok(parsed.goodLength >= good.length, 'the records Wal wrote are all kept');
          await checkOpen(bytes);
        },
      ),
      4,
    );
  });

  it('a log cut anywhere keeps exactly the whole records before the cut', async () => {
    await checkAsync(
      fc.asyncProperty(ops, fc.nat(), async (list, cutSeed) => {
        const bytes = await writeLog(list);
        const ends: number[] = [0];
        const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        while (ends.at(-1)! < bytes.length) ends.push(ends.at(-1)! + 8 + view.getUint32(ends.at(-1)! + 4));
        const cut = cutSeed % (bytes.length + 1);
        const whole = ends.filter((e) => e <= cut);
        const parsed = checkReader(bytes.subarray(0, cut));
        assert.equal(parsed.goodLength, whole.at(-1));
        assert.deepStrictEqual(parsed.payloads, list.slice(0, whole.length - 1));
      }),
      4,
    );
  });
});
