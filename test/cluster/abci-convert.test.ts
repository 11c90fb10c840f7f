// Round trips of every noded.abci.v1 request and response through the wire (toProto -> encode ->
// decode -> fromProto), and the field rules fromProto enforces at the boundary.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AbciFieldError, fromProto, abciProto as pb, toProto } from '@noded/abci-grpc';
import type {
  AppInfo,
  CheckTxResult,
  ConsensusParams,
  ExtendedCommitInfo,
  FinalizeBlockRequest,
  FinalizeBlockResponse,
  InitChainRequest,
  PrepareProposalRequest,
  ProcessProposalRequest,
} from '@noded/types';

const fill = (n: number, v: number) => new Uint8Array(n).fill(v);
const addr = (v: number) => fill(20, v);
const enc = new TextEncoder();

const PARAMS: ConsensusParams = {
  block: { maxBytes: 22020096n, maxGas: -1n },
  evidence: { maxAgeNumBlocks: 100000n, maxAgeDuration: 172800000000123n, maxBytes: 1048576n },
  validator: { pubKeyTypes: ['ed25519'] },
  version: { app: 7n },
  abci: { voteExtensionsEnableHeight: 0n },
};

/** Encodes with the generated codec and decodes again, as the wire does. */
function wire<T>(codec: { encode(m: T): { finish(): Uint8Array }; decode(b: Uint8Array): T }, m: T): T {
  return codec.decode(codec.encode(m).finish());
}

function rejects(fn: () => unknown, field: string, rule: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof AbciFieldError, `AbciFieldError, got ${err}`);
    assert.equal(err.field, field);
    assert.match(err.rule, rule);
    return true;
  });
}

describe('ABCI gRPC conversions: round trips', () => {
  it('Info request and response', () => {
    assert.deepEqual(wire(pb.InfoRequest, toProto.infoRequest()), {});
    const info: AppInfo = {
      data: 'noded-executor',
      version: '0.1.0',
      appVersion: 3n,
      lastBlockHeight: 9_007_199_254_740_991,
      lastBlockAppHash: fill(32, 0xab),
    };
    assert.deepEqual(fromProto.infoResponse(wire(pb.InfoResponse, toProto.infoResponse(info))), info);
    const fresh: AppInfo = { ...info, lastBlockHeight: 0, lastBlockAppHash: new Uint8Array(0) };
    assert.deepEqual(fromProto.infoResponse(wire(pb.InfoResponse, toProto.infoResponse(fresh))), fresh);
  });

  it('InitChain request (times before and after 1970, JSON app state, params) and response', () => {
    for (const time of [1_700_000_000_123_456_789n, 0n, -1n, -1_500_000_000_000_000_001n]) {
      for (const appState of [{ accounts: [{ a: '0x01', b: '10' }], n: 1 }, null, undefined, 'x']) {
        const req: InitChainRequest = {
          chainId: 'chain-local',
          time,
          initialHeight: 5,
          validators: [
            { address: addr(1), pubKey: fill(32, 2), votingPower: 10n, proposerPriority: -3n },
            { address: addr(3), pubKey: fill(32, 4), votingPower: 0n, proposerPriority: 0n },
          ],
          consensusParams: PARAMS,
          appState,
        };
        const back = fromProto.initChainRequest(wire(pb.InitChainRequest, toProto.initChainRequest(req)));
        assert.deepEqual(back, req);
      }
    }
    for (const d of [0n, 1n, -1n, -1_000_000_001n, 999_999_999n]) {
      const req: InitChainRequest = {
        chainId: 'c',
        time: 0n,
        initialHeight: 1,
        validators: [],
        consensusParams: { ...PARAMS, evidence: { ...PARAMS.evidence, maxAgeDuration: d } },
        appState: {},
      };
      assert.deepEqual(
        fromProto.initChainRequest(wire(pb.InitChainRequest, toProto.initChainRequest(req))),
        req,
        `max_age_duration ${d}`,
      );
    }
    const res = { appHash: fill(32, 9) };
    assert.deepEqual(
      fromProto.initChainResponse(wire(pb.InitChainResponse, toProto.initChainResponse(res))),
      res,
    );
  });

  it('CheckTx request (new, recheck) and response', () => {
    for (const kind of ['new', 'recheck'] as const) {
      const tx = enc.encode(`tx-${kind}`);
      assert.deepEqual(fromProto.checkTxRequest(wire(pb.CheckTxRequest, toProto.checkTxRequest(tx, kind))), {
        tx,
        kind,
      });
    }
    const res: CheckTxResult = {
      code: 4_294_967_295,
      log: 'nonce too low: next nonce 3, tx nonce 1',
      gasWanted: 21000n,
      codespace: 'evm',
      hash: fill(32, 7),
    };
    assert.deepEqual(fromProto.checkTxResponse(wire(pb.CheckTxResponse, toProto.checkTxResponse(res))), res);
  });

  it('PrepareProposal request and response', () => {
    const req: PrepareProposalRequest = {
      height: 12,
      time: 1_700_000_000_000_000_001n,
      proposerAddress: addr(5),
      maxTxBytes: 0,
    };
    assert.deepEqual(
      fromProto.prepareProposalRequest(wire(pb.PrepareProposalRequest, toProto.prepareProposalRequest(req))),
      req,
    );
    for (const txs of [[], [enc.encode('a=1'), new Uint8Array(0), fill(100_000, 1)]]) {
      assert.deepEqual(
        fromProto.prepareProposalResponse(
          wire(pb.PrepareProposalResponse, toProto.prepareProposalResponse(txs)),
        ),
        txs,
      );
    }
  });

  it('PrepareProposal request with the extended last commit', () => {
    const localLastCommit: ExtendedCommitInfo = {
      round: 2,
      votes: [
        {
          validator: { address: addr(1), power: 10n },
          blockIdFlag: 2,
          voteExtension: enc.encode('deposits'),
          extensionSignature: fill(64, 9),
        },
        {
          validator: { address: addr(2), power: 5n },
          blockIdFlag: 3,
          voteExtension: new Uint8Array(0),
          extensionSignature: new Uint8Array(0),
        },
        {
          validator: { address: addr(3), power: 1n },
          blockIdFlag: 1,
          voteExtension: new Uint8Array(0),
          extensionSignature: new Uint8Array(0),
        },
      ],
    };
    const req: PrepareProposalRequest = {
      height: 12,
      time: 5n,
      proposerAddress: addr(5),
      maxTxBytes: 100,
      localLastCommit,
    };
    assert.deepEqual(
      fromProto.prepareProposalRequest(wire(pb.PrepareProposalRequest, toProto.prepareProposalRequest(req))),
      req,
    );
  });

  it('ExtendVote and VerifyVoteExtension requests and responses', () => {
    const ev = {
      height: 7,
      round: 3,
      hash: fill(32, 1),
      time: 1_700_000_000_000_000_123n,
      txs: [enc.encode('a=1')],
      proposerAddress: addr(4),
    };
    assert.deepEqual(
      fromProto.extendVoteRequest(wire(pb.ExtendVoteRequest, toProto.extendVoteRequest(ev))),
      ev,
    );
    for (const ext of [new Uint8Array(0), fill(16 * 1024, 2)])
      assert.deepEqual(
        fromProto.extendVoteResponse(wire(pb.ExtendVoteResponse, toProto.extendVoteResponse(ext))),
        ext,
      );
    const vv = {
      height: 7,
      round: 0,
      hash: fill(32, 1),
      validatorAddress: addr(9),
      voteExtension: enc.encode('x'),
    };
    assert.deepEqual(
      fromProto.verifyVoteExtensionRequest(
        wire(pb.VerifyVoteExtensionRequest, toProto.verifyVoteExtensionRequest(vv)),
      ),
      vv,
    );
    for (const v of [true, false])
      assert.equal(
        fromProto.verifyVoteExtensionResponse(
          wire(pb.VerifyVoteExtensionResponse, toProto.verifyVoteExtensionResponse(v)),
        ),
        v,
      );
  });

  it('Query: request and response round-trip; heights 0 and below pass as "latest", an answer below 0 is refused', () => {
    for (const height of [0, -1, 7]) {
      const q = { path: `/evm/balance/0x${'11'.repeat(20)}`, data: enc.encode('d'), height, prove: true };
      assert.deepEqual(fromProto.queryRequest(wire(pb.QueryRequest, toProto.queryRequest(q))), q);
    }
    const r = {
      code: 1,
      log: 'unknown query path',
      key: enc.encode('k'),
      value: enc.encode('12'),
      height: 5,
    };
    assert.deepEqual(fromProto.queryResponse(wire(pb.QueryResponse, toProto.queryResponse(r))), r);
    rejects(
      () => fromProto.queryResponse({ ...toProto.queryResponse(r), height: -1n }),
      'QueryResponse.height',
      /^must be at least 0, got -1$/,
    );
    rejects(
      () =>
        fromProto.queryRequest({
          ...toProto.queryRequest({ path: '', data: new Uint8Array(), height: 0, prove: false }),
          height: 2n ** 60n,
        }),
      'QueryRequest.height',
      /^must be at most 9007199254740991/,
    );
  });

  it('vote extension field rules: size cap, flags, signature length, status', () => {
    rejects(
      () => fromProto.extendVoteResponse({ voteExtension: fill(16 * 1024 + 1, 0) }),
      'ExtendVoteResponse.vote_extension',
      /^must be at most 16384 bytes, got 16385$/,
    );
    rejects(
      () => fromProto.verifyVoteExtensionResponse({ status: pb.VerifyStatus.VERIFY_STATUS_UNKNOWN }),
      'VerifyVoteExtensionResponse.status',
      /got 0$/,
    );
    const base = toProto.verifyVoteExtensionRequest({
      height: 1,
      round: 0,
      hash: fill(32, 1),
      validatorAddress: addr(1),
      voteExtension: new Uint8Array(0),
    });
    rejects(
      () => fromProto.verifyVoteExtensionRequest({ ...base, round: -1 }),
      'VerifyVoteExtensionRequest.round',
      /^must be at least 0, got -1$/,
    );
    const vote = (over: Partial<pb.ExtendedVoteInfo>): pb.PrepareProposalRequest => ({
      ...toProto.prepareProposalRequest({ height: 2, time: 1n, proposerAddress: addr(1), maxTxBytes: 0 }),
      localLastCommit: {
        round: 0,
        votes: [
          {
            validator: { address: addr(1), pubKey: new Uint8Array(0), power: 1n, proposerPriority: 0n },
            voteExtension: new Uint8Array(0),
            extensionSignature: new Uint8Array(0),
            blockIdFlag: pb.BlockIDFlag.BLOCK_ID_FLAG_COMMIT,
            ...over,
          },
        ],
      },
    });
    const f = 'PrepareProposalRequest.local_last_commit.votes[0]';
    rejects(
      () => fromProto.prepareProposalRequest(vote({ blockIdFlag: pb.BlockIDFlag.BLOCK_ID_FLAG_UNKNOWN })),
      `${f}.block_id_flag`,
      /got 0$/,
    );
    rejects(
      () =>
        fromProto.prepareProposalRequest(
          vote({ blockIdFlag: pb.BlockIDFlag.BLOCK_ID_FLAG_NIL, voteExtension: enc.encode('x') }),
        ),
      `${f}.vote_extension`,
      /^must be empty unless block_id_flag is COMMIT$/,
    );
    rejects(
      () => fromProto.prepareProposalRequest(vote({ extensionSignature: fill(10, 1) })),
      `${f}.extension_signature`,
      /^must be empty or 64 bytes, got 10$/,
    );
  });

  it('ProcessProposal request and response (accept, reject)', () => {
    const req: ProcessProposalRequest = {
      height: 1,
      time: 1n,
      proposerAddress: addr(6),
      hash: fill(32, 8),
      txs: [enc.encode('k=v'), enc.encode('x=y')],
    };
    assert.deepEqual(
      fromProto.processProposalRequest(wire(pb.ProcessProposalRequest, toProto.processProposalRequest(req))),
      req,
    );
    for (const v of [true, false]) {
      assert.equal(
        fromProto.processProposalResponse(
          wire(pb.ProcessProposalResponse, toProto.processProposalResponse(v)),
        ),
        v,
      );
    }
  });

  it('FinalizeBlock request (with misbehavior) and response (with and without param updates)', () => {
    const req: FinalizeBlockRequest = {
      height: 100,
      time: 1_700_000_000_999_999_999n,
      proposerAddress: addr(1),
      hash: fill(32, 2),
      txs: [enc.encode('a=b'), fill(3, 0)],
      misbehavior: [
        {
          type: 'duplicate_vote',
          validatorAddress: addr(9),
          height: 99,
          time: 1_699_999_999_000_000_000n,
          totalVotingPower: 40n,
        },
      ],
      decidedLastCommit: {
        round: 2,
        votes: [
          { validatorAddress: addr(3), power: 10n, signed: true },
          { validatorAddress: addr(4), power: 30n, signed: false },
        ],
      },
    };
    assert.deepEqual(
      fromProto.finalizeBlockRequest(wire(pb.FinalizeBlockRequest, toProto.finalizeBlockRequest(req))),
      req,
    );
    // noded's light_block (the cluster's consensus sends it) crosses as it is; absent stays absent.
    const withLight: FinalizeBlockRequest = { ...req, lightBlock: fill(519, 6) };
    assert.deepEqual(
      fromProto.finalizeBlockRequest(wire(pb.FinalizeBlockRequest, toProto.finalizeBlockRequest(withLight))),
      withLight,
    );
    const res: FinalizeBlockResponse = {
      events: [
        { type: 'block', attributes: [{ key: 'height', value: '100', index: true }] },
        { type: 'empty', attributes: [] },
      ],
      txResults: [
        {
          code: 0,
          data: fill(4, 1),
          log: '',
          info: 'ok',
          gasWanted: 21000n,
          gasUsed: 21000n,
          events: [{ type: 'tx', attributes: [{ key: 'k', value: 'v', index: false }] }],
          codespace: '',
        },
        {
          code: 1,
          data: new Uint8Array(0),
          log: 'execution reverted',
          info: '',
          gasWanted: 50000n,
          gasUsed: 0n,
          events: [],
          codespace: 'evm',
        },
      ],
      validatorUpdates: [
        { pubKey: fill(32, 3), power: 0n },
        { pubKey: fill(32, 4), power: 25n },
      ],
      consensusParamUpdates: null,
      appHash: fill(32, 5),
    };
    const decode = (r: FinalizeBlockResponse) =>
      fromProto.finalizeBlockResponse(wire(pb.FinalizeBlockResponse, toProto.finalizeBlockResponse(r)));
    assert.deepEqual(decode(res), res);
    const withParams = { ...res, consensusParamUpdates: PARAMS };
    assert.deepEqual(decode(withParams), withParams);
    const bare: FinalizeBlockResponse = {
      events: [],
      txResults: [],
      validatorUpdates: [],
      consensusParamUpdates: null,
      appHash: new Uint8Array(0),
    };
    assert.deepEqual(decode(bare), bare);
  });

  it('Commit request and response', () => {
    assert.deepEqual(wire(pb.CommitRequest, toProto.commitRequest()), {});
    for (const retainHeight of [0, 1, 123_456]) {
      assert.deepEqual(
        fromProto.commitResponse(wire(pb.CommitResponse, toProto.commitResponse({ retainHeight }))),
        { retainHeight },
      );
    }
  });

  it('bytes come back as plain Uint8Arrays that do not share the decoded buffer', () => {
    const m = wire(pb.InitChainResponse, { appHash: Buffer.from([1, 2, 3]) });
    const r = fromProto.initChainResponse(m);
    assert.equal(Object.getPrototypeOf(r.appHash), Uint8Array.prototype);
    m.appHash[0] = 9;
    assert.equal(r.appHash[0], 1);
  });
});

describe('ABCI gRPC conversions: field rules', () => {
  const time = { seconds: 1n, nanos: 0 };
  const prepare = (over: Partial<pb.PrepareProposalRequest>): pb.PrepareProposalRequest => ({
    maxTxBytes: 100n,
    height: 1n,
    time,
    proposerAddress: addr(1),
    ...over,
  });
  const finalize = (over: Partial<pb.FinalizeBlockRequest>): pb.FinalizeBlockRequest => ({
    txs: [],
    misbehavior: [],
    decidedLastCommit: { round: 0, votes: [] },
    hash: fill(32, 1),
    height: 2n,
    time,
    proposerAddress: addr(1),
    lightBlock: new Uint8Array(),
    ...over,
  });
  const init = (over: Partial<pb.InitChainRequest>): pb.InitChainRequest => ({
    ...toProto.initChainRequest({
      chainId: 'c',
      time: 0n,
      initialHeight: 1,
      validators: [],
      consensusParams: PARAMS,
      appState: {},
    }),
    ...over,
  });

  it('heights: at least 1, at most 2^53 - 1', () => {
    rejects(
      () => fromProto.prepareProposalRequest(prepare({ height: 0n })),
      'PrepareProposalRequest.height',
      /at least 1, got 0/,
    );
    rejects(
      () => fromProto.finalizeBlockRequest(finalize({ height: 2n ** 53n })),
      'FinalizeBlockRequest.height',
      /at most 9007199254740991, got 9007199254740992/,
    );
    rejects(
      () => fromProto.initChainRequest(init({ initialHeight: -4n })),
      'InitChainRequest.initial_height',
      /at least 1/,
    );
    rejects(
      () => fromProto.prepareProposalRequest(prepare({ maxTxBytes: -1n })),
      'PrepareProposalRequest.max_tx_bytes',
      /at least 0, got -1/,
    );
  });

  it('times: required, nanos in range', () => {
    rejects(
      () => fromProto.prepareProposalRequest(prepare({ time: undefined })),
      'PrepareProposalRequest.time',
      /is required/,
    );
    rejects(
      () => fromProto.finalizeBlockRequest(finalize({ time: { seconds: 1n, nanos: 1_000_000_000 } })),
      'FinalizeBlockRequest.time.nanos',
      /\[0, 999999999\], got 1000000000/,
    );
    rejects(
      () => fromProto.finalizeBlockRequest(finalize({ time: { seconds: 1n, nanos: -1 } })),
      'FinalizeBlockRequest.time.nanos',
      /got -1/,
    );
  });

  it('fixed-size bytes: addresses 20, hashes 32, public keys 32', () => {
    rejects(
      () => fromProto.prepareProposalRequest(prepare({ proposerAddress: fill(19, 1) })),
      'PrepareProposalRequest.proposer_address',
      /must be 20 bytes, got 19/,
    );
    rejects(
      () => fromProto.finalizeBlockRequest(finalize({ hash: new Uint8Array(0) })),
      'FinalizeBlockRequest.hash',
      /must be 32 bytes, got 0/,
    );
    rejects(
      () =>
        fromProto.initChainRequest(
          init({ validators: [{ address: addr(1), pubKey: fill(33, 1), power: 1n, proposerPriority: 0n }] }),
        ),
      'InitChainRequest.validators[0].pub_key',
      /must be 32 bytes, got 33/,
    );
    rejects(
      () =>
        fromProto.finalizeBlockResponse({
          events: [],
          txResults: [],
          validatorUpdates: [
            { pubKey: fill(32, 1), power: 1n },
            { pubKey: fill(32, 1), power: -1n },
          ],
          appHash: new Uint8Array(0),
        }),
      'FinalizeBlockResponse.validator_updates[1].power',
      /at least 0, got -1/,
    );
  });

  it('enums: zero and unknown values are refused', () => {
    rejects(
      () => fromProto.checkTxRequest({ tx: fill(1, 1), type: pb.CheckTxType.CHECK_TX_TYPE_UNSPECIFIED }),
      'CheckTxRequest.type',
      /got 0/,
    );
    rejects(
      () => fromProto.checkTxRequest({ tx: fill(1, 1), type: 7 as pb.CheckTxType }),
      'CheckTxRequest.type',
      /got 7/,
    );
    rejects(
      () => fromProto.checkTxRequest({ tx: new Uint8Array(0), type: 1 }),
      'CheckTxRequest.tx',
      /must not be empty/,
    );
    rejects(
      () => fromProto.processProposalResponse({ status: pb.ProposalStatus.PROPOSAL_STATUS_UNKNOWN }),
      'ProcessProposalResponse.status',
      /got 0/,
    );
    rejects(
      () =>
        fromProto.finalizeBlockRequest(
          finalize({
            misbehavior: [
              {
                type: pb.MisbehaviorType.MISBEHAVIOR_TYPE_UNKNOWN,
                validatorAddress: addr(1),
                height: 1n,
                time,
                totalVotingPower: 1n,
              },
            ],
          }),
        ),
      'FinalizeBlockRequest.misbehavior[0].type',
      /MISBEHAVIOR_TYPE_DUPLICATE_VOTE/,
    );
    rejects(
      () => fromProto.finalizeBlockRequest(finalize({ decidedLastCommit: undefined })),
      'FinalizeBlockRequest.decided_last_commit',
      /is required/,
    );
    rejects(
      () =>
        fromProto.finalizeBlockRequest(
          finalize({
            decidedLastCommit: {
              round: 0,
              votes: [{ validatorAddress: fill(19, 1), power: 1n, signed: true }],
            },
          }),
        ),
      'FinalizeBlockRequest.decided_last_commit.votes[0].validator_address',
      /must be 20 bytes, got 19/,
    );
  });

  it('InitChain: chain id, app state JSON, every consensus params part required', () => {
    rejects(
      () => fromProto.initChainRequest(init({ chainId: '' })),
      'InitChainRequest.chain_id',
      /must not be empty/,
    );
    rejects(
      () => fromProto.initChainRequest(init({ appStateBytes: enc.encode('{"a":') })),
      'InitChainRequest.app_state_bytes',
      /must be UTF-8 JSON/,
    );
    rejects(
      () => fromProto.initChainRequest(init({ appStateBytes: new Uint8Array([0xff, 0xfe]) })),
      'InitChainRequest.app_state_bytes',
      /must be UTF-8 JSON/,
    );
    rejects(
      () => fromProto.initChainRequest(init({ consensusParams: undefined })),
      'InitChainRequest.consensus_params',
      /is required/,
    );
    const params = toProto.initChainRequest({
      chainId: 'c',
      time: 0n,
      initialHeight: 1,
      validators: [],
      consensusParams: PARAMS,
      appState: {},
    }).consensusParams!;
    rejects(
      () => fromProto.initChainRequest(init({ consensusParams: { ...params, abci: undefined } })),
      'InitChainRequest.consensus_params.abci',
      /is required/,
    );
    rejects(
      () =>
        fromProto.initChainRequest(
          init({
            consensusParams: {
              ...params,
              evidence: { ...params.evidence!, maxAgeDuration: { seconds: 1n, nanos: -5 } },
            },
          }),
        ),
      'InitChainRequest.consensus_params.evidence.max_age_duration',
      /same sign/,
    );
  });

  it('responses: info height, commit retain height', () => {
    rejects(
      () =>
        fromProto.infoResponse({
          data: '',
          version: '',
          appVersion: 0n,
          lastBlockHeight: -1n,
          lastBlockAppHash: new Uint8Array(0),
        }),
      'InfoResponse.last_block_height',
      /at least 0/,
    );
    rejects(
      () => fromProto.commitResponse({ retainHeight: -2n }),
      'CommitResponse.retain_height',
      /at least 0/,
    );
  });
});
