// Bridge in through the executor (the Application consensus drives): InitChain records the
// validator set; PrepareProposal puts the bridge transaction at index 0 from signed extensions;
// ProcessProposal refuses a misplaced or replayed one; FinalizeBlock mints the mapped token's
// deposits once (another token's are skipped), and the supply check counts the mint;
// VerifyVoteExtension's rule; a genesis that maps no token processes nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { voteExtensionSignBytes } from '@noded/consensus';
import { ed25519Address, ed25519Generate, ed25519Sign, sha256 } from '@noded/crypto';
import {
  type Deposit,
  type DepositSource,
  decodeAttestation,
  Executor,
  encodeAttestation,
  isBridgeTx,
} from '@noded/execution';
import { MemoryKV } from '@noded/storage';
import { EventBus, type ExtendedCommitInfo, type Validator } from '@noded/types';
import { ETH, executorOptions, GENESIS_TIME, genesisState, initLocalChain, PROPOSER } from './helpers.js';

const keys = [0, 1, 2, 3].map((i) => ed25519Generate(sha256(new TextEncoder().encode(`bridge-in-${i}`))));
const validators: Validator[] = keys.map((k) => ({
  address: ed25519Address(k.publicKey),
  pubKey: k.publicKey,
  votingPower: 10n,
  proposerPriority: 0n,
}));
const MAPPED = '0x3333333333333333333333333333333333333333';
const OTHER = '0x4444444444444444444444444444444444444444';
const alice = '0x00000000000000000000000000000000000a11ce';
const bob = '0x0000000000000000000000000000000000000b0b';
const dep = (sequence: bigint, recipient: string, amount: bigint, token = MAPPED): Deposit => ({
  sequence,
  recipient,
  token,
  amount,
  sourceBlock: 0n,
  sourceTx: '',
});

async function open(mapped: boolean, deposits?: DepositSource) {
  const ex = await Executor.open({
    ...executorOptions(new MemoryKV(), new EventBus()),
    ...(deposits ? { deposits } : {}),
  });
  await initLocalChain(ex, validators, {
    ...genesisState([{ address: alice, balance: ETH }]),
    bridge: {
      admin: alice,
      min_amount: '1',
      window_seconds: '60',
      max_outflow_per_window: '1000',
      chains: [1],
      ...(mapped ? { btc_token_address: MAPPED } : {}),
    },
  });
  let height = 0;
  const block = async (txs: Uint8Array[]) => {
    height++;
    const res = await ex.finalizeBlock({
      height,
      time: GENESIS_TIME + BigInt(height) * 1_000_000_000n,
      proposerAddress: PROPOSER,
      hash: sha256(new TextEncoder().encode(`b${height}`)),
      txs,
      misbehavior: [],
      decidedLastCommit: { round: 0, votes: [] },
    });
    await ex.commit();
    return res;
  };
  const prepare = (localLastCommit?: ExtendedCommitInfo) =>
    ex.prepareProposal({
      height: height + 1,
      time: GENESIS_TIME,
      proposerAddress: PROPOSER,
      maxTxBytes: 1_000_000,
      ...(localLastCommit ? { localLastCommit } : {}),
    });
  const process = (txs: Uint8Array[]) =>
    ex.processProposal({
      height: height + 1,
      time: GENESIS_TIME,
      proposerAddress: PROPOSER,
      hash: new Uint8Array(32),
      txs,
    });
  return { ex, block, prepare, process, height: () => height };
}

/** The extended commit of `height`: validators `who` attest `deposits`, signed. */
function extended(height: number, who: number[], deposits: Deposit[]): ExtendedCommitInfo {
  const ext = encodeAttestation(deposits);
  return {
    round: 0,
    votes: validators.map((v, i) => {
      const on = who.includes(i);
      return {
        validator: { address: v.address, power: v.votingPower },
        blockIdFlag: 2,
        voteExtension: on ? ext : new Uint8Array(0),
        extensionSignature: ed25519Sign(
          keys[i]!.seed,
          voteExtensionSignBytes('chain-local', {
            height,
            round: 0,
            extension: on ? ext : new Uint8Array(0),
          }),
        ),
      };
    }),
  };
}

const balance = (n: { ex: Executor; height: () => number }, a: string) =>
  n.ex.getBalance(a as `0x${string}`, BigInt(n.height()));

describe('executor: bridge in', () => {
  it('mints attested deposits of the mapped token once, skips another token, and the supply counts it', async () => {
    const n = await open(true);
    await n.block([]);
    const deposits = [dep(1n, alice, 5n), dep(2n, bob, 7n, OTHER), dep(3n, alice, 1n)];
    const supply0 = n.ex.totalSupply();
    // Two of four attest: not enough, no bridge transaction.
    assert.ok(!(await n.prepare(extended(1, [0, 1], deposits))).some(isBridgeTx));
    const txs = await n.prepare(extended(1, [0, 1, 3], deposits));
    assert.ok(isBridgeTx(txs[0]!), 'index 0');
    assert.equal(await n.process(txs), true);
    assert.equal(
      await n.process([new Uint8Array([0x02, 0xc0]), ...txs]),
      false,
      'a bridge transaction not at index 0',
    );
    const res = await n.block(txs);
    assert.equal(res.txResults[0]!.code, 0);
    assert.equal(res.txResults[0]!.log, 'bridge: processed deposits 1..3, minted 6');
    assert.deepEqual(
      res.txResults[0]!.events.map((e) => e.type),
      ['bridge_mint', 'bridge_skip', 'bridge_mint'],
    );
    assert.equal(await balance(n, alice), ETH + 6n);
    assert.equal(await balance(n, bob), 0n, 'another token is never minted');
    assert.equal(n.ex.totalSupply(), supply0 + 6n);
    assert.equal(n.ex.lastInboundSequence(), 3n);
    const vreq = (ext: Uint8Array) => ({
      height: n.height() + 1,
      round: 0,
      hash: new Uint8Array(32),
      validatorAddress: validators[0]!.address,
      voteExtension: ext,
    });
    assert.equal(
      await n.ex.verifyVoteExtension(vreq(encodeAttestation([dep(1n, alice, 5n)]))),
      false,
      'minted already',
    );
    assert.equal(await n.ex.verifyVoteExtension(vreq(encodeAttestation([dep(4n, alice, 5n)]))), true);
    // The same transaction again (sequence numbers repeated) is refused and mints nothing.
    assert.equal(await n.process(txs), false);
    const again = await n.block(txs);
    assert.equal(again.txResults[0]!.code, 1);
    assert.equal(again.txResults[0]!.log, 'bridge: deposit 1 is not the next to mint (4)');
    assert.equal(await balance(n, alice), ETH + 6n);
    assert.equal(n.ex.totalSupply(), supply0 + 6n);
  });

  it('VerifyVoteExtension: empty, or an attestation from the next deposit to mint', async () => {
    const n = await open(true);
    await n.block([]);
    const req = (ext: Uint8Array) => ({
      height: 2,
      round: 0,
      hash: new Uint8Array(32),
      validatorAddress: validators[0]!.address,
      voteExtension: ext,
    });
    assert.equal(await n.ex.verifyVoteExtension(req(new Uint8Array(0))), true);
    assert.equal(await n.ex.verifyVoteExtension(req(encodeAttestation([dep(1n, alice, 1n)]))), true);
    assert.equal(
      await n.ex.verifyVoteExtension(req(encodeAttestation([dep(2n, alice, 1n)]))),
      true,
      'later: the block voted on mints sequence 1 itself',
    );
    assert.equal(await n.ex.verifyVoteExtension(req(Uint8Array.of(1, 0, 1, 2))), false);
    // Without a watcher the node attests nothing.
    assert.deepEqual(
      await n.ex.extendVote({
        height: 2,
        round: 0,
        hash: new Uint8Array(32),
        time: 0n,
        txs: [],
        proposerAddress: PROPOSER,
      }),
      new Uint8Array(0),
    );
  });

  it('ExtendVote attests the deposits after those the voted block mints itself', async () => {
    const held = [1n, 2n, 3n, 4n, 5n].map((q) => dep(q, alice, q));
    let attested = 0n;
    const source: DepositSource = {
      next: (max, from) => held.filter((d) => d.sequence >= (from ?? 1n)).slice(0, max),
      markAttested: (q) => {
        attested = q;
      },
    };
    const n = await open(true, source);
    await n.block([]);
    const txs = await n.prepare(extended(1, [0, 1, 2], held.slice(0, 3)));
    assert.ok(isBridgeTx(txs[0]!));
    const ext = await n.ex.extendVote({
      height: 2,
      round: 0,
      hash: new Uint8Array(32),
      time: 0n,
      txs,
      proposerAddress: PROPOSER,
    });
    assert.deepEqual(
      decodeAttestation(ext).map((d) => d.sequence),
      [4n, 5n],
    );
    assert.equal(attested, 5n);
    const plain = await n.ex.extendVote({
      height: 2,
      round: 0,
      hash: new Uint8Array(32),
      time: 0n,
      txs: [],
      proposerAddress: PROPOSER,
    });
    assert.deepEqual(
      decodeAttestation(plain).map((d) => d.sequence),
      [1n, 2n, 3n, 4n, 5n],
    );
  });

  it('a genesis that maps no token processes no deposit (they wait) and refuses a bridge transaction', async () => {
    const mapped = await open(true);
    await mapped.block([]);
    const txs = await mapped.prepare(extended(1, [0, 1, 2], [dep(1n, alice, 5n)]));
    const n = await open(false);
    await n.block([]);
    assert.ok(!(await n.prepare(extended(1, [0, 1, 2], [dep(1n, alice, 5n)]))).some(isBridgeTx));
    assert.equal(await n.process(txs), false);
    assert.equal(n.ex.lastInboundSequence(), 0n);
  });
});
