// Merging Prometheus expositions (libs/telemetry aggregate): labels added to every sample (also inside
// label sets with quoted commas and braces), histogram samples kept with their family, each family's
// HELP and TYPE once, a label the source already has refused, a TYPE conflict reported, malformed
// lines refused by line number.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergeFamilies, parseExposition, sampleValue } from '@noded/telemetry';

const A = `# HELP x_requests_total Requests.
# TYPE x_requests_total counter
x_requests_total{method="a,b}",outcome="ok"} 3
x_requests_total 1 1700000000000
# HELP x_latency Latency.
# TYPE x_latency histogram
x_latency_bucket{le="0.1"} 1
x_latency_bucket{le="+Inf"} 2
x_latency_sum 0.3
x_latency_count 2
`;
const B = `# HELP x_requests_total Requests.
# TYPE x_requests_total counter
x_requests_total{method="c"} 5
# TYPE x_height gauge
x_height{chain_id="c\\"1"} 42
`;

describe('parseExposition and mergeFamilies', () => {
  it('adds the labels to every sample and merges families once each, in source order', () => {
    const a = parseExposition(A, { service: 'executor', replica: '127.0.0.1:1' });
    const b = parseExposition(B, { service: 'rpc-edge', replica: '[::1]:2' });
    const { text, conflicts } = mergeFamilies([a, b]);
    assert.deepEqual(conflicts, []);
    assert.equal(
      text,
      `# HELP x_requests_total Requests.
# TYPE x_requests_total counter
x_requests_total{method="a,b}",outcome="ok",service="executor",replica="127.0.0.1:1"} 3
x_requests_total{service="executor",replica="127.0.0.1:1"} 1 1700000000000
x_requests_total{method="c",service="rpc-edge",replica="[::1]:2"} 5
# HELP x_latency Latency.
# TYPE x_latency histogram
x_latency_bucket{le="0.1",service="executor",replica="127.0.0.1:1"} 1
x_latency_bucket{le="+Inf",service="executor",replica="127.0.0.1:1"} 2
x_latency_sum{service="executor",replica="127.0.0.1:1"} 0.3
x_latency_count{service="executor",replica="127.0.0.1:1"} 2
# TYPE x_height gauge
x_height{chain_id="c\\"1",service="rpc-edge",replica="[::1]:2"} 42
`,
    );
    assert.equal(sampleValue(b, 'x_height'), 42);
    assert.equal(sampleValue(a, 'x_latency_count'), 2);
    assert.equal(sampleValue(a, 'x_missing'), undefined);
  });

  it('escapes label values it adds', () => {
    const [f] = parseExposition('y 1\n', { service: 'a"b\\c\nd' });
    assert.deepEqual(f!.samples, ['y{service="a\\"b\\\\c\\nd"} 1']);
  });

  it('refuses a label the source already has, a sample without a value and an unterminated label set', () => {
    assert.throws(
      () => parseExposition('y{service="x"} 1\n', { service: 'a' }),
      /^Error: line 1: y already has a label service$/,
    );
    assert.throws(() => parseExposition('\n\ny{a="1"}\n'), /^Error: line 3: y has no value$/);
    assert.throws(() => parseExposition('y{a="1} 2\n'), /line 1: unterminated label set/);
    assert.throws(
      () => parseExposition('y 1\n', { 'bad-name': 'x' }),
      /"bad-name" is not a valid label name/,
    );
  });

  it('leaves out a family whose TYPE differs from the first source and reports it', () => {
    const a = parseExposition('# TYPE z gauge\nz 1\n', { s: 'a' });
    const b = parseExposition('# TYPE z counter\nz 2\n', { s: 'b' });
    const { text, conflicts } = mergeFamilies([a, b]);
    assert.equal(text, '# TYPE z gauge\nz{s="a"} 1\n');
    assert.deepEqual(conflicts, ['z: TYPE counter here, gauge elsewhere']);
  });
});
