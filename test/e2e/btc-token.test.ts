// The BTC token precompile (0x7b7c…0000) through a real chain-local node process, with ethers v6 and
// viem as a dApp would use it: metadata, balanceOf == eth_getBalance, transfers (to oneself, zero,
// more than the balance), approve/transferFrom (short allowance, infinite allowance), EIP-2612
// permit (valid, expired, replayed, signed by someone else), Transfer/Approval in receipts and in
// eth_getLogs, and contracts/BTCEscrow.sol holding BTC through the precompile.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import {
  Contract,
  ContractFactory,
  getAddress,
  Interface,
  JsonRpcProvider,
  parseEther,
  Signature,
  TypedDataEncoder,
  Wallet,
} from 'ethers';
import {
  ContractFunctionRevertedError,
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  parseEventLogs,
  BaseError as ViemBaseError,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { BTC, compileBtcContracts } from '../btc-token.js';
import { DEV_ADDRESSES, DEV_KEYS } from './harness.js';
import { type LocalNode, revertReason, useWalletNode } from './wallet.js';

const c = compileBtcContracts();
const IBTC_ABI = c.IBTC.abi;
const MAX = (1n << 256n) - 1n;

/** What a mined transaction cost its sender. */
function fee(r: { gasUsed: bigint; gasPrice: bigint }): bigint {
  return r.gasUsed * r.gasPrice;
}

describe('BTC token precompile against noded chain-local', { timeout: 420_000 }, () => {
  const chain = useWalletNode();
  let env: LocalNode;
  let provider: JsonRpcProvider;
  let genesisSupply: bigint;

  before(() => {
    ({ env, provider } = chain);
    const genesis = JSON.parse(readFileSync(join(env.node.home, 'config', 'genesis.json'), 'utf8')) as {
      app_state: {
        evm: { accounts: Array<{ balance?: string }> };
        staking?: { validators: Array<{ self_bond: string }> };
      };
    };
    // The supply is every genesis balance plus the validators' bonds (held by the pool's account).
    genesisSupply =
      genesis.app_state.evm.accounts.reduce((s, a) => s + BigInt(a.balance ?? '0'), 0n) +
      (genesis.app_state.staking?.validators ?? []).reduce((s, v) => s + BigInt(v.self_bond), 0n);
  });

  describe('ethers v6', () => {
    const token = () => new Contract(BTC, IBTC_ABI as never, provider);
    const as = (i: number) => new Contract(BTC, IBTC_ABI as never, new Wallet(DEV_KEYS[i], provider));

    it('reads metadata, code, the supply and native balances', async () => {
      const t = token();
      assert.equal(await t.name(), 'Bitcoin');
      assert.equal(await t.symbol(), 'BTC');
      assert.equal(await t.decimals(), 18n);
      assert.equal(await t.totalSupply(), genesisSupply);
      assert.notEqual(await provider.getCode(BTC), '0x');
      for (const a of [...DEV_ADDRESSES, Wallet.createRandom().address]) {
        assert.equal(await t.balanceOf(a), await provider.getBalance(a));
      }
      // A dev balance change moves the supply the token reports (the executor's accounting).
      const fresh = Wallet.createRandom().address;
      await provider.send('hardhat_setBalance', [fresh, '0x4563918244f40000']); // 5 BTC
      assert.equal(await t.totalSupply(), genesisSupply + parseEther('5'));
      assert.equal(await t.balanceOf(fresh), parseEther('5'));
      genesisSupply += parseEther('5');
    });

    it('transfer: to another account, to oneself, zero, and more than the balance', async () => {
      const t = as(0);
      const to = Wallet.createRandom().address;
      const from = DEV_ADDRESSES[0];
      const before = await provider.getBalance(from);
      const rc = await (await t.transfer(to, parseEther('1.5'))).wait();
      assert.equal(rc.status, 1);
      assert.equal(await provider.getBalance(to), parseEther('1.5'));
      assert.equal(await provider.getBalance(from), before - parseEther('1.5') - fee(rc));
      const ev = t.interface.parseLog(rc.logs[0])!;
      assert.deepEqual(
        [ev.name, ev.args.from, ev.args.to, ev.args.value],
        ['Transfer', from, to, parseEther('1.5')],
      );
      // eth_getLogs finds it by the token address and by the recipient's topic.
      const found = await t.queryFilter(t.filters.Transfer(null, to), rc.blockNumber, rc.blockNumber);
      assert.equal(found.length, 1);
      assert.equal(found[0].transactionHash, rc.hash);

      const selfBefore = await provider.getBalance(from);
      const self = await (await t.transfer(from, parseEther('2'))).wait();
      assert.equal(self.status, 1);
      assert.equal(await provider.getBalance(from), selfBefore - fee(self), 'only gas is spent');
      const selfEv = t.interface.parseLog(self.logs[0])!;
      assert.deepEqual([selfEv.args.from, selfEv.args.to, selfEv.args.value], [from, from, parseEther('2')]);

      const zero = await (await t.transfer(to, 0n)).wait();
      assert.equal(zero.status, 1);
      assert.equal(t.interface.parseLog(zero.logs[0])!.args.value, 0n);
      assert.equal(await provider.getBalance(to), parseEther('1.5'));

      const bal = await provider.getBalance(from);
      assert.equal(
        await revertReason(t.transfer.staticCall(to, bal + 1n)),
        `BTC: transfer amount ${bal + 1n} exceeds the balance ${bal} of ${from.toLowerCase()}`,
      );
      // The same refusal as a mined transaction: status 0, nothing moved.
      const sent = await t.transfer(to, bal + 1n, { gasLimit: 100_000n });
      await assert.rejects(sent.wait(), /CALL_EXCEPTION|transaction execution reverted/);
      assert.equal(await provider.getBalance(to), parseEther('1.5'));
    });

    it('approve and transferFrom: a short allowance reverts, an infinite one is never spent down', async () => {
      const owner = as(1);
      const spender = as(2);
      const ownerAddr = DEV_ADDRESSES[1];
      const spenderAddr = DEV_ADDRESSES[2];
      const to = Wallet.createRandom().address;
      const ap = await (await owner.approve(spenderAddr, parseEther('1'))).wait();
      const apEv = owner.interface.parseLog(ap.logs[0])!;
      assert.deepEqual(
        [apEv.name, apEv.args.owner, apEv.args.spender, apEv.args.value],
        ['Approval', ownerAddr, spenderAddr, parseEther('1')],
      );
      assert.equal(await owner.allowance(ownerAddr, spenderAddr), parseEther('1'));
      assert.equal(
        await revertReason(spender.transferFrom.staticCall(ownerAddr, to, parseEther('1.01'))),
        `BTC: transfer amount ${parseEther('1.01')} exceeds the allowance ${parseEther('1')} of ${spenderAddr.toLowerCase()} from ${ownerAddr.toLowerCase()}`,
      );
      const ownerBefore = await provider.getBalance(ownerAddr);
      await (await spender.transferFrom(ownerAddr, to, parseEther('0.4'))).wait();
      assert.equal(await owner.allowance(ownerAddr, spenderAddr), parseEther('0.6'));
      assert.equal(await provider.getBalance(to), parseEther('0.4'));
      assert.equal(
        await provider.getBalance(ownerAddr),
        ownerBefore - parseEther('0.4'),
        'the spender paid the gas',
      );

      await (await owner.approve(spenderAddr, MAX)).wait();
      await (await spender.transferFrom(ownerAddr, to, parseEther('3'))).wait();
      await (await spender.transferFrom(ownerAddr, to, parseEther('3'))).wait();
      assert.equal(await owner.allowance(ownerAddr, spenderAddr), MAX);
      assert.equal(await provider.getBalance(to), parseEther('6.4'));
    });

    it('permit: valid, expired, replayed and signed by someone else', async () => {
      const t = token();
      const ownerWallet = new Wallet(DEV_KEYS[3], provider);
      const owner = ownerWallet.address;
      const spender = Wallet.createRandom().address;
      const relayer = as(0);
      const net = await provider.getNetwork();
      const domain = { name: 'Bitcoin', version: '1', chainId: net.chainId, verifyingContract: BTC };
      assert.equal(await t.DOMAIN_SEPARATOR(), TypedDataEncoder.hashDomain(domain));
      const types = {
        Permit: [
          { name: 'owner', type: 'address' },
          { name: 'spender', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'nonce', type: 'uint256' },
          { name: 'deadline', type: 'uint256' },
        ],
      };
      const now = BigInt((await provider.getBlock('latest'))!.timestamp);
      const nonce = await t.nonces(owner);
      assert.equal(nonce, 0n);
      const value = parseEther('2');
      const deadline = now + 3600n;
      const sig = Signature.from(
        await ownerWallet.signTypedData(domain, types, { owner, spender, value, nonce, deadline }),
      );
      const rc = await (await relayer.permit(owner, spender, value, deadline, sig.v, sig.r, sig.s)).wait();
      assert.equal(rc.status, 1);
      assert.equal(await t.allowance(owner, spender), value);
      assert.equal(await t.nonces(owner), 1n);
      assert.equal(t.interface.parseLog(rc.logs[0])!.name, 'Approval');

      assert.equal(
        await revertReason(relayer.permit.staticCall(owner, spender, value, deadline, sig.v, sig.r, sig.s)),
        `BTC: invalid permit signature: it is not ${owner.toLowerCase()}'s signature of this permit with nonce 1`,
        'a replayed permit is refused (the nonce moved on)',
      );
      const past = now - 1n;
      const old = Signature.from(
        await ownerWallet.signTypedData(domain, types, { owner, spender, value, nonce: 1n, deadline: past }),
      );
      assert.match(
        await revertReason(relayer.permit.staticCall(owner, spender, value, past, old.v, old.r, old.s)),
        new RegExp(`^BTC: permit expired: deadline ${past} is before the block time \\d+$`),
      );
      const stranger = Wallet.createRandom();
      const forged = Signature.from(
        await stranger.signTypedData(domain, types, { owner, spender, value: MAX, nonce: 1n, deadline }),
      );
      assert.match(
        await revertReason(
          relayer.permit.staticCall(owner, spender, MAX, deadline, forged.v, forged.r, forged.s),
        ),
        /^BTC: invalid permit signature/,
      );
      assert.equal(await t.allowance(owner, spender), value, 'refused permits changed nothing');
      assert.equal(await t.nonces(owner), 1n);
    });

    it('an escrow contract holds BTC through the precompile: deposit by transferFrom, release by transfer', async () => {
      const depositor = new Wallet(DEV_KEYS[0], provider);
      const arbiter = new Wallet(DEV_KEYS[1], provider);
      const payee = Wallet.createRandom().address;
      const factory = new ContractFactory(c.BTCEscrow.abi as never, c.BTCEscrow.bytecode, depositor);
      const escrow = (await factory.deploy(payee, arbiter.address)) as Contract;
      await escrow.waitForDeployment();
      const at = await escrow.getAddress();
      await (await as(0).approve(at, parseEther('4'))).wait();
      const dep = await (await escrow.deposit(parseEther('4'))).wait();
      assert.equal(dep.status, 1);
      const btc = new Interface(IBTC_ABI as never);
      const transfer = dep.logs.map((l: never) => btc.parseLog(l)).find((l: unknown) => l)!;
      assert.deepEqual([transfer.args.from, transfer.args.to], [depositor.address, at]);
      assert.equal(await provider.getBalance(at), parseEther('4'), 'the escrow holds native BTC');
      assert.equal(await token().balanceOf(at), parseEther('4'));
      assert.equal(await escrow.held(), parseEther('4'));
      assert.equal(await token().allowance(depositor.address, at), 0n, 'the allowance was spent');

      const byStranger = escrow.connect(depositor) as Contract;
      assert.equal(await revertReason(byStranger.release.staticCall()), 'escrow: only the arbiter pays out');
      const rel = await (await (escrow.connect(arbiter) as Contract).release()).wait();
      assert.equal(rel.status, 1);
      assert.equal(await provider.getBalance(at), 0n);
      assert.equal(await provider.getBalance(payee), parseEther('4'));
      assert.equal(await escrow.held(), 0n);
      const logs = await provider.getLogs({
        address: BTC,
        fromBlock: rel.blockNumber,
        toBlock: rel.blockNumber,
      });
      assert.equal(logs.length, 1);
      const out = btc.parseLog(logs[0])!;
      assert.deepEqual(
        [out.args.from, out.args.to, out.args.value],
        [at, getAddress(payee), parseEther('4')],
      );
      assert.equal(
        await token().totalSupply(),
        genesisSupply,
        'moving BTC through the token keeps the supply',
      );
    });
  });

  describe('viem', () => {
    const chain = () =>
      defineChain({
        id: 31337,
        name: 'chain-local',
        nativeCurrency: { name: 'Bitcoin', symbol: 'BTC', decimals: 18 },
        rpcUrls: { default: { http: [env.node.ethUrl] } },
      });
    const abi = IBTC_ABI as never;

    it('reads, transfers, approves by permit and sees the events', async () => {
      const pub = createPublicClient({
        chain: chain(),
        transport: http(env.node.ethUrl),
        pollingInterval: 100,
      });
      const account = privateKeyToAccount(DEV_KEYS[2]);
      const wallet = createWalletClient({ account, chain: chain(), transport: http(env.node.ethUrl) });
      const read = (functionName: string, args: unknown[] = []) =>
        pub.readContract({ address: BTC, abi, functionName, args } as never) as Promise<unknown>;
      assert.equal(await read('name'), 'Bitcoin');
      assert.equal(await read('symbol'), 'BTC');
      assert.equal(await read('decimals'), 18);
      assert.equal(await read('totalSupply'), genesisSupply);
      assert.equal(
        await read('balanceOf', [account.address]),
        await pub.getBalance({ address: account.address }),
      );
      assert.ok((await pub.getCode({ address: BTC }))?.length);

      const to = privateKeyToAccount(`0x${'11'.repeat(32)}`).address;
      const before = await pub.getBalance({ address: to });
      const { request } = await pub.simulateContract({
        account,
        address: BTC,
        abi,
        functionName: 'transfer',
        args: [to, 12345n],
      } as never);
      const hash = await wallet.writeContract(request as never);
      const rc = await pub.waitForTransactionReceipt({ hash, timeout: 30_000 });
      assert.equal(rc.status, 'success');
      assert.equal(await pub.getBalance({ address: to }), before + 12345n);
      const [ev] = parseEventLogs({
        abi: IBTC_ABI as never,
        logs: rc.logs,
        eventName: 'Transfer',
      }) as unknown as Array<{
        args: { from: string; to: string; value: bigint };
      }>;
      assert.deepEqual(ev.args, { from: account.address, to, value: 12345n });
      const events = (await pub.getContractEvents({
        address: BTC,
        abi,
        eventName: 'Transfer',
        args: { to },
        fromBlock: rc.blockNumber,
        toBlock: rc.blockNumber,
      } as never)) as unknown as Array<{ transactionHash: string }>;
      assert.equal(events.length, 1);
      assert.equal(events[0].transactionHash, hash);

      // A revert reason reaches viem's typed error.
      try {
        await pub.simulateContract({
          account,
          address: BTC,
          abi,
          functionName: 'transferFrom',
          args: [DEV_ADDRESSES[0], to, 1n],
        } as never);
        assert.fail('transferFrom without an allowance must revert');
      } catch (err) {
        const revert = (err as ViemBaseError).walk(
          (e) => e instanceof ContractFunctionRevertedError,
        ) as ContractFunctionRevertedError | null;
        assert.ok(revert, String(err));
        assert.equal(
          revert.reason,
          `BTC: transfer amount 1 exceeds the allowance 0 of ${account.address.toLowerCase()} from ${DEV_ADDRESSES[0].toLowerCase()}`,
        );
      }

      // permit signed with viem's signTypedData, sent by another account.
      const spender = privateKeyToAccount(`0x${'22'.repeat(32)}`).address;
      const nonce = (await read('nonces', [account.address])) as bigint;
      const block = await pub.getBlock();
      const deadline = block.timestamp + 600n;
      const signature = await account.signTypedData({
        domain: { name: 'Bitcoin', version: '1', chainId: 31337, verifyingContract: BTC },
        types: {
          Permit: [
            { name: 'owner', type: 'address' },
            { name: 'spender', type: 'address' },
            { name: 'value', type: 'uint256' },
            { name: 'nonce', type: 'uint256' },
            { name: 'deadline', type: 'uint256' },
          ],
        },
        primaryType: 'Permit',
        message: { owner: account.address, spender, value: 777n, nonce, deadline },
      });
      const sig = Signature.from(signature);
      const relayer = createWalletClient({
        account: privateKeyToAccount(DEV_KEYS[0]),
        chain: chain(),
        transport: http(env.node.ethUrl),
      });
      const permitHash = await relayer.writeContract({
        address: BTC,
        abi,
        functionName: 'permit',
        args: [account.address, spender, 777n, deadline, sig.v, sig.r, sig.s],
      } as never);
      const prc = await pub.waitForTransactionReceipt({ hash: permitHash, timeout: 30_000 });
      assert.equal(prc.status, 'success');
      assert.equal(await read('allowance', [account.address, spender]), 777n);
      assert.equal(await read('nonces', [account.address]), nonce + 1n);
      const [approval] = parseEventLogs({
        abi: IBTC_ABI as never,
        logs: prc.logs,
        eventName: 'Approval',
      }) as unknown as Array<{
        args: { owner: string; spender: string; value: bigint };
      }>;
      assert.deepEqual(approval.args, { owner: account.address, spender, value: 777n });
    });

    it('edge cases: to oneself, zero, more than the balance, short and infinite allowances, expired and replayed permits', async () => {
      const pub = createPublicClient({
        chain: chain(),
        transport: http(env.node.ethUrl),
        pollingInterval: 100,
      });
      const owner = privateKeyToAccount(DEV_KEYS[2]);
      const wallet = createWalletClient({ account: owner, chain: chain(), transport: http(env.node.ethUrl) });
      const spender = privateKeyToAccount(`0x${'33'.repeat(32)}`);
      const spenderWallet = createWalletClient({
        account: spender,
        chain: chain(),
        transport: http(env.node.ethUrl),
      });
      const to = privateKeyToAccount(`0x${'44'.repeat(32)}`).address;
      const read = (functionName: string, args: unknown[] = []) =>
        pub.readContract({ address: BTC, abi, functionName, args } as never) as Promise<unknown>;
      const send = async (w: typeof wallet, functionName: string, args: unknown[]) => {
        const hash = await w.writeContract({ address: BTC, abi, functionName, args } as never);
        const rc = await pub.waitForTransactionReceipt({ hash, timeout: 30_000 });
        assert.equal(rc.status, 'success', `${functionName} mined`);
        return rc;
      };
      /** The revert reason viem reports for a simulated call. */
      const reason = async (account: typeof owner, functionName: string, args: unknown[]) => {
        try {
          await pub.simulateContract({ account, address: BTC, abi, functionName, args } as never);
        } catch (err) {
          const revert = (err as ViemBaseError).walk(
            (e) => e instanceof ContractFunctionRevertedError,
          ) as ContractFunctionRevertedError | null;
          assert.ok(revert, String(err));
          return revert.reason;
        }
        assert.fail(`${functionName} must revert`);
      };
      const ownerLc = owner.address.toLowerCase();

      // To oneself: only gas is spent; the Transfer event names the owner twice.
      const before = await pub.getBalance({ address: owner.address });
      const self = await send(wallet, 'transfer', [owner.address, 10n ** 18n]);
      assert.equal(
        await pub.getBalance({ address: owner.address }),
        before - self.gasUsed * self.effectiveGasPrice,
      );
      const [selfEv] = parseEventLogs({
        abi: IBTC_ABI as never,
        logs: self.logs,
        eventName: 'Transfer',
      }) as unknown as Array<{
        args: { from: string; to: string; value: bigint };
      }>;
      assert.deepEqual(selfEv.args, { from: owner.address, to: owner.address, value: 10n ** 18n });

      // Zero: succeeds, logs a zero Transfer, moves nothing.
      const toBefore = await pub.getBalance({ address: to });
      const zero = await send(wallet, 'transfer', [to, 0n]);
      const [zeroEv] = parseEventLogs({
        abi: IBTC_ABI as never,
        logs: zero.logs,
        eventName: 'Transfer',
      }) as unknown as Array<{
        args: { value: bigint };
      }>;
      assert.equal(zeroEv.args.value, 0n);
      assert.equal(await pub.getBalance({ address: to }), toBefore);

      // More than the balance.
      const bal = await pub.getBalance({ address: owner.address });
      assert.equal(
        await reason(owner, 'transfer', [to, bal + 1n]),
        `BTC: transfer amount ${bal + 1n} exceeds the balance ${bal} of ${ownerLc}`,
      );

      // The spender needs gas of its own: native BTC, which the token sees as its balance.
      const fund = await wallet.sendTransaction({ to: spender.address, value: 10n ** 17n });
      await pub.waitForTransactionReceipt({ hash: fund, timeout: 30_000 });
      assert.equal(await read('balanceOf', [spender.address]), 10n ** 17n);

      // A short allowance reverts; an infinite one is never spent down.
      await send(wallet, 'approve', [spender.address, 3n]);
      assert.equal(
        await reason(spender, 'transferFrom', [owner.address, to, 4n]),
        `BTC: transfer amount 4 exceeds the allowance 3 of ${spender.address.toLowerCase()} from ${ownerLc}`,
      );
      await send(wallet, 'approve', [spender.address, MAX]);
      await send(spenderWallet, 'transferFrom', [owner.address, to, 5n]);
      await send(spenderWallet, 'transferFrom', [owner.address, to, 6n]);
      assert.equal(await read('allowance', [owner.address, spender.address]), MAX);
      assert.equal(await pub.getBalance({ address: to }), toBefore + 11n);

      // Permits: an expired one is refused; a valid one works once, and replayed it is refused.
      const permit = async (value: bigint, deadline: bigint) => {
        const nonce = (await read('nonces', [owner.address])) as bigint;
        const signature = await owner.signTypedData({
          domain: { name: 'Bitcoin', version: '1', chainId: 31337, verifyingContract: BTC },
          types: {
            Permit: [
              { name: 'owner', type: 'address' },
              { name: 'spender', type: 'address' },
              { name: 'value', type: 'uint256' },
              { name: 'nonce', type: 'uint256' },
              { name: 'deadline', type: 'uint256' },
            ],
          },
          primaryType: 'Permit',
          message: { owner: owner.address, spender: spender.address, value, nonce, deadline },
        });
        const sig = Signature.from(signature);
        return { nonce, args: [owner.address, spender.address, value, deadline, sig.v, sig.r, sig.s] };
      };
      const now = (await pub.getBlock()).timestamp;
      const expired = await permit(9n, now - 1n);
      assert.match(
        (await reason(spender, 'permit', expired.args)) ?? '',
        new RegExp(`^BTC: permit expired: deadline ${now - 1n} is before the block time \\d+$`),
      );
      const valid = await permit(9n, now + 600n);
      await send(spenderWallet, 'permit', valid.args);
      assert.equal(await read('allowance', [owner.address, spender.address]), 9n);
      assert.equal(await read('nonces', [owner.address]), valid.nonce + 1n);
      assert.equal(
        await reason(spender, 'permit', valid.args),
        `BTC: invalid permit signature: it is not ${ownerLc}'s signature of this permit with nonce ${valid.nonce + 1n}`,
        'a replayed permit is refused (the nonce moved on)',
      );
      assert.equal(await read('allowance', [owner.address, spender.address]), 9n, 'refusals changed nothing');
    });
  });
});
