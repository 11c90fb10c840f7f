// app.toml [light]: defaults, durations, the trust root given by height and hash (both or neither),
// and what a bad value says.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ConfigProblem, formatProblem, parseAppToml, renderAppToml } from '@noded/config';

const app = (text: string) => {
  const problems: ConfigProblem[] = [];
  const r = parseAppToml(text, problems, '.');
  return { ...r, problems: problems.map(formatProblem) };
};
const HASH = 'ab'.repeat(32);

describe('app.toml [light]', () => {
  it('defaults to a one-week trusting period, 10 s of clock drift and the genesis as trust root', () => {
    const a = app(renderAppToml());
    assert.deepEqual(a.problems, []);
    assert.deepEqual(a.app.light, {
      trustingPeriodMs: 168 * 3600_000,
      maxClockDriftMs: 10_000,
      trustHeight: 0,
      trustHash: '',
      rpcServers: [],
    });
    assert.match(renderAppToml(), /\[light\]\n\n(#.*\n)+trusting_period = "168h"/);
  });

  it('takes a trust root by height and hash (the hash in either case) and RPC servers', () => {
    const a = app(
      `mode = "light"\n[light]\ntrusting_period = "336h"\nmax_clock_drift = "1s"\ntrust_height = 1200\ntrust_hash = "${HASH}"\nrpc_servers = "tcp://10.0.0.1:26657, https://rpc.example.com/"\n`,
    );
    assert.deepEqual(a.problems, []);
    assert.deepEqual(a.app.light, {
      trustingPeriodMs: 336 * 3600_000,
      maxClockDriftMs: 1000,
      trustHeight: 1200,
      trustHash: HASH.toUpperCase(),
      rpcServers: ['http://10.0.0.1:26657', 'https://rpc.example.com'],
    });
  });

  it('names every bad value', () => {
    const cases: Array<[string, string]> = [
      ['trusting_period = "0s"', 'app.toml: light.trusting_period: must be at least 1ms, got "0s"'],
      ['trusting_period = "a week"', 'app.toml: light.trusting_period: must be a duration string'],
      ['max_clock_drift = "-1s"', 'app.toml: light.max_clock_drift: must be a duration string'],
      ['trust_height = -1', 'app.toml: light.trust_height: must be an integer >= 0'],
      ['trust_hash = "abc"', 'app.toml: light.trust_hash: must be 64 hex characters (a header hash) or ""'],
      [
        'trust_height = 5',
        'app.toml: light.trust_hash: must be set when light.trust_height is set (5), got ""',
      ],
      [
        `trust_hash = "${HASH}"`,
        'app.toml: light.trust_height: must be set (> 0) when light.trust_hash is set, got 0',
      ],
    ];
    for (const [line, message] of cases) {
      const a = app(`[light]\n${line}\n`);
      assert.equal(a.problems.length, 1, `${line}: ${a.problems.join('; ')}`);
      assert.ok(a.problems[0]!.startsWith(message), `${line}: ${a.problems[0]}`);
    }
  });
});
