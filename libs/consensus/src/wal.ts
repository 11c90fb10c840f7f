// Write-ahead log of the engine's inputs. Append-only file `<dir>/wal`; each record is
//   crc32 (4 bytes, big-endian, IEEE, over the payload) | length (4 bytes, big-endian) | payload
// where the payload is tagged JSON: {"h":<height>,"e":<WalEntry>} for an input processed at height h,
// or {"end":<height>} once that height's block is stored (written with fsync before the block is
// applied). Votes, the bulk of the log, use a compact binary payload instead:
//   0x01 | kind (0 vote, 1 own vote) | height (8 bytes BE) | now (8 bytes BE, ns) | protobuf Vote. Replay after a restart feeds back the entries of the current height that follow the last
// end marker. On open, a torn or corrupt tail is copied aside to `wal.corrupted-<n>` and the file cut
// back to its last good record, with a warning: a crash mid-write is repaired, never a crash loop.
// Past a size limit the file is rotated to `wal.1` at an end marker (only the current height matters).
import { crc32 } from 'node:zlib';
import type { Logger } from '@noded/types';
import { decodeTagged, encodeTagged, toTaggedJson } from './codec/json.js';
import { decodeVote, encodeVote } from './codec/types.js';
import type { WalEntry } from './engine/types.js';
import { ConsensusError } from './errors.js';
import type { DurableFs } from './fs.js';

const HEADER = 8;
/** Largest record accepted when reading (a block of 100 MB in base64 fits). */
export const MAX_WAL_RECORD_BYTES = 160 * 1024 * 1024;
export const DEFAULT_WAL_ROTATE_BYTES = 64 * 1024 * 1024;

type Payload = { h: number; e: WalEntry } | { end: number };

export interface WalRecord {
  height: number;
  entry: WalEntry;
}

const VOTE_PAYLOAD = 0x01;

function encodePayload(p: Payload): Uint8Array {
  if ('h' in p && (p.e.kind === 'vote' || p.e.kind === 'ownVote')) {
    const vote = encodeVote(p.e.vote);
    const out = new Uint8Array(18 + vote.length);
    const view = new DataView(out.buffer);
    out[0] = VOTE_PAYLOAD;
    out[1] = p.e.kind === 'vote' ? 0 : 1;
    view.setBigUint64(2, BigInt(p.h));
    view.setBigInt64(10, p.e.now);
    out.set(vote, 18);
    return out;
  }
  return encodeTagged(p);
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A value quoted in a message, cut short (a record can be large). */
function show(v: unknown): string {
  const text = toTaggedJson(v) ?? String(v);
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}

function walHeight(what: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new ConsensusError('WAL', `${what} ${show(v)} is not a non-negative integer`);
  return v;
}

/**
 * A JSON record is only replayed when it has the shape of one: {"end":<height>}, or {"h":<height>,
 * "e":{"kind":<string>,...}}. Anything else with a valid CRC (a foreign or hand-edited file) is a
 * corrupt record, cut off like a torn one, instead of crashing replay.
 */
function checkPayload(p: unknown): Payload {
  if (!isRecord(p)) throw new ConsensusError('WAL', `record ${show(p)} is not an object`);
  if ('end' in p) {
    walHeight('end marker height', p.end);
    return p as Payload;
  }
  walHeight('entry height', p.h);
  if (!isRecord(p.e) || typeof p.e.kind !== 'string')
    throw new ConsensusError('WAL', `entry ${show(p.e)} has no kind`);
  return p as Payload;
}

function decodePayload(bytes: Uint8Array): Payload {
  if (bytes[0] !== VOTE_PAYLOAD) return checkPayload(decodeTagged<unknown>(bytes));
  if (bytes.length < 18) throw new ConsensusError('WAL', `vote record of ${bytes.length} bytes is too short`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kind = bytes[1] === 0 ? 'vote' : 'ownVote';
  return {
    h: walHeight('vote record height', Number(view.getBigUint64(2))),
    e: { kind, vote: decodeVote(bytes.subarray(18)), now: view.getBigInt64(10) },
  };
}

function frame(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, crc32(payload) >>> 0);
  view.setUint32(4, payload.length);
  out.set(payload, HEADER);
  return out;
}

/** Parses records until the first bad one; returns them and the offset where the good part ends. */
export function parseWal(bytes: Uint8Array): { payloads: Payload[]; goodLength: number; error?: string } {
  const payloads: Payload[] = [];
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let off = 0;
  while (off < bytes.length) {
    if (bytes.length - off < HEADER)
      return { payloads, goodLength: off, error: `torn record header at byte ${off}` };
    const crc = view.getUint32(off);
    const len = view.getUint32(off + 4);
    if (len > MAX_WAL_RECORD_BYTES)
      return {
        payloads,
        goodLength: off,
        error: `record length ${len} at byte ${off} exceeds ${MAX_WAL_RECORD_BYTES}`,
      };
    if (bytes.length - off - HEADER < len)
      return { payloads, goodLength: off, error: `torn record at byte ${off} (${len} bytes announced)` };
    const payload = bytes.subarray(off + HEADER, off + HEADER + len);
    if (crc32(payload) >>> 0 !== crc)
      return { payloads, goodLength: off, error: `crc mismatch in record at byte ${off}` };
    try {
      payloads.push(decodePayload(payload));
    } catch (err) {
      return {
        payloads,
        goodLength: off,
        error: `undecodable record at byte ${off}: ${(err as Error).message}`,
      };
    }
    off += HEADER + len;
  }
  return { payloads, goodLength: off };
}

export class Wal {
  private size = 0;
  private closed = false;

  private constructor(
    private readonly fs: DurableFs,
    private readonly path: string,
    private readonly dir: string,
    private records: Payload[],
    private readonly rotateBytes: number,
  ) {}

  /** Opens (creating) `<dir>/wal`, repairing a corrupt tail. */
  static async open(
    fs: DurableFs,
    dir: string,
    logger: Logger,
    rotateBytes = DEFAULT_WAL_ROTATE_BYTES,
  ): Promise<Wal> {
    await fs.mkdirp(dir);
    const path = `${dir}/wal`;
    const bytes = (await fs.readFile(path)) ?? new Uint8Array(0);
    const parsed = parseWal(bytes);
    if (parsed.error) {
      const existing = await fs.list(dir);
      let n = 0;
      while (existing.includes(`wal.corrupted-${n}`)) n++;
      const backup = `${dir}/wal.corrupted-${n}`;
      await fs.writeAtomic(backup, bytes);
      await fs.truncate(path, parsed.goodLength);
      logger.warn(
        {
          wal: path,
          backup,
          keptBytes: parsed.goodLength,
          droppedBytes: bytes.length - parsed.goodLength,
          reason: parsed.error,
        },
        'WAL: corrupt tail moved aside and truncated',
      );
    }
    const wal = new Wal(fs, path, dir, parsed.payloads, rotateBytes);
    wal.size = parsed.goodLength;
    return wal;
  }

  /** Entries recorded for `height` after the last end marker (what replay feeds back). */
  entriesFor(height: number): WalRecord[] {
    let start = 0;
    for (let i = this.records.length - 1; i >= 0; i--) {
      if ('end' in this.records[i]!) {
        start = i + 1;
        break;
      }
    }
    const out: WalRecord[] = [];
    for (const r of this.records.slice(start)) {
      if ('h' in r && r.h === height) out.push({ height: r.h, entry: r.e });
    }
    return out;
  }

  /** The highest end marker in the current file, or undefined. */
  lastEndHeight(): number | undefined {
    for (let i = this.records.length - 1; i >= 0; i--) {
      const r = this.records[i]!;
      if ('end' in r) return r.end;
    }
    return undefined;
  }

  /** Forgets the parsed records once replay is done (they can be large). */
  releaseReplayData(): void {
    this.records = [];
  }

  private async append(payload: Payload, sync: boolean): Promise<void> {
    if (this.closed) throw new ConsensusError('WAL', `WAL ${this.path} is closed`);
    const rec = frame(encodePayload(payload));
    await this.fs.append(this.path, rec);
    this.size += rec.length;
    if (sync) await this.fs.sync(this.path);
  }

  async write(height: number, entry: WalEntry, sync: boolean): Promise<void> {
    await this.append({ h: height, e: entry }, sync);
  }

  async flush(): Promise<void> {
    await this.fs.sync(this.path);
  }

  /**
   * Marks `height` as stored (fsynced unless `sync` is false: replay keeps only the records of the
   * height it replays, so a lost marker changes nothing); rotates the file when it grew past the limit.
   */
  async writeEndHeight(height: number, sync = true): Promise<void> {
    await this.append({ end: height }, sync);
    if (this.size > this.rotateBytes) {
      await this.fs.rename(this.path, `${this.dir}/wal.1`);
      this.size = 0;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.fs.sync(this.path).catch(() => {});
  }
}
