// The :26657 RPC over HTTP: URI GET and JSON-RPC POST answers in CometBFT v0.38's shapes and errors.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { sha256 } from '@noded/crypto';
import { defaultCometRpcOptions, writeTimeoutFor } from '@noded/rpc/src/comet/index.js';
import { type CometHarness, http, rpcPost, startComet } from './helpers.js';

const hexU = (b: Uint8Array) => Buffer.from(b).toString('hex').toUpperCase();
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

describe('CometBFT RPC over HTTP', () => {
  let h: CometHarness;

  before(async () => {
    h = await startComet({
      maxRequestBatchSize: 3,
      maxBodyBytes: 4096,
      corsAllowedOrigins: ['https://app.example'],
    });
  });
  after(() => h.close());

  it('/health answers {} with id -1 over URI and with the caller id over JSON-RPC', async () => {
    const uri = await http(`${h.url}/health`);
    assert.equal(uri.status, 200);
    assert.equal(uri.text, '{"jsonrpc":"2.0","id":-1,"result":{}}');
    assert.equal(uri.headers.get('content-type'), 'application/json');
    assert.match(uri.headers.get('x-server-time') ?? '', /^\d+$/);
    const post = await rpcPost(h.url, { jsonrpc: '2.0', id: 'abc', method: 'health', params: {} });
    assert.equal(post.text, '{"jsonrpc":"2.0","id":"abc","result":{}}');
  });

  it('/status has node_info, sync_info and validator_info exactly shaped', async () => {
    const { json } = await http(`${h.url}/status`);
    const top = h.chain.blocks.get(5)!;
    const first = h.chain.blocks.get(1)!;
    const val = h.chain.validatorSet[0];
    assert.deepEqual(json.result, {
      node_info: {
        protocol_version: { p2p: '8', block: '11', app: '0' },
        id: h.chain.identity().nodeId,
        listen_addr: 'tcp://0.0.0.0:26656',
        network: 'chain-local',
        version: '0.38.17',
        channels: '40202122233038606100',
        moniker: 'fake-node',
        other: { tx_index: 'on', rpc_address: 'tcp://127.0.0.1:26657' },
      },
      sync_info: {
        latest_block_hash: hexU(top.blockId.hash),
        latest_app_hash: hexU(top.block.header.appHash),
        latest_block_height: '5',
        latest_block_time: '2023-11-14T22:13:25.123456789Z',
        earliest_block_hash: hexU(first.blockId.hash),
        earliest_app_hash: '',
        earliest_block_height: '1',
        earliest_block_time: '2023-11-14T22:13:21.123456789Z',
        catching_up: false,
      },
      validator_info: {
        address: hexU(val.address),
        pub_key: { type: 'tendermint/PubKeyEd25519', value: b64(val.pubKey) },
        voting_power: '10',
      },
    });
  });

  it('/block renders header, txs (base64), evidence and last_commit like CometBFT', async () => {
    const { json } = await http(`${h.url}/block?height=3`);
    const s = h.chain.blocks.get(3)!;
    const prev = h.chain.blocks.get(2)!;
    const r = json.result;
    assert.deepEqual(r.block_id, {
      hash: hexU(s.blockId.hash),
      parts: { total: 1, hash: hexU(s.blockId.partSetHeader.hash) },
    });
    assert.deepEqual(Object.keys(r.block), ['header', 'data', 'evidence', 'last_commit']);
    assert.deepEqual(r.block.header.version, { block: '11', app: '0' });
    assert.equal(r.block.header.height, '3');
    assert.equal(r.block.header.time, '2023-11-14T22:13:23.123456789Z');
    assert.equal(r.block.header.proposer_address, hexU(s.block.header.proposerAddress));
    assert.equal(r.block.header.data_hash, hexU(s.block.header.dataHash));
    assert.deepEqual(r.block.header.last_block_id, {
      hash: hexU(prev.blockId.hash),
      parts: { total: 1, hash: hexU(prev.blockId.partSetHeader.hash) },
    });
    assert.deepEqual(r.block.data.txs, s.block.data.txs.map(b64));
    assert.deepEqual(r.block.evidence, { evidence: [] });
    assert.equal(r.block.last_commit.height, '2');
    assert.equal(r.block.last_commit.round, 0);
    assert.equal(r.block.last_commit.signatures[0].block_id_flag, 2);
    assert.equal(r.block.last_commit.signatures[0].timestamp, '2023-11-14T22:13:22.623456789Z');
    assert.match(r.block.last_commit.signatures[0].signature, /^[A-Za-z0-9+/]{86}==$/);
    // Block 1: CometBFT's empty last commit and last_block_id.
    const one = (await http(`${h.url}/block?height=1`)).json.result.block;
    assert.deepEqual(one.last_commit, {
      height: '0',
      round: 0,
      block_id: { hash: '', parts: { total: 0, hash: '' } },
      signatures: [],
    });
    assert.deepEqual(one.header.last_block_id, { hash: '', parts: { total: 0, hash: '' } });
    assert.deepEqual(one.data, { txs: [] });
  });

  it('absent commit signatures carry Go zero time and a null signature', async () => {
    // Validator 1 is absent from the commit of every height divisible by 3.
    const { json } = await http(`${h.url}/commit?height=3`);
    assert.equal(json.result.canonical, true);
    assert.deepEqual(json.result.signed_header.commit.signatures[1], {
      block_id_flag: 1,
      validator_address: '',
      timestamp: '0001-01-01T00:00:00Z',
      signature: null,
    });
    const tip = await http(`${h.url}/commit`);
    assert.equal(tip.json.result.canonical, false);
    assert.equal(tip.json.result.signed_header.header.height, '5');
    assert.equal(tip.json.result.signed_header.commit.height, '5');
  });

  it('height errors are -32603 Internal error with CometBFT messages; bad params are -32602', async () => {
    const tooHigh = await http(`${h.url}/block?height=99`);
    assert.equal(tooHigh.status, 500);
    assert.deepEqual(tooHigh.json, {
      jsonrpc: '2.0',
      id: -1,
      error: {
        code: -32603,
        message: 'Internal error',
        data: 'height 99 must be less than or equal to the current blockchain height 5',
      },
    });
    const zero = await http(`${h.url}/block?height=0`);
    assert.equal(zero.json.error.data, 'height must be greater than 0, but got 0');
    const notInt = await http(`${h.url}/block?height=abc`);
    assert.equal(notInt.status, 500);
    assert.equal(notInt.json.error.code, -32602);
    assert.equal(notInt.json.error.message, 'Invalid params');
    assert.match(notInt.json.error.data, /^error converting http params to arguments: invalid character 'a'/);
    const hexForInt = await http(`${h.url}/block?height=0x05`);
    assert.equal(
      hexForInt.json.error.data,
      "error converting http params to arguments: got a hex string arg, but expected 'int64'",
    );
    // JSON-RPC: 64-bit integers must be strings, as cmtjson wants them.
    const numeric = await rpcPost(h.url, { jsonrpc: '2.0', id: 1, method: 'block', params: { height: 3 } });
    assert.equal(numeric.status, 200);
    assert.equal(numeric.json.error.code, -32602);
    assert.equal(
      numeric.json.error.data,
      'error converting json params to arguments: invalid 64-bit integer encoding "3", expected string',
    );
    const ok = await rpcPost(h.url, { jsonrpc: '2.0', id: 2, method: 'block', params: { height: '3' } });
    assert.equal(ok.json.result.block.header.height, '3');
    const positional = await rpcPost(h.url, { jsonrpc: '2.0', id: 3, method: 'block', params: ['2'] });
    assert.equal(positional.json.result.block.header.height, '2');
    const wrongCount = await rpcPost(h.url, { jsonrpc: '2.0', id: 4, method: 'block', params: ['2', '3'] });
    assert.match(wrongCount.json.error.data, /expected 1 parameters/);
  });

  it('pruned heights below the base are refused', async () => {
    const pruned = await startComet({}, { base: 3 });
    try {
      const r = await http(`${pruned.url}/block?height=2`);
      assert.equal(r.json.error.data, 'height 2 is not available, lowest height is 3');
      const status = (await http(`${pruned.url}/status`)).json.result.sync_info;
      assert.equal(status.earliest_block_height, '3');
    } finally {
      await pruned.close();
    }
  });

  it('unknown methods are -32601, unknown paths 404, ws-only methods are refused over HTTP', async () => {
    const m = await rpcPost(h.url, { jsonrpc: '2.0', id: 7, method: 'nope' });
    assert.equal(m.text, '{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}');
    const sub = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 8,
      method: 'subscribe',
      params: { query: "tm.event='Tx'" },
    });
    assert.equal(sub.json.error.code, -32601);
    const uriSub = await http(`${h.url}/subscribe?query="x"`);
    assert.equal(uriSub.status, 404);
    assert.equal(uriSub.json.error.code, -32601);
    const path = await http(`${h.url}/no_such_route`);
    assert.equal(path.status, 404);
    assert.equal(path.text, '404 page not found\n');
    const unsafe = await http(`${h.url}/unsafe_flush_mempool`);
    assert.equal(unsafe.status, 404, 'unsafe routes are absent when [rpc] unsafe = false');
    const ws = await http(`${h.url}/websocket`);
    assert.equal(ws.status, 400);
  });

  it('parse errors, notifications and an empty body listing the endpoints', async () => {
    const bad = await rpcPost(h.url, '{not json');
    assert.equal(bad.status, 500);
    assert.equal(bad.json.error.code, -32700);
    assert.equal(bad.json.error.message, 'Parse error. Invalid JSON');
    assert.equal('id' in bad.json, false, 'a nil id is omitted as CometBFT does');
    const note = await rpcPost(h.url, { jsonrpc: '2.0', method: 'health' });
    assert.equal(note.status, 200);
    assert.equal(note.text, '');
    const list = await http(`${h.url}/`);
    assert.match(list.headers.get('content-type') ?? '', /text\/html/);
    assert.match(list.text, /block\?height=_/);
    assert.match(list.text, /tx_search\?query=_&prove=_&page=_&per_page=_&order_by=_/);
  });

  it('batches answer in order and are limited by max_request_batch_size', async () => {
    const batch = await rpcPost(h.url, [
      { jsonrpc: '2.0', id: 1, method: 'health' },
      { jsonrpc: '2.0', id: 2, method: 'header', params: { height: '2' } },
      { jsonrpc: '2.0', method: 'health' },
    ]);
    assert.ok(Array.isArray(batch.json));
    assert.deepEqual(
      batch.json.map((r: { id: number }) => r.id),
      [1, 2],
    );
    assert.equal(batch.json[1].result.header.height, '2');
    const tooMany = await rpcPost(
      h.url,
      [1, 2, 3, 4].map((id) => ({ jsonrpc: '2.0', id, method: 'health' })),
    );
    assert.equal(tooMany.status, 200);
    assert.deepEqual(tooMany.json, {
      jsonrpc: '2.0',
      error: {
        code: -32600,
        message: 'Invalid Request',
        data: 'batch request exceeds maximum (3) allowed number of requests',
      },
    });
  });

  it('max_body_bytes refuses larger bodies with -32600', async () => {
    const big = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'broadcast_tx_sync',
      params: { tx: 'A'.repeat(8000) },
    });
    assert.equal(big.status, 400);
    assert.equal(big.json.error.code, -32600);
    assert.equal(big.json.error.data, 'error reading request body: http: request body too large');
  });

  it('a chunked body (no Content-Length) over max_body_bytes gets the same -32600 and changes nothing', async (t) => {
    t.after(() => h.chain.flushMempool()); // the later tests expect an empty mempool
    /** POSTs `parts` as a chunked upload: Node sends Transfer-Encoding: chunked when no length is set. */
    const chunked = (parts: string[]) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const u = new URL(h.url);
        const req = httpRequest(
          { host: u.hostname, port: u.port, method: 'POST', headers: { 'content-type': 'application/json' } },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (d) => {
              text += d;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on('error', reject);
        req.on('finish', () => assert.equal(req.getHeader('content-length'), undefined));
        for (const p of parts) req.write(p);
        req.end();
      });
    const pending = async () => Number((await http(`${h.url}/num_unconfirmed_txs`)).json.result.n_txs);
    const before = await pending();
    // A valid broadcast padded with JSON whitespace past the 4096-byte limit: were the limit not
    // applied to the stream, the transaction would reach the mempool.
    const tx = b64(await h.chain.signTransfer(0, 7n));
    const call = (pad: number) =>
      `{"jsonrpc":"2.0","id":1,"method":"broadcast_tx_sync",${' '.repeat(pad)}"params":{"tx":"${tx}"}}`;
    const big = call(6000);
    assert.ok(big.length > 4096);
    const parts = Array.from({ length: Math.ceil(big.length / 1000) }, (_, i) =>
      big.slice(i * 1000, (i + 1) * 1000),
    );
    const streamed = await chunked(parts);
    const declared = await rpcPost(h.url, big);
    assert.equal(declared.status, 400);
    assert.equal(streamed.status, declared.status);
    assert.deepEqual(JSON.parse(streamed.text), declared.json);
    assert.deepEqual(declared.json.error, {
      code: -32600,
      message: 'Invalid Request',
      data: 'error reading request body: http: request body too large',
    });
    assert.equal(await pending(), before, 'a refused body reaches no mempool');
    // One byte over the limit is refused; exactly the limit is read.
    const exact = call(4096 - call(0).length);
    assert.equal(exact.length, 4096);
    const over = await chunked([exact.slice(0, 2000), exact.slice(2000), ' ']);
    assert.equal(over.status, 400);
    assert.equal(
      JSON.parse(over.text).error.data,
      'error reading request body: http: request body too large',
    );
    assert.equal(await pending(), before);
    const atLimit = await chunked([exact.slice(0, 2000), exact.slice(2000)]);
    assert.equal(atLimit.status, 200, atLimit.text);
    assert.equal(JSON.parse(atLimit.text).result.code, 0, atLimit.text);
    assert.equal(await pending(), before + 1);
    // With a Content-Length too: exactly the limit is read, one byte more is refused unread.
    const health = (pad: number) =>
      `{"jsonrpc":"2.0","id":2,"method":"health",${' '.repeat(pad)}"params":{}}`;
    const exactHealth = health(4096 - health(0).length);
    assert.equal(exactHealth.length, 4096);
    const declaredAtLimit = await rpcPost(h.url, exactHealth);
    assert.equal(declaredAtLimit.status, 200);
    assert.deepEqual(declaredAtLimit.json, { jsonrpc: '2.0', id: 2, result: {} });
    const declaredOver = await rpcPost(h.url, `${exactHealth} `);
    assert.equal(declaredOver.status, 400);
    assert.equal(declaredOver.json.error.code, -32600);
  });

  it('a client that drops its connection in the middle of a body leaves the server serving', async () => {
    const u = new URL(h.url);
    for (const head of [
      // Half of a declared body, then the connection is cut.
      `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"jsonrpc":"2.0",`,
      // A chunked body cut after its first chunk.
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"jso\r\n',
    ]) {
      await new Promise<void>((resolve, reject) => {
        const sock = connect(Number(u.port), u.hostname, () => {
          sock.write(head, () => setTimeout(() => sock.destroy(), 50));
        });
        sock.on('error', reject);
        sock.on('close', () => resolve());
      });
      await new Promise((r) => setTimeout(r, 50));
      const health = await http(`${h.url}/health`);
      assert.equal(health.status, 200);
      assert.deepEqual(health.json.result, {});
    }
  });

  it('CORS answers allowed origins and preflights only', async () => {
    const allowed = await http(`${h.url}/health`, { headers: { origin: 'https://app.example' } });
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://app.example');
    const other = await http(`${h.url}/health`, { headers: { origin: 'https://evil.example' } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
    const pre = await http(`${h.url}/`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    assert.equal(pre.status, 204);
    assert.match(pre.headers.get('access-control-allow-methods') ?? '', /POST/);
  });

  it('cacheable routes with explicit heights say so; latest-height answers do not', async () => {
    const fixed = await http(`${h.url}/block?height=2`);
    assert.equal(fixed.headers.get('cache-control'), 'public, max-age=86400');
    const latest = await http(`${h.url}/block`);
    assert.equal(latest.headers.get('cache-control'), null);
    const status = await http(`${h.url}/status`);
    assert.equal(status.headers.get('cache-control'), null);
  });

  it('blockchain returns metas newest first, limited to 20, with CometBFT range checks', async () => {
    const { json } = await http(`${h.url}/blockchain?minHeight=2&maxHeight=4`);
    assert.equal(json.result.last_height, '5');
    assert.deepEqual(
      json.result.block_metas.map((m: { header: { height: string } }) => m.header.height),
      ['4', '3', '2'],
    );
    const meta = json.result.block_metas[1];
    assert.deepEqual(Object.keys(meta), ['block_id', 'block_size', 'header', 'num_txs']);
    assert.equal(meta.num_txs, '1');
    assert.equal(typeof meta.block_size, 'string');
    const bad = await http(`${h.url}/blockchain?minHeight=4&maxHeight=2`);
    assert.equal(bad.json.error.data, "min height 4 can't be greater than max height 2");
  });

  it('block_by_hash (base64 or 0x-hex), header and header_by_hash (hex)', async () => {
    const s = h.chain.blocks.get(4)!;
    const byHex = await http(`${h.url}/block_by_hash?hash=0x${Buffer.from(s.blockId.hash).toString('hex')}`);
    assert.equal(byHex.json.result.block.header.height, '4');
    const byB64 = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'block_by_hash',
      params: { hash: b64(s.blockId.hash) },
    });
    assert.equal(byB64.json.result.block_id.hash, hexU(s.blockId.hash));
    const missing = await http(`${h.url}/block_by_hash?hash=0x${'00'.repeat(32)}`);
    assert.deepEqual(missing.json.result, {
      block_id: { hash: '', parts: { total: 0, hash: '' } },
      block: null,
    });
    const header = await http(`${h.url}/header?height=4`);
    assert.equal(header.json.result.header.app_hash, hexU(s.block.header.appHash));
    const byHash = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'header_by_hash',
      params: { hash: hexU(s.blockId.hash) },
    });
    assert.equal(byHash.json.result.header.height, '4');
  });

  it('block_results carries tx results (jsonpb) and finalize block events', async () => {
    const { json } = await http(`${h.url}/block_results?height=2`);
    const r = json.result;
    assert.equal(r.height, '2');
    assert.equal(r.txs_results.length, 2);
    assert.deepEqual(Object.keys(r.txs_results[0]), [
      'code',
      'data',
      'log',
      'info',
      'gas_wanted',
      'gas_used',
      'events',
      'codespace',
    ]);
    assert.equal(r.txs_results[0].code, 0);
    assert.equal(r.txs_results[0].data, null);
    assert.equal(r.txs_results[0].gas_used, '21000');
    assert.deepEqual(r.txs_results[0].events[1].attributes[3], {
      key: 'memo',
      value: 'not indexed',
      index: false,
    });
    assert.equal(r.finalize_block_events[0].type, 'block_reward');
    assert.equal(r.validator_updates, null);
    assert.equal(r.consensus_param_updates, null);
    assert.equal(r.app_hash, b64(h.chain.blocks.get(2)!.result.appHash));
    const empty = await http(`${h.url}/block_results?height=1`);
    assert.equal(empty.json.result.txs_results, null);
  });

  it('validators pages with count/total strings and defaults to the next height', async () => {
    const all = await http(`${h.url}/validators`);
    assert.equal(all.json.result.block_height, '6');
    assert.equal(all.json.result.count, '2');
    assert.equal(all.json.result.total, '2');
    assert.deepEqual(all.json.result.validators[1], {
      address: hexU(h.chain.validatorSet[1].address),
      pub_key: { type: 'tendermint/PubKeyEd25519', value: b64(h.chain.validatorSet[1].pubKey) },
      voting_power: '20',
      proposer_priority: '5',
    });
    const page2 = await http(`${h.url}/validators?height=3&page=2&per_page=1`);
    assert.equal(page2.json.result.count, '1');
    assert.equal(page2.json.result.validators[0].voting_power, '20');
    const badPage = await http(`${h.url}/validators?height=3&page=3&per_page=1`);
    assert.equal(badPage.json.error.data, 'page should be within [1, 2] range, given 3');
  });

  it('consensus_params, genesis and genesis_chunked', async () => {
    const p = await http(`${h.url}/consensus_params?height=2`);
    assert.deepEqual(p.json.result, {
      block_height: '2',
      consensus_params: {
        block: { max_bytes: '22020096', max_gas: '-1' },
        evidence: { max_age_num_blocks: '100000', max_age_duration: '172800000000000', max_bytes: '1048576' },
        validator: { pub_key_types: ['ed25519'] },
        version: { app: '0' },
        abci: { vote_extensions_enable_height: '0' },
      },
    });
    const g = await http(`${h.url}/genesis`);
    assert.equal(g.json.result.genesis.chain_id, 'chain-local');
    assert.equal(g.json.result.genesis.validators.length, 2);
    const chunk = await http(`${h.url}/genesis_chunked?chunk=0`);
    assert.equal(chunk.json.result.chunk, '0');
    assert.equal(chunk.json.result.total, '1');
    assert.deepEqual(
      JSON.parse(Buffer.from(chunk.json.result.data, 'base64').toString()),
      g.json.result.genesis,
    );
    const missing = await http(`${h.url}/genesis_chunked?chunk=1`);
    assert.equal(missing.json.error.data, 'there are 0 chunks, 1 is invalid');
  });

  it('tx by CometBFT hash (sha256) and by Ethereum hash, with a verifiable proof', async () => {
    const s = h.chain.blocks.get(5)!;
    const raw = s.block.data.txs[2];
    const hash = sha256(raw);
    const { json } = await http(`${h.url}/tx?hash=0x${Buffer.from(hash).toString('hex')}&prove=true`);
    const r = json.result;
    assert.equal(r.hash, hexU(hash));
    assert.equal(r.height, '5');
    assert.equal(r.index, 2);
    assert.equal(r.tx, b64(raw));
    assert.equal(r.tx_result.gas_wanted, '21000');
    // Fold the aunts back to the root as a light client would; the root is the header's data_hash.
    assert.equal(r.proof.root_hash, hexU(s.block.header.dataHash));
    assert.equal(r.proof.proof.total, '3');
    assert.equal(r.proof.proof.index, '2');
    const leaf = Buffer.from(r.proof.proof.leaf_hash, 'base64');
    assert.deepEqual(leaf, Buffer.from(sha256(Buffer.concat([Buffer.from([0]), Buffer.from(hash)]))));
    const fold = (index: number, total: number, node: Buffer, aunts: Buffer[]): Buffer => {
      if (total === 1) return node;
      let k = 1;
      while (k * 2 < total) k *= 2;
      const top = aunts[aunts.length - 1];
      const rest = aunts.slice(0, -1);
      return index < k
        ? Buffer.from(sha256(Buffer.concat([Buffer.from([1]), fold(index, k, node, rest), top])))
        : Buffer.from(sha256(Buffer.concat([Buffer.from([1]), top, fold(index - k, total - k, node, rest)])));
    };
    const aunts = (r.proof.proof.aunts as string[]).map((a) => Buffer.from(a, 'base64'));
    assert.equal(hexU(fold(2, 3, leaf, aunts)), r.proof.root_hash);
    // The Ethereum hash finds the same transaction.
    const eth = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tx',
      params: { hash: b64(Buffer.from(s.result.txResults[2].events[0].attributes[0].value.slice(2), 'hex')) },
    });
    assert.equal(eth.json.result.height, '5');
    assert.equal('proof' in eth.json.result, false, 'no proof unless asked');
    const missing = await http(`${h.url}/tx?hash=0x${'11'.repeat(32)}`);
    assert.equal(missing.json.error.data, `tx (${'11'.repeat(32)}) not found`);
  });

  it('tx_search: query, paging (per_page max 100), order_by and errors', async () => {
    const all = await http(`${h.url}/tx_search?query="tx.height>=1"`);
    assert.equal(all.json.result.total_count, '6');
    assert.deepEqual(
      all.json.result.txs.map((t: { height: string; index: number }) => `${t.height}/${t.index}`),
      ['2/0', '2/1', '3/0', '5/0', '5/1', '5/2'],
    );
    const desc = await http(`${h.url}/tx_search?query="tx.height>=1"&order_by="desc"&per_page=2&page=2`);
    assert.deepEqual(
      desc.json.result.txs.map((t: { height: string; index: number }) => `${t.height}/${t.index}`),
      ['5/0', '3/0'],
    );
    const byAttr = await http(`${h.url}/tx_search?query="transfer.amount>=1001 AND tx.height<5"`);
    assert.deepEqual(
      byAttr.json.result.txs.map((t: { height: string }) => t.height),
      ['2'],
    );
    const notIndexed = await http(`${h.url}/tx_search?query="transfer.memo='not indexed'"`);
    assert.equal(notIndexed.json.result.total_count, '0', 'attributes with index=false are not searchable');
    const badOrder = await http(`${h.url}/tx_search?query="tx.height>1"&order_by="up"`);
    assert.equal(badOrder.json.error.data, 'expected order_by to be either `asc` or `desc` or empty');
    const badQuery = await http(`${h.url}/tx_search?query="tx.height >"`);
    assert.equal(badQuery.json.error.code, -32603);
    assert.match(badQuery.json.error.data, /^offset \d+: EOF/);
    const long = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'tx_search',
      params: { query: `a.b='${'x'.repeat(600)}'` },
    });
    assert.equal(long.json.error.data, 'maximum query length exceeded');
    const capped = await http(`${h.url}/tx_search?query="tx.height>=1"&per_page=1000`);
    assert.equal(capped.json.result.txs.length, 6);
  });

  it('tx_search on ethereum_tx.txHash and ethereumTxHash (answered from the hash keys): =, EXISTS, CONTAINS, AND, paging', async () => {
    const pos = (r: { json: { result: { txs: Array<{ height: string; index: number }> } } }) =>
      r.json.result.txs.map((t) => `${t.height}/${t.index}`);
    const raw = h.chain.blocks.get(5)!.block.data.txs[1];
    const tm = Buffer.from(sha256(raw)).toString('hex').toUpperCase();
    const one = await http(`${h.url}/tx_search?query="ethereum_tx.txHash='${tm}'"`);
    assert.equal(one.json.result.total_count, '1');
    assert.equal(one.json.result.txs[0].hash, tm);
    const shown = one.json.result.txs[0].tx_result.events[0];
    assert.equal(shown.type, 'ethereum_tx');
    const attrs = Object.fromEntries(
      (shown.attributes as Array<{ key: string; value: string; index: boolean }>).map((a) => [a.key, a]),
    );
    assert.deepEqual(attrs.txHash, { key: 'txHash', value: tm, index: true }, 'the event shown is unchanged');
    const eth = attrs.ethereumTxHash.value as string;
    assert.match(eth, /^0x[0-9a-f]{64}$/);
    assert.deepEqual(pos(await http(`${h.url}/tx_search?query="ethereum_tx.ethereumTxHash='${eth}'"`)), [
      '5/1',
    ]);
    assert.deepEqual(
      pos(await http(`${h.url}/tx_search?query="ethereum_tx.ethereumTxHash='${eth}' AND tx.height<5"`)),
      [],
    );
    const exists = await http(
      `${h.url}/tx_search?query="ethereum_tx.txHash EXISTS"&order_by="desc"&per_page=2&page=2`,
    );
    assert.equal(exists.json.result.total_count, '6');
    assert.deepEqual(pos(exists), ['5/0', '3/0']);
    const contains = await http(
      `${h.url}/tx_search?query="ethereum_tx.ethereumTxHash CONTAINS '0x' AND tx.height<5"`,
    );
    assert.deepEqual(pos(contains), ['2/0', '2/1', '3/0']);
    const part = tm.slice(3, 11);
    assert.deepEqual(pos(await http(`${h.url}/tx_search?query="ethereum_tx.txHash CONTAINS '${part}'"`)), [
      '5/1',
    ]);
  });

  it('block_search by block.height and FinalizeBlock events, newest first by default', async () => {
    const { json } = await http(`${h.url}/block_search?query="block.height>=2 AND block_reward.amount>20"`);
    assert.equal(json.result.total_count, '3');
    assert.deepEqual(
      json.result.blocks.map((b: { block: { header: { height: string } } }) => b.block.header.height),
      ['5', '4', '3'],
    );
    const asc = await http(`${h.url}/block_search?query="block.height<3"&order_by="asc"`);
    assert.deepEqual(
      asc.json.result.blocks.map((b: { block: { header: { height: string } } }) => b.block.header.height),
      ['1', '2'],
    );
  });

  it('check_tx, broadcast_tx_sync/async, unconfirmed_txs and num_unconfirmed_txs', async () => {
    const raw = await h.chain.signTransfer(1, 5n);
    const check = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'check_tx',
      params: { tx: b64(raw) },
    });
    assert.deepEqual(check.json.result, {
      code: 0,
      data: null,
      log: '',
      info: '',
      gas_wanted: '21000',
      gas_used: '0',
      events: [],
      codespace: '',
    });
    const bad = await http(`${h.url}/check_tx?tx=0x0102`);
    assert.equal(bad.json.result.code, 1);
    assert.equal(bad.json.result.codespace, 'evm');
    const sync = await http(`${h.url}/broadcast_tx_sync?tx=0x${Buffer.from(raw).toString('hex')}`);
    assert.deepEqual(sync.json.result, {
      code: 0,
      data: '',
      log: '',
      codespace: '',
      hash: hexU(sha256(raw)),
    });
    const raw2 = await h.chain.signTransfer(1, 6n);
    const async_ = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'broadcast_tx_async',
      params: { tx: b64(raw2) },
    });
    assert.equal(async_.json.result.hash, hexU(sha256(raw2)));
    await new Promise((r) => setTimeout(r, 20));
    const pool = await http(`${h.url}/unconfirmed_txs?limit=1`);
    assert.deepEqual(pool.json.result, {
      n_txs: '1',
      total: '2',
      total_bytes: String(raw.length + raw2.length),
      txs: [b64(raw)],
    });
    const num = await http(`${h.url}/num_unconfirmed_txs`);
    assert.deepEqual(num.json.result, {
      n_txs: '2',
      total: '2',
      total_bytes: String(raw.length + raw2.length),
      txs: null,
    });
    h.chain.flushMempool();
  });

  it('abci_query (hex data) and abci_info', async () => {
    const q = await http(`${h.url}/abci_query?path="/store/acc"&data=0xabcd&height=3`);
    assert.deepEqual(q.json.result.response, {
      code: 0,
      log: '',
      info: '',
      index: '0',
      key: b64(Buffer.from('abcd', 'hex')),
      value: b64(Buffer.from('value-of-abcd')),
      proofOps: null,
      height: '3',
      codespace: '',
    });
    const viaJson = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'abci_query',
      params: { path: '/store/missing', data: 'ff' },
    });
    assert.equal(viaJson.json.result.response.code, 1);
    const info = await http(`${h.url}/abci_info`);
    assert.deepEqual(info.json.result.response, {
      data: 'noded-fake',
      version: '0.1.0',
      app_version: '1',
      last_block_height: '5',
      last_block_app_hash: b64(h.chain.blocks.get(5)!.result.appHash),
    });
  });

  it('net_info, consensus_state and dump_consensus_state', async () => {
    const net = await http(`${h.url}/net_info`);
    assert.equal(net.json.result.listening, true);
    assert.equal(net.json.result.n_peers, '1');
    assert.equal(net.json.result.peers[0].node_info.id, 'aa'.repeat(20));
    assert.equal(net.json.result.peers[0].remote_ip, '10.0.0.2');
    assert.equal(net.json.result.peers[0].is_outbound, true);
    const cs = await http(`${h.url}/consensus_state`);
    assert.equal(cs.json.result.round_state['height/round/step'], '6/0/3');
    assert.deepEqual(cs.json.result.round_state.proposer, {
      address: hexU(h.chain.validatorSet[1].address),
      index: 1,
    });
    assert.equal(cs.json.result.round_state.height_vote_set[0].prevotes_bit_array, 'BA{2:__} 0/30 = 0.00');
    const dump = await http(`${h.url}/dump_consensus_state`);
    assert.equal(dump.json.result.round_state.height, '6');
    assert.equal(dump.json.result.peers.length, 1);
  });

  it('broadcast_evidence parses DuplicateVoteEvidence and hands it to the node', async () => {
    const vote = (round: number, hash: string) => ({
      type: 2,
      height: '4',
      round,
      block_id: { hash, parts: { total: 1, hash: 'AB'.repeat(32) } },
      timestamp: '2023-11-14T22:13:24.5Z',
      validator_address: hexU(h.chain.validatorSet[0].address),
      validator_index: 0,
      signature: b64(new Uint8Array(64).fill(1)),
    });
    const evidence = {
      type: 'tendermint/DuplicateVoteEvidence',
      value: {
        vote_a: vote(0, 'AA'.repeat(32)),
        vote_b: vote(0, 'BB'.repeat(32)),
        TotalVotingPower: '30',
        ValidatorPower: '10',
        Timestamp: '2023-11-14T22:13:24Z',
      },
    };
    const r = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 1,
      method: 'broadcast_evidence',
      params: { evidence },
    });
    assert.match(r.json.result.hash, /^[A-Za-z0-9+/]{43}=$/);
    const got = h.chain.submittedEvidence.at(-1)!;
    assert.equal(got.voteA.height, 4);
    assert.equal(got.totalVotingPower, 30n);
    assert.equal(Buffer.from(got.voteB.blockId.hash).toString('hex'), 'bb'.repeat(32));
    const none = await rpcPost(h.url, { jsonrpc: '2.0', id: 2, method: 'broadcast_evidence', params: {} });
    assert.equal(none.json.error.data, 'no evidence was provided');
    const untyped = await rpcPost(h.url, {
      jsonrpc: '2.0',
      id: 3,
      method: 'broadcast_evidence',
      params: [{}],
    });
    assert.match(
      untyped.json.error.data,
      /evidence has no "type" \(want "tendermint\/DuplicateVoteEvidence"/,
    );
    assert.equal(h.chain.submittedEvidence.length, 1, 'nothing more reached the node');
  });

  it('malformed requests get 400 without taking the server down', async () => {
    const reply = await new Promise<string>((resolve) => {
      const s = connect(h.port, '127.0.0.1', () => s.write('GARBAGE / HTTP/1.1\r\n\r\n'));
      let out = '';
      s.on('data', (d) => {
        out += d.toString();
      });
      s.on('close', () => resolve(out));
      s.on('error', () => resolve(out));
    });
    assert.match(reply, /^HTTP\/1.1 400/);
    assert.equal((await http(`${h.url}/health`)).status, 200);
  });
});

describe('CometBFT RPC unsafe routes and connection limit', () => {
  it('unsafe = true serves dial_seeds, dial_peers and unsafe_flush_mempool', async () => {
    const h = await startComet({ unsafe: true });
    try {
      const seeds = await http(`${h.url}/dial_seeds?seeds=["${'ab'.repeat(20)}@10.0.0.9:26656"]`);
      assert.deepEqual(seeds.json.result, { log: 'Dialing seeds in progress. See /net_info for details' });
      const peers = await rpcPost(h.url, {
        jsonrpc: '2.0',
        id: 1,
        method: 'dial_peers',
        params: { peers: [`${'cd'.repeat(20)}@10.0.0.8:26656`], persistent: true },
      });
      assert.deepEqual(peers.json.result, { log: 'Dialing peers in progress. See /net_info for details' });
      assert.deepEqual(h.chain.dialed, [
        [`${'ab'.repeat(20)}@10.0.0.9:26656`],
        [`${'cd'.repeat(20)}@10.0.0.8:26656`],
      ]);
      const noId = await rpcPost(h.url, {
        jsonrpc: '2.0',
        id: 2,
        method: 'dial_peers',
        params: { peers: ['10.0.0.8:26656'] },
      });
      assert.equal(noId.json.error.data, 'address (10.0.0.8:26656) does not contain ID');
      h.chain.mempool.push(await h.chain.signTransfer(0, 1n));
      const flush = await http(`${h.url}/unsafe_flush_mempool`);
      assert.deepEqual(flush.json.result, {});
      assert.equal(h.chain.mempool.length, 0);
    } finally {
      await h.close();
    }
  });

  it('max_header_bytes refuses larger request headers with 431', async () => {
    const h = await startComet({ maxHeaderBytes: 1024 });
    try {
      const big = await http(`${h.url}/health`, { headers: { 'x-filler': 'a'.repeat(4096) } });
      assert.equal(big.status, 431);
      assert.equal((await http(`${h.url}/health`, { headers: { 'x-filler': 'a'.repeat(200) } })).status, 200);
    } finally {
      await h.close();
    }
  });

  it('max_open_connections closes connections beyond the limit', async () => {
    const h = await startComet({ maxOpenConnections: 2 });
    const sockets = [connect(h.port, '127.0.0.1'), connect(h.port, '127.0.0.1')];
    try {
      await Promise.all(sockets.map((s) => new Promise((r) => s.once('connect', r))));
      await new Promise((r) => setTimeout(r, 50));
      const third = await fetch(`${h.url}/health`).then(
        () => 'served',
        () => 'refused',
      );
      assert.equal(third, 'refused');
      for (const s of sockets) s.destroy();
      await new Promise((r) => setTimeout(r, 50));
      assert.equal((await http(`${h.url}/health`)).status, 200);
    } finally {
      for (const s of sockets) s.destroy();
      await h.close();
    }
  });
});

describe('CometBFT RPC write timeout', () => {
  it('is 10 s, or timeout_broadcast_tx_commit + 1 s when that is longer, as CometBFT sets it', () => {
    assert.equal(writeTimeoutFor({ ...defaultCometRpcOptions, timeoutBroadcastTxCommitMs: 5_000 }), 10_000);
    assert.equal(writeTimeoutFor({ ...defaultCometRpcOptions, timeoutBroadcastTxCommitMs: 30_000 }), 31_000);
    assert.equal(writeTimeoutFor({ ...defaultCometRpcOptions, writeTimeoutMs: 250 }), 250);
  });

  it('cuts a response that is not out in time and keeps serving others', async () => {
    const h = await startComet({ writeTimeoutMs: 300 });
    try {
      // A block store read that never completes stands for a stuck handler.
      h.chain.loadBlock = () => new Promise(() => {});
      const started = Date.now();
      await assert.rejects(
        fetch(`${h.url}/block?height=1`, { signal: AbortSignal.timeout(5_000) }),
        (err: Error) => {
          assert.notEqual(err.name, 'TimeoutError', 'the server should have closed the connection first');
          return true;
        },
      );
      assert.ok(Date.now() - started < 3_000, `cut after ${Date.now() - started} ms`);
      const health = await http(`${h.url}/health`);
      assert.equal(health.status, 200);
    } finally {
      await h.close();
    }
  });
});
