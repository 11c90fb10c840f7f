// The REST API (:1317): Cosmos SDK gateway routes and shapes, and every [api] key of app.toml.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { keccak256, sha256 } from '@noded/crypto';
import { toHex } from '@noded/execution/src/bytes.js';
import { BRIDGE_OUT_ADDRESS } from '@noded/execution/src/precompiles/bridge-out.js';
import { BTC_TOKEN_ADDRESS } from '@noded/execution/src/precompiles/btc-token.js';
import { TxIndexer } from '@noded/rpc/src/comet/index.js';
import {
  ApiConfigError,
  type ApiOptions,
  bech32Decode,
  bech32Encode,
  defaultApiOptions,
  RestServer,
} from '@noded/rpc/src/rest/index.js';
import { MemoryKV } from '@noded/storage';
import { silentLogger } from '@noded/types';
import { EVM_CHAIN_ID, FakeChain } from '../rpc-comet/fake-node.js';
import { http } from '../rpc-comet/helpers.js';

const GAS = {
  baseFee: 1_000_000_000n,
  minGasPrice: 1_000_000_000n,
  maxGasPrice: 1_000_000_000_000n,
  gasTarget: 15_000_000n,
  blockGasLimit: 30_000_000n,
};

async function startRest(
  chain: FakeChain,
  options: Partial<ApiOptions> = {},
  extra: { bech32Prefix?: string; indexer?: TxIndexer } = {},
) {
  const server = new RestServer({
    node: chain,
    chain,
    logger: silentLogger,
    options: { ...defaultApiOptions, ...options },
    evmChainId: EVM_CHAIN_ID,
    gas: GAS,
    ...extra,
  });
  const port = await server.listen('127.0.0.1', 0);
  return { server, port, url: `http://127.0.0.1:${port}` };
}

describe('REST API routes', () => {
  let chain: FakeChain;
  let rest: Awaited<ReturnType<typeof startRest>>;
  let indexer: TxIndexer;

  before(async () => {
    chain = await FakeChain.create();
    indexer = new TxIndexer({ kv: new MemoryKV(), bus: chain.bus, logger: silentLogger });
    await indexer.catchUp(chain);
    rest = await startRest(chain, {}, { indexer });
  });
  after(async () => {
    await rest.server.close();
    await indexer.close();
  });

  it('node_info and syncing', async () => {
    const { status, json } = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/node_info`);
    assert.equal(status, 200);
    assert.deepEqual(json.default_node_info, {
      protocol_version: { p2p: '8', block: '11', app: '0' },
      default_node_id: chain.identity().nodeId,
      listen_addr: 'tcp://0.0.0.0:26656',
      network: 'chain-local',
      version: '0.38.17',
      channels: Buffer.from('40202122233038606100', 'hex').toString('base64'),
      moniker: 'fake-node',
      other: { tx_index: 'on', rpc_address: 'tcp://127.0.0.1:26657' },
    });
    assert.equal(json.application_version.name, 'noded');
    assert.deepEqual((await http(`${rest.url}/cosmos/base/tendermint/v1beta1/syncing`)).json, {
      syncing: false,
    });
    chain.catchingUp = true;
    assert.deepEqual((await http(`${rest.url}/cosmos/base/tendermint/v1beta1/syncing`)).json, {
      syncing: true,
    });
    chain.catchingUp = false;
  });

  it('blocks/latest and blocks/{height} in proto3 JSON (base64 bytes, enum names)', async () => {
    const latest = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/blocks/latest`);
    assert.equal(latest.json.block.header.height, '5');
    const { json } = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/blocks/3`);
    const s = chain.blocks.get(3)!;
    assert.deepEqual(json.block_id, {
      hash: Buffer.from(s.blockId.hash).toString('base64'),
      part_set_header: { total: 1, hash: Buffer.from(s.blockId.partSetHeader.hash).toString('base64') },
    });
    assert.equal(json.block.header.time, '2023-11-14T22:13:23.123456789Z');
    assert.equal(
      json.block.header.proposer_address,
      Buffer.from(s.block.header.proposerAddress).toString('base64'),
    );
    assert.equal(
      json.sdk_block.header.proposer_address,
      Buffer.from(s.block.header.proposerAddress).toString('hex').toUpperCase(),
    );
    assert.deepEqual(
      json.block.data.txs,
      s.block.data.txs.map((t) => Buffer.from(t).toString('base64')),
    );
    assert.equal(json.block.last_commit.signatures[0].block_id_flag, 'BLOCK_ID_FLAG_COMMIT');
    assert.equal(json.block.last_commit.signatures[1].block_id_flag, 'BLOCK_ID_FLAG_COMMIT');
    const at4 = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/blocks/4`);
    assert.equal(at4.json.block.last_commit.signatures[1].block_id_flag, 'BLOCK_ID_FLAG_ABSENT');
    const future = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/blocks/99`);
    assert.equal(future.status, 400);
    assert.deepEqual(future.json, {
      code: 3,
      message: 'requested block height 99 is bigger then the chain length 5',
      details: [],
    });
    const bad = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/blocks/abc`);
    assert.equal(bad.status, 400);
  });

  it('validatorsets with ed25519 Any keys and pagination', async () => {
    const { json } = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/validatorsets/latest`);
    assert.equal(json.block_height, '5');
    assert.deepEqual(json.validators[0], {
      address: Buffer.from(chain.validatorSet[0].address).toString('hex').toUpperCase(),
      pub_key: {
        '@type': '/cosmos.crypto.ed25519.PubKey',
        key: Buffer.from(chain.validatorSet[0].pubKey).toString('base64'),
      },
      voting_power: '10',
      proposer_priority: '-5',
    });
    assert.deepEqual(json.pagination, { next_key: null, total: '2' });
    const page = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/validatorsets/3?pagination.limit=1`);
    assert.equal(page.json.validators.length, 1);
    assert.notEqual(page.json.pagination.next_key, null);
  });

  it('validatorsets pages by pagination.offset and pagination.limit, and refuses malformed ones', async () => {
    const addr = (i: number) => Buffer.from(chain.validatorSet[i]!.address).toString('hex').toUpperCase();
    const page = async (query: string) => {
      const r = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/validatorsets/4?${query}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.block_height, '4');
      return {
        addresses: (r.json.validators as Array<{ address: string }>).map((v) => v.address),
        pagination: r.json.pagination,
      };
    };
    const key = (offset: number) => Buffer.from(String(offset)).toString('base64');
    assert.equal(chain.validatorSet.length, 2);
    assert.deepEqual(await page(''), {
      addresses: [addr(0), addr(1)],
      pagination: { next_key: null, total: '2' },
    });
    assert.deepEqual(await page('pagination.offset=1'), {
      addresses: [addr(1)],
      pagination: { next_key: null, total: '2' },
    });
    assert.deepEqual(await page('pagination.limit=1'), {
      addresses: [addr(0)],
      pagination: { next_key: key(1), total: '2' },
    });
    assert.deepEqual(await page('pagination.offset=1&pagination.limit=1'), {
      addresses: [addr(1)],
      pagination: { next_key: null, total: '2' },
    });
    assert.deepEqual(await page('pagination.offset=0&pagination.limit=1'), {
      addresses: [addr(0)],
      pagination: { next_key: key(1), total: '2' },
    });
    assert.deepEqual(await page('pagination.offset=2'), {
      addresses: [],
      pagination: { next_key: null, total: '2' },
    });
    assert.deepEqual(await page('pagination.offset=9&pagination.limit=1'), {
      addresses: [],
      pagination: { next_key: null, total: '2' },
    });
    // next_key is followed with pagination.key, as Cosmos clients do; a key with an offset is refused.
    const first = await page('pagination.limit=1');
    assert.deepEqual(
      await page(`pagination.limit=1&pagination.key=${encodeURIComponent(first.pagination.next_key)}`),
      {
        addresses: [addr(1)],
        pagination: { next_key: null, total: '2' },
      },
    );
    for (const [bad, message] of [
      [
        `pagination.key=${key(1)}&pagination.offset=0`,
        'invalid request, either offset or key is expected, got both',
      ],
      ['pagination.key=eA==', 'pagination.key "eA==" is not a next_key this server returned'],
      // "1x", "x1" and "1" without its base64 padding: none is a next_key this server hands out.
      ['pagination.key=MXg%3D', 'pagination.key "MXg=" is not a next_key this server returned'],
      ['pagination.key=eDE%3D', 'pagination.key "eDE=" is not a next_key this server returned'],
      ['pagination.key=MQ', 'pagination.key "MQ" is not a next_key this server returned'],
    ]) {
      const r = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/validatorsets/4?${bad}`);
      assert.equal(r.status, 400, bad);
      assert.equal(r.json.message, message, bad);
    }
    // Offsets and keys of more than one digit.
    assert.deepEqual(await page('pagination.offset=10'), {
      addresses: [],
      pagination: { next_key: null, total: '2' },
    });
    assert.deepEqual(await page(`pagination.key=${key(10)}`), {
      addresses: [],
      pagination: { next_key: null, total: '2' },
    });
    // A limit of 0 means the default page (100), as in the Cosmos SDK.
    assert.deepEqual((await page('pagination.limit=0')).addresses, [addr(0), addr(1)]);
    // The latest set pages the same way.
    const latest = await http(
      `${rest.url}/cosmos/base/tendermint/v1beta1/validatorsets/latest?pagination.offset=1`,
    );
    assert.deepEqual(
      (latest.json.validators as Array<{ address: string }>).map((v) => v.address),
      [addr(1)],
    );
    for (const bad of [
      'pagination.offset=-1',
      'pagination.offset=x',
      'pagination.limit=1.5',
      'pagination.offset=',
      'pagination.offset=1x',
      'pagination.limit=1x',
    ]) {
      const r = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/validatorsets/4?${bad}`);
      assert.equal(r.status, 400, bad);
      assert.deepEqual(
        { code: r.json.code, message: r.json.message },
        { code: 3, message: 'pagination.offset and pagination.limit must be non-negative integers' },
        bad,
      );
    }
  });

  it('balances in abtc, by_denom and the x-cosmos-block-height header', async () => {
    const addr = chain.wallets[0].address;
    const { json } = await http(`${rest.url}/cosmos/bank/v1beta1/balances/${addr}`);
    assert.deepEqual(json, {
      balances: [{ denom: 'abtc', amount: (10_000n * 10n ** 18n).toString() }],
      pagination: { next_key: null, total: '1' },
    });
    const empty = await http(`${rest.url}/cosmos/bank/v1beta1/balances/0x${'12'.repeat(20)}`);
    assert.deepEqual(empty.json, { balances: [], pagination: { next_key: null, total: '0' } });
    const byDenom = await http(
      `${rest.url}/cosmos/bank/v1beta1/balances/${addr.toLowerCase()}/by_denom?denom=abtc`,
    );
    assert.deepEqual(byDenom.json, { balance: { denom: 'abtc', amount: (10_000n * 10n ** 18n).toString() } });
    const other = await http(`${rest.url}/cosmos/bank/v1beta1/balances/${addr}/by_denom?denom=uatom`);
    assert.deepEqual(other.json, { balance: { denom: 'uatom', amount: '0' } });
    const atHeight = await http(`${rest.url}/cosmos/bank/v1beta1/balances/${addr}`, {
      headers: { 'x-cosmos-block-height': '99' },
    });
    assert.equal(atHeight.status, 400);
    const flipped = flipFirstLetter(addr);
    const badSum = await http(`${rest.url}/cosmos/bank/v1beta1/balances/${flipped}`);
    assert.equal(badSum.status, 400, 'a mixed-case address with a wrong EIP-55 checksum is refused');
    const junk = await http(`${rest.url}/cosmos/bank/v1beta1/balances/cosmos1xyz`);
    assert.equal(junk.status, 400);
    assert.equal(junk.json.code, 3);
    assert.match(junk.json.message, /expected 0x-prefixed 20-byte hex/);
  });

  it('accounts: sequence is the nonce; untouched addresses are 404', async () => {
    const addr = chain.wallets[0].address;
    const { json } = await http(`${rest.url}/cosmos/auth/v1beta1/accounts/${addr}`);
    assert.deepEqual(json, {
      account: {
        '@type': '/cosmos.auth.v1beta1.BaseAccount',
        address: addr,
        pub_key: null,
        account_number: '0',
        sequence: String(await chain.getNonce(addr.toLowerCase() as `0x${string}`)),
      },
    });
    const contract = await http(
      `${rest.url}/cosmos/auth/v1beta1/accounts/0x5fbdb2315678afecb367f032d93f642f64180aa3`,
    );
    assert.equal(contract.status, 200, 'an account with code exists');
    const nobody = await http(`${rest.url}/cosmos/auth/v1beta1/accounts/0x${'34'.repeat(20)}`);
    assert.equal(nobody.status, 404);
    assert.deepEqual(nobody.json, {
      code: 5,
      message: `account 0x${'34'.repeat(20)} not found`,
      details: [],
    });
  });

  it('txs/{hash} by Ethereum hash or CometBFT hash, Cosmos tx_response shape', async () => {
    const s = chain.blocks.get(5)!;
    const raw = s.block.data.txs[1];
    const ethHash = `0x${Buffer.from(keccak256(raw)).toString('hex')}`;
    const { status, json } = await http(`${rest.url}/cosmos/tx/v1beta1/txs/${ethHash}`);
    assert.equal(status, 200);
    const r = json.tx_response;
    assert.equal(r.height, '5');
    assert.equal(r.txhash, Buffer.from(sha256(raw)).toString('hex').toUpperCase());
    assert.equal(r.code, 0);
    assert.equal(r.gas_used, '21000');
    assert.equal(r.gas_wanted, '21000');
    assert.equal(r.timestamp, '2023-11-14T22:13:25.123456789Z');
    assert.equal(r.events[1].type, 'transfer');
    assert.equal(r.tx['@type'], '/cosmos.tx.v1beta1.Tx');
    const msg = json.tx.body.messages[0];
    assert.equal(msg['@type'], '/noded.evm.v1.MsgEthereumTx');
    assert.equal(msg.hash, ethHash);
    assert.equal(msg.raw, Buffer.from(raw).toString('base64'));
    assert.equal(msg.chain_id, '31337');
    assert.deepEqual(json.tx.auth_info.fee.amount, [
      { denom: 'abtc', amount: (21000n * 1_500_000_000n).toString() },
    ]);
    const viaComet = await http(
      `${rest.url}/cosmos/tx/v1beta1/txs/${Buffer.from(sha256(raw)).toString('hex')}`,
    );
    assert.equal(viaComet.json.tx_response.txhash, r.txhash);
    const missing = await http(`${rest.url}/cosmos/tx/v1beta1/txs/${'ab'.repeat(32)}`);
    assert.equal(missing.status, 404);
    assert.equal(missing.json.message, `tx not found: ${'ab'.repeat(32)}`);
    const bad = await http(`${rest.url}/cosmos/tx/v1beta1/txs/xyz`);
    assert.equal(bad.status, 400);
  });

  it('EVM and fee-market params and base fee (and their Cosmos EVM aliases)', async () => {
    const evm = await http(`${rest.url}/evm/v1/params`);
    assert.equal(evm.json.params.evm_denom, 'abtc');
    assert.equal(evm.json.params.chain_id, '31337');
    assert.equal(evm.json.params.block_gas_limit, '30000000');
    assert.deepEqual(evm.json.params.active_static_precompiles, [
      toHex(BTC_TOKEN_ADDRESS),
      toHex(BRIDGE_OUT_ADDRESS),
    ]);
    const fm = await http(`${rest.url}/feemarket/v1/params`);
    assert.deepEqual(fm.json.params, {
      no_base_fee: false,
      base_fee_change_denominator: 8,
      elasticity_multiplier: 2,
      enable_height: '0',
      base_fee: '875000000',
      initial_base_fee: '1000000000',
      min_gas_price: '1000000000.000000000000000000',
      max_gas_price: '1000000000000.000000000000000000',
      gas_target: '15000000',
      block_gas_limit: '30000000',
    });
    assert.deepEqual((await http(`${rest.url}/feemarket/v1/base_fee`)).json, { base_fee: '875000000' });
    assert.deepEqual((await http(`${rest.url}/cosmos/evm/feemarket/v1/base_fee`)).json, {
      base_fee: '875000000',
    });
    assert.equal((await http(`${rest.url}/cosmos/evm/vm/v1/params`)).json.params.chain_id, '31337');
  });

  it('unknown paths are gateway 404s; other methods 405; swagger is off by default', async () => {
    const nf = await http(`${rest.url}/cosmos/nope`);
    assert.equal(nf.status, 404);
    assert.deepEqual(nf.json, { code: 5, message: 'Not Found', details: [] });
    const post = await http(`${rest.url}/feemarket/v1/base_fee`, { method: 'POST', body: '{}' });
    assert.equal(post.status, 405);
    assert.equal((await http(`${rest.url}/swagger/`)).status, 404);
    assert.equal((await http(`${rest.url}/swagger.json`)).status, 404);
  });
});

describe('REST API [api] keys', () => {
  let chain: FakeChain;
  let dir: string;
  before(async () => {
    chain = await FakeChain.create();
    dir = mkdtempSync(join(tmpdir(), 'noded-rest-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('enable = false: listen refuses and the port stays closed', async () => {
    const server = new RestServer({
      node: chain,
      chain,
      logger: silentLogger,
      options: { ...defaultApiOptions, enable: false },
      evmChainId: EVM_CHAIN_ID,
      gas: GAS,
    });
    assert.equal(server.options.enable, false);
    await assert.rejects(
      server.listen('127.0.0.1', 0),
      (err: Error) => err instanceof ApiConfigError && err.code === 'API_DISABLED',
    );
  });

  it('swagger = true serves an OpenAPI document listing every route', async () => {
    const rest = await startRest(chain, { swagger: true });
    try {
      const doc = await http(`${rest.url}/swagger/`);
      assert.equal(doc.status, 200);
      assert.equal(doc.json.openapi, '3.0.3');
      for (const p of [
        '/cosmos/base/tendermint/v1beta1/node_info',
        '/cosmos/base/tendermint/v1beta1/blocks/{height}',
        '/cosmos/bank/v1beta1/balances/{address}',
        '/cosmos/auth/v1beta1/accounts/{address}',
        '/cosmos/tx/v1beta1/txs/{hash}',
        '/feemarket/v1/base_fee',
      ]) {
        assert.ok(doc.json.paths[p]?.get, p);
      }
      // Every path parameter of every route is described (none is left null), list routes take
      // pagination, and state reads the height header.
      const names = (p: string) =>
        (doc.json.paths[p].get.parameters as Array<{ name: string } | null>).map((x) => x?.name ?? null);
      for (const p of Object.keys(doc.json.paths)) {
        const wanted = [...p.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
        assert.deepEqual(names(p).slice(0, wanted.length), wanted, p);
      }
      assert.deepEqual(names('/cosmos/staking/v1beta1/validators/{validator_addr}/delegations'), [
        'validator_addr',
        'x-cosmos-block-height',
        'pagination.key',
        'pagination.offset',
        'pagination.limit',
      ]);
      assert.deepEqual(names('/cosmos/staking/v1beta1/historical_info/{height}'), ['height']);
      assert.deepEqual((await http(`${rest.url}/swagger.json`)).json, doc.json);
    } finally {
      await rest.server.close();
    }
  });

  it('TLS with an openssl certificate; the client verifies it against the CA', async () => {
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const rest = await startRest(chain, { tlsCertFile: cert, tlsKeyFile: key });
    const get = (ca?: Buffer) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: rest.port,
            path: '/cosmos/base/tendermint/v1beta1/syncing',
            ca,
            servername: 'localhost',
          },
          (res) => {
            let body = '';
            res.on('data', (d) => {
              body += d;
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    try {
      assert.equal(rest.server.tls, true);
      const ok = await get(readFileSync(cert));
      assert.equal(ok.status, 200);
      assert.deepEqual(JSON.parse(ok.body), { syncing: false });
      await assert.rejects(get(undefined), /self[- ]signed certificate/);
      const plain = await fetch(`${rest.url}/cosmos/base/tendermint/v1beta1/syncing`).then(
        () => 'answered',
        () => 'refused',
      );
      assert.equal(plain, 'refused', 'plain HTTP is not served on a TLS port');
    } finally {
      await rest.server.close();
    }
  });

  it('tls_cert_file without tls_key_file (or the reverse) is a config error', () => {
    for (const options of [{ tlsCertFile: '/x/cert.pem' }, { tlsKeyFile: '/x/key.pem' }]) {
      assert.throws(
        () =>
          new RestServer({
            node: chain,
            chain,
            logger: silentLogger,
            options: { ...defaultApiOptions, ...options },
            evmChainId: EVM_CHAIN_ID,
            gas: GAS,
          }),
        (err: Error) =>
          err instanceof ApiConfigError &&
          err.code === 'API_TLS_INCOMPLETE' &&
          /app\.toml:api\.tls_/.test(err.message),
      );
    }
  });

  it('max_open_connections: connections beyond the limit are closed', async () => {
    const rest = await startRest(chain, { maxOpenConnections: 2 });
    const held = [connect(rest.port, '127.0.0.1'), connect(rest.port, '127.0.0.1')];
    try {
      await Promise.all(held.map((s) => new Promise((r) => s.once('connect', r))));
      await new Promise((r) => setTimeout(r, 50));
      const third = await fetch(`${rest.url}/feemarket/v1/base_fee`).then(
        () => 'served',
        () => 'refused',
      );
      assert.equal(third, 'refused');
      for (const s of held) s.destroy();
      await new Promise((r) => setTimeout(r, 50));
      assert.equal((await http(`${rest.url}/feemarket/v1/base_fee`)).status, 200);
    } finally {
      for (const s of held) s.destroy();
      await rest.server.close();
    }
  });

  it('rpc_read_timeout cuts a client that sends its request too slowly', async () => {
    const rest = await startRest(chain, { rpcReadTimeoutMs: 300 });
    try {
      const started = Date.now();
      const outcome = await new Promise<string>((resolve) => {
        const s = connect(rest.port, '127.0.0.1', () =>
          s.write('GET /feemarket/v1/base_fee HTTP/1.1\r\nHost: x\r\n'),
        );
        let data = '';
        s.on('data', (d) => {
          data += d.toString();
        });
        s.on('close', () => resolve(data));
        s.on('error', () => resolve(data));
        setTimeout(() => s.destroy(), 5000).unref();
      });
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 250 && elapsed < 3000, `closed after ${elapsed} ms`);
      assert.match(outcome, /^(HTTP\/1\.1 408|)/);
      assert.equal(
        (await http(`${rest.url}/feemarket/v1/base_fee`)).status,
        200,
        'a normal client is served',
      );
    } finally {
      await rest.server.close();
    }
  });

  it('rpc_write_timeout cuts a response that is not out in time', async () => {
    const rest = await startRest(chain, { rpcWriteTimeoutMs: 300 });
    try {
      chain.loadDelayMs = 1500;
      const started = Date.now();
      const outcome = await fetch(`${rest.url}/cosmos/base/tendermint/v1beta1/blocks/2`).then(
        (r) => `status ${r.status}`,
        () => 'cut',
      );
      assert.equal(outcome, 'cut');
      assert.ok(Date.now() - started < 1400, 'cut before the slow read finished');
      chain.loadDelayMs = 0;
      // A client that stops reading a large response is cut as well.
      const big = await startRest(chain, { rpcWriteTimeoutMs: 300, swagger: true });
      try {
        const bytes = await new Promise<number>((resolve) => {
          let got = 0;
          const s = connect(big.port, '127.0.0.1', () => {
            for (let i = 0; i < 200; i++) s.write('GET /swagger.json HTTP/1.1\r\nHost: x\r\n\r\n');
            s.pause();
            setTimeout(() => {
              s.on('data', (d) => {
                got += d.length;
              });
              s.resume();
            }, 800);
          });
          s.on('close', () => resolve(got));
          s.on('error', () => resolve(got));
          setTimeout(() => s.destroy(), 8000).unref();
        });
        const one = (await http(`${big.url}/swagger.json`)).text.length;
        assert.ok(bytes < one * 200, `the stalled pipeline was cut (${bytes} of ${one * 200} bytes)`);
      } finally {
        await big.server.close();
      }
    } finally {
      chain.loadDelayMs = 0;
      await rest.server.close();
    }
  });

  it('rpc_max_body_bytes: larger bodies get 413', async () => {
    const rest = await startRest(chain, { rpcMaxBodyBytes: 1024 });
    try {
      const big = await http(`${rest.url}/feemarket/v1/base_fee`, { method: 'POST', body: 'x'.repeat(5000) });
      assert.equal(big.status, 413);
      assert.equal(big.json.code, 8);
      assert.match(big.json.message, /rpc_max_body_bytes is 1024 bytes/);
      // Without a Content-Length (chunked) the limit holds while streaming.
      const chunked = await http(`${rest.url}/feemarket/v1/base_fee`, {
        method: 'POST',
        body: new ReadableStream({
          start(c) {
            for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('y'.repeat(500)));
            c.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      assert.equal(chunked.status, 413);
      const small = await http(`${rest.url}/feemarket/v1/base_fee`, { method: 'GET' });
      assert.equal(small.status, 200);
    } finally {
      await rest.server.close();
    }
  });

  it('bech32 addresses when a prefix is configured', async () => {
    const rest = await startRest(chain, {}, { bech32Prefix: 'chain' });
    try {
      const hex = chain.wallets[0].address.toLowerCase();
      const b32 = bech32Encode('chain', new Uint8Array(Buffer.from(hex.slice(2), 'hex')));
      assert.deepEqual(Buffer.from(bech32Decode(b32)!.bytes).toString('hex'), hex.slice(2));
      const bal = await http(`${rest.url}/cosmos/bank/v1beta1/balances/${b32}`);
      assert.equal(bal.json.balances[0].amount, (10_000n * 10n ** 18n).toString());
      const acc = await http(`${rest.url}/cosmos/auth/v1beta1/accounts/${hex}`);
      assert.equal(acc.json.account.address, b32);
      const vals = await http(`${rest.url}/cosmos/base/tendermint/v1beta1/validatorsets/latest`);
      assert.match(vals.json.validators[0].address, /^chainvalcons1[02-9ac-hj-np-z]+$/);
      const wrongPrefix = await http(
        `${rest.url}/cosmos/bank/v1beta1/balances/${bech32Encode('cosmos', new Uint8Array(20))}`,
      );
      assert.equal(wrongPrefix.status, 400);
    } finally {
      await rest.server.close();
    }
  });
});

/** The address with the case of its first hex letter flipped: a broken EIP-55 checksum. */
function flipFirstLetter(a: string): string {
  const i = [...a].findIndex((c, k) => k > 1 && /[a-fA-F]/.test(c));
  const c = a[i];
  return a.slice(0, i) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + a.slice(i + 1);
}
