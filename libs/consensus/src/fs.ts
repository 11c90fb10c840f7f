// The few file operations the WAL and the double-sign guard need, with explicit durability.
// NodeFs is the real disk; the simulator supplies an in-memory one that forgets unsynced writes
// when a node crashes.
import { closeSync, constants, fdatasyncSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import {
  type FileHandle,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  truncate,
} from 'node:fs/promises';
import { dirname } from 'node:path';

export interface DurableFs {
  /** The whole file, or undefined when it does not exist. */
  readFile(path: string): Promise<Uint8Array | undefined>;
  /** Appends bytes; they are durable only after sync(path). */
  append(path: string, data: Uint8Array): Promise<void>;
  /** fsync of everything appended so far. */
  sync(path: string): Promise<void>;
  /** Writes `path.tmp`, fsyncs it, renames it over `path` and fsyncs the directory: all or nothing. */
  writeAtomic(path: string, data: Uint8Array): Promise<void>;
  /** Cuts the file to `size` bytes, durably. */
  truncate(path: string, size: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  remove(path: string): Promise<void>;
  size(path: string): Promise<number | undefined>;
  mkdirp(dir: string): Promise<void>;
  list(dir: string): Promise<string[]>;
  /** Releases open handles. */
  close(): Promise<void>;
}

async function fsyncDir(dir: string): Promise<void> {
  let h: FileHandle | undefined;
  try {
    h = await open(dir, constants.O_RDONLY);
    await h.sync();
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic there.
  } finally {
    await h?.close();
  }
}

function fsyncDirSync(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, constants.O_RDONLY);
    fsyncSync(fd);
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic there.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The real file system. The writes on consensus' critical path (WAL appends and fsyncs, the
 * double-sign guard's atomic state write) are synchronous system calls: a signature's state write
 * took 12 ms through the thread pool (eight hops: open, write, fsync, close, rename, open, fsync,
 * close, each queued behind RocksDB's and the logger's work) against about 1 ms of blocking done
 * directly, and a block waits for three of them plus four WAL fsyncs. Reads and rare operations
 * stay asynchronous.
 */
export class NodeFs implements DurableFs {
  private readonly handles = new Map<string, FileHandle>();

  async readFile(path: string): Promise<Uint8Array | undefined> {
    try {
      return new Uint8Array(await readFile(path));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  private async handle(path: string): Promise<FileHandle> {
    let h = this.handles.get(path);
    if (!h) {
      h = await open(path, 'a');
      this.handles.set(path, h);
    }
    return h;
  }

  async append(path: string, data: Uint8Array): Promise<void> {
    const h = await this.handle(path);
    let off = 0;
    while (off < data.length) off += writeSync(h.fd, data, off, data.length - off);
  }

  async sync(path: string): Promise<void> {
    fdatasyncSync((await this.handle(path)).fd);
  }

  async writeAtomic(path: string, data: Uint8Array): Promise<void> {
    const tmp = `${path}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    fsyncDirSync(dirname(path));
  }

  async truncate(path: string, size: number): Promise<void> {
    await this.closeHandle(path);
    await truncate(path, size);
    const h = await open(path, 'r+');
    try {
      await h.sync();
    } finally {
      await h.close();
    }
  }

  private async closeHandle(path: string): Promise<void> {
    const h = this.handles.get(path);
    if (h) {
      this.handles.delete(path);
      await h.close();
    }
  }

  async rename(from: string, to: string): Promise<void> {
    await this.closeHandle(from);
    await this.closeHandle(to);
    await rename(from, to);
    await fsyncDir(dirname(to));
  }

  /** Deletes the file durably (the directory is synced: a removed revert intent stays removed). */
  async remove(path: string): Promise<void> {
    await this.closeHandle(path);
    await rm(path, { force: true });
    await fsyncDir(dirname(path));
  }

  async size(path: string): Promise<number | undefined> {
    try {
      return (await stat(path)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async mkdirp(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
  }

  async list(dir: string): Promise<string[]> {
    try {
      return await readdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }

  async close(): Promise<void> {
    const hs = [...this.handles.values()];
    this.handles.clear();
    await Promise.all(hs.map((h) => h.close()));
  }
}
