// CometBFT's event query language (libs/pubsub/query), used by /subscribe, tx_search and
// block_search. Grammar:
//   query      = condition {"AND" condition}
//   condition  = tag ("=" (string|number|date|time) | ("<"|"<="|">"|">=") (number|date|time)
//                     | "CONTAINS" string | "EXISTS")
//   tag        = [\w][\w.-]*     string = '...'    number = \d+(\.\d+)?
//   date       = DATE yyyy-mm-dd time = TIME yyyy-mm-ddThh:mm:ss(Z|±hh:mm)
// A condition holds when any value of its tag satisfies it; a query holds when all conditions do.
import { parseDate, parseRfc3339 } from './wire.js';

export type QueryOp = '=' | '<' | '<=' | '>' | '>=' | 'CONTAINS' | 'EXISTS';
export type QueryArgType = 'string' | 'number' | 'date' | 'time';

export interface QueryArg {
  type: QueryArgType;
  /** The literal without its quotes or DATE/TIME label. */
  text: string;
}

export interface QueryCondition {
  tag: string;
  op: QueryOp;
  arg?: QueryArg;
}

/** A query that does not parse; the message names the offset and what was expected (as CometBFT). */
export class QuerySyntaxError extends Error {
  readonly code = 'QUERY_SYNTAX';
  constructor(message: string) {
    super(message);
    this.name = 'QuerySyntaxError';
  }
}

type Tok =
  | 'tag'
  | 'string'
  | 'number'
  | 'time'
  | 'date'
  | 'AND'
  | 'CONTAINS'
  | 'EXISTS'
  | '='
  | '<'
  | '<='
  | '>'
  | '>=';

const TOKEN_LABEL: Record<Tok, string> = {
  tag: 'tag',
  string: 'string',
  number: 'number',
  time: 'timestamp',
  date: 'datestamp',
  AND: 'AND operator',
  CONTAINS: 'CONTAINS operator',
  EXISTS: 'EXISTS operator',
  '=': '= operator',
  '<': '< operator',
  '<=': '<= operator',
  '>': '> operator',
  '>=': '>= operator',
};

interface Token {
  tok: Tok;
  text: string;
  pos: number;
}

const isDigit = (c: string) => c >= '0' && c <= '9';
/** Go's unicode.IsSpace (JavaScript's \s also counts U+FEFF, and not U+0085). */
const isSpace = (c: string) =>
  /^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$/.test(c);
const isLetter = (c: string) => /\p{L}/u.test(c);
const isFirstTagChar = (c: string) => c === '_' || isLetter(c) || /\p{Nd}/u.test(c);
const isTagChar = (c: string) => c === '.' || c === '-' || isFirstTagChar(c);

function tokenize(input: string): Token[] {
  const chars = [...input];
  const out: Token[] = [];
  let i = 0;
  // Offsets count bytes as CometBFT's scanner does (UTF-8).
  const offset = (idx: number) => Buffer.byteLength(chars.slice(0, idx).join(''));
  while (i < chars.length) {
    const c = chars[i];
    if (isSpace(c)) {
      i++;
      continue;
    }
    const start = i;
    if (isDigit(c)) {
      let j = i + 1;
      while (j < chars.length && isDigit(chars[j])) j++;
      if (chars[j] === '.') {
        j++;
        while (j < chars.length && isDigit(chars[j])) j++;
      }
      out.push({ tok: 'number', text: chars.slice(i, j).join(''), pos: offset(start) });
      i = j;
      continue;
    }
    if (isFirstTagChar(c)) {
      let j = i + 1;
      while (j < chars.length && isTagChar(chars[j])) j++;
      const word = chars.slice(i, j).join('');
      if ((word === 'TIME' || word === 'DATE') && chars[j] === ' ') {
        const isTime = word === 'TIME';
        let k = j + 1;
        const ok = isTime
          ? (ch: string) => '-T:+Z'.includes(ch) || isDigit(ch)
          : (ch: string) => ch === '-' || isDigit(ch);
        while (k < chars.length && ok(chars[k])) k++;
        const literal = chars.slice(j + 1, k).join('');
        const parsed = isTime ? parseStrictTime(literal) : parseDate(literal);
        if (parsed === undefined) {
          throw new QuerySyntaxError(
            `offset ${offset(start)}: invalid ${word} value: cannot parse "${literal}" as ${isTime ? 'RFC3339' : '2006-01-02'}`,
          );
        }
        // The year as written, in the literal's own zone (Go's Time.Year), not the UTC year.
        const year = Number(literal.slice(0, 4));
        if (year < 1900 || year > 2999) {
          throw new QuerySyntaxError(
            `offset ${offset(start)}: ${isTime ? 'timestamp' : 'datestamp'} year ${year} out of range`,
          );
        }
        out.push({ tok: isTime ? 'time' : 'date', text: literal, pos: offset(start) });
        i = k;
        continue;
      }
      const tok: Tok =
        word === 'AND' ? 'AND' : word === 'EXISTS' ? 'EXISTS' : word === 'CONTAINS' ? 'CONTAINS' : 'tag';
      out.push({ tok, text: word, pos: offset(start) });
      i = j;
      continue;
    }
    if (c === "'") {
      const end = chars.indexOf("'", i + 1);
      if (end < 0) throw new QuerySyntaxError(`offset ${offset(start)}: unexpected EOF`);
      out.push({ tok: 'string', text: chars.slice(i + 1, end).join(''), pos: offset(start) });
      i = end + 1;
      continue;
    }
    if (c === '=') {
      out.push({ tok: '=', text: '=', pos: offset(start) });
      i++;
      continue;
    }
    if (c === '<' || c === '>') {
      if (chars[i + 1] === '=') {
        out.push({ tok: c === '<' ? '<=' : '>=', text: `${c}=`, pos: offset(start) });
        i += 2;
      } else {
        out.push({ tok: c, text: c, pos: offset(start) });
        i++;
      }
      continue;
    }
    throw new QuerySyntaxError(`offset ${offset(start)}: invalid input ${c} at offset ${offset(start + 1)}`);
  }
  return out;
}

/** RFC3339 with seconds precision and a zone, as Go's time.Parse(time.RFC3339) accepts it here. */
function parseStrictTime(text: string): bigint | undefined {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$/.test(text)) return undefined;
  return parseRfc3339(text);
}

function label(toks: Tok[]): string {
  if (toks.length === 1) return TOKEN_LABEL[toks[0]];
  return `${toks
    .slice(0, -1)
    .map((t) => TOKEN_LABEL[t])
    .join(', ')} or ${TOKEN_LABEL[toks[toks.length - 1]]}`;
}

// ---- values --------------------------------------------------------------------------------

/** A decimal number as sign, integer digits and fraction digits (no exponent). */
interface Decimal {
  neg: boolean;
  int: bigint;
  frac: string;
}

function parseDecimalLiteral(text: string): Decimal {
  const [i, f = ''] = text.split('.');
  return { neg: false, int: BigInt(i), frac: f.replace(/0+$/, '') };
}

/**
 * An attribute value read as a number the way CometBFT does: a whole integer (with sign), or else
 * the leading `\d+(\.\d+)?` of the value ("100abtc" reads as 100). undefined when none.
 */
export function parseNumberValue(value: string): Decimal | undefined {
  if (/^[+-]?\d+$/.test(value)) {
    const neg = value.startsWith('-');
    const abs = BigInt(value.replace(/^[+-]/, ''));
    return { neg: neg && abs !== 0n, int: abs, frac: '' };
  }
  const m = /^\d+(\.\d+)?/.exec(value);
  if (!m) return undefined;
  return parseDecimalLiteral(m[0]);
}

function compareDecimal(a: Decimal, b: Decimal): number {
  if (a.neg !== b.neg) return a.neg ? -1 : 1;
  let c: number;
  if (a.int !== b.int) c = a.int < b.int ? -1 : 1;
  else {
    const len = Math.max(a.frac.length, b.frac.length);
    const fa = a.frac.padEnd(len, '0');
    const fb = b.frac.padEnd(len, '0');
    c = fa === fb ? 0 : fa < fb ? -1 : 1;
  }
  return a.neg ? -c : c;
}

type Matcher = (value: string) => boolean;

function cmp(op: QueryOp, c: number): boolean {
  switch (op) {
    case '=':
      return c === 0;
    case '<':
      return c < 0;
    case '<=':
      return c <= 0;
    case '>':
      return c > 0;
    case '>=':
      return c >= 0;
    default:
      return false;
  }
}

function compileMatcher(cond: QueryCondition): Matcher {
  if (cond.op === 'EXISTS') return () => true;
  const arg = cond.arg!;
  switch (arg.type) {
    case 'string':
      if (cond.op === 'CONTAINS') return (v) => v.includes(arg.text);
      return (v) => v === arg.text;
    case 'number': {
      const want = parseDecimalLiteral(arg.text);
      return (v) => {
        const got = parseNumberValue(v);
        return got !== undefined && cmp(cond.op, compareDecimal(got, want));
      };
    }
    case 'date': {
      const want = parseDate(arg.text)!;
      return (v) => {
        const got = parseDate(v);
        return got !== undefined && cmp(cond.op, got === want ? 0 : got < want ? -1 : 1);
      };
    }
    case 'time': {
      const want = parseRfc3339(arg.text)!;
      return (v) => {
        const got = parseRfc3339(v);
        return got !== undefined && cmp(cond.op, got === want ? 0 : got < want ? -1 : 1);
      };
    }
  }
}

/** A parsed and compiled query. */
export class Query {
  private readonly matchers: Matcher[];

  private constructor(
    readonly conditions: readonly QueryCondition[],
    /** The text as the client sent it (CometBFT echoes it in every event message). */
    readonly source: string,
  ) {
    this.matchers = conditions.map(compileMatcher);
  }

  static parse(text: string): Query {
    const toks = tokenize(text);
    let i = 0;
    const eofPos = Buffer.byteLength(text);
    const next = (want: Tok[]): Token => {
      const t = toks[i++];
      if (!t) {
        // CometBFT's text first, then what it means for a client.
        const what = toks.length === 0 ? 'the query is empty' : 'the query ends in the middle of a condition';
        throw new QuerySyntaxError(
          `offset ${eofPos}: EOF (${what}; a condition looks like tm.event='Tx' or tx.height>5)`,
        );
      }
      if (!want.includes(t.tok)) {
        throw new QuerySyntaxError(`offset ${t.pos}: got ${TOKEN_LABEL[t.tok]}, wanted ${label(want)}`);
      }
      return t;
    };
    const conditions: QueryCondition[] = [];
    for (;;) {
      const tag = next(['tag']).text;
      const opTok = next(['<=', '>=', '<', '>', '=', 'CONTAINS', 'EXISTS']);
      const op = opTok.tok as QueryOp;
      if (op === 'EXISTS') conditions.push({ tag, op });
      else {
        const allowed: Tok[] =
          op === 'CONTAINS'
            ? ['string']
            : op === '='
              ? ['number', 'time', 'date', 'string']
              : ['number', 'time', 'date'];
        const a = next(allowed);
        conditions.push({ tag, op, arg: { type: a.tok as QueryArgType, text: a.text } });
      }
      if (i >= toks.length) break;
      const t = toks[i++];
      if (t.tok !== 'AND')
        throw new QuerySyntaxError(`offset ${t.pos}: got ${TOKEN_LABEL[t.tok]}, want AND operator`);
    }
    return new Query(conditions, text);
  }

  /** Canonical text (CometBFT's Query.String): subscriptions are identified by it. */
  toString(): string {
    return this.conditions.map(conditionString).join(' AND ');
  }

  /** Whether one value satisfies condition `i` (used by the indexer's scans). */
  matchesValue(i: number, value: string): boolean {
    return this.matchers[i](value);
  }

  /**
   * Whether the flattened events ("type.key" -> values) satisfy every condition. A tag that names
   * an event type rather than an attribute matches as the empty string, as in CometBFT.
   */
  matches(events: Record<string, string[]>): boolean {
    const keys = Object.keys(events);
    if (keys.length === 0) return false;
    return this.conditions.every((cond, i) => {
      const values = events[cond.tag];
      if (values && values.length > 0) return values.some((v) => this.matchers[i](v));
      const isType = keys.some((k) => k.slice(0, k.lastIndexOf('.')) === cond.tag);
      return isType && this.matchers[i]('');
    });
  }
}

function conditionString(c: QueryCondition): string {
  const head = `${c.tag} ${c.op}`;
  if (!c.arg) return head;
  switch (c.arg.type) {
    case 'string':
      return `${head} '${c.arg.text}'`;
    case 'time':
      return `${head} TIME ${c.arg.text}`;
    case 'date':
      return `${head} DATE ${c.arg.text}`;
    default:
      return `${head} ${c.arg.text}`;
  }
}
