// Environment overrides of config.toml and app.toml keys, the Cosmos SDK convention: the key's dotted
// path upper-cased, dots and dashes as underscores, after NODED_ (`[api] address` is
// NODED_API_ADDRESS, `[evm.gas] min_gas_price` is NODED_EVM_GAS_MIN_GAS_PRICE). An override replaces
// the file's value before validation, so it is checked by the same rules and a bad one is reported
// with the variable named. The two files' key sets give distinct names (checked by a test).
import { parse } from 'smol-toml';
import type { ConfigProblem } from './problems.js';
import { keyPaths, type TomlSection } from './schema/section.js';

export const ENV_PREFIX = 'NODED_';

export type Env = Readonly<Record<string, string | undefined>>;

/** The variable that overrides a dotted key: `evm.rpc_address` -> NODED_EVM_RPC_ADDRESS. */
export function envNameOf(key: string): string {
  return `${ENV_PREFIX}${key.toUpperCase().replace(/[.-]/g, '_')}`;
}

type Table = Record<string, unknown>;

function valueAt(tree: unknown, key: string): unknown {
  let node = tree;
  for (const part of key.split('.')) node = (node as Table)[part];
  return node;
}

/** Converts the variable's text to the type the key holds (its default's type). */
function envValue(text: string, defaultValue: unknown): { value: unknown } | { error: string } {
  if (typeof defaultValue === 'string') return { value: text };
  if (Array.isArray(defaultValue)) {
    // A TOML array (`["a", "b"]`) or a comma-separated list; empty text is the empty list.
    if (text.trim().startsWith('[')) return tomlValue(text);
    return {
      value: text
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    };
  }
  if (typeof defaultValue === 'boolean') {
    if (text === 'true') return { value: true };
    if (text === 'false') return { value: false };
    return { error: `must be true or false, got ${JSON.stringify(text)}` };
  }
  return tomlValue(text);
}

function tomlValue(text: string): { value: unknown } | { error: string } {
  try {
    const doc = parse(`v = ${text}`, { integersAsBigInt: 'asNeeded' }) as Table;
    return { value: doc.v };
  } catch {
    return { error: `not a TOML value, got ${JSON.stringify(text)}` };
  }
}

/**
 * Writes every NODED_<KEY> of `env` that names a key of `defaults` into `raw` (the parsed file).
 * Returns the overridden keys with their variables; a value that cannot be converted is a problem
 * naming the variable, and the file's value stays.
 */
export function applyEnvOverrides(
  label: string,
  raw: Table,
  defaults: TomlSection,
  env: Env,
  problems: ConfigProblem[],
): Map<string, string> {
  const applied = new Map<string, string>();
  for (const key of keyPaths(defaults)) {
    const name = envNameOf(key);
    const text = env[name];
    if (text === undefined) continue;
    const converted = envValue(text, valueAt(defaults, key));
    if ('error' in converted) {
      problems.push({ file: label, key, message: `${converted.error} (set by $${name})` });
      continue;
    }
    const parts = key.split('.');
    let node = raw;
    for (const part of parts.slice(0, -1)) {
      const next = node[part];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) node[part] = {};
      node = node[part] as Table;
    }
    node[parts[parts.length - 1]!] = converted.value;
    applied.set(key, name);
  }
  return applied;
}

/** Names the variable in every problem about a key it set (from index `from` of the list on). */
export function markEnvProblems(
  label: string,
  applied: Map<string, string>,
  problems: ConfigProblem[],
  from: number,
): void {
  if (applied.size === 0) return;
  for (let i = from; i < problems.length; i++) {
    const p = problems[i]!;
    const name = p.file === label ? applied.get(p.key) : undefined;
    if (name !== undefined && !p.message.endsWith(`(set by $${name})`)) {
      problems[i] = { ...p, message: `${p.message} (set by $${name})` };
    }
  }
}
