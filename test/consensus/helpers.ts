// Shared fixtures for the consensus tests: deterministic keys, genesis state, signed votes/proposals.
import {
  blockIdOf,
  type ChainState,
  createEngine,
  type EngineConfig,
  type EngineEffect,
  type EngineEvent,
  type EngineState,
  genesisChainState,
  makeBlock,
  proposalSignBytes,
  proposerOf,
  step,
  voteSignBytes,
} from '@noded/consensus';
import { ed25519Address, ed25519Generate, ed25519Sign, ed25519Verify, sha256 } from '@noded/crypto';
import type { Block, BlockId, ConsensusParams, Proposal, TimeNs, Validator, Vote } from '@noded/types';

export const CHAIN_ID = 'test-chain';
export const GENESIS_TIME: TimeNs = 1_700_000_000_000_000_000n;
export const MS = 1_000_000n;

export const PARAMS: ConsensusParams = {
  block: { maxBytes: 22020096n, maxGas: -1n },
  evidence: { maxAgeNumBlocks: 100000n, maxAgeDuration: 172800000000000n, maxBytes: 1048576n },
  validator: { pubKeyTypes: ['ed25519'] },
  version: { app: 0n },
  abci: { voteExtensionsEnableHeight: 0n },
};

export const TIMEOUTS = {
  propose: 3000,
  proposeDelta: 500,
  prevote: 1000,
  prevoteDelta: 500,
  precommit: 1000,
  precommitDelta: 500,
  commit: 1000,
};

export interface TestKey {
  seed: Uint8Array;
  publicKey: Uint8Array;
  address: Uint8Array;
}

export function testKey(i: number): TestKey {
  const k = ed25519Generate(sha256(new TextEncoder().encode(`consensus-test-key-${i}`)));
  return { ...k, address: ed25519Address(k.publicKey) };
}

export function validatorsOf(keys: TestKey[], powers?: bigint[]): Validator[] {
  return keys.map((k, i) => ({
    address: k.address,
    pubKey: k.publicKey,
    votingPower: powers?.[i] ?? 10n,
    proposerPriority: 0n,
  }));
}

export function genesis(keys: TestKey[], powers?: bigint[]): ChainState {
  return genesisChainState(
    {
      chainId: CHAIN_ID,
      time: GENESIS_TIME,
      initialHeight: 1,
      validators: validatorsOf(keys, powers),
      consensusParams: PARAMS,
    },
    sha256(new TextEncoder().encode('app-genesis')),
  );
}

export function config(own: TestKey | null, overrides: Partial<EngineConfig> = {}): EngineConfig {
  return {
    ownAddress: own?.address ?? null,
    timeouts: TIMEOUTS,
    createEmptyBlocks: true,
    verify: ed25519Verify,
    ...overrides,
  };
}

export function nilId(): BlockId {
  return { hash: new Uint8Array(0), partSetHeader: { total: 0, hash: new Uint8Array(0) } };
}

/** A signed vote by `key` (its index taken from the chain's validator set). */
export function signedVote(
  chain: ChainState,
  key: TestKey,
  type: 1 | 2,
  height: number,
  round: number,
  blockId: BlockId | null,
  timestamp: TimeNs = GENESIS_TIME + 1000n * MS,
): Vote {
  const vote: Vote = {
    type,
    height,
    round,
    blockId: blockId ?? nilId(),
    timestamp,
    validatorAddress: key.address,
    validatorIndex: chain.validators.indexOf(key.address),
    signature: new Uint8Array(0),
  };
  vote.signature = ed25519Sign(key.seed, voteSignBytes(CHAIN_ID, vote));
  return vote;
}

export function blockFor(chain: ChainState, proposer: TestKey, tag = 'a'): Block {
  return makeBlock(chain, {
    height: chain.lastBlockHeight + 1,
    time: chain.lastBlockTime,
    txs: [new TextEncoder().encode(`k${tag}=v${tag}`)],
    evidence: [],
    lastCommit: null,
    proposerAddress: proposer.address,
  });
}

export function signedProposal(key: TestKey, block: Block, round: number, polRound = -1): Proposal {
  const p: Proposal = {
    height: block.header.height,
    round,
    polRound,
    blockId: blockIdOf(block),
    timestamp: GENESIS_TIME + 500n * MS,
    signature: new Uint8Array(0),
  };
  p.signature = ed25519Sign(key.seed, proposalSignBytes(CHAIN_ID, p));
  return p;
}

/** Drives one engine and keeps every effect it emitted. */
export class Driver {
  state: EngineState;
  effects: EngineEffect[] = [];
  now: TimeNs = GENESIS_TIME + 1000n * MS;

  constructor(
    cfg: EngineConfig,
    readonly chain: ChainState,
  ) {
    this.state = createEngine(cfg, chain, null);
  }

  send(ev: EngineEvent | ((now: TimeNs) => EngineEvent)): EngineEffect[] {
    this.now += 10n * MS;
    const e = typeof ev === 'function' ? ev(this.now) : ev;
    const r = step(this.state, e);
    this.state = r.state;
    this.effects.push(...r.effects);
    return r.effects;
  }

  /** Answers every signVote with the signed vote (as the runtime's signer would). */
  signWith(key: TestKey, effects: EngineEffect[]): EngineEffect[] {
    const out: EngineEffect[] = [];
    for (const e of effects) {
      if (e.kind !== 'signVote') continue;
      const vote = { ...e.vote, signature: ed25519Sign(key.seed, voteSignBytes(CHAIN_ID, e.vote)) };
      out.push(...this.send((now) => ({ kind: 'ownVote', vote, now })));
    }
    return out;
  }

  vote(v: Vote): EngineEffect[] {
    return this.send((now) => ({ kind: 'vote', vote: v, now }));
  }

  /** Delivers a proposal and answers the validation request with `valid`. */
  propose(p: Proposal, block: Block, valid = true): EngineEffect[] {
    const effs = this.send((now) => ({ kind: 'proposal', proposal: p, block, now }));
    if (effs.some((e) => e.kind === 'validateBlock')) {
      effs.push(
        ...this.send((now) => ({
          kind: 'blockValidated',
          height: p.height,
          blockHash: p.blockId.hash,
          valid,
          now,
        })),
      );
    }
    return effs;
  }

  timeout(
    step: 'NewHeight' | 'Propose' | 'PrevoteWait' | 'PrecommitWait',
    round = this.state.round,
  ): EngineEffect[] {
    return this.send((now) => ({ kind: 'timeout', height: this.state.height, round, step, now }));
  }
}

export function ofKind<K extends EngineEffect['kind']>(
  effects: EngineEffect[],
  kind: K,
): Array<Extract<EngineEffect, { kind: K }>> {
  return effects.filter((e): e is Extract<EngineEffect, { kind: K }> => e.kind === kind);
}

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/**
 * Four validators and the engine of one that is not the proposer of rounds 0..2 (`self`), with
 * `keyOf(r)` the key of round r's proposer and a Driver of `self` at the first height.
 */
export function nonProposerSetup() {
  const keys = [0, 1, 2, 3].map(testKey);
  const chain = genesis(keys);
  const probe = createEngine(config(null), chain, null);
  const proposers = [0, 1, 2, 3].map((r) => hex(proposerOf(probe, r).address));
  const self = keys.find((k) => !proposers.slice(0, 3).includes(hex(k.address)))!;
  const keyOf = (r: number): TestKey => keys.find((k) => hex(k.address) === proposers[r])!;
  const others = keys.filter((k) => k !== self);
  const d = new Driver(config(self), chain);
  return { chain, self, others, keyOf, d };
}

export { prng } from '../prng.js';
