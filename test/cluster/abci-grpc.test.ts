// The consensus <-> executor contract over real gRPC on 127.0.0.1: a ConsensusRuntime driving a
// GrpcApplication commits the same blocks, app hashes and results as one driving the application
// in-process; malformed requests get INVALID_ARGUMENT naming the field and the server keeps serving;
// an unreachable executor gives errors naming its address; grpc.health.v1 answers.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import {
  ABCI_SERVICE_NAME,
  AbciClientError,
  type AbciMethod,
  type AbciServer,
  GrpcApplication,
  GrpcMempool,
  healthProto,
  MempoolCallError,
  mempoolProto,
  abciProto as pb,
  serveApplication,
  toProto,
} from '@noded/abci-grpc';
import { ConsensusRuntime, TestApp } from '@noded/consensus';
import type { Application } from '@noded/types';
import { Chain, closedPort } from './helpers.js';

const cleanups: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function serve(app: TestApp): Promise<AbciServer> {
  const server = await serveApplication(app, '127.0.0.1:0');
  cleanups.push(() => server.close(0));
  return server;
}

function client(address: string, deadlinesMs?: Partial<Record<AbciMethod, number>>): GrpcApplication {
  const c = new GrpcApplication(address, { deadlinesMs });
  cleanups.push(() => c.close());
  return c;
}

function chain(app: Application): Chain {
  const c = new Chain(app);
  cleanups.push(() => c.remove());
  return c;
}

/** A raw unary call: `body` goes on the wire as it is. */
function rawCall(address: string, method: string, body: Uint8Array): Promise<grpc.ServiceError | null> {
  const c = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    c.makeUnaryRequest(
      `/noded.abci.v1.Application/${method}`,
      (b: Uint8Array) => Buffer.from(b),
      (b: Buffer) => b,
      body,
      new grpc.Metadata(),
      { deadline: Date.now() + 10_000 },
      (err) => {
        c.close();
        resolve(err);
      },
    );
  });
}

const MEMPOOL = ['alice=1', 'bob=2', 'carol=3'];

describe('ABCI over gRPC: the consensus runtime drives a remote application', () => {
  it('commits the same blocks, app hashes and results as the in-process application, and restarts', async () => {
    const N = 5;
    const local = new TestApp();
    for (const tx of MEMPOOL) local.addTx(tx);
    const inProcess = chain(local);
    await inProcess.runTo(N);

    const remote = new TestApp();
    for (const tx of MEMPOOL) remote.addTx(tx);
    const server = await serve(remote);
    const app = client(server.address);
    await app.waitReady(5_000);
    const finalized: Array<{ height: number; ms: number }> = [];
    const off = app.onFinalizeBlock((height, ms) => finalized.push({ height, ms }));
    const overGrpc = chain(app);
    const rt = await overGrpc.runTo(N);
    off();

    const firstN = (c: Chain) => c.blocks.filter((b) => b.height <= N);
    assert.equal(firstN(overGrpc).length, N);
    assert.deepEqual(firstN(overGrpc), firstN(inProcess), 'txs and FinalizeBlock results of every block');
    const mempoolTxs = firstN(overGrpc).flatMap((b) => b.txs.map((t) => new TextDecoder().decode(t)));
    for (const tx of MEMPOOL) assert.ok(mempoolTxs.includes(tx), `${tx} was proposed and committed`);
    assert.equal(remote.value('bob'), '2');
    const top = rt.blockStoreHeight();
    assert.equal(remote.height, top);
    assert.deepEqual(rt.chainState().appHash, remote.appHash, "consensus' app hash is the executor's");
    // each FinalizeBlock reported once, with its height and the round trip's duration
    assert.deepEqual(
      finalized.map((f) => f.height),
      Array.from({ length: top }, (_, i) => i + 1),
    );
    for (const f of finalized) assert.ok(Number.isFinite(f.ms) && f.ms > 0, `height ${f.height}: ${f.ms} ms`);
    const localAt = inProcess.blocks.find((b) => b.height === N)!.result.appHash;
    assert.deepEqual(overGrpc.blocks.find((b) => b.height === N)!.result.appHash, localAt);

    // a new runtime on the same stores, with a new client: the handshake (Info) over gRPC sees the
    // executor at the committed height and consensus goes on from there
    const again = client(server.address);
    await overGrpc.runTo(top + 2, { app: again });
    assert.equal(remote.height >= top + 2, true);
    const heights = overGrpc.blocks.map((b) => b.height);
    assert.deepEqual(
      heights,
      heights.map((_, i) => i + 1),
      'no height skipped or repeated across the restart',
    );
  });

  it('checkTx, and an application error arrives as APPLICATION with its message', async () => {
    const server = await serve(new TestApp());
    const app = client(server.address);
    const ok = await app.checkTx(new TextEncoder().encode('k=v'), 'new');
    assert.equal(ok.code, 0);
    assert.equal(ok.hash.length, 32);
    const bad = await app.checkTx(new TextEncoder().encode('no-equals'), 'recheck');
    assert.deepEqual([bad.code, bad.log], [1, 'malformed tx']);
    await assert.rejects(app.commit(), (err: unknown) => {
      assert.ok(err instanceof AbciClientError);
      assert.equal(err.code, 'APPLICATION');
      assert.equal(err.grpcStatus, grpc.status.INTERNAL);
      assert.match(
        err.message,
        new RegExp(
          `^executor at ${server.address} failed commit: noded.abci.v1.Application/Commit: application error: test app: commit without a finalized block$`,
        ),
      );
      return true;
    });
  });
});

describe('ABCI over gRPC: vote extensions', () => {
  it('the runtime extends and verifies through the remote application; PrepareProposal gets the extended commit', async () => {
    const remote = new TestApp({ extensionTag: 'remote' });
    const server = await serve(remote);
    const app = client(server.address);
    await app.waitReady(5_000);
    const c = chain(app);
    c.opts.genesis = {
      ...c.opts.genesis,
      consensusParams: { ...c.opts.genesis.consensusParams, abci: { voteExtensionsEnableHeight: 2n } },
    };
    await c.runTo(5);
    assert.ok(remote.localLastCommits.length >= 2, 'extended commits reached the executor');
    assert.equal(remote.localLastCommits[0]!.height, 3);
    for (const { height, commit } of remote.localLastCommits) {
      const v = commit.votes[0]!;
      assert.equal(v.blockIdFlag, 2);
      assert.equal(v.extensionSignature.length, 64);
      assert.match(
        new TextDecoder().decode(v.voteExtension),
        new RegExp(`^vx:${height - 1}:[0-9a-f]{8}:remote$`),
      );
    }
    // VerifyVoteExtension: the application's verdict both ways.
    const hash = new Uint8Array(32).fill(3);
    const req = { height: 4, round: 1, hash, validatorAddress: new Uint8Array(20).fill(1) };
    assert.equal(
      await app.verifyVoteExtension({
        ...req,
        voteExtension: new TextEncoder().encode(`vx:4:03030303:peer`),
      }),
      true,
    );
    assert.equal(
      await app.verifyVoteExtension({ ...req, voteExtension: new TextEncoder().encode('forged') }),
      false,
    );
  });

  it('an application without extensions extends with empty bytes and accepts every extension', async () => {
    const t = new TestApp();
    const plain: Application = {
      info: () => t.info(),
      initChain: (r) => t.initChain(r),
      checkTx: (tx, k) => t.checkTx(tx, k),
      prepareProposal: (r) => t.prepareProposal(r),
      processProposal: (r) => t.processProposal(r),
      finalizeBlock: (r) => t.finalizeBlock(r),
      commit: () => t.commit(),
    };
    const server = await serveApplication(plain, '127.0.0.1:0');
    cleanups.push(() => server.close(0));
    const app = client(server.address);
    const ext = await app.extendVote({
      height: 2,
      round: 0,
      hash: new Uint8Array(32),
      time: 1n,
      txs: [],
      proposerAddress: new Uint8Array(20),
    });
    assert.deepEqual(ext, new Uint8Array(0));
    assert.equal(
      await app.verifyVoteExtension({
        height: 2,
        round: 0,
        hash: new Uint8Array(32),
        validatorAddress: new Uint8Array(20),
        voteExtension: new TextEncoder().encode('anything'),
      }),
      true,
    );
    // Nor queries: abci_query's answer says so (code 1), at the height asked or 0 for "latest".
    for (const height of [0, -3, 4])
      assert.deepEqual(
        await app.query({ path: '/evm/nonce/0x00', data: new Uint8Array(), height, prove: false }),
        {
          code: 1,
          log: 'abci_query "/evm/nonce/0x00": this application serves no queries',
          key: new Uint8Array(),
          value: new Uint8Array(),
          height: Math.max(height, 0),
        },
      );
  });
});

describe('Mempool over gRPC: an executor from before HasExecutable', () => {
  it('answers HasExecutable UNIMPLEMENTED; the client asks UnconfirmedTxs(0) from then on', async () => {
    // The v1 service as an older executor served it: no HasExecutable, no FlushMempool.
    const old = new grpc.Server();
    const calls: string[] = [];
    let pending = 2n;
    const { hasExecutable: _h, flushMempool: _f, ...olderService } = mempoolProto.MempoolService;
    old.addService(olderService as unknown as grpc.ServiceDefinition, {
      unconfirmedTxs: (
        call: grpc.ServerUnaryCall<{ limit: number }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => {
        calls.push(`unconfirmedTxs(${call.request.limit})`);
        cb(null, { txs: [], total: 5n, totalBytes: 500n, pending });
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      old.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    cleanups.push(() => old.forceShutdown());
    const mempool = new GrpcMempool(`127.0.0.1:${port}`);
    cleanups.push(() => mempool.close());
    assert.equal(await mempool.hasExecutable(), true);
    pending = 0n;
    assert.equal(await mempool.hasExecutable(), false);
    assert.deepEqual(calls, ['unconfirmedTxs(0)', 'unconfirmedTxs(0)']);
    // FlushMempool has no fallback: the error names the executor and what it lacks.
    await assert.rejects(mempool.flushMempool(), (err: unknown) => {
      assert.ok(err instanceof MempoolCallError);
      assert.equal(err.grpcStatus, grpc.status.UNIMPLEMENTED);
      assert.match(err.message, new RegExp(`^executor mempool at 127\\.0\\.0\\.1:${port}: .*FlushMempool`));
      return true;
    });
  });
  it('asks HasExecutable again once reprobeMs has passed, so an executor upgraded at the same address is used', async () => {
    const calls: string[] = [];
    let upgraded = false;
    const server = new grpc.Server();
    server.addService(mempoolProto.MempoolService as unknown as grpc.ServiceDefinition, {
      hasExecutable: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
        calls.push('hasExecutable');
        if (upgraded) cb(null, { executable: true });
        else cb({ code: grpc.status.UNIMPLEMENTED, details: 'unknown method HasExecutable' });
      },
      unconfirmedTxs: (
        call: grpc.ServerUnaryCall<{ limit: number }, unknown>,
        cb: grpc.sendUnaryData<unknown>,
      ) => {
        calls.push(`unconfirmedTxs(${call.request.limit})`);
        cb(null, { txs: [], total: 0n, totalBytes: 0n, pending: 0n });
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    cleanups.push(() => server.forceShutdown());
    const mempool = new GrpcMempool(`127.0.0.1:${port}`, { reprobeMs: 200 });
    cleanups.push(() => mempool.close());
    assert.equal(await mempool.hasExecutable(), false);
    assert.equal(await mempool.hasExecutable(), false);
    // Within reprobeMs the fallback alone answers: one probe, two summaries.
    assert.deepEqual(calls, ['hasExecutable', 'unconfirmedTxs(0)', 'unconfirmedTxs(0)']);
    upgraded = true;
    await new Promise((r) => setTimeout(r, 250));
    assert.equal(await mempool.hasExecutable(), true);
    assert.equal(await mempool.hasExecutable(), true);
    assert.deepEqual(calls.slice(3), ['hasExecutable', 'hasExecutable']);
  });
});

describe('ABCI over gRPC: malformed requests', () => {
  it('get INVALID_ARGUMENT naming the field, never reach the application, and the server keeps serving', async () => {
    const app = new TestApp();
    const server = await serve(app);
    const good = toProto.finalizeBlockRequest({
      height: 1,
      time: 1_700_000_000_000_000_000n,
      proposerAddress: new Uint8Array(20).fill(1),
      hash: new Uint8Array(32).fill(2),
      txs: [new TextEncoder().encode('a=b')],
      misbehavior: [],
      decidedLastCommit: { round: 0, votes: [] },
    });
    const cases: Array<[string, string, Uint8Array, RegExp]> = [
      [
        'height 0',
        'FinalizeBlock',
        pb.FinalizeBlockRequest.encode({ ...good, height: 0n }).finish(),
        /^noded\.abci\.v1\.Application\/FinalizeBlock: FinalizeBlockRequest\.height: must be at least 1, got 0$/,
      ],
      [
        'a 3-byte proposer address',
        'FinalizeBlock',
        pb.FinalizeBlockRequest.encode({ ...good, proposerAddress: new Uint8Array(3) }).finish(),
        /FinalizeBlockRequest\.proposer_address: must be 20 bytes, got 3$/,
      ],
      [
        'no time',
        'ProcessProposal',
        pb.ProcessProposalRequest.encode({ ...good, time: undefined }).finish(),
        /ProcessProposalRequest\.time: is required$/,
      ],
      [
        'an unspecified check type',
        'CheckTx',
        pb.CheckTxRequest.encode({
          tx: new Uint8Array([1]),
          type: pb.CheckTxType.CHECK_TX_TYPE_UNSPECIFIED,
        }).finish(),
        /CheckTxRequest\.type: must be CHECK_TX_TYPE_NEW \(1\) or CHECK_TX_TYPE_RECHECK \(2\), got 0$/,
      ],
      [
        'bytes that are not a message',
        'FinalizeBlock',
        new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0x0f]),
        /^noded\.abci\.v1\.Application\/FinalizeBlock: the request is not a valid noded\.abci\.v1\.FinalizeBlockRequest: /,
      ],
    ];
    for (const [what, method, body, details] of cases) {
      const err = await rawCall(server.address, method, body);
      assert.ok(err, `${what}: refused`);
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT, `${what}: ${err.code} ${err.details}`);
      assert.match(err.details, details, what);
    }
    assert.deepEqual(app.finalized, [], 'no malformed request reached the application');

    // the server still serves, and the typed client names the refusal
    const c = client(server.address);
    assert.equal((await c.info()).lastBlockHeight, 0);
    await assert.rejects(c.checkTx(new Uint8Array(0)), (err: unknown) => {
      assert.ok(err instanceof AbciClientError);
      assert.equal(err.code, 'REFUSED');
      assert.match(err.message, /refused checkTx as malformed: .*CheckTxRequest\.tx: must not be empty$/);
      return true;
    });
    const res = await c.finalizeBlock({
      height: 1,
      time: 1n,
      proposerAddress: new Uint8Array(20),
      hash: new Uint8Array(32),
      txs: [],
      misbehavior: [],
      decidedLastCommit: { round: 0, votes: [] },
    });
    assert.equal(res.appHash.length, 32);
  });
});

describe('ABCI over gRPC: an unreachable executor', () => {
  it('every call and waitReady fail with UNREACHABLE naming the address', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const c = client(address);
    await assert.rejects(c.info(), (err: unknown) => {
      assert.ok(err instanceof AbciClientError);
      assert.equal(err.code, 'UNREACHABLE');
      assert.equal(err.address, address);
      assert.match(
        err.message,
        new RegExp(`^executor at ${address} is unreachable: info failed \\(UNAVAILABLE: `),
      );
      return true;
    });
    await assert.rejects(c.waitReady(300), /executor at .* is unreachable: no connection within 300 ms/);
    // a FinalizeBlock that failed is not reported as processed
    const finalized: number[] = [];
    c.onFinalizeBlock((height) => finalized.push(height));
    await assert.rejects(
      c.finalizeBlock({
        height: 1,
        time: 0n,
        proposerAddress: new Uint8Array(20),
        hash: new Uint8Array(32),
        txs: [],
        misbehavior: [],
        decidedLastCommit: { round: 0, votes: [] },
      }),
      /is unreachable: finalizeBlock failed/,
    );
    assert.deepEqual(finalized, []);
  });

  it('ConsensusRuntime.create fails at the handshake with the address', async () => {
    const address = `127.0.0.1:${await closedPort()}`;
    const c = chain(client(address));
    await assert.rejects(
      ConsensusRuntime.create(c.opts),
      new RegExp(`executor at ${address} is unreachable`),
    );
  });

  it('an executor that goes away mid-chain stops the runtime through onFatal, naming the address', async () => {
    const server = await serve(new TestApp());
    let fatal: Error | null = null;
    let onFatal!: () => void;
    const stopped = new Promise<void>((resolve) => {
      onFatal = resolve;
    });
    const c = chain(client(server.address, { processProposal: 2_000, finalizeBlock: 2_000 }));
    const rt = await ConsensusRuntime.create({
      ...c.opts,
      onFatal: (err) => {
        fatal = err;
        onFatal();
      },
    });
    cleanups.push(() => rt.stop());
    await rt.start();
    await rt.waitForHeight(2, 30_000);
    await server.close(0);
    const timeout = setTimeout(() => onFatal(), 30_000);
    await stopped;
    clearTimeout(timeout);
    assert.ok(fatal, 'onFatal was called');
    const err = fatal as Error;
    assert.ok(err instanceof AbciClientError, `${err}`);
    assert.ok(['UNREACHABLE', 'TIMEOUT'].includes(err.code), err.message);
    assert.match(err.message, new RegExp(`executor at ${server.address} `));
    assert.equal(rt.fatal, err);
  });
});

describe('ABCI over gRPC: grpc.health.v1', () => {
  it('Check answers SERVING for the server and the ABCI service, NOT_FOUND otherwise; Watch sees the close', async () => {
    const server = await serve(new TestApp());
    const health = new healthProto.HealthClient(server.address, grpc.credentials.createInsecure());
    cleanups.push(() => health.close());
    const check = (service: string) =>
      new Promise<healthProto.HealthCheckResponse>((resolve, reject) =>
        health.check({ service }, (err, res) => (err ? reject(err) : resolve(res))),
      );
    const { SERVING, NOT_SERVING } = healthProto.HealthCheckResponse_ServingStatus;
    assert.equal((await check('')).status, SERVING);
    assert.equal((await check(ABCI_SERVICE_NAME)).status, SERVING);
    await assert.rejects(check('noded.nope.v1.Nope'), (err: grpc.ServiceError) => {
      assert.equal(err.code, grpc.status.NOT_FOUND);
      return true;
    });

    const seen: number[] = [];
    const watch = health.watch({ service: ABCI_SERVICE_NAME });
    const ended = new Promise<void>((resolve) => {
      watch.on('data', (r: healthProto.HealthCheckResponse) => seen.push(r.status));
      watch.on('end', () => resolve());
      watch.on('error', () => resolve());
    });
    for (let i = 0; i < 500 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await server.close();
    await ended;
    assert.deepEqual(seen, [SERVING, NOT_SERVING]);
  });
});
