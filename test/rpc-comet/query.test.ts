// The CometBFT event query language: parsing, canonical text, errors and matching.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Query, QuerySyntaxError } from '@noded/rpc/src/comet/index.js';

const ev = (o: Record<string, string | string[]>) =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Array.isArray(v) ? v : [v]]));

describe('query language', () => {
  it('parses every operator and argument kind and prints the canonical form', () => {
    const q = Query.parse(
      "tm.event='Tx' AND tx.height>=5 AND tx.height<10.5 AND transfer.amount CONTAINS 'abtc' AND " +
        'account.owner EXISTS AND block.time > TIME 2024-01-02T03:04:05Z AND day.d <= DATE 2024-01-02',
    );
    assert.deepEqual(
      q.conditions.map((c) => [c.tag, c.op, c.arg?.type ?? null, c.arg?.text ?? null]),
      [
        ['tm.event', '=', 'string', 'Tx'],
        ['tx.height', '>=', 'number', '5'],
        ['tx.height', '<', 'number', '10.5'],
        ['transfer.amount', 'CONTAINS', 'string', 'abtc'],
        ['account.owner', 'EXISTS', null, null],
        ['block.time', '>', 'time', '2024-01-02T03:04:05Z'],
        ['day.d', '<=', 'date', '2024-01-02'],
      ],
    );
    assert.equal(
      q.toString(),
      "tm.event = 'Tx' AND tx.height >= 5 AND tx.height < 10.5 AND transfer.amount CONTAINS 'abtc' AND " +
        'account.owner EXISTS AND block.time > TIME 2024-01-02T03:04:05Z AND day.d <= DATE 2024-01-02',
    );
    assert.equal(
      Query.parse("tm.event = 'NewBlock'").toString(),
      Query.parse("tm.event='NewBlock'").toString(),
    );
  });

  it('quoted strings keep spaces, dots and operators verbatim', () => {
    const q = Query.parse("msg.memo = 'a AND b = c.d'");
    assert.equal(q.conditions[0].arg?.text, 'a AND b = c.d');
    assert.ok(q.matches(ev({ 'msg.memo': 'a AND b = c.d' })));
  });

  it('rejects malformed queries with the offset and what was expected', () => {
    const cases: Array<[string, RegExp]> = [
      ['', /EOF/],
      [
        "tm.event 'Tx'",
        /offset 9: got string, wanted <= operator, >= operator, < operator, > operator, = operator, CONTAINS operator or EXISTS operator/,
      ],
      ["tm.event='Tx' tx.height=5", /offset 14: got tag, want AND operator/],
      ['tx.height > abc', /got tag, wanted number, timestamp or datestamp/],
      ["tx.height > 'x'", /got string, wanted number, timestamp or datestamp/],
      ['a.b CONTAINS 5', /got number, wanted string/],
      ["tm.event='Tx", /unexpected EOF/],
      ['tx.height ! 5', /invalid input !/],
      ['t.x = TIME 2024-13-01T00:00:00Z', /invalid TIME value/],
      ['t.x = DATE 1800-01-01', /datestamp year 1800 out of range/],
    ];
    for (const [text, re] of cases) {
      assert.throws(
        () => Query.parse(text),
        (err: Error) => err instanceof QuerySyntaxError && re.test(err.message),
        text,
      );
    }
  });

  it('matches numbers numerically, including decimals and values with a unit suffix', () => {
    const q = Query.parse('tx.height > 9 AND transfer.amount >= 1000.5');
    assert.ok(q.matches(ev({ 'tx.height': '10', 'transfer.amount': '1000.50abtc' })));
    assert.ok(!q.matches(ev({ 'tx.height': '9', 'transfer.amount': '2000' })));
    assert.ok(!q.matches(ev({ 'tx.height': '10', 'transfer.amount': '1000.49' })));
    assert.ok(Query.parse('x.n = 5').matches(ev({ 'x.n': '5.000' })));
    assert.ok(Query.parse('x.n < 1').matches(ev({ 'x.n': '-3' })));
    assert.ok(!Query.parse('x.n = 1').matches(ev({ 'x.n': 'abc' })));
    // Beyond 2^64 stays exact.
    assert.ok(Query.parse('x.n > 18446744073709551616').matches(ev({ 'x.n': '18446744073709551617' })));
    assert.ok(!Query.parse('x.n > 18446744073709551616').matches(ev({ 'x.n': '18446744073709551616' })));
  });

  it('matches TIME and DATE values, CONTAINS and EXISTS, any of several values', () => {
    const t = Query.parse('e.t >= TIME 2024-01-02T03:04:05Z');
    assert.ok(t.matches(ev({ 'e.t': '2024-01-02T04:04:05+01:00' })));
    assert.ok(!t.matches(ev({ 'e.t': '2024-01-02T03:04:04Z' })));
    assert.ok(t.matches(ev({ 'e.t': '2024-01-02T03:04:05.5Z' })));
    const d = Query.parse('e.d = DATE 2024-02-29');
    assert.ok(d.matches(ev({ 'e.d': '2024-02-29' })));
    assert.ok(!d.matches(ev({ 'e.d': '2024-03-01' })));
    assert.ok(Query.parse("a.b CONTAINS 'ell'").matches(ev({ 'a.b': ['xyz', 'hello'] })));
    assert.ok(Query.parse('a.b EXISTS').matches(ev({ 'a.b': '' })));
    assert.ok(!Query.parse('a.c EXISTS').matches(ev({ 'a.b': 'x' })));
    // A tag naming an event type (not an attribute) exists when the event does.
    assert.ok(Query.parse('transfer EXISTS').matches(ev({ 'transfer.amount': '5' })));
    assert.ok(!Query.parse('anything EXISTS').matches({}));
  });

  it('every condition must hold (AND)', () => {
    const q = Query.parse("tm.event='Tx' AND tx.hash='AB'");
    assert.ok(q.matches(ev({ 'tm.event': 'Tx', 'tx.hash': 'AB' })));
    assert.ok(!q.matches(ev({ 'tm.event': 'Tx', 'tx.hash': 'CD' })));
    assert.ok(!q.matches(ev({ 'tm.event': 'NewBlock', 'tx.hash': 'AB' })));
  });
});

/** The QuerySyntaxError message of `text` (fails the test when it parses). */
function syntaxError(text: string): string {
  try {
    Query.parse(text);
  } catch (err) {
    assert.ok(err instanceof QuerySyntaxError, `${text}: ${String(err)}`);
    assert.equal(err.code, 'QUERY_SYNTAX');
    assert.equal(err.name, 'QuerySyntaxError');
    return err.message;
  }
  assert.fail(`${JSON.stringify(text)} parsed`);
}

describe('query language: tokens and messages', () => {
  it('names every token it did not want, with its byte offset', () => {
    const cases: Array<[string, string]> = [
      ['a.b = 5 AND AND', 'offset 12: got AND operator, wanted tag'],
      ['a.b = 5 AND CONTAINS', 'offset 12: got CONTAINS operator, wanted tag'],
      ['a.b = 5 AND EXISTS', 'offset 12: got EXISTS operator, wanted tag'],
      ['a.b = 5 AND = 1', 'offset 12: got = operator, wanted tag'],
      ['a.b = 5 AND < 1', 'offset 12: got < operator, wanted tag'],
      ['a.b = 5 AND <= 1', 'offset 12: got <= operator, wanted tag'],
      ['a.b = 5 AND > 1', 'offset 12: got > operator, wanted tag'],
      ['a.b = 5 AND >= 1', 'offset 12: got >= operator, wanted tag'],
      ['a.b = 5 AND 7', 'offset 12: got number, wanted tag'],
      ["a.b = 5 AND 'x'", 'offset 12: got string, wanted tag'],
      ['a.b = 5 AND TIME 2024-01-02T03:04:05Z', 'offset 12: got timestamp, wanted tag'],
      ['a.b = 5 AND DATE 2024-01-02', 'offset 12: got datestamp, wanted tag'],
      ['a.b CONTAINS DATE 2024-01-02', 'offset 13: got datestamp, wanted string'],
      ['a.b CONTAINS TIME 2024-01-02T03:04:05Z', 'offset 13: got timestamp, wanted string'],
      ['a.b = = 1', 'offset 6: got = operator, wanted number, timestamp, datestamp or string'],
      ['a.b < EXISTS', 'offset 6: got EXISTS operator, wanted number, timestamp or datestamp'],
      ['a.b = 5 5', 'offset 8: got number, want AND operator'],
      ['a.b = 5 EXISTS', 'offset 8: got EXISTS operator, want AND operator'],
      ['a.b EXISTS a.c EXISTS', 'offset 11: got tag, want AND operator'],
    ];
    for (const [text, message] of cases) assert.equal(syntaxError(text), message, text);
  });

  it('says whether the query is empty or ends in the middle of a condition, at the end offset', () => {
    const hint = "a condition looks like tm.event='Tx' or tx.height>5";
    assert.equal(syntaxError(''), `offset 0: EOF (the query is empty; ${hint})`);
    assert.equal(syntaxError('  \t'), `offset 3: EOF (the query is empty; ${hint})`);
    assert.equal(syntaxError('a.b'), `offset 3: EOF (the query ends in the middle of a condition; ${hint})`);
    assert.equal(
      syntaxError('a.b ='),
      `offset 5: EOF (the query ends in the middle of a condition; ${hint})`,
    );
    assert.equal(
      syntaxError('a.b EXISTS AND '),
      `offset 15: EOF (the query ends in the middle of a condition; ${hint})`,
    );
    // Offsets count UTF-8 bytes, as CometBFT's scanner does: é is 2 bytes, 中 is 3.
    assert.equal(
      syntaxError('é.b ='),
      `offset 6: EOF (the query ends in the middle of a condition; ${hint})`,
    );
    assert.equal(syntaxError('中 = 1 1'), 'offset 8: got number, want AND operator');
    assert.equal(syntaxError('中 ! 1'), 'offset 4: invalid input ! at offset 5');
    assert.equal(syntaxError("中 = 'x"), 'offset 6: unexpected EOF');
    assert.equal(syntaxError('a.b = 1 # x'), 'offset 8: invalid input # at offset 9');
  });

  it('TIME and DATE literals: the label needs one space, the value its format and a year in 1900..2999', () => {
    assert.equal(
      syntaxError('t.x = TIME 2024-01-02'),
      'offset 6: invalid TIME value: cannot parse "2024-01-02" as RFC3339',
    );
    assert.equal(
      syntaxError('t.x = DATE 2024-1-02'),
      'offset 6: invalid DATE value: cannot parse "2024-1-02" as 2006-01-02',
    );
    // A fraction of a second or a lower-case zone is not the layout CometBFT parses with.
    assert.match(
      syntaxError('t.x = TIME 2024-01-02T03:04:05.5Z'),
      /invalid TIME value: cannot parse "2024-01-02T03:04:05"/,
    );
    assert.match(
      syntaxError('t.x = TIME x2024-01-02T03:04:05Z'),
      /offset 6: invalid TIME value: cannot parse ""/,
    );
    assert.match(syntaxError('t.x = TIME 2024-01-02T03:04:05Z9'), /cannot parse "2024-01-02T03:04:05Z9"/);
    assert.match(syntaxError('t.x = TIME 12024-01-02T03:04:05Z'), /cannot parse "12024-01-02T03:04:05Z"/);
    assert.equal(
      syntaxError('t.x = TIME 1899-12-31T23:59:59Z'),
      'offset 6: timestamp year 1899 out of range',
    );
    assert.equal(
      syntaxError('t.x = TIME 3000-01-01T00:00:00Z'),
      'offset 6: timestamp year 3000 out of range',
    );
    assert.equal(syntaxError('t.x = DATE 3000-01-01'), 'offset 6: datestamp year 3000 out of range');
    // The year as written, in the literal's own zone: 1900-01-01T00:30+01:00 is 1899 in UTC.
    assert.equal(
      Query.parse('t.x > TIME 1900-01-01T00:30:00+01:00').conditions[0]!.arg!.text,
      '1900-01-01T00:30:00+01:00',
    );
    assert.equal(Query.parse('t.x = DATE 2999-12-31').conditions[0]!.arg!.type, 'date');
    // Without exactly one space after it, TIME is a tag like any other word.
    assert.equal(
      syntaxError('t.x = TIME'),
      'offset 6: got tag, wanted number, timestamp, datestamp or string',
    );
    assert.equal(
      syntaxError('TIME=5 AND t.x > TIME\t'),
      'offset 17: got tag, wanted number, timestamp or datestamp',
    );
    // With one, it labels a literal, even where a tag belongs.
    assert.equal(syntaxError('TIME = 5'), 'offset 0: invalid TIME value: cannot parse "" as RFC3339');
    assert.equal(syntaxError('DATE = 5'), 'offset 0: invalid DATE value: cannot parse "" as 2006-01-02');
    assert.deepEqual(
      Query.parse('TIME=5 AND DATE\tEXISTS').conditions.map((c) => [c.tag, c.op]),
      [
        ['TIME', '='],
        ['DATE', 'EXISTS'],
      ],
    );
  });

  it('tags start with a letter, a digit of any script or _, and go on with . and -', () => {
    const q = Query.parse('_a.b-c = 1 AND é.ß = 2 AND ٣x = 3 AND x9 = 4');
    assert.deepEqual(
      q.conditions.map((c) => c.tag),
      ['_a.b-c', 'é.ß', '٣x', 'x9'],
    );
    // An ASCII digit starts a number, '.' and '-' cannot start a tag.
    assert.equal(syntaxError('9a = 1'), 'offset 0: got number, wanted tag');
    assert.equal(syntaxError('.a = 1'), 'offset 0: invalid input . at offset 1');
    assert.equal(syntaxError('-a = 1'), 'offset 0: invalid input - at offset 1');
    // A tag ends at any other character.
    assert.deepEqual(
      Query.parse("a.b='x'").conditions.map((c) => [c.tag, c.op, c.arg?.text]),
      [['a.b', '=', 'x']],
    );
  });

  it('numbers: digits, then an optional fraction; operators < <= > >= with or without spaces', () => {
    const q = Query.parse('a<1 AND a<=2 AND a>3 AND a>=4.25 AND a=5.');
    assert.deepEqual(
      q.conditions.map((c) => [c.op, c.arg?.type, c.arg?.text]),
      [
        ['<', 'number', '1'],
        ['<=', 'number', '2'],
        ['>', 'number', '3'],
        ['>=', 'number', '4.25'],
        ['=', 'number', '5.'],
      ],
    );
    assert.equal(q.toString(), 'a < 1 AND a <= 2 AND a > 3 AND a >= 4.25 AND a = 5.');
    assert.equal(syntaxError('a = 1.2.3'), 'offset 7: invalid input . at offset 8');
    assert.equal(Query.parse("a = ''").conditions[0]!.arg!.text, '');
    assert.equal(Query.parse("a = 'x'").source, "a = 'x'");
  });
});

describe('query language: matching', () => {
  it('each comparison operator at, below and above its argument', () => {
    const at = (op: string, v: string, arg = '10') =>
      Query.parse(`x.n ${op} ${arg}`).matches(ev({ 'x.n': v }));
    const table: Array<[string, boolean, boolean, boolean]> = [
      // op, value 9, value 10, value 11
      ['=', false, true, false],
      ['<', true, false, false],
      ['<=', true, true, false],
      ['>', false, false, true],
      ['>=', false, true, true],
    ];
    for (const [op, below, equal, above] of table) {
      assert.equal(at(op, '9'), below, `9 ${op} 10`);
      assert.equal(at(op, '10'), equal, `10 ${op} 10`);
      assert.equal(at(op, '11'), above, `11 ${op} 10`);
    }
  });

  it('numbers with signs and fractions compare by value', () => {
    const m = (q: string, v: string) => Query.parse(q).matches(ev({ 'x.n': v }));
    // Signed integers: "-0" and "+0" are zero, any other negative is below every non-negative.
    assert.ok(m('x.n = 0', '-0'));
    assert.ok(m('x.n = 0', '+0'));
    assert.ok(m('x.n = 7', '+7'));
    assert.ok(!m('x.n = 7', '-7'));
    assert.ok(m('x.n < 0', '-1'));
    assert.ok(!m('x.n > 0', '-100'));
    assert.ok(m('x.n < 0', '-100'), 'a signed integer of several digits');
    assert.ok(m('x.n = 15', '+15'));
    assert.ok(m('x.n >= 0', '0'));
    // A fraction decides between equal integer parts, compared digit by digit after padding.
    assert.ok(m('x.n < 1.25', '1.2'));
    assert.ok(m('x.n > 1.2', '1.25'));
    assert.ok(m('x.n = 1.50', '1.5'));
    assert.ok(m('x.n > 1.09', '1.1'));
    assert.ok(!m('x.n > 1.1', '1.09'));
    assert.ok(m('x.n < 2', '1.99'));
    assert.ok(m('x.n > 1', '1.01'));
    assert.ok(!m('x.n = 1', '1.01'));
    // The integer part decides first, whatever the fraction.
    assert.ok(m('x.n > 9.99', '10.0'));
    assert.ok(m('x.n < 10.0', '9.99'));
    // A leading number of a longer value counts; a value not starting with a digit is no number.
    assert.ok(m('x.n = 100', '100abtc'));
    assert.ok(m('x.n = 1.5', '1.5.6'));
    assert.ok(!m('x.n < 1000', 'abc100'));
    assert.ok(!m('x.n < 1000', '-3.5'));
    assert.ok(!m('x.n < 1000', ''));
  });

  it('TIME and DATE compare as instants with each operator; other values never match', () => {
    const t = (op: string, v: string) =>
      Query.parse(`e.t ${op} TIME 2024-01-02T03:04:05Z`).matches(ev({ 'e.t': v }));
    for (const [op, before, same, after] of [
      ['=', false, true, false],
      ['<', true, false, false],
      ['<=', true, true, false],
      ['>', false, false, true],
      ['>=', false, true, true],
    ] as const) {
      assert.equal(t(op, '2024-01-02T03:04:04Z'), before, `before ${op}`);
      assert.equal(t(op, '2024-01-02T05:04:05+02:00'), same, `same ${op}`);
      assert.equal(t(op, '2024-01-02T03:04:06Z'), after, `after ${op}`);
      assert.equal(t(op, 'soon'), false, `not a time ${op}`);
    }
    const d = (op: string, v: string) => Query.parse(`e.d ${op} DATE 2024-02-29`).matches(ev({ 'e.d': v }));
    for (const [op, before, same, after] of [
      ['=', false, true, false],
      ['<', true, false, false],
      ['<=', true, true, false],
      ['>', false, false, true],
      ['>=', false, true, true],
    ] as const) {
      assert.equal(d(op, '2024-02-28'), before, `before ${op}`);
      assert.equal(d(op, '2024-02-29'), same, `same ${op}`);
      assert.equal(d(op, '2024-03-01'), after, `after ${op}`);
      assert.equal(d(op, '2024-02-30'), false, `not a date ${op}`);
    }
  });

  it('strings: = is exact, CONTAINS a substring; matchesValue tests one condition', () => {
    const q = Query.parse("a.b = 'hello' AND a.c CONTAINS 'ell'");
    assert.ok(q.matchesValue(0, 'hello'));
    assert.ok(!q.matchesValue(0, 'hello!'));
    assert.ok(!q.matchesValue(0, 'ell'));
    assert.ok(q.matchesValue(1, 'hello'));
    assert.ok(q.matchesValue(1, 'ell'));
    assert.ok(!q.matchesValue(1, 'el'));
    assert.ok(Query.parse('a.b EXISTS').matchesValue(0, 'anything'));
    assert.ok(!Query.parse('a.b = 5').matchesValue(0, 'five'));
  });

  it('a tag naming an event type matches as the empty string; no events match nothing', () => {
    const events = ev({ 'transfer.amount': '5', 'a.b.c': 'x' });
    assert.ok(Query.parse("transfer = ''").matches(events));
    assert.ok(!Query.parse("transfer = '5'").matches(events));
    assert.ok(!Query.parse("transfer CONTAINS 'a'").matches(events));
    // The type is everything before the last dot of a key.
    assert.ok(Query.parse('a.b EXISTS').matches(events));
    assert.ok(!Query.parse('a EXISTS').matches(events));
    assert.ok(!Query.parse('transfer.amount.x EXISTS').matches(events));
    // An attribute present with no values is looked up as a type.
    assert.ok(!Query.parse('t.k EXISTS').matches({ 't.k': [] }));
    assert.ok(Query.parse('t EXISTS').matches({ 't.k': [] }));
    // A key present with no values falls back to the event types: a.b is the type of a.b.c.
    assert.ok(Query.parse('a.b EXISTS').matches({ 'a.b': [], 'a.b.c': ['x'] }));
    assert.ok(Query.parse("a.b = ''").matches({ 'a.b': [], 'a.b.c': ['x'] }));
    assert.ok(!Query.parse('x EXISTS').matches({}));
    assert.ok(!Query.parse("x = ''").matches({}));
  });
});
