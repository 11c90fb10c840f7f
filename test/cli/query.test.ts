import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePorts, removeDir, runCli, tempDir } from './helpers.js';

// A tiny stand-in for the node's CometBFT RPC: /status and /net_info shaped as CometBFT v0.38 answers.
const STATUS = {
  node_info: {
    id: 'ab'.repeat(20),
    listen_addr: 'tcp://0.0.0.0:26656',
    network: 'chain-local',
    moniker: 'alice',
    other: { tx_index: 'on', rpc_address: 'tcp://127.0.0.1:26657', mode: 'archive' },
  },
  sync_info: {
    latest_block_hash: 'C0FFEE'.padEnd(64, '0'),
    latest_app_hash: '',
    latest_block_height: '1234',
    latest_block_time: '2025-01-02T03:04:05.123456789Z',
    catching_up: false,
  },
  validator_info: { address: '', voting_power: '10' },
};
const NET_INFO = {
  listening: true,
  listeners: [],
  n_peers: '2',
  peers: [
    {
      node_info: { id: '11'.repeat(20), listen_addr: 'tcp://0.0.0.0:26656', moniker: 'bob' },
      is_outbound: true,
      remote_ip: '10.0.0.2',
    },
    {
      node_info: { id: '22'.repeat(20), listen_addr: 'tcp://0.0.0.0:26656', moniker: 'carol' },
      is_outbound: false,
      remote_ip: '10.0.0.3',
    },
  ],
};

let server: Server;
let port = 0;
let hanging: ReturnType<typeof createTcpServer>;
let hangPort = 0;
const sockets: Socket[] = [];
const root = tempDir();

before(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const body = req.url === '/status' ? STATUS : req.url === '/net_info' ? NET_INFO : undefined;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body ? { jsonrpc: '2.0', id: -1, result: body } : { error: 'not found' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  // Accepts connections and never answers: the CLI must give up on its own.
  hanging = createTcpServer((s) => {
    sockets.push(s);
  });
  await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
  hangPort = (hanging.address() as AddressInfo).port;
});
after(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
  await new Promise((r) => hanging.close(r));
  removeDir(root);
});

describe('noded status', () => {
  it('prints height, hash, time, catching_up, peers and mode of the node', async () => {
    const r = await runCli(['status', '--node', `tcp://127.0.0.1:${port}`, '--home', root]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^height +1234$/m);
    assert.match(r.stdout, new RegExp(`^hash +${STATUS.sync_info.latest_block_hash}$`, 'm'));
    assert.match(r.stdout, /^time +2025-01-02T03:04:05\.123456789Z$/m);
    assert.match(r.stdout, /^catching_up +false$/m);
    assert.match(r.stdout, /^peers +2$/m);
    assert.match(r.stdout, /^mode +archive$/m);
  });

  it('takes the node and output format from client.toml; --output json', async () => {
    const home = join(root, 'client-home');
    mkdirSync(join(home, 'config'), { recursive: true });
    writeFileSync(join(home, 'config', 'client.toml'), `node = "tcp://127.0.0.1:${port}"\noutput = "json"\n`);
    const r = await runCli(['status', '--home', home]);
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.height, '1234');
    assert.equal(j.catching_up, false);
    assert.equal(j.peers, '2');
    assert.equal(j.network, 'chain-local');
    const t = await runCli(['status', '--home', home, '--output', 'text']);
    assert.match(t.stdout, /^height +1234$/m);
  });

  it('one clear line and exit 1 when no node answers, bounded in time', async () => {
    const [closed] = await freePorts(1);
    const r = await runCli(['status', '--node', `http://127.0.0.1:${closed}`, '--home', root]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `noded: no node answers at http://127.0.0.1:${closed} (ECONNREFUSED)\n`);
    const started = Date.now();
    const h = await runCli([
      'status',
      '--node',
      `tcp://127.0.0.1:${hangPort}`,
      '--timeout',
      '300ms',
      '--home',
      root,
    ]);
    assert.equal(h.code, 1);
    assert.equal(
      h.stderr,
      `noded: no node answers at http://127.0.0.1:${hangPort} (no answer within 300 ms)\n`,
    );
    assert.ok(Date.now() - started < 10_000);
  });

  it('bad flags and a bad client.toml are named', async () => {
    const home = join(root, 'bad-client');
    mkdirSync(join(home, 'config'), { recursive: true });
    writeFileSync(join(home, 'config', 'client.toml'), 'node = "localhost"\n');
    const cases: Array<[string[], RegExp]> = [
      [
        ['status', '--node', 'not a url', '--home', root],
        /--node: must be a URL such as tcp:\/\/localhost:26657/,
      ],
      [
        ['status', '--node', `tcp://127.0.0.1:${port}`, '--output', 'yaml', '--home', root],
        /--output: must be text or json, got "yaml"/,
      ],
      [['status', '--timeout', 'soon', '--home', root], /--timeout: must be a duration/],
      [['status', '--home', home], /client\.toml: node: must be a node URL/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(args)));
    results.forEach((r, i) => {
      assert.equal(r.code, 1, cases[i]![0].join(' '));
      assert.match(r.stderr, cases[i]![1]);
    });
  });
});

describe('noded tendermint show-peers', () => {
  it('lists id, address, direction and moniker from /net_info', async () => {
    const r = await runCli(['tendermint', 'show-peers', '--node', `tcp://127.0.0.1:${port}`, '--home', root]);
    assert.equal(r.code, 0, r.stderr);
    const rows = r.stdout.trim().split('\n');
    assert.match(rows[0]!, /^ID +ADDRESS +DIRECTION +MONIKER$/);
    assert.match(rows[1]!, new RegExp(`^${'11'.repeat(20)} +10\\.0\\.0\\.2:26656 +outbound +bob$`));
    assert.match(rows[2]!, new RegExp(`^${'22'.repeat(20)} +10\\.0\\.0\\.3:26656 +inbound +carol$`));
    const j = await runCli([
      'tendermint',
      'show-peers',
      '--node',
      `tcp://127.0.0.1:${port}`,
      '--output',
      'json',
      '--home',
      root,
    ]);
    assert.deepEqual(JSON.parse(j.stdout)[1], {
      id: '22'.repeat(20),
      address: '10.0.0.3:26656',
      direction: 'inbound',
      moniker: 'carol',
    });
  });

  it('exits 1 with one line when no node answers', async () => {
    const [closed] = await freePorts(1);
    const r = await runCli([
      'tendermint',
      'show-peers',
      '--node',
      `tcp://127.0.0.1:${closed}`,
      '--home',
      root,
    ]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `noded: no node answers at http://127.0.0.1:${closed} (ECONNREFUSED)\n`);
  });
});
