// The chain-local dev methods through the cluster (docs/cluster.md "Dev-chain methods"), as
// processes: nats-server, the executor, consensus, a state-store and two rpc-edges on one
// chain-local home whose consensus makes an empty block only every 30 s, so a dev operation that
// did not wake consensus would wait that long:
// - anvil_setBalance through edge A answers once its block is committed, and eth_getBalance through
//   the same edge (a state-store read) sees the balance right after; setNonce, setCode and
//   setStorageAt likewise;
// - hardhat_impersonateAccount through edge A is seen by edge B (eth_accounts: the executor keeps the
//   set), and eth_sendTransaction from the impersonated address through edge B is mined as sent by it;
// - once stopped (through edge B), a send from it is refused through edge A, and the executor's
//   DevChain itself refuses an impersonated transaction for that sender;
// - bad params get the same -32602 as `noded start` (libs/rpc's handlers), evm_mine stays refused.
// And a chain-testnet cluster: the edge refuses the setters and impersonation by name, the executor's
// DevChain refuses the calls, and its ProcessProposal rejects a block carrying a dev operation.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { GrpcApplication, GrpcDevChain } from '@noded/abci-grpc';
import { encodeDevOp } from '@noded/execution/src/dev.js';
import { impersonatedTransaction } from '@noded/rpc/src/eth/tx-codec.js';
import { ChainError, type Hex } from '@noded/types';
import { Wallet } from 'ethers';
import { freePort, initLocalHome, rewireHome, runCli } from '../e2e/harness.js';
import { startNatsServer } from './nats.js';
import { type ServiceProcess, spawnService, until, waitForService } from './processes.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Answer {
  result?: unknown;
  error?: { code: number; message: string };
}

/** One JSON-RPC call; the whole answer (result or error). */
async function call(url: string, method: string, params: unknown[] = []): Promise<Answer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(60_000),
  });
  return (await res.json()) as Answer;
}

/** The result of a call that must succeed. */
async function ok(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const a = await call(url, method, params);
  assert.equal(a.error, undefined, `${method}: ${JSON.stringify(a.error)}`);
  return a.result;
}

/** Starts services on `home` with `env`; each is stopped by the file's cleanups. */
function launcher(home: string, env: Record<string, string>) {
  const running: ServiceProcess[] = [];
  cleanups.push(async () => {
    for (const s of running.reverse()) await s.stop();
  });
  return async (name: string, more: Record<string, string> = {}) => {
    const s = spawnService(name, home, { ...env, ...more });
    running.push(s);
    await waitForService(s, new RegExp(`noded service ${name} is running`), 90_000);
    return s;
  };
}

const LOCAL_REFUSAL =
  'is not served by the cluster: of the dev-chain methods it serves only the state setters and impersonation (mining, time and snapshots run in `noded start` on chain-local); the cluster makes blocks on demand as config.toml paces them ([consensus] create_empty_blocks_interval, docs/cluster.md)';
const CLUSTER_REFUSAL =
  'is not served by the cluster: its services have no dev controls (they run in `noded start` on chain-local); the cluster makes blocks on demand as config.toml paces them ([consensus] create_empty_blocks_interval, docs/cluster.md)';

describe('dev-chain methods through the cluster', () => {
  it('chain-local: setters answer once committed and read back at once; impersonation is shared by the edges and owned by the executor', async (t) => {
    const { home, ports } = await initLocalHome({
      extra: (c) => {
        // No empty block for 30 s: only a woken consensus makes the dev operations' blocks.
        if (c.consensus) c.consensus.create_empty_blocks_interval = '30s';
      },
    });
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const executorAt = `127.0.0.1:${await freePort()}`;
    const storeAt = `127.0.0.1:${await freePort()}`;
    const edgeBHttp = await freePort();
    const edgeBApi = await freePort();
    const start = launcher(home, {
      NODED_EXECUTOR_GRPC_ADDRESS: executorAt,
      NODED_STATE_STORE_GRPC_ADDRESS: storeAt,
      NODED_NATS_URL: nats.url,
    });
    const executor = await start('executor');
    assert.match(executor.output(), /dev controls on/);
    await start('consensus');
    await start('state-store');
    await start('rpc-edge');
    await start('rpc-edge', {
      NODED_EVM_RPC_ADDRESS: `127.0.0.1:${edgeBHttp}`,
      NODED_EVM_WS_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_API_ADDRESS: `tcp://127.0.0.1:${edgeBApi}`,
      NODED_EVM_API_ADDRESS: `127.0.0.1:${edgeBApi}`,
    });
    const a = `http://127.0.0.1:${ports.evmHttp}`;
    const b = `http://127.0.0.1:${edgeBHttp}`;
    assert.match(String(await ok(a, 'web3_clientVersion')), /^anvil\/noded-v/);

    // ---- state setters: answered once committed, read back through the state-store at once -----
    const who = Wallet.createRandom().address.toLowerCase() as Hex;
    const asked = Date.now();
    assert.equal(await ok(a, 'anvil_setBalance', [who, '0xde0b6b3a7640000']), null);
    const setMs = Date.now() - asked;
    assert.ok(setMs < 20_000, `anvil_setBalance took ${setMs} ms: consensus was not woken`);
    t.diagnostic(`anvil_setBalance answered after ${setMs} ms (no empty block for 30 s)`);
    assert.equal(await ok(a, 'eth_getBalance', [who, 'latest']), '0xde0b6b3a7640000');
    assert.equal(await ok(a, 'hardhat_setNonce', [who, '0x7']), true);
    assert.equal(await ok(a, 'eth_getTransactionCount', [who, 'latest']), '0x7');
    const contract = Wallet.createRandom().address.toLowerCase() as Hex;
    assert.equal(await ok(a, 'hardhat_setCode', [contract, '0x6001600055']), true);
    assert.equal(await ok(a, 'eth_getCode', [contract, 'latest']), '0x6001600055');
    const word = `0x${'ab'.repeat(32)}`;
    assert.equal(await ok(a, 'anvil_setStorageAt', [contract, '0x2', word]), null);
    assert.equal(await ok(a, 'eth_getStorageAt', [contract, '0x2', 'latest']), word);

    // ---- params: libs/rpc's validation and wording, as `noded start` --------------------------
    const bad = await call(a, 'anvil_setBalance', [who, '12']);
    assert.deepEqual(bad.error, {
      code: -32602,
      message: 'balance must be a 0x-prefixed hex quantity, got "12"',
    });
    const badWord = await call(b, 'hardhat_setStorageAt', [contract, '0x0', '0x01']);
    assert.equal(badWord.error?.code, -32602);
    assert.match(badWord.error!.message, /storage value must be exactly 32 bytes/);

    // ---- impersonation: one set in the executor, seen by both edges ----------------------------
    assert.equal(await ok(a, 'hardhat_impersonateAccount', [who]), true);
    assert.ok(((await ok(b, 'eth_accounts')) as string[]).includes(who), 'edge B lists the impersonated');
    const to = Wallet.createRandom().address.toLowerCase();
    const hash = (await ok(b, 'eth_sendTransaction', [{ from: who, to, value: '0x3e8' }])) as Hex;
    const receipt = await until('the impersonated transfer mined', 60_000, async () => {
      const r = (await ok(b, 'eth_getTransactionReceipt', [hash])) as { status: string; from: string } | null;
      return r ?? undefined;
    });
    assert.equal(receipt.status, '0x1');
    assert.equal(receipt.from, who);
    assert.equal(await ok(b, 'eth_getBalance', [to, 'latest']), '0x3e8');
    assert.equal(await ok(b, 'eth_getTransactionCount', [who, 'latest']), '0x8');

    // ---- stopped through edge B: refused through edge A and by the executor itself -------------
    assert.equal(await ok(b, 'hardhat_stopImpersonatingAccount', [who]), true);
    assert.equal(await ok(a, 'hardhat_stopImpersonatingAccount', [who]), false);
    assert.ok(!((await ok(a, 'eth_accounts')) as string[]).includes(who));
    const refused = await call(a, 'eth_sendTransaction', [{ from: who, to, value: '0x1' }]);
    assert.deepEqual(refused.error, { code: -32000, message: 'unknown account' });
    const dev = new GrpcDevChain(executorAt);
    cleanups.push(() => dev.close());
    const { raw } = impersonatedTransaction(
      {
        type: 2,
        chainId: 31337n,
        nonce: 8n,
        gas: 21000n,
        to: to as Hex,
        value: 1n,
        data: '0x',
        maxFeePerGas: 10n ** 12n,
        maxPriorityFeePerGas: 10n ** 9n,
        accessList: [],
      },
      who,
    );
    await assert.rejects(
      dev.devSendImpersonated(who, raw),
      (err: Error) =>
        err instanceof ChainError &&
        err.code === -32000 &&
        err.message ===
          `${who} is not impersonated: call anvil_impersonateAccount or hardhat_impersonateAccount first`,
    );
    assert.equal(await ok(a, 'eth_getTransactionCount', [who, 'pending']), '0x8', 'nothing was queued');

    // ---- what stays refused on chain-local -----------------------------------------------------
    const mine = await call(a, 'evm_mine');
    assert.deepEqual(mine.error, { code: -32000, message: `evm_mine ${LOCAL_REFUSAL}` });
  });

  it('chain-testnet: the edge refuses the setters by name, the executor refuses dev calls and blocks with dev operations', async () => {
    // A chain-local home renamed chain-testnet: the same single validator (whose key the home holds,
    // so only the chain id withholds the dev controls), which consensus runs without a p2p-gateway.
    const home = mkdtempSync(join(tmpdir(), 'noded-devcluster-testnet-'));
    cleanups.push(() => rmSync(home, { recursive: true, force: true }));
    const init = runCli(['init', 'full', '--chain-id', 'chain-local', '--home', home]);
    assert.equal(init.code, 0, init.stderr);
    const genesisFile = join(home, 'config', 'genesis.json');
    const genesis = JSON.parse(readFileSync(genesisFile, 'utf8')) as {
      chain_id: string;
      app_state: { evm: { chain_id: string } };
    };
    genesis.chain_id = 'chain-testnet';
    genesis.app_state.evm.chain_id = '31611';
    writeFileSync(genesisFile, JSON.stringify(genesis));
    const ports = await rewireHome(home, { timeoutCommit: '300ms' });
    const nats = await startNatsServer();
    cleanups.push(() => nats.stop());
    const executorAt = `127.0.0.1:${await freePort()}`;
    const start = launcher(home, {
      NODED_EXECUTOR_GRPC_ADDRESS: executorAt,
      NODED_STATE_STORE_GRPC_ADDRESS: `127.0.0.1:${await freePort()}`,
      NODED_NATS_URL: nats.url,
    });
    const executor = await start('executor');
    assert.doesNotMatch(executor.output(), /dev controls on/);
    await start('consensus');
    await start('state-store');
    await start('rpc-edge');
    const url = `http://127.0.0.1:${ports.evmHttp}`;
    assert.match(String(await ok(url, 'web3_clientVersion')), /^noded\/v/);
    const who = Wallet.createRandom().address;
    for (const [method, params] of [
      ['anvil_setBalance', [who, '0x1']],
      ['hardhat_setBalance', [who, '0x1']],
      ['hardhat_setNonce', [who, '0x1']],
      ['anvil_setCode', [who, '0x00']],
      ['hardhat_setStorageAt', [who, '0x0', `0x${'00'.repeat(32)}`]],
      ['hardhat_impersonateAccount', [who]],
      ['anvil_stopImpersonatingAccount', [who]],
      ['evm_mine', []],
    ] as const) {
      const answer = await call(url, method, [...params]);
      assert.deepEqual(answer.error, { code: -32000, message: `${method} ${CLUSTER_REFUSAL}` }, method);
    }
    // The executor's own refusals, whoever calls it.
    const dev = new GrpcDevChain(executorAt);
    cleanups.push(() => dev.close());
    await assert.rejects(
      dev.devSetState({ kind: 'balance', address: who.toLowerCase() as Hex, value: 1n }),
      (err: Error) =>
        err instanceof ChainError &&
        err.code === -32000 &&
        err.message === 'dev-chain methods are only available on a single-validator chain-local node',
    );
    await assert.rejects(dev.devImpersonate(who.toLowerCase() as Hex, true), /single-validator chain-local/);
    // A proposal carrying a dev operation is rejected (what the executor says when consensus asks).
    const app = new GrpcApplication(executorAt);
    cleanups.push(() => app.close());
    const op = encodeDevOp({ kind: 'balance', address: Buffer.from(who.slice(2), 'hex'), value: 1n });
    const height = Number(await ok(url, 'eth_blockNumber')) + 1_000;
    assert.equal(
      await app.processProposal({
        height,
        time: BigInt(Date.now()) * 1_000_000n,
        proposerAddress: new Uint8Array(20),
        hash: new Uint8Array(32),
        txs: [op],
      }),
      false,
    );
    // Nor is it admitted as a transaction (CheckTx).
    const checked = await app.checkTx(op, 'new');
    assert.notEqual(checked.code, 0);
  });
});
