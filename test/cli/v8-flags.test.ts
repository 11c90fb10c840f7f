// The V8 settings `noded start` and `noded service` give themselves (services/shared/src/v8-flags.ts):
// after applyServerV8Flags, V8 makes no pretenuring decision, where the same program without it
// does. Read from V8's own trace of its decisions (--trace-pretenuring-statistics), in a child process.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';

const V8_FLAGS_MODULE = new URL('../../services/shared/src/v8-flags.js', import.meta.url).href;

/** A program whose object literals first make long-lived objects (what V8 pretenures), then short-lived ones. */
function program(apply: boolean): string {
  return `
${apply ? `(await import(${JSON.stringify(V8_FLAGS_MODULE)})).applyServerV8Flags();` : ''}
const make = (i) => ({ a: i, b: [i] });
let keep = [];
for (let r = 0; r < 20; r++) for (let i = 0; i < 50000; i++) keep.push(make(i));
keep = [];
let sink = 0;
for (let i = 0; i < 2000000; i++) sink += make(i).a;
console.log('done', sink > 0);
`;
}

/** V8's pretenuring decisions while the program ran ("... => tenure" lines). */
function tenureDecisions(apply: boolean): string[] {
  const r = spawnSync(
    process.execPath,
    ['--trace-pretenuring-statistics', '--input-type=module', '-e', program(apply)],
    { encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /done true/);
  return r.stdout.split('\n').filter((l) => /=> tenure/.test(l));
}

describe('V8 settings of the node process', () => {
  it('without them, V8 pretenures the literals whose objects lived long (the probe sees it)', () => {
    assert.ok(tenureDecisions(false).length > 0, 'V8 made no pretenuring decision: the probe shows nothing');
  });

  it('with applyServerV8Flags, V8 pretenures nothing', () => {
    assert.deepEqual(tenureDecisions(true), []);
  });
});
