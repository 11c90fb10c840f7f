// noded.dev.v1.DevChain at its boundary (libs/abci-grpc/src/dev.ts): a real gRPC server on
// 127.0.0.1 whose source records what reaches it. Malformed requests get INVALID_ARGUMENT naming the
// field and never reach the source; GrpcDevChain carries every kind of change, the impersonation
// calls and their answers, and the source's ChainError comes back with its code and message.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { addDevChainService, type DevChainSource, devProto, GrpcDevChain } from '@noded/abci-grpc';
import { ChainError, type DevStateChange, type Hex, silentLogger } from '@noded/types';

const A = `0x${'11'.repeat(20)}` as Hex;

class RecordingSource implements DevChainSource {
  readonly changes: DevStateChange[] = [];
  readonly impersonated: Hex[] = [];
  readonly sends: Array<{ sender: Hex; raw: Uint8Array }> = [];
  refuse: ChainError | undefined;

  async devSetState(change: DevStateChange): Promise<bigint> {
    if (this.refuse) throw this.refuse;
    this.changes.push(change);
    return 40n + BigInt(this.changes.length);
  }
  async devImpersonate(address: Hex, on: boolean): Promise<boolean> {
    const was = this.impersonated.includes(address);
    if (on && !was) this.impersonated.push(address);
    if (!on && was) this.impersonated.splice(this.impersonated.indexOf(address), 1);
    return was;
  }
  async devImpersonatedAccounts(): Promise<Hex[]> {
    return [...this.impersonated];
  }
  async devSendImpersonated(sender: Hex, raw: Uint8Array): Promise<Hex> {
    if (this.refuse) throw this.refuse;
    this.sends.push({ sender, raw });
    return `0x${'ab'.repeat(32)}`;
  }
}

describe('noded.dev.v1.DevChain over gRPC', () => {
  const server = new grpc.Server();
  const src = new RecordingSource();
  addDevChainService(server, src, silentLogger);
  let address = '';
  let raw: grpc.Client | undefined;
  let dev: GrpcDevChain | undefined;
  after(() => {
    dev?.close();
    raw?.close();
    server.forceShutdown();
  });

  const setState = (req: devProto.SetStateRequest) =>
    new Promise<grpc.ServiceError | null>((resolve) => {
      const d = devProto.DevChainService.setState;
      raw!.makeUnaryRequest(
        d.path,
        d.requestSerialize,
        d.responseDeserialize,
        req,
        new grpc.Metadata(),
        { deadline: Date.now() + 10_000 },
        (err) => resolve(err),
      );
    });

  it('refuses malformed SetState requests naming the field, and nothing reaches the executor', async () => {
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
        err ? reject(err) : resolve(p),
      ),
    );
    address = `127.0.0.1:${port}`;
    raw = new grpc.Client(address, grpc.credentials.createInsecure());
    const addr = Buffer.from(A.slice(2), 'hex');
    const cases: Array<[devProto.SetStateRequest, string]> = [
      [{ address: addr.subarray(0, 19), nonce: 1n }, 'SetStateRequest.address: must be 20 bytes, got 19'],
      [{ address: addr }, 'SetStateRequest.change: exactly one of balance, nonce, code, storage, got 0'],
      [
        { address: addr, nonce: 1n, code: new Uint8Array() },
        'SetStateRequest.change: exactly one of balance, nonce, code, storage, got 2',
      ],
      [{ address: addr, balance: new Uint8Array(33) }, 'SetStateRequest.balance: at most 32 bytes, got 33'],
      [
        { address: addr, storage: { slot: new Uint8Array(31), value: new Uint8Array(32) } },
        'SetStateRequest.storage.slot: must be 32 bytes, got 31',
      ],
      [
        { address: addr, storage: { slot: new Uint8Array(32), value: new Uint8Array(1) } },
        'SetStateRequest.storage.value: must be 32 bytes, got 1',
      ],
    ];
    for (const [req, why] of cases) {
      const err = await setState(req);
      assert.equal(err?.code, grpc.status.INVALID_ARGUMENT, why);
      assert.equal(err?.details, `noded.dev.v1.DevChain/SetState: ${why}`);
    }
    assert.deepEqual(src.changes, []);
  });

  it('GrpcDevChain carries every change, impersonation and sends; a refusal keeps its code and message', async () => {
    dev = new GrpcDevChain(address);
    const word = `0x${'cd'.repeat(32)}` as Hex;
    const changes: DevStateChange[] = [
      { kind: 'balance', address: A, value: 0n },
      { kind: 'balance', address: A, value: (1n << 256n) - 1n },
      { kind: 'balance', address: A, value: 0x123n },
      { kind: 'nonce', address: A, value: 7n },
      { kind: 'code', address: A, code: '0x' },
      { kind: 'code', address: A, code: '0x6001600055' },
      { kind: 'storage', address: A, slot: `0x${'00'.repeat(31)}02` as Hex, value: word },
    ];
    for (const [i, c] of changes.entries()) assert.equal(await dev.devSetState(c), 41n + BigInt(i));
    assert.deepEqual(src.changes, changes);

    assert.equal(await dev.devImpersonate(A, true), false);
    assert.equal(await dev.devImpersonate(A, true), true);
    assert.deepEqual(await dev.devImpersonatedAccounts(), [A]);
    const tx = Uint8Array.of(2, 0xc0);
    assert.equal(await dev.devSendImpersonated(A, tx), `0x${'ab'.repeat(32)}`);
    assert.deepEqual(
      src.sends.map((x) => ({ sender: x.sender, raw: Uint8Array.from(x.raw) })),
      [{ sender: A, raw: tx }],
    );
    assert.equal(await dev.devImpersonate(A, false), true);
    assert.deepEqual(await dev.devImpersonatedAccounts(), []);

    src.refuse = new ChainError(-32000, `${A} is not impersonated: call anvil_impersonateAccount first`);
    await assert.rejects(
      dev.devSendImpersonated(A, tx),
      (err: Error) => err instanceof ChainError && err.code === -32000 && err.message === src.refuse!.message,
    );
    await assert.rejects(
      dev.devSetState({ kind: 'nonce', address: '0x12' as Hex, value: 1n }),
      (err: Error) =>
        err instanceof ChainError && err.code === -32602 && /invalid address 0x12/.test(err.message),
    );
  });
});
