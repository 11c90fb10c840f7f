// Fuzzing CometBFT's event query language (libs/rpc/src/comet/query.ts): any text parses or fails
// with QuerySyntaxError; a query's canonical text parses back to the same conditions; DATE and TIME
// literals are accepted exactly when Go's time.Parse and CometBFT's year range accept them; spaces are
// Go's unicode.IsSpace.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Query, type QueryCondition, QuerySyntaxError } from '@noded/rpc/src/comet/index.js';
import fc from 'fast-check';
import { check, onlyThrows, rec } from './fuzz.js';

const KEYWORDS = new Set(['AND', 'EXISTS', 'CONTAINS', 'TIME', 'DATE']);
const tagChar = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_'),
  },
  { weight: 2, arbitrary: fc.constantFrom('.', '-') },
  { weight: 1, arbitrary: fc.constantFrom('é', 'ß', 'Ж', '中', '٣', 'ǅ') },
);
const tag = fc
  // An ASCII digit first would start a number (as in Go's scanner); other Unicode digits start tags.
  .tuple(
    tagChar.filter((c) => !/^[.\-0-9]$/.test(c)),
    fc.array(tagChar, { maxLength: 12 }),
  )
  .map(([first, rest]) => first + rest.join(''))
  .filter((t) => !KEYWORDS.has(t));
const pad2 = (n: number) => String(n).padStart(2, '0');
const pad4 = (n: number) => String(n).padStart(4, '0');
const validDate = fc
  .date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2999-12-31T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));
const validTime = fc
  .tuple(
    fc.date({
      min: new Date('1901-01-01T00:00:00Z'),
      max: new Date('2998-12-31T00:00:00Z'),
      noInvalidDate: true,
    }),
    fc.oneof(
      fc.constant('Z'),
      fc
        .tuple(fc.constantFrom('+', '-'), fc.nat(23), fc.nat(59))
        .map(([s, h, m]) => `${s}${pad2(h)}:${pad2(m)}`),
    ),
  )
  .map(([d, zone]) => `${d.toISOString().slice(0, 19)}${zone}`);
const number = fc
  .tuple(
    fc.bigInt({ min: 0n, max: 10n ** 30n }),
    fc.option(fc.stringMatching(/^[0-9]{0,6}$/), { nil: undefined }),
  )
  .map(([i, f]) => (f === undefined ? i.toString() : `${i}.${f}`));

const condition: fc.Arbitrary<QueryCondition> = fc.oneof(
  rec({ tag, op: fc.constant('EXISTS' as const) }),
  rec({
    tag,
    op: fc.constant('CONTAINS' as const),
    arg: rec({
      type: fc.constant('string' as const),
      text: fc.string({ maxLength: 20 }).filter((s) => !s.includes("'")),
    }),
  }),
  rec({
    tag,
    op: fc.constant('=' as const),
    arg: rec({
      type: fc.constant('string' as const),
      text: fc.string({ maxLength: 20 }).filter((s) => !s.includes("'")),
    }),
  }),
  rec({
    tag,
    op: fc.constantFrom('=' as const, '<' as const, '<=' as const, '>' as const, '>=' as const),
    arg: fc.oneof(
      rec({ type: fc.constant('number' as const), text: number }),
      rec({ type: fc.constant('date' as const), text: validDate }),
      rec({ type: fc.constant('time' as const), text: validTime }),
    ),
  }),
);

function render(c: QueryCondition): string {
  if (!c.arg) return `${c.tag} ${c.op}`;
  const arg =
    c.arg.type === 'string'
      ? `'${c.arg.text}'`
      : c.arg.type === 'date'
        ? `DATE ${c.arg.text}`
        : c.arg.type === 'time'
          ? `TIME ${c.arg.text}`
          : c.arg.text;
  return `${c.tag} ${c.op} ${arg}`;
}

/** Go's unicode.IsSpace: the ASCII spaces, U+0085, U+00A0 and Unicode's White_Space. */
const GO_SPACES = [
  '\t',
  '\n',
  '\v',
  '\f',
  '\r',
  ' ',
  '\u0085',
  '\u00A0',
  '\u1680',
  ...Array.from({ length: 11 }, (_, i) => String.fromCharCode(0x2000 + i)),
  '\u2028',
  '\u2029',
  '\u202F',
  '\u205F',
  '\u3000',
];
const spaces = fc.array(fc.constantFrom(...GO_SPACES), { minLength: 1, maxLength: 3 }).map((a) => a.join(''));

const queryText = fc
  .array(condition, { minLength: 1, maxLength: 4 })
  .map((cs) => cs.map(render).join(' AND '));
const hostileQuery = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  queryText,
  // Valid queries with characters dropped, doubled or replaced.
  fc
    .tuple(
      queryText,
      fc.array(
        fc.tuple(
          fc.nat(),
          fc.constantFrom('', "'", '=', '<', '>', ' ', 'AND', 'TIME ', 'DATE ', '.', '\uFEFF', '9'),
        ),
        {
          minLength: 1,
          maxLength: 3,
        },
      ),
    )
    .map(([q, edits]) =>
      edits.reduce((s, [at, ins]) => {
        const i = at % (s.length + 1);
        return s.slice(0, i) + ins + s.slice(i + (ins === '' ? 1 : 0));
      }, q),
    ),
);

// ---- Go's time.Parse, as the oracle for DATE and TIME literals -----------------------------------

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysIn = (y: number, m: number) =>
  [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!;
const goDateOk = (y: number, m: number, d: number) => m >= 1 && m <= 12 && d >= 1 && d <= daysIn(y, m);
const inRange = (y: number) => y >= 1900 && y <= 2999;

const dateParts = fc.tuple(
  fc.oneof(
    fc.integer({ min: 0, max: 9999 }),
    fc.integer({ min: 1895, max: 1905 }),
    fc.integer({ min: 2995, max: 3005 }),
  ),
  fc.integer({ min: 0, max: 13 }),
  fc.integer({ min: 0, max: 32 }),
);

describe('fuzz: CometBFT query language', () => {
  it('any text parses or fails with QuerySyntaxError; what parses re-parses from its canonical text', () => {
    check(
      fc.property(hostileQuery, (text) => {
        const r = onlyThrows(() => Query.parse(text), QuerySyntaxError);
        if (!r.ok) {
          assert.match(r.error.message, /^offset \d+: /);
          return;
        }
        const again = Query.parse(r.value.toString());
        assert.deepStrictEqual(again.conditions, r.value.conditions);
        assert.equal(again.toString(), r.value.toString());
        // Matching never throws either, whatever the values.
        r.value.matches({
          [r.value.conditions[0]!.tag]: ['1', 'abc', '2020-01-01', '2020-01-01T00:00:00Z', ''],
        });
      }),
    );
  });

  it('conditions rendered as text parse back to the same conditions, with any spaces between tokens', () => {
    check(
      fc.property(fc.array(condition, { minLength: 1, maxLength: 5 }), spaces, (cs, sp) => {
        const text = cs.map(render).join(' AND ');
        const q = Query.parse(text);
        assert.deepStrictEqual(q.conditions, cs);
        assert.equal(q.toString(), text);
        // Go's scanner skips any unicode.IsSpace rune between tokens (not inside TIME/DATE literals,
        // whose label is followed by exactly one ASCII space).
        const spaced = `${sp}${cs.map(render).join(`${sp}AND${sp}`)}${sp}`;
        assert.deepStrictEqual(Query.parse(spaced).conditions, cs);
      }),
    );
  });

  it('U+FEFF, which JavaScript counts as white space and Go does not, is invalid input', () => {
    check(
      fc.property(condition, (c) => {
        assert.throws(() => Query.parse(`\uFEFF${render(c)}`), QuerySyntaxError);
      }),
    );
  });

  it('DATE literals are accepted exactly when Go parses them and the year is within 1900..2999', () => {
    check(
      fc.property(dateParts, ([y, m, d]) => {
        const literal = `${pad4(y)}-${pad2(m)}-${pad2(d)}`;
        const r = onlyThrows(() => Query.parse(`block.time >= DATE ${literal}`), QuerySyntaxError);
        assert.equal(r.ok, goDateOk(y, m, d) && inRange(y), `DATE ${literal}`);
        if (r.ok) {
          assert.ok(r.value.matches({ 'block.time': [literal] }), 'a date matches itself');
          const before = y > 1900 ? `${pad4(y - 1)}-12-31` : undefined;
          if (before !== undefined)
            assert.ok(!r.value.matches({ 'block.time': [before] }), `${before} < ${literal}`);
        }
      }),
    );
  });

  it('TIME literals are accepted exactly when Go parses them (RFC 3339) and the written year is in range', () => {
    check(
      fc.property(
        dateParts,
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 61 }),
        fc.integer({ min: 0, max: 61 }),
        fc.oneof(
          fc.constant('Z'),
          fc.tuple(
            fc.constantFrom('+', '-'),
            fc.integer({ min: 0, max: 26 }),
            fc.integer({ min: 0, max: 61 }),
          ),
        ),
        ([y, mo, d], h, mi, s, zone) => {
          const z = zone === 'Z' ? 'Z' : `${zone[0]}${pad2(zone[1])}:${pad2(zone[2])}`;
          const literal = `${pad4(y)}-${pad2(mo)}-${pad2(d)}T${pad2(h)}:${pad2(mi)}:${pad2(s)}${z}`;
          const goOk =
            goDateOk(y, mo, d) &&
            h <= 23 &&
            mi <= 59 &&
            s <= 59 &&
            (zone === 'Z' || (zone[1] <= 24 && zone[2] <= 60)) &&
            inRange(y);
          const r = onlyThrows(() => Query.parse(`tx.time < TIME ${literal}`), QuerySyntaxError);
          assert.equal(r.ok, goOk, `TIME ${literal}`);
          if (r.ok) {
            // The same instant written in UTC matches '=' (time values compare as instants).
            const q = Query.parse(`tx.time = TIME ${literal}`);
            assert.ok(q.matches({ 'tx.time': [literal] }));
          }
        },
      ),
    );
  });
});
