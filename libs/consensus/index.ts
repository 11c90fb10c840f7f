// libs/consensus: Tendermint BFT consensus as a pure state machine, its live runtime and its simulator.

// Building and checking blocks; BFT time; size limits.
export {
  checkBlock,
  makeBlock,
  maxBlockBytes,
  maxDataBytes,
  medianTime,
  nextBlockTime,
  type Verifier,
  verifyCommit,
} from './src/block.js';
// Replicated chain state and its transition after a committed block.
export {
  BLOCK_PROTOCOL,
  type ChainState,
  type GenesisInput,
  genesisChainState,
  nextChainState,
} from './src/chainstate.js';
// The block sync protocol's wire envelope (/noded/blocksync/1), same rules.
export { decodeBlockSyncMessage, encodeBlockSyncMessage, MAX_BLOCK_RANGE } from './src/codec/blocksync.js';
// Tagged JSON (bigint/bytes-safe) for consensus messages and stored records that are never hashed.
export { decodeTagged, encodeTagged } from './src/codec/json.js';
// Canonical encodings: sign bytes, protobuf block/commit/vote encodings (CometBFT v0.38 wire format).
export {
  decodeBlock,
  decodeCommit,
  decodeExtendedCommit,
  decodeProposal,
  decodeVote,
  encodeBlock,
  encodeCommit,
  encodeExtendedCommit,
  encodeHeader,
  encodeProposal,
  encodeTimestamp,
  encodeVote,
  proposalSignBytes,
  // What a validator signs for its vote extension (an application re-checks extended votes with it).
  voteExtensionSignBytes,
  voteSignBytes,
} from './src/codec/types.js';
// The consensus channel's wire envelope (P2P), decoding untrusted bytes with typed errors.
export { decodeConsensusMessage, encodeConsensusMessage, MAX_STATUS_BITS } from './src/codec/wire.js';
// The pure engine, for drivers (runtime, simulator) and rule-level tests.
export {
  createEngine,
  gossipMessages,
  isOwnProposer,
  // What a peer lacks by its status (the proposal, votes by its bits, a behind peer's catch-up).
  messagesForPeer,
  proposerOf,
  type StepResult,
  statusMessage,
  step,
} from './src/engine/engine.js';
export type {
  ConsensusMessage,
  EngineConfig,
  EngineEffect,
  EngineEvent,
  EngineState,
  RoundStep,
  TimeoutConfig,
  TimeoutStep,
  WalEntry,
} from './src/engine/types.js';
// Typed errors with stable codes (handshake refusals, double-sign refusals, invalid evidence...).
export { ConsensusError, type ConsensusErrorCode, DoubleSignError, HandshakeError } from './src/errors.js';
// Duplicate-vote evidence.
export { isEvidenceExpired, makeDuplicateVoteEvidence, verifyDuplicateVoteEvidence } from './src/evidence.js';
// The durable-file port the WAL and FilePV write through (real disk; the simulator has its own).
export { type DurableFs, NodeFs } from './src/fs.js';
// Deterministic hashes of blocks and their parts (documented in docs/consensus.md).
export {
  BLOCK_PART_SIZE,
  blockBytes,
  blockIdOf,
  blockSize,
  commitHash,
  consensusParamsHash,
  evidenceHash,
  evidenceListHash,
  headerHash,
  partSetHeaderOf,
  txResultsHash,
  txsHash,
  validatorsHash,
} from './src/hash.js';
// The light client: verification rules (CometBFT's light/verifier.go), light block encodings, its
// store of verified headers and its follow loop (docs/light-client.md).
export {
  type FetchedLightBlock,
  isFaultyLightBlock,
  LightClient,
  type LightClientOptions,
  type LightProvider,
  type RoundResult,
  type TrustRoot,
} from './src/light/client.js';
export {
  decodeLightBlock,
  decodeValidatorSet,
  encodeLightBlock,
  encodeValidatorSet,
  MAX_LIGHT_VALIDATORS,
} from './src/light/codec.js';
export { LightStore } from './src/light/store.js';
export {
  checkLightBlock,
  DEFAULT_MAX_CLOCK_DRIFT_NS,
  DEFAULT_TRUST_LEVEL,
  headerExpired,
  type LightBlock,
  LightClientError,
  type LightErrorCode,
  type SignedHeader,
  type TrustOptions,
  verifyAdjacent,
  verifyBackwards,
  verifyLightBlock,
  verifyNonAdjacent,
  verifySkipping,
  verifyTrustRoot,
} from './src/light/verify.js';
// Double-sign guard with CometBFT's priv_validator_state.json.
export { FilePV, type LastSignState, lastSignStateJson, parseLastSignState } from './src/privval.js';
// Block sync's request scheduler (which height of which peer), for the runtime and its tests.
export { BlockPool, type BlockRange, MAX_AHEAD, ranges } from './src/runtime/blockpool.js';
// Runtime options and the ports it drives (network, scheduler).
export {
  type BlockSyncMessage,
  type BlockSyncNetwork,
  type ConsensusGenesis,
  type ConsensusNetwork,
  type ConsensusRuntimeOptions,
  type PrivValidatorSource,
  realScheduler,
  type Scheduler,
  systemNow,
} from './src/runtime/options.js';
// The dev chain's revert across the stores (evm_revert), and its completion at startup.
export {
  finishRollback,
  type RollbackTarget,
  readRollbackIntent,
  writeRollbackIntent,
} from './src/runtime/rollback.js';
// The live runtime the node constructs (ConsensusRuntime.create(opts), start, stop, NodeReader reads).
export { ConsensusRuntime, type DevSnapshot } from './src/runtime/runtime.js';
// The stores over their KVStores, for finishing an interrupted revert before the runtime opens them.
export { BlockStore, StateStore } from './src/runtime/stores.js';
// The deterministic simulator (npm run sim) and its deterministic test application, for tests.
export {
  isValidTestTx,
  isValidTestVoteExtension,
  TestApp,
  type TestAppOptions,
  testVoteExtension,
} from './src/sim/app.js';
export { runSweep, type SweepOptions, type SweepSummary, summaryLine } from './src/sim/runner.js';
export {
  deriveParams,
  FAULT_MODES,
  type FaultMode,
  replayCommand,
  runSimulation,
  type SimOptions,
  type SimParams,
  type SimResult,
} from './src/sim/simulation.js';
// Proposer selection (weighted round-robin with priorities) and validator sets.
export { type ValidatorChange, ValidatorSet } from './src/validators.js';
// Vote tallies by power with conflict detection.
// Vote extension rules: the size cap, when they are on, and the checks a received precommit passes.
export {
  type AddVoteResult,
  HeightVoteSet,
  MAX_VOTE_EXTENSION_BYTES,
  VoteSet,
  voteExtensionProblem,
  voteExtensionsEnabled,
} from './src/voteset.js';
// The consensus WAL.
export { parseWal, Wal } from './src/wal.js';
