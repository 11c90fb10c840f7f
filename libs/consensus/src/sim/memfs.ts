// In-memory DurableFs for the simulator. Each file keeps what an fsync made durable and what was
// only written; crash() keeps the durable part plus, at random, none, all or a torn prefix of the
// unsynced tail, which is how a real page cache can leave a file after power loss.
import type { DurableFs } from '../fs.js';
import type { CrashSwitch } from './crash.js';
import type { Prng } from './prng.js';

/** A file as durable bytes plus appended chunks (appends stay O(1); reads join them). */
class MemFile {
  private chunks: Uint8Array[] = [];
  private length = 0;
  durableLength = 0;

  constructor(data?: Uint8Array) {
    if (data) this.replace(data);
  }

  get size(): number {
    return this.length;
  }

  append(data: Uint8Array): void {
    this.chunks.push(data.slice());
    this.length += data.length;
  }

  bytes(): Uint8Array {
    if (this.chunks.length !== 1) {
      const out = new Uint8Array(this.length);
      let o = 0;
      for (const c of this.chunks) {
        out.set(c, o);
        o += c.length;
      }
      this.chunks = [out];
    }
    return this.chunks[0] ?? new Uint8Array(0);
  }

  replace(data: Uint8Array): void {
    this.chunks = [data.slice()];
    this.length = data.length;
    this.durableLength = data.length;
  }

  cut(size: number): void {
    this.replace(this.bytes().subarray(0, size));
  }
}

export class MemFs implements DurableFs {
  private readonly files = new Map<string, MemFile>();

  constructor(private readonly crash?: CrashSwitch) {}

  async readFile(path: string): Promise<Uint8Array | undefined> {
    return this.files.get(path)?.bytes().slice();
  }

  async append(path: string, data: Uint8Array): Promise<void> {
    this.crash?.tick();
    let f = this.files.get(path);
    if (!f) {
      f = new MemFile();
      this.files.set(path, f);
    }
    f.append(data);
  }

  async sync(path: string): Promise<void> {
    this.crash?.tick();
    const f = this.files.get(path);
    if (f) f.durableLength = f.size;
  }

  async writeAtomic(path: string, data: Uint8Array): Promise<void> {
    this.crash?.tick();
    this.files.set(path, new MemFile(data));
  }

  async truncate(path: string, size: number): Promise<void> {
    this.files.get(path)?.cut(size);
  }

  async rename(from: string, to: string): Promise<void> {
    const f = this.files.get(from);
    if (!f) return;
    this.files.delete(from);
    f.durableLength = f.size;
    this.files.set(to, f);
  }

  async remove(path: string): Promise<void> {
    this.files.delete(path);
  }

  async size(path: string): Promise<number | undefined> {
    return this.files.get(path)?.size;
  }

  async mkdirp(): Promise<void> {}

  async list(dir: string): Promise<string[]> {
    const prefix = `${dir}/`;
    return [...this.files.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
  }

  async close(): Promise<void> {}

  /** Power loss: unsynced bytes are lost, kept, or torn at a random point. */
  crashLoseUnsynced(rng: Prng): void {
    for (const f of this.files.values()) {
      if (f.size <= f.durableLength) continue;
      const tail = f.size - f.durableLength;
      const r = rng.next();
      const keep = r < 0.5 ? 0 : r < 0.75 ? tail : rng.int(tail);
      f.cut(f.durableLength + keep);
    }
  }

  /** Test helper: overwrite a file's bytes (durable). */
  corrupt(path: string, data: Uint8Array): void {
    this.files.set(path, new MemFile(data));
  }
}
