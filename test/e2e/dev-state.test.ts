// The dev-chain methods (anvil_/hardhat_ setBalance, setNonce, setCode, setStorageAt,
// impersonateAccount, stopImpersonatingAccount, anvil_nodeInfo, hardhat_metadata) against a real
// chain-local node process, through ethers and viem; a replay of the block store from an empty
// application.db reproduces every block hash; a chain-testnet home refuses them.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Contract, ContractFactory, JsonRpcProvider, JsonRpcSigner, Wallet } from 'ethers';
import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
} from 'viem';
import { compile, PROBE_SOURCE } from './contracts.js';
import { DEV_ADDRESSES, DEV_KEYS, initLocalHome, jsonRpc, rewireHome, runCli, startNode } from './harness.js';

const rpc = jsonRpc;

const VAULT_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Vault {
    uint256 public stored;
    address public owner;
    error NotOwner(address caller, uint256 stored);

    function set(uint256 v) external { stored = v; }

    function onlyOwner() external view returns (uint256) {
        if (msg.sender != owner) revert NotOwner(msg.sender, stored);
        return stored;
    }

    function bare() external pure { revert(); }
}
`;

async function ok(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const r = await rpc(url, method, params);
  if (r.error) throw new Error(`${method}: ${r.error.code} ${r.error.message}`);
  return r.result;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

describe('dev-chain state methods on a chain-local node', { timeout: 300_000 }, () => {
  let home: string;
  let ports: Awaited<ReturnType<typeof initLocalHome>>['ports'];
  let node: Awaited<ReturnType<typeof startNode>>;
  let provider: JsonRpcProvider;
  let url: string;

  before(async () => {
    ({ home, ports } = await initLocalHome({ timeoutCommit: '300ms' }));
    node = await startNode(home, ports);
    url = node.ethUrl;
    provider = new JsonRpcProvider(url, undefined, {
      staticNetwork: true,
      pollingInterval: 100,
      cacheTimeout: -1,
    });
  });

  after(async () => {
    provider?.destroy();
    await node?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  it('anvil_setBalance / hardhat_setBalance: the new balance reads at once at latest, the old one at the block before', async () => {
    const who = Wallet.createRandom().address;
    const before = BigInt((await ok(url, 'eth_blockNumber')) as string);
    assert.equal(await ok(url, 'anvil_setBalance', [who, hex(12345n)]), null);
    assert.equal(await provider.getBalance(who, 'latest'), 12345n);
    const at = BigInt((await ok(url, 'eth_blockNumber')) as string);
    assert.ok(at > before, 'the change was applied by a new block');
    assert.equal(await provider.getBalance(who, Number(before)), 0n);
    // Leading zeros are accepted (anvil's U256), 256-bit values too.
    assert.equal(await ok(url, 'hardhat_setBalance', [who, '0x0de0b6b3a7640000']), true);
    assert.equal(await provider.getBalance(who), 10n ** 18n);
    // The new coin is spendable: the account pays for a transfer.
    await ok(url, 'hardhat_setBalance', [DEV_ADDRESSES[3], hex(5n * 10n ** 18n)]);
    const w = new Wallet(DEV_KEYS[3], provider);
    const r = await (await w.sendTransaction({ to: who, value: 1n })).wait();
    assert.equal(r?.status, 1);
    assert.equal(await provider.getBalance(who), 10n ** 18n + 1n);
  });

  it('refuses bad input with a precise -32602 and changes nothing', async () => {
    const who = Wallet.createRandom().address;
    const bad = await rpc(url, 'anvil_setBalance', ['0x1234', '0x1']);
    assert.equal(bad.error?.code, -32602);
    const big = await rpc(url, 'anvil_setBalance', [who, `0x1${'0'.repeat(64)}`]);
    assert.equal(big.error?.code, -32602);
    assert.match(big.error!.message, /balance .* does not fit in 256 bits/);
    const word = await rpc(url, 'anvil_setStorageAt', [who, '0x0', '0x01']);
    assert.equal(word.error?.code, -32602);
    assert.match(word.error!.message, /storage value must be exactly 32 bytes .* got 1 bytes/);
    const nonce = await rpc(url, 'hardhat_setNonce', [who, '0x1ffffffffffffffff']);
    assert.equal(nonce.error?.code, -32602);
    const code = await rpc(url, 'anvil_setCode', [who, '0x123']);
    assert.equal(code.error?.code, -32602);
    assert.equal(await provider.getBalance(who), 0n);
    assert.equal(await provider.getTransactionCount(who), 0);
    // Nothing was queued: after a later change has been applied by a block, the refused ones still
    // have not been.
    const other = Wallet.createRandom().address;
    await ok(url, 'anvil_setBalance', [other, '0x5']);
    assert.equal(await provider.getBalance(other), 5n);
    assert.equal(await provider.getBalance(who), 0n);
    assert.equal(await provider.getTransactionCount(who), 0);
    assert.equal(await provider.getCode(who), '0x');
    assert.equal(await provider.getStorage(who, 0), `0x${'0'.repeat(64)}`);
  });

  it('setNonce, setCode and setStorageAt: a contract planted by setCode runs and reads planted storage', async () => {
    const { Vault } = compile(VAULT_SOURCE);
    const at = Wallet.createRandom().address;
    assert.equal(await ok(url, 'anvil_setCode', [at, Vault.deployed]), null);
    assert.equal(await provider.getCode(at), Vault.deployed);
    const slot0 = `0x${'0'.repeat(63)}7`;
    assert.equal(await ok(url, 'hardhat_setStorageAt', [at, '0x0', slot0]), true);
    assert.equal(await provider.getStorage(at, 0), slot0);
    const vault = new Contract(at, Vault.abi as never, provider);
    assert.equal(await vault.stored(), 7n);
    const owner = `0x${'0'.repeat(24)}${DEV_ADDRESSES[2].slice(2).toLowerCase()}`;
    await ok(url, 'anvil_setStorageAt', [at, '0x1', owner]);
    assert.equal((await vault.owner()).toLowerCase(), DEV_ADDRESSES[2].toLowerCase());
    // A transaction against the planted contract changes the planted storage.
    const w = new Wallet(DEV_KEYS[2], provider);
    await (await (vault.connect(w) as Contract).set(99n)).wait();
    assert.equal(await vault.stored(), 99n);

    const fresh = Wallet.createRandom().connect(provider);
    await ok(url, 'anvil_setBalance', [fresh.address, hex(10n ** 18n)]);
    assert.equal(await ok(url, 'anvil_setNonce', [fresh.address, '0x2a']), null);
    assert.equal(await provider.getTransactionCount(fresh.address), 42);
    assert.equal(await provider.getTransactionCount(fresh.address, 'pending'), 42);
    const sent = await fresh.sendTransaction({ to: DEV_ADDRESSES[0], value: 1n });
    assert.equal(sent.nonce, 42);
    assert.equal((await sent.wait())?.status, 1);
    assert.equal(await provider.getTransactionCount(fresh.address), 43);
  });

  it('anvil_nodeInfo and hardhat_metadata report the node as it is', async () => {
    const meta = (await ok(url, 'hardhat_metadata')) as Record<string, unknown>;
    const n = meta['latestBlockNumber'] as number;
    const block = await provider.getBlock(n);
    assert.equal(meta['chainId'], 31337);
    assert.equal(meta['latestBlockHash'], block?.hash);
    assert.match(String(meta['instanceId']), /^0x[0-9a-f]{64}$/);
    assert.match(String(meta['clientVersion']), /^anvil\/noded-v/);
    assert.equal(await ok(url, 'web3_clientVersion'), meta['clientVersion']);
    assert.equal(meta['forkedNetwork'], undefined);
    const info = (await ok(url, 'anvil_nodeInfo')) as Record<string, unknown> & {
      environment: Record<string, unknown>;
      forkConfig: Record<string, unknown>;
    };
    const m = BigInt(info['currentBlockNumber'] as string);
    assert.ok(m >= BigInt(n));
    const b = await provider.getBlock(Number(m));
    assert.equal(info['currentBlockHash'], b?.hash);
    assert.equal(info['currentBlockTimestamp'], b?.timestamp);
    assert.equal(info['hardFork'], 'osaka');
    assert.equal(info.environment['chainId'], 31337);
    assert.equal(BigInt(info.environment['gasLimit'] as string), b?.gasLimit);
    assert.equal(info.forkConfig['forkUrl'], null);
  });

  it('impersonation: eth_sendTransaction from an address without a key is a real transaction in a block', async () => {
    const whale = Wallet.createRandom().address;
    const to = Wallet.createRandom().address;
    await ok(url, 'anvil_setBalance', [whale, hex(10n ** 18n)]);
    // Not impersonated yet: refused as geth refuses a locked account.
    const locked = await rpc(url, 'eth_sendTransaction', [{ from: whale, to, value: '0x1' }]);
    assert.equal(locked.error?.code, -32000);
    assert.match(locked.error!.message, /unknown account/);
    assert.equal(await ok(url, 'anvil_impersonateAccount', [whale]), null);
    const accounts = (await ok(url, 'eth_accounts')) as string[];
    assert.ok(accounts.includes(whale.toLowerCase()), 'eth_accounts lists it, as anvil does');
    const signer = await provider.getSigner(whale);
    const tx = await signer.sendTransaction({ to, value: 777n });
    const receipt = await tx.wait();
    assert.equal(receipt?.status, 1);
    assert.equal(receipt?.from.toLowerCase(), whale.toLowerCase());
    assert.equal(await provider.getBalance(to), 777n);
    const mined = await provider.getTransaction(tx.hash);
    assert.equal(mined?.from.toLowerCase(), whale.toLowerCase());
    assert.equal(mined?.blockNumber, receipt?.blockNumber);
    const block = (await ok(url, 'eth_getBlockByNumber', [hex(BigInt(receipt!.blockNumber)), false])) as {
      transactions: string[];
    };
    assert.ok(block.transactions.includes(tx.hash));
    // A second one takes the next nonce.
    const tx2 = await signer.sendTransaction({ to, value: 1n });
    assert.equal(tx2.nonce, tx.nonce + 1);
    assert.equal((await tx2.wait())?.status, 1);
    // Hardhat's names answer booleans; stopping ends it.
    assert.equal(await ok(url, 'hardhat_impersonateAccount', [whale]), true);
    assert.equal(await ok(url, 'hardhat_stopImpersonatingAccount', [whale]), true);
    assert.equal(await ok(url, 'hardhat_stopImpersonatingAccount', [whale]), false);
    const after = await rpc(url, 'eth_sendTransaction', [{ from: whale, to, value: '0x1' }]);
    assert.match(after.error?.message ?? '', /unknown account/);
  });

  it("impersonation keeps geth's errors: code 3 with data (custom error decoded by ethers and viem), -32000 on an empty revert, status 0 when mined", async () => {
    const { Probe } = compile(PROBE_SOURCE);
    const { Vault } = compile(VAULT_SOURCE);
    const deployer = new Wallet(DEV_KEYS[1], provider);
    const probe = await new ContractFactory(Probe.abi as never, Probe.bytecode, deployer).deploy();
    await probe.waitForDeployment();
    const vault = await new ContractFactory(Vault.abi as never, Vault.bytecode, deployer).deploy();
    await vault.waitForDeployment();
    const probeAt = await probe.getAddress();
    const vaultAt = await vault.getAddress();
    const imp = Wallet.createRandom().address;
    await ok(url, 'anvil_setBalance', [imp, hex(10n ** 18n)]);
    await ok(url, 'anvil_impersonateAccount', [imp]);

    // On the wire: code 3 and the revert data for a custom error.
    const iface = new Contract(vaultAt, Vault.abi as never).interface;
    const call = iface.encodeFunctionData('onlyOwner', []);
    const wire = await rpc(url, 'eth_sendTransaction', [{ from: imp, to: vaultAt, data: call }]);
    assert.equal(wire.error?.code, 3);
    assert.equal(wire.error?.message, 'execution reverted');
    const decoded = iface.parseError(wire.error!.data!);
    assert.equal(decoded?.name, 'NotOwner');
    assert.equal(String(decoded?.args[0]).toLowerCase(), imp.toLowerCase());
    // An empty revert: -32000.
    const bare = await rpc(url, 'eth_sendTransaction', [
      { from: imp, to: vaultAt, data: iface.encodeFunctionData('bare', []) },
    ]);
    assert.equal(bare.error?.code, -32000);
    assert.equal(bare.error?.message, 'execution reverted');

    // ethers: CALL_EXCEPTION with the custom error decoded on the client.
    const signer = new JsonRpcSigner(provider, imp);
    const c = new Contract(probeAt, Probe.abi as never, signer);
    await assert.rejects(
      c.failWithCustom(),
      (err: Error & { code?: string; revert?: { name: string; args: unknown[] } }) => {
        assert.equal(err.code, 'CALL_EXCEPTION');
        assert.equal(err.revert?.name, 'NotAllowed');
        assert.equal(err.revert?.args[0], 42n);
        return true;
      },
    );
    await assert.rejects(c.failWithReason(), (err: Error & { code?: string; reason?: string }) => {
      assert.equal(err.code, 'CALL_EXCEPTION');
      assert.equal(err.reason, 'probe says no');
      return true;
    });

    // viem: ContractFunctionRevertedError with the error name and arguments.
    const chain = defineChain({
      id: 31337,
      name: 'chain-local',
      nativeCurrency: { name: 'Bitcoin', symbol: 'BTC', decimals: 18 },
      rpcUrls: { default: { http: [url] } },
    });
    const wallet = createWalletClient({ chain, transport: http(url), account: imp as `0x${string}` });
    const pub = createPublicClient({ chain, transport: http(url) });
    await assert.rejects(
      wallet.writeContract({
        address: probeAt as `0x${string}`,
        abi: Probe.abi as never,
        functionName: 'failWithCustom' as never,
      }),
      (err: unknown) => {
        assert.ok(err instanceof BaseError, String(err));
        const reverted = err.walk((e) => e instanceof ContractFunctionRevertedError);
        assert.ok(
          reverted instanceof ContractFunctionRevertedError,
          'a ContractFunctionRevertedError in the chain',
        );
        assert.equal(reverted.data?.errorName, 'NotAllowed');
        assert.deepEqual(reverted.data?.args, [42n]);
        return true;
      },
    );
    // A successful impersonated write through viem.
    const hash = await wallet.writeContract({
      address: probeAt as `0x${string}`,
      abi: Probe.abi as never,
      functionName: 'bump' as never,
      args: ['from viem'] as never,
    });
    const r = await pub.waitForTransactionReceipt({ hash, pollingInterval: 100 });
    assert.equal(r.status, 'success');
    assert.equal(r.from.toLowerCase(), imp.toLowerCase());

    // With the gas given (no estimate), the failing call is mined and fails: status 0.
    const sentHash = (await ok(url, 'eth_sendTransaction', [
      { from: imp, to: vaultAt, data: call, gas: hex(100_000n) },
    ])) as string;
    const failed = await provider.waitForTransaction(sentHash, 1, 20_000);
    assert.equal(failed?.status, 0);
  });

  it('a replay of the block store from an empty application.db reproduces every block hash and the state', async () => {
    const who = Wallet.createRandom().address;
    await ok(url, 'anvil_setBalance', [who, hex(4242n)]);
    const tip = await provider.getBlockNumber();
    const hashes: string[] = [];
    for (let h = 1; h <= tip; h++) hashes.push((await provider.getBlock(h))!.hash!);
    provider.destroy();
    assert.equal(await node.stop(), 0);
    // The application forgets everything; the handshake replays every block, dev operations included,
    // and checks each block's app hash on the way.
    rmSync(join(home, 'data', 'application.db'), { recursive: true, force: true });
    node = await startNode(home, ports, [], BigInt(tip));
    url = node.ethUrl;
    provider = new JsonRpcProvider(url, undefined, {
      staticNetwork: true,
      pollingInterval: 100,
      cacheTimeout: -1,
    });
    const replayed = /"replayed":(\d+)|replayed[=: ]+(\d+)/.exec(node.output());
    assert.ok(replayed, `the handshake reports what it replayed\n${node.output().slice(-2000)}`);
    assert.ok(Number(replayed[1] ?? replayed[2]) >= tip - 1, `replayed ${replayed[0]}, tip ${tip}`);
    for (let h = 1; h <= tip; h++) {
      assert.equal((await provider.getBlock(h))!.hash, hashes[h - 1], `block ${h}`);
    }
    assert.equal(await provider.getBalance(who), 4242n);
    // And the node goes on making blocks and taking dev operations.
    await ok(url, 'anvil_setBalance', [who, hex(1n)]);
    assert.equal(await provider.getBalance(who), 1n);
  });

  it('kill -9 with dev operations in flight: the node restarts cleanly, a change is applied whole or not at all', async () => {
    for (let round = 0; round < 3; round++) {
      const who = Wallet.createRandom().address;
      const tip = await provider.getBlockNumber();
      const hashes: string[] = [];
      for (let h = Math.max(1, tip - 5); h <= tip; h++) hashes.push((await provider.getBlock(h))!.hash!);
      // Several changes queued; the node dies a random moment later (queued, proposed, committing…).
      const calls = [1n, 2n, 3n].map((v) =>
        rpc(url, 'anvil_setBalance', [who, hex(v)]).catch(() => undefined),
      );
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 400)));
      provider.destroy();
      await node.stop('SIGKILL');
      await Promise.all(calls);
      node = await startNode(home, ports, [], BigInt(tip));
      url = node.ethUrl;
      provider = new JsonRpcProvider(url, undefined, {
        staticNetwork: true,
        pollingInterval: 100,
        cacheTimeout: -1,
      });
      for (let h = Math.max(1, tip - 5), i = 0; h <= tip; h++, i++) {
        assert.equal((await provider.getBlock(h))!.hash, hashes[i], `round ${round}: block ${h}`);
      }
      // Committed changes survive in arrival order; uncommitted ones are gone: 0 or one of the values.
      const balance = await provider.getBalance(who);
      assert.ok([0n, 1n, 2n, 3n].includes(balance), `round ${round}: balance ${balance}`);
      await ok(url, 'anvil_setBalance', [who, hex(9n)]);
      assert.equal(await provider.getBalance(who), 9n);
    }
  });
});

/** Each dev method answers -32000 naming itself, and nothing changed. */
async function assertRefused(url: string): Promise<void> {
  const who = Wallet.createRandom().address;
  const calls: Array<[string, unknown[]]> = [
    ['anvil_setBalance', [who, '0x1']],
    ['hardhat_setBalance', [who, '0x1']],
    ['anvil_setCode', [who, '0x00']],
    ['hardhat_setNonce', [who, '0x1']],
    ['anvil_setStorageAt', [who, '0x0', `0x${'0'.repeat(64)}`]],
    ['anvil_impersonateAccount', [who]],
    ['hardhat_stopImpersonatingAccount', [who]],
    ['anvil_nodeInfo', []],
    ['hardhat_metadata', []],
    ['evm_snapshot', []],
    ['anvil_snapshot', []],
    ['evm_revert', ['0x1']],
    ['anvil_revert', ['0x1']],
  ];
  for (const [method, params] of calls) {
    const r = await rpc(url, method, params);
    assert.equal(r.error?.code, -32000, method);
    assert.equal(r.error?.message, `${method} is only available on a single-validator chain-local node`);
  }
  const balance = await rpc(url, 'eth_getBalance', [who, 'latest']);
  assert.equal(balance.result, '0x0');
  const accounts = (await rpc(url, 'eth_accounts', [])).result as string[];
  assert.ok(!accounts.includes(who.toLowerCase()), 'not impersonated');
}

describe('dev-chain methods elsewhere', { timeout: 420_000 }, () => {
  it("a chain-local node that does not hold the validator's key refuses them", async () => {
    const { home, ports } = await initLocalHome();
    const other = await initLocalHome();
    // The genesis names one validator; this home now holds another key, so it is a plain full node.
    copyFileSync(
      join(other.home, 'config', 'priv_validator_key.json'),
      join(home, 'config', 'priv_validator_key.json'),
    );
    const node = await startNode(home, ports, [], 0n);
    try {
      await assertRefused(node.ethUrl);
    } finally {
      await node.stop();
      rmSync(home, { recursive: true, force: true });
      rmSync(other.home, { recursive: true, force: true });
    }
  });

  it('a chain-testnet home refuses each with -32000 naming the method', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'noded-devrefuse-')), 'net');
    const made = runCli(['testnet', '--validators', '1', '--chain-id', 'chain-testnet', '--output', out]);
    assert.equal(made.code, 0, made.stderr);
    const home = join(out, 'node0');
    const ports = await rewireHome(home);
    const node = await startNode(home, ports);
    try {
      await assertRefused(node.ethUrl);
    } finally {
      await node.stop();
      rmSync(join(out, '..'), { recursive: true, force: true });
    }
  });
});
