import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  deriveParams,
  type EngineEvent,
  type EngineState,
  replayCommand,
  runSimulation,
  runSweep,
  type SimResult,
  step,
  summaryLine,
} from '@noded/consensus';

const cli = fileURLToPath(new URL('../../libs/consensus/src/sim/cli.js', import.meta.url));

/** Deliberately broken engine (test code only): forgets its lock and valid value before every step. */
function ignoresItsLock(s: EngineState, e: EngineEvent) {
  s.lockedRound = -1;
  s.lockedBlock = null;
  s.validRound = -1;
  s.validBlock = null;
  return step(s, e);
}

describe('deterministic simulation', () => {
  it('holds every invariant on 300 seeds across the fault mixes, validator sets and Byzantine shares', async () => {
    const results: SimResult[] = [];
    const summary = await runSweep({ seeds: 300, from: 1, onResult: (r) => results.push(r) });
    assert.equal(
      summary.violations,
      0,
      summary.failures.map((f) => `${f.violations.join('; ')}\n  ${f.replay}`).join('\n'),
    );
    assert.match(
      summaryLine(summary),
      /^sim: 300 seeds, 0 violations, median rounds\/height [\d.]+, heights \d+$/,
    );
    for (const mode of ['none', 'net', 'crash', 'all'] as const)
      assert.ok(summary.byFaults[mode] >= 40, `${mode}: ${summary.byFaults[mode]} seeds`);
    const sizes = new Set(results.map((r) => r.params.validators));
    assert.deepEqual([...sizes].sort(), [1, 4, 7]);
    assert.ok(
      results.some((r) => new Set(r.params.powers).size > 1),
      'unequal powers',
    );
    assert.ok(
      results.some((r) => r.params.byzantine === 2 && r.equivocations > 0),
      'two Byzantine validators of seven',
    );
    assert.ok(results.reduce((a, r) => a + r.crashes, 0) > 50, 'crashes happened');
    assert.ok(
      results.reduce((a, r) => a + r.evidenceCommitted, 0) > 20,
      'equivocation evidence reached blocks',
    );
    for (const r of results)
      assert.ok(r.heights >= 8, `seed ${r.params.seed} committed only ${r.heights} heights`);
  });

  // Ignoring the lock breaks agreement only under a rare interleaving: a sweep of seeds 1-1000 with
  // this runtime (block sync pipelined on status) found it at seeds 443 and 806; the test replays
  // those. A runtime change that moves the interleavings needs a new sweep (runSimulation with
  // this engineStep over many seeds) and the new seeds here.
  it('catches a broken engine that ignores its lock (a safety violation on known seeds)', async () => {
    let found: string | undefined;
    for (const seed of [443, 806]) {
      if (found) break;
      const r = await runSimulation({
        seed,
        validators: 4,
        byzantine: 1,
        faults: 'net',
        engineStep: ignoresItsLock,
      });
      found = r.violations.find((v) => /^(agreement|validity|honest double-sign)/.test(v));
    }
    assert.ok(found, 'no safety violation found');
    assert.match(found, /^agreement: height \d+: node \d committed [0-9a-f]+, node \d committed [0-9a-f]+$/);
  });

  it('replays a seed exactly, also from the printed replay command', async () => {
    const seed = 1206;
    const a = await runSimulation({ seed });
    const b = await runSimulation({ seed });
    assert.deepEqual(b, a);
    const cmd = replayCommand(a.params);
    const flag = (f: string) => cmd.match(new RegExp(`--${f} (\\S+)`))![1]!;
    const explicit = await runSimulation({
      seed: Number(flag('from')),
      validators: Number(flag('validators')),
      byzantine: Number(flag('byzantine')),
      faults: flag('faults') as 'none',
    });
    assert.deepEqual(explicit, a);
    assert.deepEqual(deriveParams(seed), a.params);
  });

  it('the CLI prints the summary line and exits 0, and refuses a Byzantine share of 1/3 or more', () => {
    const ok = spawnSync(
      process.execPath,
      [cli, '--seeds', '2', '--from', '3', '--validators', '4', '--faults', 'net'],
      { encoding: 'utf8' },
    );
    assert.equal(ok.status, 0, ok.stderr);
    assert.match(ok.stdout.trim(), /^sim: 2 seeds, 0 violations, median rounds\/height [\d.]+, heights \d+$/);
    const bad = spawnSync(process.execPath, [cli, '--seeds', '1', '--validators', '4', '--byzantine', '2'], {
      encoding: 'utf8',
    });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--byzantine must be an integer in 0..1 for 4 validators/);
    const missing = spawnSync(process.execPath, [cli], { encoding: 'utf8' });
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /--seeds N/);
  });
});
