// The machinery shared by the three TOML schemas. A schema is a tree of TomlSection classes whose
// property initialisers are the defaults and whose decorators are the rules, so keys, defaults and
// rules are written once. Loading fills a fresh default tree from the parsed TOML (reporting unknown
// keys), validates every section with class-validator, and puts the default back wherever a value is
// bad, so the typed config is always complete and each bad key is reported exactly once.
import { validateSync } from 'class-validator';
import { type ConfigProblem, describeValue } from '../problems.js';

export abstract class TomlSection {}

type Indexable = Record<string, unknown>;

function isTable(v: unknown): v is Indexable {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

function suggestion(key: string, known: string[]): string {
  let best: string | undefined;
  let bestD = Math.min(4, Math.max(1, Math.floor(key.length / 4)) + 1);
  for (const k of known) {
    const d = editDistance(key, k);
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best === undefined ? '' : ` (did you mean "${best}"?)`;
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);

/**
 * Copies `raw` into `target` (a default tree). Unknown keys and tables where a value belongs (or the
 * reverse) become problems; keys the file leaves out keep their defaults.
 */
export function fillSection(
  file: string,
  path: string,
  target: TomlSection,
  raw: unknown,
  problems: ConfigProblem[],
): void {
  const t = target as unknown as Indexable;
  if (!isTable(raw)) {
    problems.push({ file, key: path, message: `must be a table [${path}], got ${describeValue(raw)}` });
    return;
  }
  const known = Object.keys(t);
  for (const [key, value] of Object.entries(raw)) {
    if (!Object.hasOwn(t, key)) {
      problems.push({ file, key: join(path, key), message: `unknown key${suggestion(key, known)}` });
      continue;
    }
    const slot = t[key];
    if (slot instanceof TomlSection) fillSection(file, join(path, key), slot, value, problems);
    else t[key] = value;
  }
}

/**
 * Validates each section of the tree; a bad value is reported and replaced by the default found at
 * the same place in `defaults`. Returns the dotted paths of the keys that were bad.
 */
export function validateTree(
  file: string,
  path: string,
  section: TomlSection,
  defaults: TomlSection,
  problems: ConfigProblem[],
  bad: Set<string> = new Set(),
): Set<string> {
  const s = section as unknown as Indexable;
  const d = defaults as unknown as Indexable;
  for (const err of validateSync(section, { forbidUnknownValues: false })) {
    for (const message of Object.values(err.constraints ?? {})) {
      problems.push({ file, key: join(path, err.property), message });
    }
    bad.add(join(path, err.property));
    s[err.property] = d[err.property];
  }
  for (const [key, value] of Object.entries(s)) {
    if (value instanceof TomlSection)
      validateTree(file, join(path, key), value, d[key] as TomlSection, problems, bad);
  }
  return bad;
}

/** Key paths of every value in a tree (sections excluded), in declaration order. */
export function keyPaths(section: TomlSection, path = ''): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(section)) {
    if (value instanceof TomlSection) out.push(...keyPaths(value, join(path, key)));
    else out.push(join(path, key));
  }
  return out;
}

/** Deep copy of a section tree, keeping the classes (so decorators still apply). */
export function cloneSection<T extends TomlSection>(section: T): T {
  const copy = Object.create(Object.getPrototypeOf(section)) as Indexable;
  for (const [key, value] of Object.entries(section)) {
    copy[key] =
      value instanceof TomlSection ? cloneSection(value) : Array.isArray(value) ? [...value] : value;
  }
  return copy as T;
}

function tomlString(s: string): string {
  // JSON escapes are valid TOML basic-string escapes; TOML also forbids a raw DEL.
  return JSON.stringify(s).replace(/\u007f/g, '\\u007F');
}

function tomlValue(v: unknown): string {
  if (typeof v === 'string') return tomlString(v);
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  throw new Error(`cannot render ${describeValue(v)} as TOML`);
}

const BARE_KEY_RE = /^[A-Za-z0-9_-]+$/;

function comment(text: string | undefined, indent = ''): string {
  if (!text) return '';
  return `${text
    .split('\n')
    .map((l) => `${indent}# ${l}`.trimEnd())
    .join('\n')}\n`;
}

/**
 * Renders a section tree as TOML with a comment above every key and section, from `docs` (keyed by
 * dotted path; the section's own comment under its path).
 */
export function renderToml(header: string, root: TomlSection, docs: Record<string, string>): string {
  let out = comment(header);
  const emit = (section: TomlSection, path: string) => {
    const entries = Object.entries(section);
    const values = entries.filter(([, v]) => !(v instanceof TomlSection));
    const subs = entries.filter(([, v]) => v instanceof TomlSection);
    if (path) out += `\n${comment(docs[path])}[${path}]\n`;
    for (const [key, value] of values) {
      const name = BARE_KEY_RE.test(key) ? key : tomlString(key);
      out += `\n${comment(docs[join(path, key)])}${name} = ${tomlValue(value)}\n`;
    }
    for (const [key, value] of subs) emit(value as TomlSection, join(path, key));
  };
  emit(root, '');
  return out;
}
