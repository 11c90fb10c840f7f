// app.toml [bridge]: off by default, the keys it takes, and what a bad value says.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ConfigProblem, formatProblem, parseAppToml, renderAppToml } from '@noded/config';

const app = (text: string) => {
  const problems: ConfigProblem[] = [];
  const r = parseAppToml(text, problems, '.');
  return { ...r, problems: problems.map(formatProblem) };
};
const BRIDGE = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const TOKEN = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512';

describe('app.toml [bridge]', () => {
  it('is off by default, documented in the rendered file', () => {
    const a = app(renderAppToml());
    assert.deepEqual(a.problems, []);
    assert.deepEqual(a.app.bridge, {
      enable: false,
      ethereumRpcUrl: '',
      bridgeAddress: '',
      btcTokenAddress: '',
      confirmations: 12,
      pollIntervalMs: 5000,
      startBlock: 0,
    });
    assert.match(renderAppToml(), /\[bridge\]\n\n(#.*\n)+enable = false/);
  });

  it('takes a source chain, its contracts, confirmations, a poll interval and a start block', () => {
    const a = app(
      `[bridge]\nenable = true\nethereum_rpc_url = "http://127.0.0.1:8545"\nbridge_address = "${BRIDGE}"\nbtc_token_address = "${TOKEN}"\nconfirmations = 3\npoll_interval = "500ms"\nstart_block = 19000000\n`,
    );
    assert.deepEqual(a.problems, []);
    assert.deepEqual(a.app.bridge, {
      enable: true,
      ethereumRpcUrl: 'http://127.0.0.1:8545',
      bridgeAddress: BRIDGE.toLowerCase(),
      btcTokenAddress: TOKEN.toLowerCase(),
      confirmations: 3,
      pollIntervalMs: 500,
      startBlock: 19_000_000,
    });
  });

  it('names every bad value', () => {
    const cases: Array<[string, string[]]> = [
      ['enable = "yes"', ['app.toml: bridge.enable: must be true or false']],
      [
        'ethereum_rpc_url = "ws://x"',
        ['app.toml: bridge.ethereum_rpc_url: must be an http:// or https:// URL, or ""'],
      ],
      [
        'bridge_address = "0x1234"',
        ['app.toml: bridge.bridge_address: must be 0x followed by 40 hex digits, or ""'],
      ],
      [
        `btc_token_address = "${TOKEN.replace('E', 'e')}"`,
        ['app.toml: bridge.btc_token_address: has mixed case but a wrong EIP-55 checksum'],
      ],
      [
        'confirmations = -1',
        ['app.toml: bridge.confirmations: must be an integer between 0 and 10000, got -1'],
      ],
      ['poll_interval = "10ms"', ['app.toml: bridge.poll_interval: must be at least 100ms']],
      ['start_block = -5', ['app.toml: bridge.start_block: must be an integer >= 0, got -5']],
      ['start_block = "12"', ['app.toml: bridge.start_block: must be an integer']],
      ['start_block = 1.5', ['app.toml: bridge.start_block: must be an integer']],
      [
        'enable = true',
        [
          'app.toml: bridge.ethereum_rpc_url: must be set when bridge.enable is true, got ""',
          'app.toml: bridge.bridge_address: must be set when bridge.enable is true, got ""',
          'app.toml: bridge.btc_token_address: must be set when bridge.enable is true, got ""',
        ],
      ],
      [
        `enable = true\nethereum_rpc_url = "https://rpc.example.org"\nbridge_address = "${BRIDGE}"\nbtc_token_address = "${BRIDGE}"`,
        ['app.toml: bridge.btc_token_address: must differ from bridge.bridge_address'],
      ],
    ];
    for (const [lines, messages] of cases) {
      const a = app(`[bridge]\n${lines}\n`);
      assert.equal(a.problems.length, messages.length, `${lines}: ${a.problems.join('; ')}`);
      for (const [i, m] of messages.entries()) {
        assert.ok(a.problems[i]!.startsWith(m), `${lines}: ${a.problems[i]}`);
      }
    }
  });
});
