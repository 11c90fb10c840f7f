// Deterministic simulation of a validator network. One seed drives the PRNG, a virtual clock and a
// virtual network (delays, drops, duplicates, reordering, partitions that heal), crashes with
// restart (unsynced writes lost or torn, WAL replay, handshake), and Byzantine validators below 1/3
// of the power (double prevotes/precommits, conflicting proposals, withholding, and with vote
// extensions on, precommits whose extension is forged or refused by the application). Every node is a real
// ConsensusRuntime over in-memory stores; invariants are checked on every run.
import { ed25519Address, ed25519Generate, ed25519Sign, ed25519Verify, sha256 } from '@noded/crypto';
import type {
  Block,
  ConsensusParams,
  DuplicateVoteEvidence,
  NodeEvent,
  Proposal,
  TimeNs,
  Vote,
} from '@noded/types';
import { EventBus, silentLogger } from '@noded/types';
import { makeBlock } from '../block.js';
import { emptyBlockId, proposalSignBytes, voteExtensionSignBytes, voteSignBytes } from '../codec/types.js';
import { step as engineStep } from '../engine/engine.js';
import type { ConsensusMessage, EngineEffect, EngineEvent, EngineState } from '../engine/types.js';
import { blockIdKey, blockIdOf, evidenceHash, hex } from '../hash.js';
import type { ConsensusNetwork } from '../runtime/options.js';
import { ConsensusRuntime } from '../runtime/runtime.js';
import { voteExtensionsEnabled } from '../voteset.js';
import { isValidTestTx, isValidTestVoteExtension, TestApp, testVoteExtension } from './app.js';
import { CrashSwitch, SimCrash } from './crash.js';
import { MemFs } from './memfs.js';
import { Prng } from './prng.js';
import { SimKV } from './simkv.js';

export type FaultMode = 'none' | 'net' | 'crash' | 'all';
export const FAULT_MODES: readonly FaultMode[] = ['none', 'net', 'crash', 'all'];
type StepFn = (s: EngineState, e: EngineEvent) => { state: EngineState; effects: EngineEffect[] };

export interface SimParams {
  seed: number;
  validators: number;
  byzantine: number;
  faults: FaultMode;
  /** Voting power per validator; the byzantine ones are the last `byzantine` entries. */
  powers: bigint[];
  /** consensus_params.abci.vote_extensions_enable_height (0: extensions off). */
  voteExtensionsEnableHeight: number;
}

export interface SimOverrides {
  validators?: number;
  byzantine?: number;
  faults?: FaultMode;
  /**
   * consensus_params.abci.vote_extensions_enable_height of the run (default 0: off). With it, the
   * test application extends every precommit, Byzantine validators also send precommits with forged
   * or application-refused extensions, and every extended commit a proposer receives is checked.
   */
  voteExtensionsEnableHeight?: number;
}

export interface SimOptions extends SimOverrides {
  seed: number;
  /** Test hook: a replacement engine step for every node (e.g. a deliberately broken one). */
  engineStep?: StepFn;
  /** Heights to reach in a run without faults (default 8); with faults, 4 past the healing. */
  targetHeights?: number;
  /**
   * Validator-set changes through FinalizeBlock: at height 2 the app triples validator 0's power
   * (an honest one), at height 4 it restores it; CometBFT applies each at H + 2.
   */
  powerChanges?: boolean;
}

/** The heights at which powerChanges' updates are returned. */
export const POWER_CHANGE_HEIGHTS = [2, 4] as const;

export interface SimResult {
  params: SimParams;
  violations: string[];
  /** Height agreed by the honest nodes at the end. */
  heights: number;
  /** Per committed height: rounds it took (decision round + 1, the smallest among honest nodes). */
  roundsPerHeight: number[];
  /** Per committed height from 1: the header's validators_hash (hex). */
  validatorsHashes: string[];
  evidenceCommitted: number;
  equivocations: number;
  crashes: number;
  simTimeMs: number;
  events: number;
  /** Precommits a Byzantine validator sent with a forged or application-refused extension. */
  badExtensions: number;
  /** Proposals whose extended last commit held verified extensions of more than 2/3 of the power. */
  extendedProposals: number;
}

export const SIM_TIMEOUTS = {
  propose: 3000,
  proposeDelta: 500,
  prevote: 1000,
  prevoteDelta: 500,
  precommit: 1000,
  precommitDelta: 500,
  commit: 1000,
};
const GOSSIP_MS = 1000;
const LIVENESS_WINDOW_MS = 90_000;
const GENESIS_TIME: TimeNs = 1_700_000_000_000_000_000n;
const CHAIN_ID = 'sim-chain';

export const SIM_PARAMS: ConsensusParams = {
  block: { maxBytes: 22020096n, maxGas: -1n },
  evidence: { maxAgeNumBlocks: 100000n, maxAgeDuration: 172800000000000n, maxBytes: 1048576n },
  validator: { pubKeyTypes: ['ed25519'] },
  version: { app: 0n },
  abci: { voteExtensionsEnableHeight: 0n },
};

/** Run parameters of a seed; explicit overrides win, the rest comes from a stream of its own. */
export function deriveParams(seed: number, o: SimOverrides = {}): SimParams {
  const rng = new Prng(seed, 'params');
  // Set sizes that can hold the requested Byzantine count below 1/3 (one draw either way, so an
  // explicit --validators replays the same stream).
  const sizes = [1, 4, 7].filter((v) => Math.floor((v - 1) / 3) >= (o.byzantine ?? 0));
  const vPick = sizes.length > 0 ? rng.pick(sizes) : 3 * (o.byzantine ?? 0) + 1;
  const validators = o.validators ?? vPick;
  if (!Number.isInteger(validators) || validators < 1 || validators > 64)
    throw new RangeError(`--validators must be an integer in 1..64, got ${validators}`);
  const maxByz = Math.floor((validators - 1) / 3);
  const bPick = rng.int(maxByz + 1);
  const byzantine = o.byzantine ?? bPick;
  if (!Number.isInteger(byzantine) || byzantine < 0 || byzantine > maxByz)
    throw new RangeError(
      `--byzantine must be an integer in 0..${maxByz} for ${validators} validators (less than 1/3), got ${byzantine}`,
    );
  const fPick = rng.pick(FAULT_MODES);
  const faults = o.faults ?? fPick;
  const unequal = rng.chance(0.5);
  const powers: bigint[] = [];
  for (let i = 0; i < validators; i++) powers.push(unequal ? BigInt(rng.range(1, 20)) : 10n);
  // Byzantine validators are the last ones; keep their power strictly below 1/3 of the total.
  const byzPower = () => powers.slice(validators - byzantine).reduce((a, b) => a + b, 0n);
  const total = () => powers.reduce((a, b) => a + b, 0n);
  while (byzantine > 0 && byzPower() * 3n >= total()) {
    for (let i = 0; i < validators - byzantine; i++) powers[i] = powers[i]! * 2n;
  }
  const ve = o.voteExtensionsEnableHeight ?? 0;
  if (!Number.isSafeInteger(ve) || ve < 0)
    throw new Error(`--vote-extensions must be a non-negative integer height, got ${ve}`);
  return { seed, validators, byzantine, faults, powers, voteExtensionsEnableHeight: ve };
}

const keyCache: Array<{ seed: Uint8Array; publicKey: Uint8Array }> = [];
/** Validator keys depend on the index only, so thousands of seeds reuse the same few keys. */
function simKey(i: number): { seed: Uint8Array; publicKey: Uint8Array } {
  if (!keyCache[i]) keyCache[i] = ed25519Generate(sha256(new TextEncoder().encode(`sim-key:${i}`)));
  return keyCache[i]!;
}

export function replayCommand(p: SimParams): string {
  const ext = p.voteExtensionsEnableHeight > 0 ? ` --vote-extensions ${p.voteExtensionsEnableHeight}` : '';
  return `npm run sim -- --seeds 1 --from ${p.seed} --validators ${p.validators} --byzantine ${p.byzantine} --faults ${p.faults}${ext}`;
}

// ---------------------------------------------------------------------------------------------

class EventQueue {
  private heap: Array<{ t: number; seq: number; fn: () => SimNode | null | undefined; cancelled?: boolean }> =
    [];
  private seq = 0;

  push(t: number, fn: () => SimNode | null | undefined) {
    const item = { t, seq: this.seq++, fn };
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.less(h[i]!, h[p]!)) {
        [h[i], h[p]] = [h[p]!, h[i]!];
        i = p;
      } else break;
    }
    return item;
  }

  private less(a: { t: number; seq: number }, b: { t: number; seq: number }): boolean {
    return a.t < b.t || (a.t === b.t && a.seq < b.seq);
  }

  pop() {
    const h = this.heap;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l]!, h[m]!)) m = l;
        if (r < h.length && this.less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }

  get size(): number {
    return this.heap.length;
  }
}

interface SimNode {
  index: number;
  id: string;
  key: { seed: Uint8Array; publicKey: Uint8Array };
  address: Uint8Array;
  byzantine: boolean;
  crash: CrashSwitch;
  fs: MemFs;
  blockKV: SimKV;
  stateKV: SimKV;
  app: TestApp;
  rt: ConsensusRuntime | null;
  alive: boolean;
  incarnation: number;
  handler: ((peer: string, msg: ConsensusMessage) => void) | null;
  skewMs: number;
  published: number;
  crashedSince: number;
  pendingFatal: Error | null;
}

interface Partition {
  kind: 'symmetric' | 'asymmetric' | 'isolate';
  groupA: Set<number>;
  until: number;
}

export class Simulation {
  readonly params: SimParams;
  private readonly rng: Prng;
  private readonly netRng: Prng;
  private readonly byzRng: Prng;
  private readonly queue = new EventQueue();
  private now = 0;
  private readonly nodes: SimNode[] = [];
  private readonly violations: string[] = [];
  private readonly faultEnd: number;
  private dropP = 0;
  private dupP = 0;
  private partitions: Partition[] = [];
  private readonly canonical = new Map<
    number,
    { hash: string; lastHash: string; time: TimeNs; node: number; validatorsHash: string }
  >();
  private readonly decideRound = new Map<number, number>();
  private readonly signedByHonest = new Map<string, string>();
  private readonly observed: Array<{ node: number; vote: Vote; incarnation: number }> = [];
  private readonly evidenceOnChain = new Map<string, number>();
  private readonly verifyCache = new Map<string, boolean>();
  private readonly byzPlans = new Map<
    string,
    { kind: 'withhold' | 'split' | 'honest'; groupA: Set<number>; alt: ConsensusMessage | null }
  >();
  private target = 0;
  private healedHeight = -1;
  private equivocations = 0;
  private badExtensions = 0;
  private readonly badExtensionPlans = new Map<string, Vote | null>();
  private readonly params_: ConsensusParams;
  private crashes = 0;
  private events = 0;
  private readonly stepFn: StepFn;

  constructor(private readonly opts: SimOptions) {
    this.params = deriveParams(opts.seed, opts);
    this.rng = new Prng(opts.seed, 'faults');
    this.netRng = new Prng(opts.seed, 'net');
    this.byzRng = new Prng(opts.seed, 'byz');
    this.stepFn = opts.engineStep ?? engineStep;
    this.faultEnd = this.params.faults === 'none' ? 0 : this.rng.range(8000, 20000);
    this.params_ = {
      ...SIM_PARAMS,
      abci: { voteExtensionsEnableHeight: BigInt(this.params.voteExtensionsEnableHeight) },
    };
  }

  private violation(msg: string): void {
    if (this.violations.length < 20) this.violations.push(msg);
  }

  private verify = (pk: Uint8Array, msg: Uint8Array, sig: Uint8Array): boolean => {
    const k = `${hex(sig)}${hex(pk)}${hex(msg)}`;
    let r = this.verifyCache.get(k);
    if (r === undefined) {
      r = ed25519Verify(pk, msg, sig);
      if (this.verifyCache.size > 200_000) this.verifyCache.clear();
      this.verifyCache.set(k, r);
    }
    return r;
  };

  private nodeNow(n: SimNode): TimeNs {
    return GENESIS_TIME + BigInt(Math.max(0, this.now + n.skewMs)) * 1_000_000n;
  }

  private schedule(delayMs: number, fn: () => SimNode | null | undefined) {
    return this.queue.push(this.now + Math.max(0, Math.round(delayMs)), fn);
  }

  // -------------------------------------------------------------------------------------------

  private blocked(from: number, to: number): boolean {
    for (const p of this.partitions) {
      if (p.until <= this.now) continue;
      const a = p.groupA.has(from);
      const b = p.groupA.has(to);
      if (p.kind === 'asymmetric' ? a && !b : a !== b) return true;
    }
    return false;
  }

  private faultsActive(): boolean {
    return this.now < this.faultEnd;
  }

  private latency(): number {
    const spike = this.netRng.chance(this.faultsActive() ? 0.08 : 0.02) ? this.netRng.range(200, 1500) : 0;
    return this.netRng.range(3, 60) + spike;
  }

  private deliver(from: SimNode, to: SimNode, msg: ConsensusMessage): void {
    if (from === to) return;
    const netFaults = this.faultsActive() && (this.params.faults === 'net' || this.params.faults === 'all');
    if (netFaults) {
      if (this.blocked(from.index, to.index)) return;
      if (this.netRng.chance(this.dropP)) return;
    }
    const copies = netFaults && this.netRng.chance(this.dupP) ? 2 : 1;
    for (let c = 0; c < copies; c++) {
      this.schedule(this.latency(), () => {
        if (!to.alive || !to.handler) return null;
        to.handler(from.id, msg);
        return to;
      });
    }
  }

  private endpoint(node: SimNode): ConsensusNetwork {
    const broadcastRaw = (msg: ConsensusMessage) => {
      for (const peer of this.nodes) this.deliver(node, peer, msg);
    };
    return {
      broadcast: (msg) => {
        if (!node.alive) return;
        if (node.byzantine) this.byzantineBroadcast(node, msg, broadcastRaw);
        else {
          this.recordHonest(node, msg);
          broadcastRaw(msg);
        }
      },
      send: (peer, msg) => {
        if (!node.alive) return;
        const target = this.nodes.find((n) => n.id === peer);
        if (target) this.deliver(node, target, msg);
      },
      subscribe: (handler) => {
        node.handler = handler;
        return () => {
          if (node.handler === handler) node.handler = null;
        };
      },
    };
  }

  /** No honest node signs two different things for one height/round/step. */
  private recordHonest(node: SimNode, msg: ConsensusMessage): void {
    let k: string | undefined;
    let v: string | undefined;
    if (msg.kind === 'vote' && hex(msg.vote.validatorAddress) === hex(node.address)) {
      k = `${node.index}/${msg.vote.height}/${msg.vote.round}/${msg.vote.type}`;
      v = blockIdKey(msg.vote.blockId);
    } else if (msg.kind === 'proposal') {
      k = `${node.index}/${msg.proposal.height}/${msg.proposal.round}/P`;
      v = blockIdKey(msg.proposal.blockId);
    }
    if (k === undefined || v === undefined) return;
    const prev = this.signedByHonest.get(k);
    if (prev === undefined) this.signedByHonest.set(k, v);
    else if (prev !== v)
      this.violation(`honest double-sign: validator ${node.index} signed two different messages at ${k}`);
  }

  // -------------------------------------------------------------------------------------------
  // Byzantine behaviour

  /**
   * A Byzantine validator's outgoing messages. Its decisions are kept per message slot
   * (height/round/type), so re-sent copies keep the same split: some peers only ever see one version
   * of its vote or proposal and the others only the conflicting one (a consistent split-brain), or
   * some peers never see it (withholding).
   */
  private byzantineBroadcast(node: SimNode, msg: ConsensusMessage, raw: (m: ConsensusMessage) => void): void {
    if (msg.kind === 'vote' && (msg.vote.extensionSignature?.length ?? 0) > 0)
      msg = { kind: 'vote', vote: this.badExtension(node, msg.vote) };
    const rng = this.byzRng;
    const peers = this.nodes.filter((p) => p !== node);
    let slot: string | undefined;
    if (msg.kind === 'vote' && hex(msg.vote.validatorAddress) === hex(node.address)) {
      slot = `${node.index}/${msg.vote.height}/${msg.vote.round}/${msg.vote.type}`;
    } else if (msg.kind === 'proposal') {
      slot = `${node.index}/${msg.proposal.height}/${msg.proposal.round}/P`;
    }
    if (!slot) {
      raw(msg);
      return;
    }
    let plan = this.byzPlans.get(slot);
    if (!plan) {
      const r = rng.next();
      const order = rng.shuffle([...peers.map((p) => p.index)]);
      const cut = rng.range(1, Math.max(1, order.length - 1));
      if (r < 0.15) {
        plan = { kind: 'withhold', groupA: new Set(order.filter(() => rng.chance(0.3))), alt: null };
      } else if (r < 0.65) {
        const alt: ConsensusMessage | null =
          msg.kind === 'vote'
            ? { kind: 'vote', vote: this.conflictingVote(node, msg.vote) }
            : this.conflictingProposal(node, msg as Extract<ConsensusMessage, { kind: 'proposal' }>);
        plan = { kind: 'split', groupA: new Set(order.slice(0, cut)), alt };
        if (alt && msg.kind === 'vote') this.equivocations++;
      } else {
        plan = { kind: 'honest', groupA: new Set(), alt: null };
      }
      this.byzPlans.set(slot, plan);
    }
    for (const p of peers) {
      if (plan.kind === 'honest') this.deliver(node, p, msg);
      else if (plan.kind === 'withhold') {
        if (plan.groupA.has(p.index)) this.deliver(node, p, msg);
      } else this.deliver(node, p, plan.groupA.has(p.index) || !plan.alt ? msg : plan.alt);
    }
  }

  /**
   * Per precommit slot, a Byzantine validator sends its precommit unchanged, with its extension
   * altered under the old signature (forged: the engine refuses it), or with an extension the
   * application refuses, properly signed (VerifyVoteExtension refuses it). Either way honest nodes
   * must not count it.
   */
  private badExtension(node: SimNode, vote: Vote): Vote {
    const slot = `${node.index}/${vote.height}/${vote.round}`;
    let plan = this.badExtensionPlans.get(slot);
    if (plan === undefined) {
      const r = this.byzRng.next();
      if (r < 0.35) {
        plan = { ...vote, extension: new TextEncoder().encode(`vx:${vote.height}:forged`) };
      } else if (r < 0.7) {
        plan = this.signExtension(node, { ...vote, extension: new TextEncoder().encode('refused-by-app') });
      } else plan = null;
      this.badExtensionPlans.set(slot, plan);
      if (plan) this.badExtensions++;
    }
    return plan ?? vote;
  }

  private signExtension(node: SimNode, vote: Vote): Vote {
    const extension = vote.extension ?? new Uint8Array(0);
    const extensionSignature = ed25519Sign(
      node.key.seed,
      voteExtensionSignBytes(CHAIN_ID, { height: vote.height, round: vote.round, extension }),
    );
    return { ...vote, extension, extensionSignature };
  }

  private conflictingVote(node: SimNode, vote: Vote): Vote {
    let blockId = emptyBlockId();
    if (vote.blockId.hash.length === 0) {
      const st = node.rt?.engineState();
      const other =
        st && st.height === vote.height
          ? [...st.proposals.values()].find((p) => p.key !== blockIdKey(vote.blockId))
          : undefined;
      blockId = other
        ? other.blockId
        : {
            hash: sha256(new Uint8Array([this.byzRng.int(256), vote.round, vote.type])),
            partSetHeader: { total: 1, hash: sha256(new Uint8Array([7])) },
          };
    }
    const { extension: _e, extensionSignature: _s, ...bare } = vote;
    let alt: Vote = { ...bare, blockId, signature: new Uint8Array(0) };
    alt.signature = ed25519Sign(node.key.seed, voteSignBytes(CHAIN_ID, alt));
    if (alt.type === 2 && blockId.hash.length > 0 && voteExtensionsEnabled(this.params_, alt.height))
      alt = this.signExtension(node, {
        ...alt,
        extension: testVoteExtension(alt.height, blockId.hash, `n${node.index}`),
      });
    return alt;
  }

  private conflictingProposal(
    node: SimNode,
    msg: Extract<ConsensusMessage, { kind: 'proposal' }>,
  ): ConsensusMessage | null {
    const st = node.rt?.engineState();
    if (!st || st.height !== msg.proposal.height) return null;
    const b = msg.block;
    const txs = [...b.data.txs, new TextEncoder().encode(`byz.${this.byzRng.int(1_000_000)}=x`)];
    const block: Block = makeBlock(st.chain, {
      height: b.header.height,
      time: b.header.time,
      txs,
      evidence: b.evidence,
      lastCommit: b.lastCommit,
      proposerAddress: b.header.proposerAddress,
    });
    const proposal: Proposal = { ...msg.proposal, blockId: blockIdOf(block), signature: new Uint8Array(0) };
    proposal.signature = ed25519Sign(node.key.seed, proposalSignBytes(CHAIN_ID, proposal));
    return { kind: 'proposal', proposal, block };
  }

  // -------------------------------------------------------------------------------------------
  // Nodes

  private setupNodes(): void {
    const { validators, byzantine } = this.params;
    for (let i = 0; i < validators; i++) {
      const key = simKey(i);
      const crash = new CrashSwitch();
      this.nodes.push({
        index: i,
        id: `node${i}`,
        key,
        address: ed25519Address(key.publicKey),
        byzantine: i >= validators - byzantine,
        crash,
        fs: new MemFs(crash),
        blockKV: new SimKV(crash),
        stateKV: new SimKV(crash),
        app: new TestApp({
          crash,
          extensionTag: `n${i}`,
          ...(this.opts.powerChanges ? { validatorUpdates: (h: number) => this.powerUpdates(h) } : {}),
        }),
        rt: null,
        alive: false,
        incarnation: 0,
        handler: null,
        skewMs: this.rng.range(-30, 30),
        published: 0,
        crashedSince: -1,
        pendingFatal: null,
      });
    }
  }

  /** The same answer on every node: validator 0's power x3 at height 2, back at height 4. */
  private powerUpdates(height: number) {
    const [up, down] = POWER_CHANGE_HEIGHTS;
    if (height !== up && height !== down) return [];
    const base = this.params.powers[0]!;
    return [{ pubKey: simKey(0).publicKey, power: height === up ? base * 3n : base }];
  }

  private genesisValidators() {
    return this.nodes.map((n, i) => ({
      address: n.address,
      pubKey: n.key.publicKey,
      votingPower: this.params.powers[i]!,
      proposerPriority: 0n,
    }));
  }

  private async startNode(node: SimNode): Promise<void> {
    node.incarnation++;
    const inc = node.incarnation;
    node.crash.disarm();
    node.pendingFatal = null;
    const bus = new EventBus();
    bus.subscribe((e) => this.onEvent(node, inc, e));
    const honest = !node.byzantine;
    const stepFn: StepFn = (s, e) => {
      const r = this.stepFn(s, e);
      for (const eff of r.effects) {
        if (eff.kind === 'decide') {
          const prev = this.decideRound.get(eff.height);
          if (honest && (prev === undefined || eff.round < prev)) this.decideRound.set(eff.height, eff.round);
        } else if (eff.kind === 'conflictingVotes' && honest && node.incarnation === inc) {
          this.observed.push({ node: node.index, vote: eff.voteB, incarnation: inc });
        }
      }
      return r;
    };
    try {
      const rt = await ConsensusRuntime.create({
        chainId: CHAIN_ID,
        genesis: {
          time: GENESIS_TIME,
          initialHeight: 1,
          validators: this.genesisValidators(),
          consensusParams: this.params_,
          appState: { sim: true },
        },
        timeouts: SIM_TIMEOUTS,
        createEmptyBlocks: true,
        doubleSignCheckHeight: 0,
        privValidator: { key: node.key, stateFile: '/pv/priv_validator_state.json' },
        walDir: '/data/cs.wal',
        blockStore: node.blockKV,
        stateStore: node.stateKV,
        app: node.app,
        bus,
        logger: silentLogger,
        network: this.endpoint(node),
        now: () => this.nodeNow(node),
        scheduler: {
          setTimer: (ms, fn) =>
            this.schedule(ms, () => {
              if (node.incarnation !== inc || !node.alive) return null;
              fn();
              return node;
            }),
          clearTimer: (h) => {
            (h as { cancelled?: boolean }).cancelled = true;
          },
        },
        fs: node.fs,
        verify: this.verify,
        gossipIntervalMs: GOSSIP_MS,
        engineStep: stepFn,
        onFatal: (err) => {
          node.pendingFatal = err;
        },
      });
      node.rt = rt;
      const h = rt.chainState().lastBlockHeight;
      if (h < node.published)
        this.violation(
          `height went back after restart: node ${node.index} restarted at ${h}, had committed ${node.published}`,
        );
      node.published = Math.max(node.published, h);
      node.alive = true;
      await rt.start();
    } catch (err) {
      if (err instanceof SimCrash) {
        this.crashNode(node);
        return;
      }
      this.violation(`node ${node.index} failed to (re)start: ${(err as Error).message}`);
      node.alive = false;
    }
  }

  private crashNode(node: SimNode): void {
    if (node.alive) this.crashes++;
    node.alive = false;
    node.handler = null;
    node.incarnation++;
    node.crash.crashed = true;
    node.rt = null;
    node.fs.crashLoseUnsynced(this.rng);
    node.blockKV.crashLoseUnsynced();
    node.stateKV.crashLoseUnsynced();
    node.app.crash();
    node.crashedSince = this.now;
  }

  private onEvent(node: SimNode, inc: number, e: NodeEvent): void {
    if (e.kind !== 'NewBlock' || node.incarnation !== inc) return;
    const h = e.block.header.height;
    if (h !== node.published + 1)
      this.violation(`node ${node.index} committed height ${h} after ${node.published}`);
    node.published = h;
    if (node.byzantine) return;
    const hash = hex(e.blockId.hash);
    for (const tx of e.block.data.txs) {
      if (!isValidTestTx(tx)) this.violation(`validity: height ${h} contains an invalid transaction`);
    }
    const prev = this.canonical.get(h - 1);
    if (prev && hex(e.block.header.lastBlockId.hash) !== prev.hash)
      this.violation(`validity: block ${h} does not link to block ${h - 1}`);
    if (prev && e.block.header.time <= prev.time)
      this.violation(`time: block ${h} time ${e.block.header.time} is not after ${prev.time}`);
    const c = this.canonical.get(h);
    if (!c) {
      this.canonical.set(h, {
        hash,
        lastHash: hex(e.block.header.lastBlockId.hash),
        time: e.block.header.time,
        node: node.index,
        validatorsHash: hex(e.block.header.validatorsHash),
      });
      for (const ev of e.block.evidence) this.recordEvidence(ev, h);
    } else if (c.hash !== hash) {
      this.violation(
        `agreement: height ${h}: node ${c.node} committed ${c.hash.slice(0, 12)}, node ${node.index} committed ${hash.slice(0, 12)}`,
      );
    }
  }

  private recordEvidence(ev: DuplicateVoteEvidence, height: number): void {
    const k = hex(evidenceHash(ev));
    const prev = this.evidenceOnChain.get(k);
    if (prev !== undefined && prev !== height)
      this.violation(`evidence ${k.slice(0, 12)} committed twice (heights ${prev} and ${height})`);
    else this.evidenceOnChain.set(k, height);
  }

  // -------------------------------------------------------------------------------------------
  // Fault schedule

  private planFaults(): void {
    const f = this.params.faults;
    const rng = this.rng;
    if (f === 'net' || f === 'all') {
      this.dropP = rng.pick([0.02, 0.1, 0.25]);
      this.dupP = 0.05;
      const k = rng.range(1, 3);
      for (let i = 0; i < k; i++) {
        const start = rng.range(300, Math.max(400, this.faultEnd - 1500));
        const until = Math.min(this.faultEnd, start + rng.range(1000, 6000));
        const kind = rng.pick(['symmetric', 'asymmetric', 'isolate'] as const);
        const groupA = new Set<number>();
        if (kind === 'isolate') groupA.add(rng.int(this.nodes.length));
        else for (const n of this.nodes) if (rng.chance(0.5)) groupA.add(n.index);
        this.queue.push(start, () => {
          this.partitions.push({ kind, groupA, until });
          return null;
        });
      }
    }
    if (f === 'crash' || f === 'all') {
      const k = rng.range(1, 3);
      for (let i = 0; i < k; i++) {
        const at = rng.range(300, Math.max(400, this.faultEnd - 800));
        const node = this.nodes[rng.int(this.nodes.length)]!;
        const down = rng.range(300, 5000);
        const ops = rng.chance(0.5) ? rng.int(10) : -1;
        this.queue.push(at, () => {
          if (!node.alive) return null;
          if (ops < 0) this.crashNode(node);
          else {
            node.crash.arm(ops);
            const inc = node.incarnation;
            // If the node does no I/O in the next second, crash it between inputs.
            this.schedule(1000, () => {
              if (node.alive && node.incarnation === inc) this.crashNode(node);
              return null;
            });
          }
          return null;
        });
        this.queue.push(Math.min(at + down, this.faultEnd + 500), () => {
          this.restartLater(node);
          return null;
        });
      }
    }
    if (this.faultEnd > 0) {
      this.queue.push(this.faultEnd + 600, () => {
        // Healed: every crashed node comes back, partitions end.
        this.partitions = [];
        for (const n of this.nodes) if (!n.alive) this.restartLater(n);
        return null;
      });
    }
  }

  private restarts: SimNode[] = [];
  private restartLater(node: SimNode): void {
    if (!node.alive && !this.restarts.includes(node)) this.restarts.push(node);
  }

  // -------------------------------------------------------------------------------------------

  private honestAlive(): SimNode[] {
    return this.nodes.filter((n) => !n.byzantine);
  }

  private minHonestHeight(): number {
    return Math.min(...this.honestAlive().map((n) => n.published));
  }

  private maxHonestHeight(): number {
    return Math.max(...this.honestAlive().map((n) => n.published));
  }

  /** Debug view of every node (height/round/step and tallies), for tracing a seed. */
  snapshot(): string {
    return this.nodes
      .map((n) => {
        const s = n.rt?.engineState();
        if (!n.alive || !s) return `n${n.index}:down`;
        const pv = s.votes.prevotes(s.round);
        const pc = s.votes.precommits(s.round);
        const prop = s.proposals.get(s.round);
        return `n${n.index}${n.byzantine ? 'B' : ''}:${s.height}/${s.round}/${s.step} L${s.lockedRound} V${s.validRound} P${prop ? `${prop.key.slice(0, 4)}(${prop.proposal.polRound})${s.validity.get(prop.key)}` : '-'} pv${pv.bitArrayString().split(' ')[0]} pc${pc.bitArrayString().split(' ')[0]}`;
      })
      .join(' | ');
  }

  /** Simulated time in ms. */
  get time(): number {
    return this.now;
  }

  tracer: ((sim: Simulation) => void) | null = null;

  async run(): Promise<SimResult> {
    this.setupNodes();
    this.planFaults();
    for (const n of this.nodes) await this.startNode(n);
    const base = this.opts.targetHeights ?? 8;
    this.target = this.faultEnd === 0 ? base : Number.POSITIVE_INFINITY;
    const deadline = (this.faultEnd === 0 ? 0 : this.faultEnd + 600) + LIVENESS_WINDOW_MS;
    let healedAt = this.faultEnd === 0 ? 0 : this.faultEnd + 600;
    for (;;) {
      if (this.violations.some((v) => !v.startsWith('liveness'))) break;
      if (this.now >= healedAt && this.healedHeight < 0) {
        this.healedHeight = this.maxHonestHeight();
        if (this.faultEnd > 0) this.target = Math.max(this.healedHeight + 4, base);
        healedAt = this.now;
      }
      if (this.healedHeight >= 0 && this.minHonestHeight() >= this.target) break;
      const item = this.queue.pop();
      if (!item) break;
      if (item.cancelled) continue;
      if (item.t > deadline) {
        this.now = deadline;
        break;
      }
      this.now = item.t;
      this.events++;
      const touched = item.fn();
      if (touched?.rt) await touched.rt.idle();
      await this.afterEvent();
      this.tracer?.(this);
    }
    if (this.violations.length === 0 && this.minHonestHeight() < this.target) {
      this.violation(
        `liveness: ${Math.round(LIVENESS_WINDOW_MS / 1000)} s after healing the honest nodes are at heights ${this.honestAlive()
          .map((n) => n.published)
          .join(',')}, target ${this.target}`,
      );
    }
    this.checkRounds();
    await this.checkEvidence();
    const extendedProposals = this.checkExtendedCommits();
    const heights = this.minHonestHeight();
    const roundsPerHeight: number[] = [];
    for (let h = 1; h <= heights; h++) {
      const r = this.decideRound.get(h);
      if (r !== undefined) roundsPerHeight.push(r + 1);
    }
    const validatorsHashes: string[] = [];
    for (let h = 1; h <= heights; h++) validatorsHashes.push(this.canonical.get(h)?.validatorsHash ?? '');
    return {
      params: this.params,
      violations: this.violations,
      heights,
      roundsPerHeight,
      validatorsHashes,
      evidenceCommitted: this.evidenceOnChain.size,
      equivocations: this.equivocations,
      crashes: this.crashes,
      simTimeMs: this.now,
      events: this.events,
      badExtensions: this.badExtensions,
      extendedProposals,
    };
  }

  /**
   * Every extended last commit an honest proposer handed its application holds only extensions that
   * verify (signature of that validator over that height and round, and the application's rule for
   * the committed block), and none where extensions are off. Returns how many held more than 2/3
   * of the power in verified extensions.
   */
  private checkExtendedCommits(): number {
    let full = 0;
    const keys = new Map(this.nodes.map((n) => [hex(n.address), n]));
    for (const node of this.nodes) {
      if (node.byzantine) continue;
      for (const { height, commit } of node.app.localLastCommits) {
        const h = height - 1;
        if (!voteExtensionsEnabled(this.params_, h)) {
          this.violation(
            `extensions: node ${node.index} got an extended commit for ${h}, before they are on`,
          );
          continue;
        }
        const block = this.canonical.get(h);
        let power = 0n;
        let total = 0n;
        for (const v of commit.votes) {
          total += v.validator.power;
          if (v.blockIdFlag !== 2 || v.extensionSignature.length === 0) {
            if (v.voteExtension.length > 0)
              this.violation(
                `extensions: node ${node.index} height ${h}: an extension without a commit vote`,
              );
            continue;
          }
          const signer = keys.get(hex(v.validator.address));
          const signed =
            !!signer &&
            this.verify(
              signer.key.publicKey,
              voteExtensionSignBytes(CHAIN_ID, {
                height: h,
                round: commit.round,
                extension: v.voteExtension,
              }),
              v.extensionSignature,
            );
          const accepted =
            !!block && isValidTestVoteExtension(h, Buffer.from(block.hash, 'hex'), v.voteExtension);
          if (!signed || !accepted) {
            this.violation(
              `extensions: node ${node.index} proposed ${height} with an extension of ${hex(v.validator.address).slice(0, 8)} that ${signed ? 'the application refuses' : 'is not signed by it'}`,
            );
            continue;
          }
          power += v.validator.power;
        }
        if (power * 3n > total * 2n) full++;
      }
    }
    return full;
  }

  private async afterEvent(): Promise<void> {
    for (const n of this.nodes) {
      if (n.pendingFatal) {
        const err = n.pendingFatal;
        n.pendingFatal = null;
        if (err instanceof SimCrash) this.crashNode(n);
        else this.violation(`node ${n.index} stopped: ${err.message}`);
      } else if (n.crash.crashed && n.alive) {
        this.crashNode(n);
      }
    }
    while (this.restarts.length > 0) {
      const n = this.restarts.shift()!;
      if (!n.alive) await this.startNode(n);
      if (n.pendingFatal || (n.crash.crashed && n.alive)) await this.afterEvent();
    }
  }

  /**
   * After healing (and two settling heights) every height commits within one proposer rotation
   * plus a few rounds: a correct validator holding the highest valid value (and so able to unlock
   * the others) proposes at least once every ceil(total / its power) rounds.
   */
  private checkRounds(): void {
    if (this.healedHeight < 0) return;
    const { powers, validators, byzantine } = this.params;
    const total = powers.reduce((a, b) => a + b, 0n);
    let rotation = 1;
    for (let i = 0; i < validators - byzantine; i++) {
      rotation = Math.max(rotation, Number((total + powers[i]! - 1n) / powers[i]!));
    }
    const bound = rotation + 3;
    for (let h = this.healedHeight + 3; h <= this.minHonestHeight(); h++) {
      const r = this.decideRound.get(h);
      if (r !== undefined && r + 1 > bound)
        this.violation(`liveness: height ${h} took ${r + 1} rounds after healing (bound ${bound})`);
    }
  }

  /** Every equivocation an honest node saw and survived to process became evidence. */
  private async checkEvidence(): Promise<void> {
    for (const o of this.observed) {
      const node = this.nodes[o.node]!;
      if (node.incarnation !== o.incarnation || !node.rt) continue;
      if (node.published < o.vote.height) continue;
      const pending = node.rt.pendingEvidence();
      const match = (e: DuplicateVoteEvidence) =>
        e.voteA.height === o.vote.height &&
        e.voteA.round === o.vote.round &&
        e.voteA.type === o.vote.type &&
        hex(e.voteA.validatorAddress) === hex(o.vote.validatorAddress);
      if (pending.some(match)) continue;
      let found = false;
      for (let h = o.vote.height + 1; h <= node.published && !found; h++) {
        const b = await node.rt.loadBlock(h);
        if (b?.evidence.some(match)) found = true;
      }
      if (!found) {
        this.violation(
          `evidence: node ${o.node} saw validator ${hex(o.vote.validatorAddress).slice(0, 8)} equivocate at ${o.vote.height}/${o.vote.round}/${o.vote.type} but no evidence was produced`,
        );
      }
    }
  }
}

export async function runSimulation(opts: SimOptions): Promise<SimResult> {
  return new Simulation(opts).run();
}
