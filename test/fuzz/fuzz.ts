// Shared set-up of the property-based fuzz tests (test/fuzz, docs/reliability.md):
// - NODED_FUZZ_SEED: the seed of every property (default FUZZ_DEFAULT_SEED, so CI is reproducible);
//   "random" draws one per test file and prints it. fast-check prints the seed and the shrunk
//   counterexample's path when a property fails; rerun with that seed (and NODED_FUZZ_PATH) to replay.
// - NODED_FUZZ_RUNS: runs of a property of weight 1 (default 200); heavier properties scale down
//   with their weight, so the whole suite stays well under a minute on two cores.
import fc from 'fast-check';

export const FUZZ_DEFAULT_SEED = 20_260_426;
export const FUZZ_DEFAULT_RUNS = 200;

function envInt(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new Error(`${name} must be an integer, got ${JSON.stringify(text)}`);
  return n;
}

function seedFromEnv(): number {
  if (process.env.NODED_FUZZ_SEED !== 'random') return envInt('NODED_FUZZ_SEED', FUZZ_DEFAULT_SEED);
  const seed = (Date.now() ^ Math.floor(Math.random() * 2 ** 31)) | 0;
  console.log(`NODED_FUZZ_SEED=${seed} (drawn for ${process.argv[1] ?? 'this file'})`);
  return seed;
}

export const FUZZ_SEED = seedFromEnv();
export const FUZZ_RUNS = Math.max(1, envInt('NODED_FUZZ_RUNS', FUZZ_DEFAULT_RUNS));

/** fast-check parameters for a property costing `weight` times a cheap one (fewer runs when heavier). */
export function params(weight = 1): fc.Parameters<unknown> {
  return {
    seed: FUZZ_SEED,
    numRuns: Math.max(1, Math.round(FUZZ_RUNS / weight)),
    // The failing assertion or exception goes into the report node:test prints (not only as a cause).
    includeErrorInReport: true,
    // Replays one counterexample: NODED_FUZZ_PATH is the "path" fast-check printed with the seed.
    ...(process.env.NODED_FUZZ_PATH ? { path: process.env.NODED_FUZZ_PATH, endOnFailure: true } : {}),
  };
}

/** Runs a synchronous property with the suite's seed and run count. */
export function check<Ts extends [unknown, ...unknown[]]>(prop: fc.IProperty<Ts>, weight = 1): void {
  fc.assert(prop, params(weight) as fc.Parameters<Ts>);
}

/** Runs an asynchronous property with the suite's seed and run count. */
export async function checkAsync<Ts extends [unknown, ...unknown[]]>(
  prop: fc.IAsyncProperty<Ts>,
  weight = 1,
): Promise<void> {
  await fc.assert(prop, params(weight) as fc.Parameters<Ts>);
}

// biome-ignore lint/suspicious/noExplicitAny: error classes of any constructor shape
type ErrorClass = abstract new (...args: any[]) => Error;

/** What a call under test did: returned a value, or threw one of the documented errors. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: Error };

/** Calls `fn`; an exception that is not one of `allowed` fails the property (anything else is a bug). */
export function onlyThrows<T>(fn: () => T, ...allowed: ErrorClass[]): Outcome<T> {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    return { ok: false, error: expectAllowed(err, allowed) };
  }
}

/** Async form of onlyThrows. */
export async function onlyRejects<T>(fn: () => Promise<T>, ...allowed: ErrorClass[]): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    return { ok: false, error: expectAllowed(err, allowed) };
  }
}

function expectAllowed(err: unknown, allowed: ErrorClass[]): Error {
  if (allowed.some((c) => err instanceof c)) return err as Error;
  const name = err instanceof Error ? err.constructor.name : typeof err;
  const message = err instanceof Error ? err.message : String(err);
  throw new Error(
    `undocumented exception ${name}: ${message} (allowed: ${allowed.map((c) => c.name).join(', ')})`,
    { cause: err },
  );
}

// ---- byte mutation -----------------------------------------------------------------------------

/** One edit of a byte string; positions are taken modulo the length at the time of the edit. */
type Mutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'set'; at: number; value: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'duplicate'; at: number; length: number };

const position = fc.nat({ max: 1 << 20 });

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: position, bit: fc.nat({ max: 7 }) }),
  fc.record({
    kind: fc.constant('set' as const),
    at: position,
    // Bytes that matter to varints, lengths and RLP prefixes, and any byte.
    value: fc.oneof(
      fc.constantFrom(0x00, 0x01, 0x7f, 0x80, 0xb7, 0xb8, 0xbf, 0xc0, 0xf7, 0xf8, 0xff),
      fc.nat(255),
    ),
  }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: position,
    bytes: fc.uint8Array({ minLength: 1, maxLength: 12 }),
  }),
  fc.record({ kind: fc.constant('delete' as const), at: position, length: fc.integer({ min: 1, max: 16 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: position }),
  fc.record({
    kind: fc.constant('duplicate' as const),
    at: position,
    length: fc.integer({ min: 1, max: 32 }),
  }),
);

export function applyMutation(input: Uint8Array, m: Mutation): Uint8Array {
  const n = input.length;
  const at = n === 0 ? 0 : m.at % n;
  const cat = (...parts: Uint8Array[]) => Uint8Array.from(Buffer.concat(parts));
  switch (m.kind) {
    case 'flip': {
      if (n === 0) return input;
      const out = input.slice();
      out[at] = out[at]! ^ (1 << m.bit);
      return out;
    }
    case 'set': {
      if (n === 0) return Uint8Array.of(m.value);
      const out = input.slice();
      out[at] = m.value;
      return out;
    }
    case 'insert':
      return cat(input.subarray(0, at), m.bytes, input.subarray(at));
    case 'delete':
      return cat(input.subarray(0, at), input.subarray(at + m.length));
    case 'truncate':
      return input.slice(0, at);
    case 'duplicate':
      return cat(input.subarray(0, at + m.length), input.subarray(at));
  }
}

/** One to four random edits, for bytes that are only known later (applyMutations). */
export const mutations: fc.Arbitrary<Mutation[]> = fc.array(mutationArb, { minLength: 1, maxLength: 4 });

export function applyMutations(bytes: Uint8Array, ms: Mutation[]): Uint8Array {
  return ms.reduce(applyMutation, bytes);
}

/** Valid encodings from `valid`, each damaged by one to four random edits. */
export function mutated(valid: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  return fc.tuple(valid, mutations).map(([bytes, ms]) => applyMutations(bytes, ms));
}

/** Arbitrary bytes, valid encodings, and damaged valid encodings, in one arbitrary. */
export function hostileBytes(valid: fc.Arbitrary<Uint8Array>, maxLength = 512): fc.Arbitrary<Uint8Array> {
  return fc.oneof(fc.uint8Array({ maxLength }), valid, mutated(valid), mutated(valid));
}

/** Splits `bytes` at random boundaries (some chunks empty), for stream readers. */
export function chunked(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => (bytes.length === 0 ? 0 : c % (bytes.length + 1))))].sort(
    (a, b) => a - b,
  );
  const out: Uint8Array[] = [];
  let from = 0;
  for (const p of points) {
    out.push(bytes.subarray(from, p));
    from = p;
  }
  out.push(bytes.subarray(from));
  return out;
}

// ---- common value arbitraries ------------------------------------------------------------------

export const bytesOf = (length: number) => fc.uint8Array({ minLength: length, maxLength: length });
/** A signed 64-bit integer as bigint. */
export const int64 = fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n });
/** A non-negative 64-bit integer that CometBFT reads as int64. */
export const nonNegativeInt64 = fc.bigInt({ min: 0n, max: (1n << 63n) - 1n });
/** Characters that trip text codecs: BOM, NUL, replacement character, controls, astral, combining. */
const trickyChar = fc.constantFrom(
  '\uFEFF',
  '\u0000',
  '\uFFFD',
  '\u007F',
  '\n',
  '"',
  '\\',
  'é',
  'e\u0301',
  '😀',
);
const char = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: trickyChar },
);
/** Text of valid Unicode (no lone surrogates), at most `maxLength` UTF-16 code units. */
export const text = (maxLength: number, minLength = 0) =>
  fc
    .string({ unit: char, minLength, maxLength })
    .filter((s) => s.length <= maxLength && s.length >= minLength);
export const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** fc.record of plain objects (fast-check also makes null-prototype ones, which deepStrictEqual tells apart). */
export function rec<T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }): fc.Arbitrary<T> {
  return fc.record(model, { noNullPrototype: true }) as fc.Arbitrary<T>;
}
