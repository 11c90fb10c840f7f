// The replicated state consensus needs to build and check the next block (CometBFT's sm.State):
// who validates, with which parameters, and the hashes the next header must carry. It advances only
// through nextChainState(), a pure function of the committed block and the application's answer.
import type { Block, BlockId, ConsensusParams, FinalizeBlockResponse, TimeNs, Validator } from '@noded/types';
import { TaggedJsonText, toTaggedJson, toTaggedJsonSpliced } from './codec/json.js';
import { emptyBlockId } from './codec/types.js';
import { ConsensusError } from './errors.js';
import { txResultsHash } from './hash.js';
import { ValidatorSet } from './validators.js';

/** Block protocol version written in headers (CometBFT's BlockProtocol). */
export const BLOCK_PROTOCOL = 11;

export interface ChainState {
  chainId: string;
  initialHeight: number;
  /** Height of the last committed block (initialHeight - 1 before the first block). */
  lastBlockHeight: number;
  lastBlockId: BlockId;
  /** Time of the last block; the genesis time before the first block. */
  lastBlockTime: TimeNs;
  /** app_hash written in the last block's header (empty before the first block). */
  lastBlockAppHash: Uint8Array;
  /** Validators of height lastBlockHeight + 1, with priorities of round 0. */
  validators: ValidatorSet;
  nextValidators: ValidatorSet;
  /** Validators of lastBlockHeight (who signed the last commit); empty before the first block. */
  lastValidators: ValidatorSet;
  lastHeightValidatorsChanged: number;
  consensusParams: ConsensusParams;
  lastHeightConsensusParamsChanged: number;
  /** Merkle root of the deterministic tx results of the last block. */
  lastResultsHash: Uint8Array;
  /** Application state after the last block. */
  appHash: Uint8Array;
}

export interface GenesisInput {
  chainId: string;
  time: TimeNs;
  initialHeight: number;
  validators: Validator[];
  consensusParams: ConsensusParams;
}

/** State before the first block (MakeGenesisState): validators incremented once, next ones twice. */
export function genesisChainState(g: GenesisInput, appHash: Uint8Array): ChainState {
  if (g.validators.length === 0)
    throw new ConsensusError('INVALID_VALIDATOR_SET', 'genesis must list at least one validator');
  if (!Number.isSafeInteger(g.initialHeight) || g.initialHeight < 1)
    throw new ConsensusError(
      'INVALID_BLOCK',
      `initial_height must be a positive integer, got ${g.initialHeight}`,
    );
  const validators = ValidatorSet.create(
    g.validators.map((v) => ({ pubKey: v.pubKey, votingPower: v.votingPower })),
  );
  return {
    chainId: g.chainId,
    initialHeight: g.initialHeight,
    lastBlockHeight: g.initialHeight - 1,
    lastBlockId: emptyBlockId(),
    lastBlockTime: g.time,
    lastBlockAppHash: new Uint8Array(0),
    validators,
    nextValidators: validators.copyIncrement(1),
    lastValidators: ValidatorSet.empty(),
    lastHeightValidatorsChanged: g.initialHeight,
    consensusParams: g.consensusParams,
    lastHeightConsensusParamsChanged: g.initialHeight,
    lastResultsHash: new Uint8Array(0),
    appHash,
  };
}

/**
 * State after committing `block` (updateState of CometBFT): validator updates returned for height H
 * take effect at H + 2; consensus param updates at H + 1.
 */
export function nextChainState(
  state: ChainState,
  block: Block,
  blockId: BlockId,
  response: FinalizeBlockResponse,
): ChainState {
  const height = block.header.height;
  const nextValidators = state.nextValidators.copy();
  let lastHeightValidatorsChanged = state.lastHeightValidatorsChanged;
  if (response.validatorUpdates.length > 0) {
    nextValidators.applyChanges(
      response.validatorUpdates.map((u) => ({ pubKey: u.pubKey, votingPower: u.power })),
      true,
    );
    lastHeightValidatorsChanged = height + 2;
  }
  nextValidators.incrementProposerPriority(1);
  let consensusParams = state.consensusParams;
  let lastHeightConsensusParamsChanged = state.lastHeightConsensusParamsChanged;
  if (response.consensusParamUpdates) {
    consensusParams = response.consensusParamUpdates;
    lastHeightConsensusParamsChanged = height + 1;
  }
  return {
    chainId: state.chainId,
    initialHeight: state.initialHeight,
    lastBlockHeight: height,
    lastBlockId: blockId,
    lastBlockTime: block.header.time,
    lastBlockAppHash: block.header.appHash,
    validators: state.nextValidators.copy(),
    nextValidators,
    lastValidators: state.validators.copy(),
    lastHeightValidatorsChanged,
    consensusParams,
    lastHeightConsensusParamsChanged,
    lastResultsHash: txResultsHash(response.txResults),
    appHash: response.appHash,
  };
}

/** JSON-safe form for the state store. */
export interface StoredChainState
  extends Omit<ChainState, 'validators' | 'nextValidators' | 'lastValidators'> {
  validators: StoredValidatorSet;
  nextValidators: StoredValidatorSet;
  lastValidators: StoredValidatorSet;
}

export interface StoredValidatorSet {
  validators: Validator[];
  proposer: Uint8Array | null;
}

export function storeValidatorSet(v: ValidatorSet): StoredValidatorSet {
  return { validators: v.validators, proposer: v.proposerAddress };
}

export function loadValidatorSet(s: StoredValidatorSet): ValidatorSet {
  return ValidatorSet.restore(s.validators, s.proposer);
}

export function storeChainState(s: ChainState): StoredChainState {
  return {
    ...s,
    validators: storeValidatorSet(s.validators),
    nextValidators: storeValidatorSet(s.nextValidators),
    lastValidators: storeValidatorSet(s.lastValidators),
  };
}

const utf8 = new TextEncoder();

/**
 * The state store's records of `s`, each encoded once: the tagged JSON of the state (the same text as
 * of storeChainState(s)) with its three validator sets and params spliced in, and those four texts,
 * which are stored beside it too, all in UTF-8. A set unchanged since its last encoding (or its
 * copy's) is not encoded again, and its bytes are shared: they are not to be written into.
 */
export function encodeChainStateRecords(s: ChainState): {
  state: Uint8Array;
  validators: Uint8Array;
  nextValidators: Uint8Array;
  lastValidators: Uint8Array;
  consensusParams: Uint8Array;
} {
  const consensusParams = toTaggedJson(s.consensusParams);
  const state = toTaggedJsonSpliced({
    ...s,
    validators: new TaggedJsonText(s.validators.storedJson()),
    nextValidators: new TaggedJsonText(s.nextValidators.storedJson()),
    lastValidators: new TaggedJsonText(s.lastValidators.storedJson()),
    consensusParams: new TaggedJsonText(consensusParams),
  });
  return {
    state: utf8.encode(state),
    validators: s.validators.storedJsonBytes(),
    nextValidators: s.nextValidators.storedJsonBytes(),
    lastValidators: s.lastValidators.storedJsonBytes(),
    consensusParams: utf8.encode(consensusParams),
  };
}

export function loadChainState(s: StoredChainState): ChainState {
  return {
    ...s,
    validators: loadValidatorSet(s.validators),
    nextValidators: loadValidatorSet(s.nextValidators),
    lastValidators: loadValidatorSet(s.lastValidators),
  };
}
