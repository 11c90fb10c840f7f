// The validator pool (0x7b7c…0011) and the reward stake (0x7b7c…0016) as a wallet declares them:
// written here from docs/staking.md, not taken from the precompiles, so that the tests that read
// them in-process (test/execution) and over JSON-RPC (test/e2e) check the node against one text.
import type { Hex } from '@noded/types';

export const POOL = '0x7b7c000000000000000000000000000000000011' as Hex;
export const REWARD = '0x7b7c000000000000000000000000000000000016' as Hex;

/** The validator pool's functions and events. */
export const POOL_FRAGMENTS = [
  'function createValidator(bytes32 consensusPubKey, string moniker, uint16 commissionBps) payable',
  'function editValidator(string moniker, uint16 commissionBps)',
  'function delegate(address validator) payable',
  'function undelegate(address validator, uint256 amount) returns (uint256)',
  'function redelegate(address src, address dst, uint256 amount) returns (uint256)',
  'function withdrawUnbonded() returns (uint256)',
  'function unjail()',
  'function claimRewards(address operator) returns (uint256)',
  'function claimAllRewards() returns (uint256)',
  'function validators() view returns (address[])',
  'function validator(address operator) view returns (bytes32 consensusPubKey, string moniker, uint256 bonded, uint256 votingPower, bool jailed, uint16 commissionBps)',
  'function delegation(address delegator, address operator) view returns (uint256)',
  'function delegationShares(address delegator, address operator) view returns (uint256)',
  'function validatorShares(address operator) view returns (uint256 tokens, uint256 shares)',
  'function signingInfo(address operator) view returns (address consensusAddress, uint256 startHeight, uint256 indexOffset, uint256 jailedUntil, bool tombstoned, uint256 missedBlocks)',
  'function unbondings(address delegator) view returns (address[] validators, uint256[] amounts, uint256[] completionTimes)',
  'function validatorStatus(address operator) view returns (uint8 status, uint256 unbondingEnd, uint256 unbondingHeight)',
  'function unbondingEntries(address delegator) view returns (address[] validators, uint256[] amounts, uint256[] completionTimes, uint256[] heights)',
  'function redelegations(address delegator) view returns (address[] src, address[] dst, uint256[] amounts, uint256[] sharesDst, uint256[] completionTimes, uint256[] heights)',
  'function delegatorValidators(address delegator) view returns (address[])',
  'function outstandingRewards(address operator) view returns (uint256)',
  'function pendingRewards(address delegator, address operator) view returns (uint256)',
  'function pendingCommission(address operator) view returns (uint256)',
  'function params() view returns (uint256 minSelfBond, uint256 unbondingTime, uint256 maxValidators, uint256 powerReduction, uint256 slashFractionDoubleSign, uint256 slashFractionDowntime, uint256 signedBlocksWindow, uint256 minSignedPerWindow, uint256 downtimeJailDuration)',
  'event ValidatorCreated(address indexed operator, bytes32 consensusPubKey, string moniker, uint16 commissionBps, uint256 selfBond)',
  'event ValidatorEdited(address indexed operator, string moniker, uint16 commissionBps)',
  'event Delegated(address indexed delegator, address indexed operator, uint256 amount)',
  'event Undelegated(address indexed delegator, address indexed operator, uint256 amount, uint256 completionTime)',
  'event Redelegated(address indexed delegator, address indexed src, address indexed dst, uint256 amount, uint256 completionTime)',
  'event Withdrawn(address indexed delegator, uint256 amount)',
  'event Unjailed(address indexed operator)',
  'event RewardsClaimed(address indexed delegator, address indexed operator, uint256 reward, uint256 commission)',
  'event AllRewardsClaimed(address indexed delegator, uint256 validators, uint256 amount)',
];

/** The reward stake's functions. */
export const STAKE_FUNCTIONS = [
  'function lock(uint256 unlockTime) payable returns (uint256)',
  'function increaseAmount() payable returns (uint256)',
  'function extendLock(uint256 unlockTime) returns (uint256)',
  'function withdraw() returns (uint256)',
  'function claim() returns (uint256)',
  'function weightOf(address) view returns (uint256)',
  'function totalWeight() view returns (uint256)',
  'function pendingRewards(address) view returns (uint256)',
  'function lockOf(address) view returns (uint256 amount, uint256 unlockTime)',
  'function totalLocked() view returns (uint256)',
  'function undistributed() view returns (uint256)',
  'function params() view returns (uint256 validatorShare, uint256 blockReward)',
];

/** The reward stake's events (RewardsClaimed and Withdrawn differ from the pool's). */
export const STAKE_EVENTS = [
  'event Locked(address indexed owner, uint256 amount, uint256 unlockTime)',
  'event LockIncreased(address indexed owner, uint256 added, uint256 amount)',
  'event LockExtended(address indexed owner, uint256 unlockTime)',
  'event Withdrawn(address indexed owner, uint256 amount)',
  'event RewardsClaimed(address indexed owner, uint256 amount)',
];
