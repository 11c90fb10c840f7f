// The rpc-edge's REST API (:1317, [api] address) as processes: nats-server, `noded service executor`,
// `consensus`, `state-store` and `rpc-edge` on one chain-local home. ethers sends a transfer through
// the edge's JSON-RPC; the REST answers at that height are then compared with what the same edge's
// JSON-RPC (state: balances, nonces, the receipt) and the consensus service's CometBFT RPC (blocks,
// validator sets, node info, the transaction's CometBFT hash) say. Bad paths get the gateway's
// 400/404/405 shapes. With consensus stopped, its routes answer 503 with the reason while state
// routes keep answering; consensus restarted, they answer again; with the state-store stopped, state
// routes answer 503. Last, the cluster is stopped and `noded start` runs on the same home: its REST
// gives byte-for-byte the same answers as the edge gave for the same heights.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { JsonRpcProvider, keccak256, Wallet } from 'ethers';
import { DEV_ADDRESSES, DEV_KEYS, freePort, initLocalHome, startAllInOne } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { comet, type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are inspected field by field in tests
type Json = Record<string, any>;

async function rpc(url: string, method: string, params: unknown[] = []): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(30_000),
  });
  const json = (await res.json()) as { result?: string; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result as string;
}

/** A REST GET: status, JSON body and how long it took. */
async function rest(
  base: string,
  path: string,
  init: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Json; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(`${base}${path}`, { ...init, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Json), ms: Date.now() - t0 };
}

async function ok(base: string, path: string, headers?: Record<string, string>): Promise<Json> {
  const r = await rest(base, path, { headers });
  assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`);
  return r.body;
}

const b64OfHex = (hex: string) => Buffer.from(hex, 'hex').toString('base64');
const protoTime = (rfc3339: string) => new Date(rfc3339).getTime();

describe('noded service rpc-edge: REST on [api] address', () => {
  it('answers state routes from the state-store and block routes from consensus, 503 when either is down', async (t) => {
    const { home, ports } = await initLocalHome({ timeoutCommit: '300ms' });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const executorAt = `127.0.0.1:${await freePort()}`;
    const storeAt = `127.0.0.1:${await freePort()}`;
    const env = {
      NODED_EXECUTOR_GRPC_ADDRESS: executorAt,
      NODED_NATS_URL: nats.url,
      NODED_STATE_STORE_GRPC_ADDRESS: storeAt,
    };
    const running: ServiceProcess[] = [];
    cleanups.push(async () => {
      for (const s of running.reverse()) await s.stop();
    });
    const start = async (name: string, more: Record<string, string> = {}) => {
      const s = spawnService(name, home, { ...env, ...more });
      running.push(s);
      await waitForService(s, new RegExp(`noded service ${name} is running`), 90_000);
      return s;
    };
    await start('executor');
    let consensus = await start('consensus');
    let store = await start('state-store');
    // The edge finds the consensus RPC from the home's [rpc] laddr (NODED_CONSENSUS_RPC_ADDRESS unset).
    const edge = await start('rpc-edge');
    const api = `http://127.0.0.1:${ports.api}`;
    const evm = `http://127.0.0.1:${ports.evmHttp}`;
    const cometRpc = `http://127.0.0.1:${ports.rpc}`;
    assert.match(edge.output(), new RegExp(`http://127\\.0\\.0\\.1:${ports.api}`));

    const provider = new JsonRpcProvider(evm, 31337, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 200,
    });
    cleanups.push(() => provider.destroy());
    await until('the edge reports blocks', 60_000, async () =>
      (await provider.getBlockNumber()) >= 2 ? true : undefined,
    );
    const wallet = new Wallet(DEV_KEYS[0], provider);
    // An address with nothing before this transfer.
    const fresh = Wallet.createRandom().address;
    const sent = await wallet.sendTransaction({ to: fresh, value: 777_000n });
    const receipt = await sent.wait(1, 60_000);
    assert.equal(receipt?.status, 1);
    const h = receipt!.blockNumber;
    const hx = `0x${h.toString(16)}`;
    const at = { 'x-cosmos-block-height': String(h) };

    // ---- state routes: the edge's JSON-RPC at the same height -----------------------------------
    for (const addr of [DEV_ADDRESSES[0], fresh]) {
      const balance = BigInt(await rpc(evm, 'eth_getBalance', [addr, hx]));
      assert.ok(balance > 0n);
      assert.deepEqual(await ok(api, `/cosmos/bank/v1beta1/balances/${addr}`, at), {
        balances: [{ denom: 'abtc', amount: balance.toString() }],
        pagination: { next_key: null, total: '1' },
      });
      assert.deepEqual(await ok(api, `/cosmos/bank/v1beta1/balances/${addr}/by_denom?denom=abtc`, at), {
        balance: { denom: 'abtc', amount: balance.toString() },
      });
      const nonce = BigInt(await rpc(evm, 'eth_getTransactionCount', [addr, hx]));
      const account = (await ok(api, `/cosmos/auth/v1beta1/accounts/${addr}`, at)).account;
      assert.equal(account.sequence, nonce.toString());
    }
    // Before the transfer the recipient had nothing: an empty list, as `noded start` answers.
    assert.deepEqual(
      await ok(api, `/cosmos/bank/v1beta1/balances/${fresh}`, {
        'x-cosmos-block-height': String(h - 1),
      }),
      { balances: [], pagination: { next_key: null, total: '0' } },
    );
    const evmParams = (await ok(api, '/evm/v1/params')).params;
    assert.equal(evmParams.chain_id, '31337');
    assert.equal(evmParams.evm_denom, 'abtc');
    assert.match((await ok(api, '/feemarket/v1/base_fee')).base_fee, /^[1-9]\d*$/);
    // A module route answered by a precompile through eth_call on the state-store.
    const bridge = (await ok(api, '/noded/bridge/v1/params')).params;
    assert.equal(typeof bridge.paused, 'boolean');

    // ---- consensus routes: the consensus service's CometBFT RPC --------------------------------
    const cometBlock = await comet<Json>(cometRpc, `block?height=${h}`);
    const block = await ok(api, `/cosmos/base/tendermint/v1beta1/blocks/${h}`);
    assert.equal(block.block_id.hash, b64OfHex(cometBlock.block_id.hash));
    assert.equal(block.block_id.part_set_header.total, cometBlock.block_id.parts.total);
    const header = block.block.header;
    const cometHeader = cometBlock.block.header;
    assert.equal(header.height, String(h));
    assert.equal(header.chain_id, 'chain-local');
    assert.equal(header.app_hash, b64OfHex(cometHeader.app_hash));
    assert.equal(header.last_block_id.hash, b64OfHex(cometHeader.last_block_id.hash));
    assert.equal(header.proposer_address, b64OfHex(cometHeader.proposer_address));
    assert.equal(block.sdk_block.header.proposer_address, cometHeader.proposer_address);
    assert.equal(protoTime(header.time), protoTime(cometHeader.time));
    assert.deepEqual(block.block.data.txs, cometBlock.block.data.txs);
    assert.equal(block.block.last_commit.signatures.length, cometBlock.block.last_commit.signatures.length);
    // The block carries the transfer: its keccak256 is the Ethereum hash ethers got.
    const raws: string[] = block.block.data.txs;
    assert.ok(raws.some((t) => keccak256(Buffer.from(t, 'base64')) === receipt!.hash));
    const latest = await ok(api, '/cosmos/base/tendermint/v1beta1/blocks/latest');
    assert.ok(Number(latest.block.header.height) >= h);

    const cometVals = await comet<Json>(cometRpc, `validators?height=${h}`);
    const vals = await ok(api, `/cosmos/base/tendermint/v1beta1/validatorsets/${h}`);
    assert.equal(vals.block_height, String(h));
    assert.equal(vals.pagination.total, cometVals.total);
    assert.deepEqual(
      vals.validators.map((v: Json) => [v.address, v.pub_key.key, v.voting_power]),
      cometVals.validators.map((v: Json) => [v.address, v.pub_key.value, v.voting_power]),
    );
    assert.equal(
      (await ok(api, '/cosmos/base/tendermint/v1beta1/validatorsets/latest')).validators.length,
      1,
    );

    const status = await comet<Json>(cometRpc, 'status');
    const info = await ok(api, '/cosmos/base/tendermint/v1beta1/node_info');
    assert.equal(info.default_node_info.default_node_id, status.node_info.id);
    assert.equal(info.default_node_info.network, 'chain-local');
    assert.equal(info.default_node_info.moniker, status.node_info.moniker);
    assert.equal(info.default_node_info.channels, b64OfHex(status.node_info.channels));
    assert.equal(info.application_version.name, 'noded');
    assert.deepEqual(await ok(api, '/cosmos/base/tendermint/v1beta1/syncing'), { syncing: false });

    // A transaction by its Ethereum hash and by its CometBFT hash: the same answer.
    const raw = Buffer.from(
      raws.find((t) => keccak256(Buffer.from(t, 'base64')) === receipt!.hash)!,
      'base64',
    );
    const cometHash = createHash('sha256').update(raw).digest('hex').toUpperCase();
    const byEth = await ok(api, `/cosmos/tx/v1beta1/txs/${receipt!.hash}`);
    assert.deepEqual(await ok(api, `/cosmos/tx/v1beta1/txs/${cometHash}`), byEth);
    const txr = byEth.tx_response;
    assert.equal(txr.height, String(h));
    assert.equal(txr.txhash, cometHash);
    assert.equal(txr.code, 0);
    assert.equal(txr.gas_used, receipt!.gasUsed.toString());
    assert.equal(protoTime(txr.timestamp), protoTime(cometHeader.time));
    const cometTx = await comet<Json>(cometRpc, `tx?hash=0x${cometHash}`);
    assert.equal(txr.gas_wanted, cometTx.tx_result.gas_wanted);
    assert.deepEqual(
      txr.events.map((e: Json) => e.type),
      cometTx.tx_result.events.map((e: Json) => e.type),
    );
    const msg = byEth.tx.body.messages[0];
    assert.equal(msg.hash, receipt!.hash);
    assert.equal(msg.from, DEV_ADDRESSES[0]!.toLowerCase());
    assert.equal(msg.value, '777000');
    assert.equal(msg.raw, raw.toString('base64'));

    // ---- bad requests, as `noded start` answers them -------------------------------------------
    const bad = async (path: string, status: number, code: number, message: RegExp, method?: string) => {
      const r = await rest(api, path, { method });
      assert.equal(r.status, status, `${method ?? 'GET'} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, code, path);
      assert.match(r.body.message, message, path);
      assert.deepEqual(r.body.details, []);
    };
    await bad('/cosmos/bank/v1beta1/balances/0x1234', 400, 3, /invalid address "0x1234"/);
    await bad('/cosmos/base/tendermint/v1beta1/blocks/abc', 400, 3, /invalid height "abc"/);
    await bad('/cosmos/base/tendermint/v1beta1/blocks/99999999', 400, 3, /bigger then the chain length/);
    await bad('/cosmos/tx/v1beta1/txs/0x12', 400, 3, /invalid transaction hash/);
    await bad(`/cosmos/tx/v1beta1/txs/${'ab'.repeat(32)}`, 404, 5, /tx not found/);
    await bad('/no/such/route', 404, 5, /^Not Found$/);
    await bad('/swagger.json', 404, 5, /^Not Found$/);
    await bad('/evm/v1/params', 405, 12, /Method Not Allowed/, 'POST');

    // ---- consensus down: its routes answer 503 with the reason, state routes keep answering ------
    await consensus.stop();
    running.splice(running.indexOf(consensus), 1);
    for (const path of [
      '/cosmos/base/tendermint/v1beta1/blocks/latest',
      `/cosmos/base/tendermint/v1beta1/blocks/${h}`,
      '/cosmos/base/tendermint/v1beta1/validatorsets/latest',
      '/cosmos/base/tendermint/v1beta1/node_info',
      '/cosmos/base/tendermint/v1beta1/syncing',
      `/cosmos/tx/v1beta1/txs/${receipt!.hash}`,
    ]) {
      const r = await rest(api, path);
      assert.equal(r.status, 503, `${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, 14);
      assert.match(
        r.body.message,
        new RegExp(`consensus service's RPC at 127\\.0\\.0\\.1:${ports.rpc} is unreachable`),
      );
      assert.ok(r.ms < 10_000, `${path} answered in ${r.ms} ms`);
    }
    assert.equal(
      (await ok(api, `/cosmos/bank/v1beta1/balances/${fresh}`, at)).balances[0].amount,
      BigInt(await rpc(evm, 'eth_getBalance', [fresh, hx])).toString(),
    );
    assert.equal(edge.proc.exitCode, null, 'the edge keeps running');

    // Consensus back: the same edge answers its routes again.
    consensus = await start('consensus');
    const again = await until('blocks again through the edge', 60_000, async () => {
      const r = await rest(api, `/cosmos/base/tendermint/v1beta1/blocks/${h}`);
      return r.status === 200 ? r.body : undefined;
    });
    assert.deepEqual(again, block);

    // ---- state-store down: state routes answer 503 with the reason ------------------------------
    await store.stop();
    running.splice(running.indexOf(store), 1);
    for (const path of [`/cosmos/bank/v1beta1/balances/${DEV_ADDRESSES[0]}`, '/noded/bridge/v1/params']) {
      const r = await rest(api, path);
      assert.equal(r.status, 503, `${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.code, 14);
      assert.match(
        r.body.message,
        new RegExp(`state-store at ${storeAt.replace(/\./g, '\\.')} is unavailable`),
      );
      assert.ok(r.ms < 35_000, `${path} answered in ${r.ms} ms`);
    }
    // Blocks still come from consensus.
    assert.equal((await rest(api, `/cosmos/base/tendermint/v1beta1/blocks/${h}`)).status, 200);
    store = await start('state-store');
    await until('balances again through the edge', 60_000, async () => {
      const r = await rest(api, `/cosmos/bank/v1beta1/balances/${fresh}`, { headers: at });
      return r.status === 200 ? true : undefined;
    });
    assert.equal(edge.proc.exitCode, null, 'the edge kept running throughout');

    // ---- the same answers as `noded start` on this home at the same heights ---------------------
    const compared: Array<[string, Record<string, string>?]> = [
      [`/cosmos/base/tendermint/v1beta1/blocks/${h}`],
      [`/cosmos/base/tendermint/v1beta1/blocks/${h - 1}`],
      [`/cosmos/base/tendermint/v1beta1/validatorsets/${h}`],
      [`/cosmos/base/tendermint/v1beta1/validatorsets/${h}?pagination.limit=1`],
      [`/cosmos/tx/v1beta1/txs/${receipt!.hash}`],
      [`/cosmos/tx/v1beta1/txs/${cometHash}`],
      [`/cosmos/bank/v1beta1/balances/${DEV_ADDRESSES[0]}`, at],
      [`/cosmos/bank/v1beta1/balances/${fresh}/by_denom?denom=abtc`, at],
      [`/cosmos/auth/v1beta1/accounts/${DEV_ADDRESSES[0]}`, at],
      ['/evm/v1/params'],
      ['/noded/bridge/v1/params', at],
      ['/cosmos/staking/v1beta1/params', at],
      ['/cosmos/distribution/v1beta1/params', at],
      ['/cosmos/bank/v1beta1/balances/0x1234'],
      ['/cosmos/base/tendermint/v1beta1/blocks/99999999'],
      [`/cosmos/tx/v1beta1/txs/${'ab'.repeat(32)}`],
      ['/no/such/route'],
    ];
    // The chain grows meanwhile: "the chain length N" is compared without N.
    const answer = (r: { status: number; body: Json }) => ({
      status: r.status,
      body:
        typeof r.body.message === 'string'
          ? { ...r.body, message: r.body.message.replace(/chain length \d+$/, 'chain length N') }
          : r.body,
    });
    const fromEdge: Array<{ status: number; body: Json }> = [];
    for (const [path, headers] of compared) fromEdge.push(answer(await rest(api, path, { headers })));
    assert.deepEqual(
      fromEdge.slice(0, 11).map((r) => r.status),
      Array(11).fill(200),
      'the edge answered the state and block routes',
    );
    // Latency, reported (not asserted): 20 sequential GETs of a block and of a balance at the height.
    const timed = async (label: string) => {
      for (const [what, path, headers] of [
        ['block', `/cosmos/base/tendermint/v1beta1/blocks/${h}`, undefined],
        ['balance', `/cosmos/bank/v1beta1/balances/${DEV_ADDRESSES[0]}`, at],
      ] as const) {
        const t0 = performance.now();
        for (let i = 0; i < 20; i++) assert.equal((await rest(api, path, { headers })).status, 200);
        t.diagnostic(`${label} ${what}: ${((performance.now() - t0) / 20).toFixed(2)} ms per request`);
      }
    };
    await timed('rpc-edge');
    for (const s of running.reverse()) await s.stop();
    running.length = 0;
    const node = await startAllInOne(home, ports);
    cleanups.push(() => node.stop());
    await until('noded start serves REST', 30_000, async () =>
      (await rest(api, '/evm/v1/params').catch(() => undefined))?.status === 200 ? true : undefined,
    );
    await timed('noded start');
    for (const [i, [path, headers]] of compared.entries()) {
      const r = answer(await rest(api, path, { headers }));
      assert.deepEqual(r, fromEdge[i], `${path}: the edge answered ${JSON.stringify(fromEdge[i])}`);
    }
    const startInfo = (await ok(api, '/cosmos/base/tendermint/v1beta1/node_info')).default_node_info;
    assert.equal(startInfo.default_node_id, info.default_node_info.default_node_id);
    assert.equal(startInfo.network, info.default_node_info.network);
  });
});
