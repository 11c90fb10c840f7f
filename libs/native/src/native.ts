// Loads noded_native.node (src/noded_native.cc), compiled by scripts/build-native.mjs into this
// package's compiled directory beside index.js, with noded_native.json naming the @nxtedition/rocksdb
// version whose headers it was compiled against.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Addon {
  mallocTrim(): boolean;
  mallocInfo(): MallocInfo;
  flushMemtables(handle: bigint, location: string): void;
  evictBlockCache(handle: bigint, location: string): { before: number; after: number };
  /** Absent from an add-on built before it was added. */
  keccak256?(data: Uint8Array, out: Uint8Array): void;
  /** Absent from an add-on built before it was added. */
  sha256?(data: Uint8Array, out: Uint8Array): void;
}

/** glibc's heaps (mallinfo2 over every arena), bytes. */
export interface MallocInfo {
  /** What the heaps hold from the system (blocks mmap'd on their own are not counted). */
  heap: number;
  /** Of which free: what malloc_trim can give back, page by page. */
  free: number;
}

export interface NativeStatus {
  /** The add-on is loaded: mallocTrim works. */
  loaded: boolean;
  /**
   * flushMemtables and evictBlockCache work: the add-on was compiled against the installed
   * @nxtedition/rocksdb.
   */
  flush: boolean;
  /** Why something is off; undefined when both work. */
  reason?: string;
}

const require = createRequire(import.meta.url);
// index.js and the add-on sit in the package's root; this file is in src/.
const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');

function installedRocksVersion(): string | undefined {
  try {
    const main = require.resolve('@nxtedition/rocksdb');
    let dir = dirname(main);
    while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
    return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

function load(): { addon?: Addon; status: NativeStatus } {
  const file = join(packageDir, 'noded_native.node');
  if (!existsSync(file))
    return {
      status: {
        loaded: false,
        flush: false,
        reason: `${file} is not built (npm run build compiles it; it needs g++ and Node's headers)`,
      },
    };
  let addon: Addon;
  try {
    addon = require(file) as Addon;
  } catch (err) {
    return {
      status: { loaded: false, flush: false, reason: `cannot load ${file}: ${(err as Error).message}` },
    };
  }
  let builtFor: string | undefined;
  try {
    builtFor = (
      JSON.parse(readFileSync(join(packageDir, 'noded_native.json'), 'utf8')) as { rocksdb?: string }
    ).rocksdb;
  } catch {
    builtFor = undefined;
  }
  const installed = installedRocksVersion();
  if (builtFor === undefined || builtFor !== installed)
    return {
      addon,
      status: {
        loaded: true,
        flush: false,
        reason: `noded_native.node was compiled against @nxtedition/rocksdb ${builtFor ?? '(unknown)'}, ${installed ?? 'none'} is installed: rebuild it (npm run build)`,
      },
    };
  return { addon, status: { loaded: true, flush: true } };
}

const { addon, status } = load();

/** What of the add-on works in this process, and why not when something does not. */
export function nativeStatus(): NativeStatus {
  return { ...status };
}

/**
 * glibc's malloc_trim(0): gives the free pages inside malloc's heaps back to the system. Process-wide,
 * takes a few milliseconds on a heap of tens of MB. false when nothing was given back or the add-on is
 * not loaded.
 */
export function mallocTrim(): boolean {
  return addon?.mallocTrim() ?? false;
}

/**
 * glibc's mallinfo2(): what malloc's heaps hold and how much of it is free. undefined when the add-on
 * is not loaded. Walks each arena's free lists under its lock: cheap once a minute, not per request.
 */
export function mallocInfo(): MallocInfo | undefined {
  return addon?.mallocInfo();
}

/**
 * Schedules RocksDB's flush of a database's memtables (its default column family) on RocksDB's
 * background thread: they are written to a table file and their memory freed. `handle` is the
 * binding's `RocksLevel#handle`, `location` the path it was opened at (checked against the handle).
 * false when the add-on cannot flush (see nativeStatus); throws what RocksDB or the check refused.
 */
export function flushMemtables(handle: bigint, location: string): boolean {
  if (addon === undefined || !status.flush) return false;
  addon.flushMemtables(handle, location);
  return true;
}

/**
 * Drops every block no reader holds from a database's block cache (data, index and filter blocks):
 * what a load's reads left there, held as live malloc blocks that malloc_trim cannot return until
 * they are freed. The next read of each block goes to the table file (the OS page cache, usually).
 * Returns the cache's usage before and after, bytes; undefined when the add-on cannot (see
 * nativeStatus); throws what the handle check refused.
 */
export function evictBlockCache(
  handle: bigint,
  location: string,
): { before: number; after: number } | undefined {
  if (addon === undefined || !status.flush) return undefined;
  return addon.evictBlockCache(handle, location);
}

/** A digest of the add-on as a function that returns a new 32-byte array; undefined when absent. */
function oneCallDigest(
  digest: ((data: Uint8Array, out: Uint8Array) => void) | undefined,
): ((data: Uint8Array) => Uint8Array) | undefined {
  if (typeof digest !== 'function') return undefined;
  return (data: Uint8Array) => {
    const out = new Uint8Array(32);
    digest(data, out);
    return out;
  };
}

/**
 * Keccak-256 of `data` in one call of the add-on (a new 32-byte array), or undefined when the add-on
 * is not loaded or has no keccak256: then @noded/crypto uses the `keccak` package's binding. Needs
 * no RocksDB: it works whenever the add-on loads.
 */
export const nativeKeccak256 = oneCallDigest(addon?.keccak256);

/**
 * SHA-256 of `data` in one call of the add-on (a new 32-byte array), or undefined when the add-on is
 * not loaded or has no sha256: then @noded/crypto uses node:crypto. Needs no RocksDB.
 */
export const nativeSha256 = oneCallDigest(addon?.sha256);
