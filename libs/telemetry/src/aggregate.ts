// Merging several Prometheus text expositions into one: each source's samples get extra labels (the
// cluster's metrics service adds `service` and `replica`), and each metric family is written once,
// with its HELP and TYPE, followed by the samples of every source. Text format 0.0.4 only.

/** One metric family: its HELP and TYPE lines and its sample lines, in order. */
export interface MetricFamily {
  name: string;
  help?: string;
  type?: string;
  samples: string[];
}

const NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created', '_info'];

/** Escapes a label value as the text format requires (backslash, double quote, newline). */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** The family a sample named `sample` belongs to, among the families declared so far. */
function familyOf(sample: string, declared: Map<string, MetricFamily>): string {
  if (declared.has(sample)) return sample;
  for (const s of SUFFIXES) {
    if (sample.endsWith(s)) {
      const base = sample.slice(0, -s.length);
      if (declared.has(base)) return base;
    }
  }
  return sample;
}

/**
 * Parses an exposition into families, adding `labels` to every sample. A sample that already has one
 * of the added label names is refused (the caller's labels must not be silently replaced). Throws
 * naming the line for anything that is not the text format.
 */
export function parseExposition(text: string, labels: Record<string, string> = {}): MetricFamily[] {
  for (const k of Object.keys(labels)) {
    if (!LABEL_NAME_RE.test(k)) throw new Error(`label name ${JSON.stringify(k)} is not a valid label name`);
  }
  const extra = Object.entries(labels)
    .map(([k, v]) => `${k}="${escapeLabelValue(v)}"`)
    .join(',');
  const families = new Map<string, MetricFamily>();
  const get = (name: string) => {
    let f = families.get(name);
    if (!f) {
      f = { name, samples: [] };
      families.set(name, f);
    }
    return f;
  };
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trimEnd();
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(line);
      if (!m) continue; // a comment
      const f = get(m[2]!);
      if (m[1] === 'HELP') f.help = m[3] ?? '';
      else f.type = (m[3] ?? '').trim();
      continue;
    }
    const name = NAME_RE.exec(line)?.[0];
    if (!name) throw new Error(`line ${i + 1}: not a metric sample: ${JSON.stringify(line.slice(0, 80))}`);
    let rest = line.slice(name.length);
    let out: string;
    if (rest.startsWith('{')) {
      const close = closingBrace(rest);
      if (close < 0)
        throw new Error(`line ${i + 1}: unterminated label set in ${JSON.stringify(line.slice(0, 80))}`);
      const inner = rest.slice(1, close).trim().replace(/,$/, '');
      for (const k of Object.keys(labels)) {
        if (new RegExp(`(^|,)\\s*${k}\\s*=`).test(inner)) {
          throw new Error(`line ${i + 1}: ${name} already has a label ${k}`);
        }
      }
      rest = rest.slice(close + 1);
      const all = [inner, extra].filter((s) => s !== '').join(',');
      out = all === '' ? `${name}${rest}` : `${name}{${all}}${rest}`;
    } else {
      out = extra === '' ? line : `${name}{${extra}}${rest}`;
    }
    if (!/^\s+\S+/.test(rest)) throw new Error(`line ${i + 1}: ${name} has no value`);
    get(familyOf(name, families)).samples.push(out);
  }
  return [...families.values()];
}

/** Index of the `}` closing the label set that starts at 0, skipping quoted values. */
function closingBrace(s: string): number {
  let quoted = false;
  for (let i = 1; i < s.length; i++) {
    const c = s[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === '}') return i;
  }
  return -1;
}

/**
 * Merges families of several sources into one exposition: each family once (the first source's HELP
 * and TYPE), samples in source order. A family whose TYPE differs from the first source's is left
 * out of the later source and reported in `conflicts`.
 */
export function mergeFamilies(sources: MetricFamily[][]): { text: string; conflicts: string[] } {
  const merged = new Map<string, MetricFamily>();
  const conflicts: string[] = [];
  for (const families of sources) {
    for (const f of families) {
      const m = merged.get(f.name);
      if (!m) {
        merged.set(f.name, { ...f, samples: [...f.samples] });
      } else if (m.type !== undefined && f.type !== undefined && m.type !== f.type) {
        conflicts.push(`${f.name}: TYPE ${f.type} here, ${m.type} elsewhere`);
      } else {
        m.help ??= f.help;
        m.type ??= f.type;
        m.samples.push(...f.samples);
      }
    }
  }
  const out: string[] = [];
  for (const f of merged.values()) {
    if (f.samples.length === 0) continue;
    if (f.help !== undefined) out.push(`# HELP ${f.name} ${f.help}`);
    if (f.type !== undefined) out.push(`# TYPE ${f.name} ${f.type}`);
    out.push(...f.samples);
  }
  return { text: out.length > 0 ? `${out.join('\n')}\n` : '', conflicts };
}

/** The value of the first sample of `name` in `families` (no labels matched), or undefined. */
export function sampleValue(families: MetricFamily[], name: string): number | undefined {
  for (const f of families) {
    for (const s of f.samples) {
      const n = NAME_RE.exec(s)?.[0];
      if (n !== name) continue;
      let rest = s.slice(n.length);
      if (rest.startsWith('{')) rest = rest.slice(closingBrace(rest) + 1);
      const v = Number(rest.trim().split(/\s+/)[0]);
      return Number.isFinite(v) ? v : undefined;
    }
  }
  return undefined;
}
