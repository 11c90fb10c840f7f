// The CometBFT event query language: parsing, canonical text, errors and matching.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Query, QuerySyntaxError } from '../../libs/rpc/src/comet/index.js';

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
