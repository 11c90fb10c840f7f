// A minimal renderer for helm/noded, for CI on machines without Helm (no Helm binary installs from the
// npm registry or Debian). It implements only the part of Go's text/template and Helm's functions that
// the chart uses, and refuses anything else by name, so a template that needs more fails here instead
// of rendering wrong. It is not Helm: `helm lint` and `helm template` are what an operator runs
// (docs/deploy.md, "What CI checks and what it does not").
//
// Supported: {{ }} and {{- -}} trimming; comments {{/* */}}; .Values/.Release/.Chart/.Capabilities paths,
// $ and $var paths; string, number, true/false literals; pipelines with | ; if / else if / else / end,
// with, range (over a list or a map, with `$v :=` or `$k, $v :=`), define / include / template;
// the functions and, or, not, eq, ne, contains, gt, join, default, quote, squote, toYaml, nindent, indent, trunc, trimSuffix,
// printf (%s %d %v), required, fail, sha256sum, print, toString, int, b64enc, list, dict.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

type Node =
  | { t: 'text'; s: string }
  | { t: 'action'; pipe: string }
  | { t: 'if'; branches: { cond: string | null; body: Node[] }[] }
  | { t: 'with'; pipe: string; body: Node[]; elseBody: Node[] }
  | { t: 'range'; pipe: string; keyVar?: string; valVar?: string; body: Node[]; elseBody: Node[] }
  | { t: 'define'; name: string; body: Node[] };

export class TemplateError extends Error {}

// biome-ignore lint/suspicious/noExplicitAny: template data is any JSON.
type Any = any;

function lex(src: string, file: string): (string | { action: string })[] {
  const out: (string | { action: string })[] = [];
  const re = /\{\{(-\s)?([\s\S]*?)(\s-)?\}\}/g;
  let last = 0;
  let trimNext = false;
  for (let m = re.exec(src); m; m = re.exec(src)) {
    let text = src.slice(last, m.index);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (m[1]) text = text.replace(/\s+$/, '');
    out.push(text);
    const inner = m[2]!.trim();
    if (!inner.startsWith('/*')) out.push({ action: inner });
    else if (!inner.endsWith('*/')) throw new TemplateError(`${file}: unclosed comment`);
    trimNext = Boolean(m[3]);
    last = re.lastIndex;
  }
  let tail = src.slice(last);
  if (trimNext) tail = tail.replace(/^\s+/, '');
  out.push(tail);
  return out;
}

function parseTree(tokens: (string | { action: string })[], file: string): Node[] {
  let i = 0;
  function block(stops: string[]): { body: Node[]; stop: string } {
    const body: Node[] = [];
    while (i < tokens.length) {
      const tok = tokens[i++]!;
      if (typeof tok === 'string') {
        if (tok !== '') body.push({ t: 'text', s: tok });
        continue;
      }
      const a = tok.action;
      const word = a.split(/\s+/)[0]!;
      if (stops.includes(word) || (word === 'else' && stops.includes('else'))) return { body, stop: a };
      if (word === 'if') {
        const branches: { cond: string | null; body: Node[] }[] = [];
        let cond: string | null = a.slice(2).trim();
        for (;;) {
          const r = block(['else', 'end']);
          branches.push({ cond, body: r.body });
          if (r.stop === 'end') break;
          const rest = r.stop.slice(4).trim();
          cond = rest.startsWith('if ') ? rest.slice(3).trim() : null;
          if (cond === null) {
            const e = block(['end']);
            branches.push({ cond: null, body: e.body });
            break;
          }
        }
        body.push({ t: 'if', branches });
      } else if (word === 'with' || word === 'range') {
        let pipe = a.slice(word.length).trim();
        let keyVar: string | undefined;
        let valVar: string | undefined;
        const decl = /^(\$\w+)(?:\s*,\s*(\$\w+))?\s*:=\s*(.*)$/.exec(pipe);
        if (decl) {
          if (decl[2]) [keyVar, valVar] = [decl[1], decl[2]];
          else valVar = decl[1];
          pipe = decl[3]!;
        }
        const r = block(['else', 'end']);
        const elseBody = r.stop === 'end' ? [] : block(['end']).body;
        if (word === 'with') body.push({ t: 'with', pipe, body: r.body, elseBody });
        else body.push({ t: 'range', pipe, keyVar, valVar, body: r.body, elseBody });
      } else if (word === 'define') {
        const name = JSON.parse(a.slice(6).trim()) as string;
        body.push({ t: 'define', name, body: block(['end']).body });
      } else if (word === 'end' || word === 'else') {
        throw new TemplateError(`${file}: unexpected {{ ${a} }}`);
      } else {
        body.push({ t: 'action', pipe: a });
      }
    }
    if (stops.length > 0) throw new TemplateError(`${file}: missing {{ end }}`);
    return { body, stop: '' };
  }
  return block([]).body;
}

/** Splits on `sep` outside quotes and parentheses. */
function splitTop(s: string, sep: RegExp): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote = '';
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote) {
      cur += c;
      if (c === '\\') cur += s[++i] ?? '';
      else if (c === quote) quote = '';
      continue;
    }
    if (c === '"' || c === '`') {
      quote = c;
      cur += c;
      continue;
    }
    if (c === '(') depth++;
    if (c === ')') depth--;
    if (depth === 0 && sep.test(c)) {
      if (cur !== '') out.push(cur);
      cur = '';
      continue;
    }
    cur += c;
  }
  if (cur !== '') out.push(cur);
  return out;
}

function truthy(v: Any): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function toYaml(v: Any): string {
  if (v === undefined || v === null) return 'null';
  return stringifyYaml(v, { lineWidth: 0 }).replace(/\n$/, '');
}

function goString(v: Any): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

interface Scope {
  dot: Any;
  vars: Record<string, Any>;
}

export class Chart {
  private readonly defines = new Map<string, Node[]>();
  private readonly templates: { file: string; tree: Node[] }[] = [];

  constructor(readonly dir: string) {
    const files: string[] = [];
    const walk = (d: string) => {
      for (const e of readdirSync(d, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(d, e.name));
        else files.push(join(d, e.name));
      }
    };
    walk(join(dir, 'templates'));
    for (const f of files.sort()) {
      const name = relative(dir, f);
      const tree = parseTree(lex(readFileSync(f, 'utf8'), name), name);
      for (const n of tree) if (n.t === 'define') this.defines.set(n.name, n.body);
      this.templates.push({ file: name, tree });
    }
  }

  get chartYaml(): Any {
    return parseYaml(readFileSync(join(this.dir, 'Chart.yaml'), 'utf8'));
  }

  /** Each template file's output (files starting with _ and NOTES.txt included; the caller filters). */
  render(values: Any, release: { name: string; namespace: string }): Map<string, string> {
    const chart = this.chartYaml;
    const root = {
      Values: values,
      Release: {
        Name: release.name,
        Namespace: release.namespace,
        Service: 'Helm',
        IsInstall: true,
        IsUpgrade: false,
      },
      Chart: { Name: chart.name, Version: chart.version, AppVersion: chart.appVersion },
      Capabilities: { KubeVersion: { Version: 'v1.32.0' } },
      Files: { Get: (p: string) => readFileSync(join(this.dir, p), 'utf8') },
    };
    const out = new Map<string, string>();
    for (const t of this.templates) {
      out.set(t.file, this.exec(t.tree, { dot: root, vars: { $: root } }, root, t.file));
    }
    return out;
  }

  private exec(nodes: Node[], scope: Scope, root: Any, file: string): string {
    let s = '';
    for (const n of nodes) {
      switch (n.t) {
        case 'text':
          s += n.s;
          break;
        case 'define':
          break;
        case 'action': {
          const decl = /^(\$\w+)\s*:?=\s*(.*)$/.exec(n.pipe);
          if (decl) scope.vars[decl[1]!] = this.pipe(decl[2]!, scope, root, file);
          else s += goString(this.pipe(n.pipe, scope, root, file));
          break;
        }
        case 'if': {
          for (const b of n.branches) {
            if (b.cond === null || truthy(this.pipe(b.cond, scope, root, file))) {
              s += this.exec(b.body, { dot: scope.dot, vars: { ...scope.vars } }, root, file);
              break;
            }
          }
          break;
        }
        case 'with': {
          const v = this.pipe(n.pipe, scope, root, file);
          if (truthy(v)) s += this.exec(n.body, { dot: v, vars: { ...scope.vars } }, root, file);
          else s += this.exec(n.elseBody, scope, root, file);
          break;
        }
        case 'range': {
          const v = this.pipe(n.pipe, scope, root, file);
          const entries: [Any, Any][] = Array.isArray(v)
            ? v.map((x, i) => [i, x])
            : v && typeof v === 'object'
              ? Object.keys(v)
                  .sort()
                  .map((k) => [k, v[k]])
              : [];
          if (entries.length === 0) s += this.exec(n.elseBody, scope, root, file);
          for (const [k, x] of entries) {
            const vars = { ...scope.vars };
            if (n.keyVar) vars[n.keyVar] = k;
            if (n.valVar) vars[n.valVar] = x;
            s += this.exec(n.body, { dot: x, vars }, root, file);
          }
          break;
        }
      }
    }
    return s;
  }

  private pipe(src: string, scope: Scope, root: Any, file: string): Any {
    let acc: Any;
    let first = true;
    for (const cmd of splitTop(src, /\|/)) {
      const words = splitTop(cmd.trim(), /\s/);
      acc = this.call(words, first ? [] : [acc], scope, root, file);
      first = false;
    }
    return acc;
  }

  private arg(w: string, scope: Scope, root: Any, file: string): Any {
    if (w.startsWith('(') && w.endsWith(')')) return this.pipe(w.slice(1, -1), scope, root, file);
    if (w.startsWith('"')) return JSON.parse(w);
    if (w.startsWith('`')) return w.slice(1, -1);
    if (/^-?\d+$/.test(w)) return Number(w);
    if (w === 'true' || w === 'false') return w === 'true';
    if (w === 'nil') return undefined;
    if (w === '.') return scope.dot;
    if (w.startsWith('.')) return path(scope.dot, w.slice(1), file);
    if (w.startsWith('$')) {
      const [v, ...rest] = w.split('.');
      if (!(v! in scope.vars)) throw new TemplateError(`${file}: undefined variable ${v}`);
      return rest.length ? path(scope.vars[v!], rest.join('.'), file) : scope.vars[v!];
    }
    throw new TemplateError(`${file}: cannot read ${JSON.stringify(w)}`);
  }

  private call(words: string[], piped: Any[], scope: Scope, root: Any, file: string): Any {
    const [head, ...rest] = words;
    if (head === undefined) throw new TemplateError(`${file}: empty command`);
    const fnNames = new Set(Object.keys(FUNCS));
    if (!fnNames.has(head) && head !== 'include' && head !== 'template') {
      if (rest.length > 0 || piped.length > 0) {
        // A method call on a value: only .Files.Get is used.
        if (head === '.Files.Get' || head === '$.Files.Get') {
          return root.Files.Get(this.arg(rest[0]!, scope, root, file));
        }
        throw new TemplateError(`${file}: ${head} is not a function this renderer knows`);
      }
      return this.arg(head, scope, root, file);
    }
    const args = [...rest.map((w) => this.arg(w, scope, root, file)), ...piped];
    if (head === 'include' || head === 'template') {
      const body = this.defines.get(args[0]);
      if (!body) throw new TemplateError(`${file}: no template named ${JSON.stringify(args[0])}`);
      return this.exec(body, { dot: args[1], vars: { $: args[1] } }, root, file);
    }
    return FUNCS[head]!(file, ...args);
  }
}

function path(obj: Any, p: string, file: string): Any {
  let v = obj;
  for (const part of p.split('.').filter(Boolean)) {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object') throw new TemplateError(`${file}: cannot read .${part} of ${goString(v)}`);
    v = v[part];
  }
  return v;
}

const FUNCS: Record<string, (file: string, ...a: Any[]) => Any> = {
  and: (_f, ...a) => a.find((x) => !truthy(x)) ?? a.at(-1),
  or: (_f, ...a) => a.find((x) => truthy(x)) ?? a.at(-1),
  not: (_f, a) => !truthy(a),
  eq: (_f, a, b) => a === b,
  ne: (_f, a, b) => a !== b,
  contains: (_f, sub, s) => goString(s).includes(goString(sub)),
  gt: (_f, a, b) => a > b,
  join: (_f, sep, list) => (list as Any[]).map(goString).join(sep),
  default: (_f, d, v) => (truthy(v) ? v : d),
  quote: (_f, v) => JSON.stringify(goString(v)),
  squote: (_f, v) => `'${goString(v)}'`,
  toYaml: (_f, v) => toYaml(v),
  toString: (_f: string, v: Any) => goString(v),
  int: (_f, v) => Math.trunc(Number(v)),
  print: (_f, ...a) => a.map(goString).join(''),
  nindent: (_f, n, s) => `\n${indent(n, goString(s))}`,
  indent: (_f, n, s) => indent(n, goString(s)),
  trunc: (_f, n, s) => goString(s).slice(0, n),
  trimSuffix: (_f, suf, s) => (goString(s).endsWith(suf) ? goString(s).slice(0, -suf.length) : goString(s)),
  printf: (file, fmt, ...a) => {
    let i = 0;
    return String(fmt).replace(/%[sdv%]/g, (m) => {
      if (m === '%%') return '%';
      if (i >= a.length) throw new TemplateError(`${file}: printf ${fmt}: too few arguments`);
      return goString(a[i++]);
    });
  },
  required: (_f, msg, v) => {
    if (v === undefined || v === null || v === '') throw new TemplateError(msg);
    return v;
  },
  fail: (_f, msg) => {
    throw new TemplateError(msg);
  },
  sha256sum: (_f, s) => createHash('sha256').update(goString(s)).digest('hex'),
  b64enc: (_f, s) => Buffer.from(goString(s)).toString('base64'),
  list: (_f, ...a) => a,
  dict: (_f, ...a) =>
    Object.fromEntries(Array.from({ length: a.length / 2 }, (_, i) => [a[2 * i], a[2 * i + 1]])),
};

function indent(n: number, s: string): string {
  const pad = ' '.repeat(n);
  return s
    .split('\n')
    .map((l) => pad + l)
    .join('\n');
}

/** Helm's merge of values files: maps merge key by key, anything else is replaced; null deletes. */
export function mergeValues(base: Any, over: Any): Any {
  if (!over || typeof over !== 'object' || Array.isArray(over)) return over;
  const out: Any = { ...(base && typeof base === 'object' && !Array.isArray(base) ? base : {}) };
  for (const [k, v] of Object.entries(over)) {
    if (v === null) delete out[k];
    else if (v && typeof v === 'object' && !Array.isArray(v)) out[k] = mergeValues(out[k], v);
    else out[k] = v;
  }
  return out;
}
