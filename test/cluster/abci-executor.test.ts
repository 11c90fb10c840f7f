// The real executor (libs/execution, EVM) behind the ABCI gRPC server, driven by a consensus runtime
// through GrpcApplication: a transfer sent through CheckTx over gRPC lands in a block, and an
// ExecutionError's code reaches the client.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { AbciClientError, GrpcApplication, serveApplication } from '@noded/abci-grpc';
import { Executor } from '@noded/execution';
import { MemoryKV } from '@noded/storage';
import { EventBus } from '@noded/types';
import { validatorsOf } from '../consensus/helpers.js';
import {
  addr,
  ETH,
  executorOptions,
  GENESIS_TIME,
  genesisState,
  key,
  signTx,
  TEST_CONSENSUS_PARAMS,
} from '../execution/helpers.js';
import { Chain, VALIDATOR_KEY } from './helpers.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('ABCI over gRPC: the EVM executor behind the server', () => {
  it('a transfer checked in over gRPC is proposed, finalized and committed; app hashes agree', async () => {
    const executor = await Executor.open(executorOptions(new MemoryKV(), new EventBus()));
    cleanups.push(() => executor.close());
    const server = await serveApplication(executor, '127.0.0.1:0');
    cleanups.push(() => server.close(0));
    const app = new GrpcApplication(server.address);
    cleanups.push(() => app.close());

    const sender = key(1);
    const to = addr(key(2));
    const chain = new Chain(app, {
      chainId: 'chain-local',
      genesis: {
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf([VALIDATOR_KEY]),
        consensusParams: TEST_CONSENSUS_PARAMS,
        appState: genesisState([{ address: addr(sender), balance: 10n * ETH }]),
      },
    });
    cleanups.push(() => chain.remove());

    const rt = await chain.runTo(1);
    const tx = signTx(sender, { nonce: 0n, to, value: 3n * ETH });
    const checked = await app.checkTx(tx, 'new');
    assert.equal(checked.code, 0, checked.log);
    const hash = `0x${Buffer.from(checked.hash).toString('hex')}` as const;

    const again = new GrpcApplication(server.address);
    cleanups.push(() => again.close());
    const top = rt.blockStoreHeight();
    const rt2 = await chain.runTo(top + 3, { app: again });
    const receipt = await executor.getReceipt(hash);
    assert.ok(receipt, 'the transfer has a receipt');
    assert.equal(receipt.status, 1);
    assert.equal(await executor.getBalance(to, executor.latestHeight()), 3n * ETH);
    const inBlock = chain.blocks.find((b) => b.txs.some((t) => Buffer.from(t).equals(Buffer.from(tx))));
    assert.ok(inBlock, 'a committed block carries the transaction');
    assert.equal(
      inBlock.result.txResults[inBlock.txs.findIndex((t) => Buffer.from(t).equals(Buffer.from(tx)))]!.code,
      0,
    );
    const info = await again.info();
    assert.equal(info.lastBlockHeight, rt2.blockStoreHeight());
    assert.deepEqual(info.lastBlockAppHash, rt2.chainState().appHash);

    // an ExecutionError's code travels in the noded-error-code trailer
    await assert.rejects(
      again.initChain({ ...chain.opts.genesis, chainId: 'other-chain' }),
      (err: unknown) => {
        assert.ok(err instanceof AbciClientError);
        assert.equal(err.code, 'APPLICATION');
        assert.equal(err.remoteCode, 'CHAIN_ID_MISMATCH');
        assert.match(
          err.message,
          /application\.db was initialised for chain chain-local, InitChain is for other-chain/,
        );
        return true;
      },
    );
  });

  it('bridge in over gRPC: ExtendVote attests, PrepareProposal gets the extended commit, the deposit is minted once', async () => {
    const recipient = '0x00000000000000000000000000000000000a11ce';
    const token = '0x3333333333333333333333333333333333333333';
    // The deposit source stands in for the watcher (its Hardhat path is test/e2e/bridge-in.test.ts).
    let last = 0n;
    const executor: Executor = await Executor.open({
      ...executorOptions(new MemoryKV(), new EventBus()),
      deposits: {
        next: (max) =>
          executor.lastInboundSequence() === 0n
            ? [{ sequence: 1n, recipient, token, amount: 42n, sourceBlock: 1n, sourceTx: '' }].slice(0, max)
            : [],
        markAttested: (seq) => {
          last = seq;
        },
      },
    });
    cleanups.push(() => executor.close());
    const server = await serveApplication(executor, '127.0.0.1:0');
    cleanups.push(() => server.close(0));
    const app = new GrpcApplication(server.address);
    cleanups.push(() => app.close());
    const chain = new Chain(app, {
      chainId: 'chain-local',
      genesis: {
        time: GENESIS_TIME,
        initialHeight: 1,
        validators: validatorsOf([VALIDATOR_KEY]),
        consensusParams: { ...TEST_CONSENSUS_PARAMS, abci: { voteExtensionsEnableHeight: 1n } },
        appState: {
          ...genesisState([]),
          bridge: {
            admin: recipient,
            min_amount: '1',
            window_seconds: '60',
            max_outflow_per_window: '10',
            chains: [1],
            btc_token_address: token,
          },
        },
      },
    });
    cleanups.push(() => chain.remove());
    await chain.runTo(5);
    assert.equal(last, 1n, 'the extension attested sequence 1');
    assert.equal(executor.lastInboundSequence(), 1n);
    assert.equal(await executor.getBalance(recipient, executor.latestHeight()), 42n);
    const minting = chain.blocks.filter((b) =>
      b.result.txResults.some((r) => r.log.startsWith('bridge: processed')),
    );
    assert.equal(minting.length, 1, 'minted in exactly one block');
  });
});
