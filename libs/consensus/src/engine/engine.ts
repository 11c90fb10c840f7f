// The Tendermint consensus algorithm ("The latest gossip on BFT consensus", Buchman, Kwon,
// Milosevic 2018, Algorithm 1) as a pure state machine: step(state, event) -> { state, effects }.
// No timers, sockets, disk or clock: time arrives inside events, and every action (sign, send,
// persist, schedule a timeout, ask the application) leaves as an effect for the driver to execute in
// order. After every input the upon-rules of the paper are evaluated until none fires; comments cite
// the paper's line numbers (L22 proposal without POL, L28 with POL, L34/L47 wait timeouts, L36 lock,
// L44 nil polka, L49 decide, L55 round skip).
//
// Ownership: step() takes the state and returns the next one (the same object, updated); callers
// must not keep using the state they passed in. Everything else is deterministic.
import type {
  Block,
  BlockId,
  Commit,
  ExtendedCommitInfo,
  Proposal,
  TimeNs,
  Validator,
  Vote,
  VoteType,
} from '@noded/types';
import {
  checkBlock,
  commitSigVote,
  makeBlock,
  maxBlockBytes,
  nextBlockTime,
  proposerPicksTime,
  TIME_IOTA_NS,
  verifyCommit,
  verifyCommitExtensions,
} from '../block.js';
import type { ChainState } from '../chainstate.js';
import { emptyBlockId, proposalSignBytes } from '../codec/types.js';
import { blockIdEqual, blockIdKey, blockIdOf, blockSize, bytesEqual, hex } from '../hash.js';
import { HeightVoteSet, VoteSet, voteExtensionsEnabled } from '../voteset.js';
import {
  type ConsensusMessage,
  type EngineConfig,
  type EngineEffect,
  type EngineEvent,
  type EngineState,
  type ProposalRecord,
  type RoundStep,
  STEP_ORDER,
  type TimeoutStep,
  type WalEntry,
} from './types.js';

export interface StepResult {
  state: EngineState;
  effects: EngineEffect[];
}

const MAX_RULE_ITERATIONS = 64;

/**
 * The engine at height chain.lastBlockHeight + 1, step NewHeight; `lastCommit` is the stored seen
 * commit, or the stored extended commit when vote extensions were on (its extensions are kept for
 * the next proposal).
 */
export function createEngine(
  config: EngineConfig,
  chain: ChainState,
  lastCommit: Commit | null,
): EngineState {
  const s: EngineState = {
    config,
    chain,
    height: chain.lastBlockHeight + 1,
    round: 0,
    step: 'NewHeight',
    startTime: 0n,
    ownIndex: config.ownAddress ? chain.validators.indexOf(config.ownAddress) : -1,
    votes: heightVotes(chain, chain.lastBlockHeight + 1),
    lastCommit: null,
    proposals: new Map(),
    blocks: new Map(),
    validity: new Map(),
    lockedRound: -1,
    lockedBlock: null,
    validRound: -1,
    validBlock: null,
    polkaSeen: false,
    triggeredPrecommitWait: false,
    commitRound: -1,
    decided: false,
    decidedCommit: null,
    commitTime: null,
    pendingVotes: [],
    pendingProposal: null,
    txsAvailable: false,
    proposers: new Map(),
  };
  if (lastCommit && lastCommit.height === chain.lastBlockHeight && chain.lastValidators.size > 0) {
    const set = new VoteSet(
      chain.chainId,
      lastCommit.height,
      lastCommit.round,
      2,
      chain.lastValidators,
      voteExtensionsEnabled(chain.consensusParams, lastCommit.height),
    );
    lastCommit.signatures.forEach((sig, i) => {
      if (sig.blockIdFlag !== 1) set.add(commitSigVote(lastCommit, i), config.verify, true);
    });
    s.lastCommit = set;
  }
  return s;
}

function heightVotes(chain: ChainState, height: number): HeightVoteSet {
  return new HeightVoteSet(
    chain.chainId,
    height,
    chain.validators,
    voteExtensionsEnabled(chain.consensusParams, height),
  );
}

class Ctx {
  readonly out: EngineEffect[] = [];
  constructor(
    readonly s: EngineState,
    readonly now: TimeNs,
  ) {}

  emit(e: EngineEffect): void {
    this.out.push(e);
  }

  wal(entry: WalEntry, sync = false): void {
    this.out.push({ kind: 'wal', entry, sync });
  }
}

/** Applies one event. See the file comment for the ownership rule. */
export function step(state: EngineState, event: EngineEvent): StepResult {
  const ctx = new Ctx(state, event.now);
  switch (event.kind) {
    case 'start':
      onStart(ctx);
      break;
    case 'timeout':
      onTimeout(ctx, event);
      break;
    case 'proposal':
      onProposal(ctx, event);
      break;
    case 'ownProposal':
      onOwnProposal(ctx, event);
      break;
    case 'vote':
      onVote(ctx, event, false);
      break;
    case 'ownVote':
      onVote(ctx, event, true);
      break;
    case 'commitCert':
      onCommitCert(ctx, event);
      break;
    case 'txsAvailable':
      onTxsAvailable(ctx, event);
      break;
    case 'proposalTxs':
      onProposalTxs(ctx, event);
      break;
    case 'blockValidated':
      onBlockValidated(ctx, event);
      break;
    case 'committed':
      onCommitted(ctx, event);
      break;
  }
  progress(ctx);
  return { state: ctx.s, effects: ctx.out };
}

// ---------------------------------------------------------------------------------------------
// Queries (pure reads used by drivers)

/** The proposer of `round` at the engine's height. */
export function proposerOf(s: EngineState, round: number): Validator {
  let p = s.proposers.get(round);
  if (!p) {
    p = s.chain.validators.proposerForRound(round);
    s.proposers.set(round, p);
  }
  return p;
}

export function isOwnProposer(s: EngineState, round: number): boolean {
  return (
    s.ownIndex >= 0 && !!s.config.ownAddress && bytesEqual(proposerOf(s, round).address, s.config.ownAddress)
  );
}

type GossipMessage = { kind: 'proposal'; proposal: Proposal; block: Block } | { kind: 'vote'; vote: Vote };

/**
 * What a node re-sends periodically: its own votes of the current and previous round, and the
 * prevotes proving the POL round of the current proposal (peers that missed them cannot accept a
 * re-proposed valid block otherwise; CometBFT's gossip sends them too). Its own proposal is not
 * among them: a peer whose status says it lacks the proposal gets it (messagesForPeer), so a whole
 * block is not sent to every peer every tick.
 */
export function gossipMessages(s: EngineState): GossipMessage[] {
  const out: GossipMessage[] = [];
  if (s.step === 'NewHeight') return out;
  if (s.ownIndex >= 0) {
    for (const r of [s.round - 1, s.round]) {
      if (r < 0) continue;
      const pv = s.votes.prevotes(r).get(s.ownIndex);
      if (pv) out.push({ kind: 'vote', vote: pv });
      const pc = s.votes.precommits(r).get(s.ownIndex);
      if (pc) out.push({ kind: 'vote', vote: pc });
    }
  }
  const cur = s.proposals.get(s.round);
  if (cur && cur.proposal.polRound >= 0) {
    for (const vote of s.votes.prevotes(cur.proposal.polRound).votesFor(cur.key))
      out.push({ kind: 'vote', vote });
  }
  return out;
}

/** The status this node announces: its height, round and which votes of its round it holds. */
export function statusMessage(s: EngineState): Extract<ConsensusMessage, { kind: 'status' }> {
  return {
    kind: 'status',
    height: s.height,
    round: s.round,
    step: s.step,
    prevotes: s.votes.prevotes(s.round).bits(),
    precommits: s.votes.precommits(s.round).bits(),
    hasProposal: s.proposals.has(s.round),
  };
}

/**
 * What to send a peer at the same height, given its status: the proposal and votes of its round that
 * it lacks, and when it is behind in rounds, the votes of this node's round too (enough to skip).
 * This relays what correct nodes received, which the paper's liveness argument assumes.
 */
export function messagesForPeer(
  s: EngineState,
  peer: Extract<ConsensusMessage, { kind: 'status' }>,
): GossipMessage[] {
  if (peer.height !== s.height || s.step === 'NewHeight') return [];
  const out: GossipMessage[] = [];
  const missing = (bits: string | undefined, v: Vote) => bits?.[v.validatorIndex] !== 'x';
  const rec = s.proposals.get(peer.round);
  if (rec && !peer.hasProposal) out.push({ kind: 'proposal', proposal: rec.proposal, block: rec.block });
  for (const vote of s.votes.prevotes(peer.round).all())
    if (missing(peer.prevotes, vote)) out.push({ kind: 'vote', vote });
  for (const vote of s.votes.precommits(peer.round).all())
    if (missing(peer.precommits, vote)) out.push({ kind: 'vote', vote });
  if (peer.round < s.round) {
    const cur = s.proposals.get(s.round);
    if (cur) out.push({ kind: 'proposal', proposal: cur.proposal, block: cur.block });
    for (const vote of s.votes.prevotes(s.round).all()) out.push({ kind: 'vote', vote });
    for (const vote of s.votes.precommits(s.round).all()) out.push({ kind: 'vote', vote });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Event handlers

function onStart(ctx: Ctx): void {
  const s = ctx.s;
  if (s.step === 'NewHeight') {
    startRound(ctx, 0);
    return;
  }
  // Resuming after a WAL replay: re-arm the current step's timeout and re-issue unanswered requests.
  if (s.step === 'Propose') scheduleTimeout(ctx, 'Propose');
  if (s.step === 'PrevoteWait') scheduleTimeout(ctx, 'PrevoteWait');
  if (s.triggeredPrecommitWait && s.step !== 'Commit') scheduleTimeout(ctx, 'PrecommitWait');
  for (const vote of s.pendingVotes) ctx.emit(signVoteEffect(s, vote));
  const pp = s.pendingProposal;
  if (pp && pp.round === s.round && s.step === 'Propose') {
    if (pp.stage === 'txs') requestProposalEffect(ctx, pp.time);
    else ctx.emit({ kind: 'signProposal', proposal: pp.proposal, block: pp.block });
  }
  for (const [key, v] of s.validity) {
    if (v !== 'pending') continue;
    const rec = [...s.proposals.values()].find((p) => p.key === key);
    if (rec)
      ctx.emit({
        kind: 'validateBlock',
        height: s.height,
        round: rec.proposal.round,
        block: rec.block,
        blockId: rec.blockId,
      });
  }
  if (s.decided && s.decidedCommit) {
    // Decided but not committed (a driver that drops `decide` during replay still commits).
    const rec = s.blocks.get(hex(s.decidedCommit.blockId.hash));
    if (rec)
      ctx.emit({
        kind: 'decide',
        height: s.height,
        round: s.commitRound,
        block: rec.block,
        blockId: rec.blockId,
        commit: s.decidedCommit,
        extendedCommit: extendedCommitOf(s),
      });
  }
}

function onTimeout(ctx: Ctx, ev: Extract<EngineEvent, { kind: 'timeout' }>): void {
  const s = ctx.s;
  if (ev.height !== s.height) return;
  switch (ev.step) {
    case 'NewHeight':
      if (s.step !== 'NewHeight') return;
      ctx.wal(ev);
      startRound(ctx, 0);
      return;
    case 'Propose':
      if (ev.round !== s.round || s.step !== 'Propose') return;
      ctx.wal(ev);
      enterPrevote(ctx, null);
      return;
    case 'PrevoteWait':
      if (ev.round !== s.round || (s.step !== 'Prevote' && s.step !== 'PrevoteWait')) return;
      ctx.wal(ev);
      enterPrecommit(ctx, null);
      return;
    case 'PrecommitWait':
      if (ev.round !== s.round || s.step === 'Commit' || s.step === 'NewHeight') return;
      ctx.wal(ev);
      startRound(ctx, s.round + 1);
      return;
  }
}

function onProposal(ctx: Ctx, ev: Extract<EngineEvent, { kind: 'proposal' }>): void {
  const s = ctx.s;
  const p = ev.proposal;
  if (p.height !== s.height || s.proposals.has(p.round)) return;
  if (!Number.isInteger(p.round) || p.round < 0) return;
  if (!Number.isInteger(p.polRound) || p.polRound < -1 || p.polRound >= p.round) return;
  const blockId = blockIdOf(ev.block);
  if (!blockIdEqual(blockId, p.blockId)) {
    ctx.emit({
      kind: 'rejected',
      reason: `proposal ${p.height}/${p.round}: the block does not hash to its block ID`,
    });
    return;
  }
  const proposer = proposerOf(s, p.round);
  if (!s.config.verify(proposer.pubKey, proposalSignBytes(s.chain.chainId, p), p.signature)) {
    ctx.emit({
      kind: 'rejected',
      reason: `proposal ${p.height}/${p.round}: invalid signature of the proposer`,
    });
    return;
  }
  ctx.wal(ev);
  acceptProposal(ctx, { proposal: p, block: ev.block, blockId, key: blockIdKey(blockId) }, false);
}

function onOwnProposal(ctx: Ctx, ev: Extract<EngineEvent, { kind: 'ownProposal' }>): void {
  const s = ctx.s;
  const p = ev.proposal;
  if (p.height !== s.height || s.proposals.has(p.round)) return;
  if (s.pendingProposal && s.pendingProposal.round === p.round) s.pendingProposal = null;
  ctx.wal(ev, true);
  ctx.emit({ kind: 'broadcast', message: { kind: 'proposal', proposal: p, block: ev.block } });
  const blockId = blockIdOf(ev.block);
  acceptProposal(ctx, { proposal: p, block: ev.block, blockId, key: blockIdKey(blockId) }, true);
}

function acceptProposal(ctx: Ctx, rec: ProposalRecord, own: boolean): void {
  const s = ctx.s;
  s.proposals.set(rec.proposal.round, rec);
  s.blocks.set(hex(rec.blockId.hash), { block: rec.block, blockId: rec.blockId });
  ctx.emit({
    kind: 'publish',
    event: {
      kind: 'CompleteProposal',
      height: s.height,
      round: rec.proposal.round,
      blockId: rec.blockId,
      proposal: rec.proposal,
    },
  });
  if (own) {
    s.validity.set(rec.key, true);
  } else if (!s.validity.has(rec.key)) {
    const reason = checkBlock(s.chain, rec.block, s.config.verify);
    if (reason) {
      s.validity.set(rec.key, false);
    } else {
      s.validity.set(rec.key, 'pending');
      ctx.emit({
        kind: 'validateBlock',
        height: s.height,
        round: rec.proposal.round,
        block: rec.block,
        blockId: rec.blockId,
      });
    }
  }
}

function onBlockValidated(ctx: Ctx, ev: Extract<EngineEvent, { kind: 'blockValidated' }>): void {
  const s = ctx.s;
  if (ev.height !== s.height) return;
  const rec = s.blocks.get(hex(ev.blockHash));
  if (!rec) return;
  const key = blockIdKey(rec.blockId);
  if (s.validity.get(key) !== 'pending') return;
  ctx.wal(ev);
  s.validity.set(key, ev.valid);
}

function onVote(ctx: Ctx, ev: { vote: Vote; now: TimeNs; kind: 'vote' | 'ownVote' }, own: boolean): void {
  const s = ctx.s;
  const v = ev.vote;
  if (v.height === s.height) {
    if (!Number.isInteger(v.round) || v.round < 0) return;
    const res = s.votes.add(v, s.config.verify, own);
    if (res.status === 'conflict') {
      // Counted towards its block (see VoteSet); recorded so a replay counts it again.
      ctx.wal(ev as WalEntry);
      ctx.emit({ kind: 'conflictingVotes', voteA: res.existing, voteB: v });
      return;
    }
    if (own) {
      s.pendingVotes = s.pendingVotes.filter((p) => !(p.type === v.type && p.round === v.round));
    }
    if (res.status === 'invalid' && !own && !res.relayable) {
      ctx.emit({ kind: 'rejected', reason: `vote ${v.height}/${v.round}/${v.type}: ${res.reason}` });
    }
    if (res.status !== 'added') return;
    if (own && v.type === 2 && v.blockId.hash.length > 0 && s.lockedRound < v.round) {
      // Our precommit for a block means we are locked on it from that round (L36). Normally the lock
      // is already set; a vote re-sent from the signer's state after a crash restores it.
      const key = blockIdKey(v.blockId);
      s.lockedRound = v.round;
      s.lockedBlock = [...s.proposals.values()].find((p) => p.key === key) ?? { key, blockId: v.blockId };
    }
    if (own) {
      ctx.wal(ev as WalEntry, true);
      ctx.emit({ kind: 'broadcast', message: { kind: 'vote', vote: v } });
    } else {
      ctx.wal(ev as WalEntry);
    }
    ctx.emit({ kind: 'publish', event: { kind: 'Vote', vote: v } });
    return;
  }
  if (v.height === s.height - 1 && v.type === 2 && s.lastCommit && v.round === s.lastCommit.round) {
    const res = s.lastCommit.add(v, s.config.verify, own);
    if (res.status === 'conflict') ctx.emit({ kind: 'conflictingVotes', voteA: res.existing, voteB: v });
    if (res.status === 'added' || res.status === 'conflict') ctx.wal(ev as WalEntry);
  }
}

function onCommitCert(ctx: Ctx, ev: Extract<EngineEvent, { kind: 'commitCert' }>): void {
  const s = ctx.s;
  if (ev.commit.height !== s.height || s.decided) return;
  const enabled = voteExtensionsEnabled(s.chain.consensusParams, s.height);
  // With vote extensions on, the extended commit is the commit that decides (it is one: the same
  // precommits with their extensions) and is required, as CometBFT's block sync requires it: without
  // it this node, once at the tip, could not hand the last height's extensions to its next proposal.
  // The one exception: when height + 1 is known committed, this node never proposes it, so the
  // extensions of this height are not needed and the plain commit decides (a peer whose store
  // predates per-height extended commits can then still serve its old heights).
  const withoutExtensions = enabled && !ev.extendedCommit && ev.nextHeightCommitted === true;
  const extensions = enabled && !withoutExtensions;
  const c = extensions ? ev.extendedCommit : ev.commit;
  if (!c) {
    ctx.emit({
      kind: 'rejected',
      reason: `commit ${s.height}: vote extensions are enabled at height ${s.height}, but the block came without its extended commit`,
    });
    return;
  }
  const blockId = blockIdOf(ev.block);
  if (!blockIdEqual(blockId, c.blockId) || !blockIdEqual(blockId, ev.commit.blockId)) {
    ctx.emit({
      kind: 'rejected',
      reason: `commit ${c.height}: the block does not hash to the commit's block ID`,
    });
    return;
  }
  // A commit is self-certifying: +2/3 of the power signed it. It decides the height even when this
  // node holds conflicting votes from an equivocating validator that keep its own tally below 2/3.
  try {
    verifyCommit(s.chain.chainId, s.chain.validators, blockId, s.height, c, s.config.verify);
    if (extensions) verifyCommitExtensions(s.chain.chainId, s.chain.validators, c, s.config.verify);
  } catch (err) {
    ctx.emit({ kind: 'rejected', reason: `commit ${c.height}: ${(err as Error).message}` });
    return;
  }
  // Not written to the WAL: deciding on a peer's commit signs nothing, and the block is stored
  // (synced) before the height's end marker, so a crash in between only means fetching it again.
  // Logging it would copy every block a syncing node applies into the WAL.
  s.blocks.set(hex(blockId.hash), { block: ev.block, blockId });
  s.commitRound = c.round;
  setStep(ctx, 'Commit');
  s.decided = true;
  s.decidedCommit = c;
  s.decidedWithoutExtensions = withoutExtensions;
  s.commitTime = ctx.now;
  ctx.emit({
    kind: 'decide',
    height: s.height,
    round: c.round,
    block: ev.block,
    blockId,
    commit: c,
    extendedCommit: extendedCommitOf(s),
  });
}

function onTxsAvailable(ctx: Ctx, ev: Extract<EngineEvent, { kind: 'txsAvailable' }>): void {
  const s = ctx.s;
  if (s.txsAvailable) return;
  s.txsAvailable = true;
  if (s.step === 'NewRound' && s.round === 0) {
    ctx.wal(ev);
    enterPropose(ctx);
  }
}

function onProposalTxs(ctx: Ctx, ev: Extract<EngineEvent, { kind: 'proposalTxs' }>): void {
  const s = ctx.s;
  const pp = s.pendingProposal;
  if (ev.height !== s.height || !pp || pp.stage !== 'txs' || pp.round !== ev.round) return;
  if (s.round !== ev.round || s.step !== 'Propose') {
    s.pendingProposal = null;
    return;
  }
  ctx.wal(ev);
  const txs = [...ev.txs];
  const picked = ev.time !== undefined && proposerPicksTime(s.chain) && ev.time > s.chain.lastBlockTime;
  const draft = {
    height: s.height,
    time: picked ? ev.time! : pp.time,
    txs,
    evidence: ev.evidence,
    lastCommit: pp.lastCommit,
    proposerAddress: s.config.ownAddress!,
  };
  let block = makeBlock(s.chain, draft);
  const max = maxBlockBytes(s.chain.consensusParams);
  while (blockSize(block) > max && txs.length > 0) {
    // The application returned more than maxTxBytes: drop from the end until the block fits.
    txs.pop();
    block = makeBlock(s.chain, { ...draft, txs });
  }
  signProposal(ctx, block, -1);
}

function onCommitted(ctx: Ctx, ev: Extract<EngineEvent, { kind: 'committed' }>): void {
  const s = ctx.s;
  if (!s.decided || ev.chain.lastBlockHeight !== s.height) return;
  const chain: ChainState = ev.chain;
  const lastCommit = lastCommitVotes(s);
  // timeout_commit runs from the decision, as CometBFT's StartTime = CommitTime + timeout_commit:
  // executing and storing the block happens inside the wait.
  const sinceDecisionMs = s.commitTime === null ? 0 : Number((ctx.now - s.commitTime) / 1_000_000n);
  s.chain = chain;
  s.height = chain.lastBlockHeight + 1;
  s.round = 0;
  s.step = 'NewHeight';
  s.startTime = ctx.now;
  s.ownIndex = s.config.ownAddress ? chain.validators.indexOf(s.config.ownAddress) : -1;
  s.votes = heightVotes(chain, s.height);
  s.lastCommit = lastCommit;
  s.proposals = new Map();
  s.blocks = new Map();
  s.validity = new Map();
  s.lockedRound = -1;
  s.lockedBlock = null;
  s.validRound = -1;
  s.validBlock = null;
  s.polkaSeen = false;
  s.triggeredPrecommitWait = false;
  s.commitRound = -1;
  s.decided = false;
  s.decidedCommit = null;
  s.decidedWithoutExtensions = false;
  s.commitTime = null;
  s.pendingVotes = [];
  s.pendingProposal = null;
  s.txsAvailable = false;
  s.proposers = new Map();
  publishStep(ctx);
  scheduleTimeout(ctx, 'NewHeight', Math.max(0, s.config.timeouts.commit - sinceDecisionMs));
}

/**
 * Precommits that become the next block's last commit: the decided commit plus later ones for it.
 * The tally's own votes go in first, so the extensions they carry are kept (a commit signature of
 * the same validator is then a duplicate).
 */
function lastCommitVotes(s: EngineState): VoteSet {
  const tally = s.votes.precommits(s.commitRound);
  const c = s.decidedCommit;
  if (!c) return tally;
  const set = new VoteSet(
    s.chain.chainId,
    c.height,
    c.round,
    2,
    s.chain.validators,
    voteExtensionsEnabled(s.chain.consensusParams, c.height),
  );
  for (const v of tally.votesFor(blockIdKey(c.blockId))) set.add(v, s.config.verify, true);
  c.signatures.forEach((sig, i) => {
    if (sig.blockIdFlag === 2) set.add(commitSigVote(c, i), s.config.verify, true);
  });
  return set;
}

/**
 * The decided commit with the extensions this node holds (null where extensions are off, or where
 * the height was decided on a plain commit: then it holds none to keep or serve). A height decided
 * from a peer's extended commit (block sync) holds that peer's extensions, which onCommitCert checked.
 */
function extendedCommitOf(s: EngineState): Commit | null {
  const c = s.decidedCommit;
  if (!c || !voteExtensionsEnabled(s.chain.consensusParams, s.height) || s.decidedWithoutExtensions)
    return null;
  return lastCommitVotes(s).makeExtendedCommit(c.blockId);
}

/** The last height's extended votes for PrepareProposal (undefined where extensions were off). */
function localLastCommit(s: EngineState): ExtendedCommitInfo | undefined {
  const lc = s.lastCommit;
  if (!lc || !voteExtensionsEnabled(s.chain.consensusParams, lc.height)) return undefined;
  const c = lc.makeExtendedCommit(s.chain.lastBlockId);
  return {
    round: c.round,
    votes: c.signatures.map((sig, i) => {
      const v = lc.validators.getByIndex(i)!;
      return {
        validator: { address: v.address, power: v.votingPower },
        blockIdFlag: sig.blockIdFlag,
        voteExtension: sig.extension ?? new Uint8Array(0),
        extensionSignature: sig.extensionSignature ?? new Uint8Array(0),
      };
    }),
  };
}

function signVoteEffect(s: EngineState, vote: Vote): EngineEffect {
  const extend =
    vote.type === 2 &&
    vote.blockId.hash.length > 0 &&
    voteExtensionsEnabled(s.chain.consensusParams, vote.height);
  return { kind: 'signVote', vote, extend };
}

// ---------------------------------------------------------------------------------------------
// Transitions

function publishStep(ctx: Ctx): void {
  const s = ctx.s;
  ctx.emit({
    kind: 'publish',
    event: { kind: 'NewRoundStep', height: s.height, round: s.round, step: `RoundStep${s.step}` },
  });
}

function setStep(ctx: Ctx, step: RoundStep): void {
  ctx.s.step = step;
  publishStep(ctx);
}

function timeoutMs(s: EngineState, step: TimeoutStep, round: number): number {
  const t = s.config.timeouts;
  switch (step) {
    case 'NewHeight':
      return t.commit;
    case 'Propose':
      return t.propose + round * t.proposeDelta;
    case 'PrevoteWait':
      return t.prevote + round * t.prevoteDelta;
    case 'PrecommitWait':
      return t.precommit + round * t.precommitDelta;
  }
}

function scheduleTimeout(
  ctx: Ctx,
  step: TimeoutStep,
  durationMs = timeoutMs(ctx.s, step, ctx.s.round),
): void {
  const s = ctx.s;
  ctx.emit({
    kind: 'scheduleTimeout',
    height: s.height,
    round: s.round,
    step,
    durationMs,
  });
}

/** A proof block is needed at the first height and whenever the last block changed the app hash. */
function needProofBlock(s: EngineState): boolean {
  return s.height === s.chain.initialHeight || !bytesEqual(s.chain.appHash, s.chain.lastBlockAppHash);
}

/** StartRound(round) of the paper. */
function startRound(ctx: Ctx, round: number): void {
  const s = ctx.s;
  s.round = round;
  s.startTime = ctx.now;
  s.polkaSeen = false;
  s.triggeredPrecommitWait = false;
  const proposer = proposerOf(s, round);
  ctx.emit({
    kind: 'publish',
    event: {
      kind: 'NewRound',
      height: s.height,
      round,
      proposerAddress: proposer.address,
      proposerIndex: s.chain.validators.indexOf(proposer.address),
    },
  });
  setStep(ctx, 'NewRound');
  if (round === 0 && !s.config.createEmptyBlocks && !s.txsAvailable && !needProofBlock(s)) return;
  enterPropose(ctx);
}

function enterPropose(ctx: Ctx): void {
  const s = ctx.s;
  setStep(ctx, 'Propose');
  scheduleTimeout(ctx, 'Propose');
  if (!isOwnProposer(s, s.round)) return;
  if (s.validBlock) {
    signProposal(ctx, s.validBlock.block, s.validRound);
    return;
  }
  const lastCommit =
    s.height > s.chain.initialHeight && s.lastCommit ? s.lastCommit.makeCommit(s.chain.lastBlockId) : null;
  const time = nextBlockTime(s.chain, lastCommit);
  s.pendingProposal = { round: s.round, stage: 'txs', time, lastCommit };
  requestProposalEffect(ctx, time);
}

function requestProposalEffect(ctx: Ctx, time: TimeNs): void {
  const s = ctx.s;
  const llc = localLastCommit(s);
  ctx.emit({
    kind: 'requestProposal',
    height: s.height,
    round: s.round,
    time,
    proposerAddress: s.config.ownAddress!,
    validatorCount: s.chain.validators.size,
    ...(llc ? { localLastCommit: llc } : {}),
  });
}

function signProposal(ctx: Ctx, block: Block, polRound: number): void {
  const s = ctx.s;
  const proposal: Proposal = {
    height: s.height,
    round: s.round,
    polRound,
    blockId: blockIdOf(block),
    timestamp: ctx.now,
    signature: new Uint8Array(0),
  };
  s.pendingProposal = { round: s.round, stage: 'sign', proposal, block };
  ctx.emit({ kind: 'signProposal', proposal, block });
}

/** Vote timestamps stay after the block they vote for, so BFT time keeps increasing. */
function voteTime(ctx: Ctx, blockId: BlockId | null): TimeNs {
  const s = ctx.s;
  let min = s.chain.lastBlockTime + TIME_IOTA_NS;
  if (blockId) {
    const b = s.blocks.get(hex(blockId.hash));
    if (b && b.block.header.time + TIME_IOTA_NS > min) min = b.block.header.time + TIME_IOTA_NS;
  }
  if (ctx.now > min) return ctx.now;
  return min;
}

function requestVote(ctx: Ctx, type: VoteType, blockId: BlockId | null): void {
  const s = ctx.s;
  if (s.ownIndex < 0 || !s.config.ownAddress) return;
  const vote: Vote = {
    type,
    height: s.height,
    round: s.round,
    blockId: blockId ?? emptyBlockId(),
    timestamp: voteTime(ctx, blockId),
    validatorAddress: s.config.ownAddress,
    validatorIndex: s.ownIndex,
    signature: new Uint8Array(0),
  };
  s.pendingVotes.push(vote);
  ctx.emit(signVoteEffect(s, vote));
}

function enterPrevote(ctx: Ctx, blockId: BlockId | null): void {
  setStep(ctx, 'Prevote');
  requestVote(ctx, 1, blockId);
}

function enterPrecommit(ctx: Ctx, blockId: BlockId | null): void {
  setStep(ctx, 'Precommit');
  requestVote(ctx, 2, blockId);
}

function tryDecide(ctx: Ctx): void {
  const s = ctx.s;
  if (s.decided || s.commitRound < 0) return;
  const maj = s.votes.precommits(s.commitRound).twoThirdsMajority();
  if (!maj || maj.key === '') return;
  const rec = s.blocks.get(hex(maj.blockId.hash));
  if (!rec || !blockIdEqual(rec.blockId, maj.blockId)) return;
  s.decided = true;
  s.decidedCommit = s.votes.precommits(s.commitRound).makeCommit(rec.blockId);
  s.commitTime = ctx.now;
  ctx.emit({
    kind: 'decide',
    height: s.height,
    round: s.commitRound,
    block: rec.block,
    blockId: rec.blockId,
    commit: s.decidedCommit,
    extendedCommit: extendedCommitOf(s),
  });
}

/** Evaluates the upon-rules until none fires. */
function progress(ctx: Ctx): void {
  const s = ctx.s;
  for (let i = 0; i < MAX_RULE_ITERATIONS; i++) {
    if (s.step === 'NewHeight' || s.decided) return;
    if (s.step === 'Commit') {
      tryDecide(ctx);
      return;
    }
    // L49: +2/3 precommits for a block in any round -> commit it (once we have the block).
    let skipTo = -1;
    for (const r of s.votes.roundNumbers()) {
      const maj = s.votes.precommits(r).twoThirdsMajority();
      if (maj && maj.key !== '') {
        s.commitRound = r;
        setStep(ctx, 'Commit');
        tryDecide(ctx);
        return;
      }
      // L55: f+1 voting power sent messages for a higher round -> skip to it.
      if (r > s.round && s.votes.hasOneThirdAny(r)) skipTo = r;
    }
    if (skipTo > s.round) {
      startRound(ctx, skipTo);
      continue;
    }
    if (!applyRoundRules(ctx)) return;
  }
}

/** The rules of the current round; returns true when the state changed. */
function applyRoundRules(ctx: Ctx): boolean {
  const s = ctx.s;
  const rec = s.proposals.get(s.round);
  const valid = rec ? s.validity.get(rec.key) : undefined;
  const prevotes = s.votes.prevotes(s.round);

  if (s.step === 'Propose' && rec && (valid === true || valid === false)) {
    const polRound = rec.proposal.polRound;
    if (polRound === -1) {
      // L22
      const ok = valid && (s.lockedRound === -1 || s.lockedBlock?.key === rec.key);
      enterPrevote(ctx, ok ? rec.blockId : null);
      return true;
    }
    if (polRound >= 0 && polRound < s.round && s.votes.prevotes(polRound).hasTwoThirdsFor(rec.key)) {
      // L28: a proposal re-proposing a value with a proof of lock from round polRound.
      const ok = valid && (s.lockedRound <= polRound || s.lockedBlock?.key === rec.key);
      enterPrevote(ctx, ok ? rec.blockId : null);
      return true;
    }
  }

  if (
    STEP_ORDER[s.step] >= STEP_ORDER.Prevote &&
    !s.polkaSeen &&
    rec &&
    valid === true &&
    prevotes.hasTwoThirdsFor(rec.key)
  ) {
    // L36: a polka for the proposal of this round.
    s.polkaSeen = true;
    if (s.step === 'Prevote' || s.step === 'PrevoteWait') {
      s.lockedRound = s.round;
      s.lockedBlock = rec;
      s.validRound = s.round;
      s.validBlock = rec;
      enterPrecommit(ctx, rec.blockId);
      return true;
    }
    s.validRound = s.round;
    s.validBlock = rec;
  }

  if ((s.step === 'Prevote' || s.step === 'PrevoteWait') && prevotes.hasTwoThirdsFor('')) {
    // L44: a polka for nil.
    enterPrecommit(ctx, null);
    return true;
  }

  if (s.step === 'Prevote' && prevotes.hasTwoThirdsAny()) {
    // L34: +2/3 prevotes of any kind -> wait timeout_prevote for more.
    setStep(ctx, 'PrevoteWait');
    scheduleTimeout(ctx, 'PrevoteWait');
    return true;
  }

  if (
    !s.triggeredPrecommitWait &&
    STEP_ORDER[s.step] >= STEP_ORDER.NewRound &&
    s.votes.precommits(s.round).hasTwoThirdsAny()
  ) {
    // L47: +2/3 precommits of any kind -> wait timeout_precommit, then the next round.
    s.triggeredPrecommitWait = true;
    if (s.step === 'Precommit') setStep(ctx, 'PrecommitWait');
    scheduleTimeout(ctx, 'PrecommitWait');
    return true;
  }
  return false;
}
