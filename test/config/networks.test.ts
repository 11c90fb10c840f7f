import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { formatProblem, loadNetworks, websocketUrlFor } from '@noded/config';

const tmp = mkdtempSync(join(tmpdir(), 'noded-networks-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

describe('networks (seed §2.1)', () => {
  it('the WebSocket URL is the RPC URL with wss (remote) or ws (local) and the path /websocket', () => {
    assert.equal(websocketUrlFor('https://rpc.example.org'), 'wss://rpc.example.org/websocket');
    assert.equal(websocketUrlFor('https://rpc.example.org:443/'), 'wss://rpc.example.org/websocket');
    assert.equal(websocketUrlFor('https://example.org/rpc/'), 'wss://example.org/rpc/websocket');
    assert.equal(websocketUrlFor('http://localhost:26657'), 'ws://localhost:26657/websocket');
    assert.throws(() => websocketUrlFor('ftp://x'), /http\(s\) URL/);
  });

  it('three presets: EVM chain ids, explorer only for mainnet and testnet, local RPC and WS on 26657', () => {
    const { networks, problems } = loadNetworks();
    assert.deepEqual(problems, []);
    assert.deepEqual(
      networks.map((n) => [n.chainId, n.evmChainId, n.explorer !== undefined]),
      [
        ['chain-mainnet', 31612, true],
        ['chain-testnet', 31611, true],
        ['chain-local', 31337, false],
      ],
    );
    const local = networks[2]!;
    assert.equal(local.rpcEndpoint, 'http://localhost:26657');
    assert.equal(local.websocket, 'ws://localhost:26657/websocket');
    for (const n of networks.slice(0, 2)) {
      assert.match(n.rpcEndpoint, /^https:\/\//);
      assert.equal(n.websocket, websocketUrlFor(n.rpcEndpoint));
      assert.match(n.websocket, /^wss:\/\/.+\/websocket$/);
    }
  });

  it('an override file replaces URLs, and the WebSocket follows the RPC URL', () => {
    const file = join(tmp, 'networks.json');
    writeFileSync(
      file,
      JSON.stringify({ 'chain-testnet': { rpc_endpoint: 'https://rpc.my-testnet.example' } }),
    );
    const { networks, problems } = loadNetworks(file);
    assert.deepEqual(problems, []);
    const t = networks.find((n) => n.chainId === 'chain-testnet')!;
    assert.equal(t.websocket, 'wss://rpc.my-testnet.example/websocket');
    assert.equal(t.explorer, 'https://explorer.testnet.noded.network');
  });

  it('an override that breaks the rules is refused with precise problems', () => {
    const file = join(tmp, 'bad.json');
    writeFileSync(
      file,
      JSON.stringify({
        'chain-mainnet': { rpc_endpoint: 'http://rpc.example.org', color: 'red' },
        'chain-testnet': {
          rpc_endpoint: 'https://t.example.org',
          websocket: 'wss://other.example.org/websocket',
        },
        'chain-local': { explorer: 'https://x.example.org' },
        'chain-foo': {},
      }),
    );
    assert.deepEqual(loadNetworks(file).problems.map(formatProblem), [
      `${file}: chain-foo: unknown chain id (known: chain-mainnet, chain-testnet, chain-local)`,
      `${file}: chain-mainnet.color: unknown key (allowed: rpc_endpoint, websocket, explorer)`,
      `${file}: chain-mainnet.rpc_endpoint: must be an https URL for a remote network (its WebSocket is wss), got "http://rpc.example.org"`,
      `${file}: chain-testnet.websocket: must be the RPC URL with scheme wss and path /websocket ("wss://t.example.org/websocket"), got "wss://other.example.org/websocket"`,
      `${file}: chain-local.explorer: chain-local has no explorer (seed §2.1); remove the key`,
    ]);
  });
});
