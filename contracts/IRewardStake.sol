// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// @title The reward stake precompile of noded (issue 25), at 0x7b7c000000000000000000000000000000000016.
/// @notice Vote-escrowed BTC: a lock of `amount` until `unlockTime` (whole weeks, one week to four
/// years ahead) weighs amount * (unlockTime - now) / 4 years, decaying linearly to 0 at unlockTime.
/// Each block, the part of its fees (and block reward) that is not the validators' share is split
/// among the locks by weight; pendingRewards shows it and claim pays it. The locked BTC and the
/// unclaimed rewards are the balance of this address. A refusal reverts with Error(string) naming
/// the value and the rule. It cannot be reached by delegatecall or callcode. See docs/staking.md.
interface IRewardStake {
    event Locked(address indexed owner, uint256 amount, uint256 unlockTime);
    event LockIncreased(address indexed owner, uint256 added, uint256 amount);
    event LockExtended(address indexed owner, uint256 unlockTime);
    event Withdrawn(address indexed owner, uint256 amount);
    event RewardsClaimed(address indexed owner, uint256 amount);

    /// @notice Locks msg.value until `unlockTime` rounded down to a whole week (a multiple of
    /// 604800 s), which must be one week to four years (126144000 s) after the block time.
    /// Refused while the caller has a lock (use increaseAmount / extendLock, or withdraw an ended
    /// one first). Returns the rounded unlock time.
    function lock(uint256 unlockTime) external payable returns (uint256);

    /// @notice Adds msg.value to the caller's lock, which must not have ended; returns the new amount.
    function increaseAmount() external payable returns (uint256);

    /// @notice Moves the caller's unlock time later (rounded down to a week, at most four years
    /// ahead); returns it.
    function extendLock(uint256 unlockTime) external returns (uint256);

    /// @notice Pays back the caller's lock once it has ended (refused before, naming the end).
    function withdraw() external returns (uint256);

    /// @notice Pays the caller's rewards; refused when there are none.
    function claim() external returns (uint256);

    /// @notice amount * (unlockTime - now) / 4 years, rounded down; 0 once the lock has ended.
    function weightOf(address owner) external view returns (uint256);

    /// @notice The sum of the weights of every lock that has not ended, rounded down once.
    function totalWeight() external view returns (uint256);

    /// @notice Rewards of `owner` not claimed yet, in base units.
    function pendingRewards(address owner) external view returns (uint256);

    /// @notice The lock of `owner`: its amount and unlock time (0, 0 when it has none).
    function lockOf(address owner) external view returns (uint256 amount, uint256 unlockTime);

    /// @notice Base units in locks not withdrawn yet.
    function totalLocked() external view returns (uint256);

    /// @notice Base units the rounding of the last blocks left over; the next block splits them.
    function undistributed() external view returns (uint256);

    /// @notice The genesis parameters: validatorShare (scaled by 1e18) and the block reward.
    function params() external view returns (uint256 validatorShare, uint256 blockReward);
}

IRewardStake constant REWARD_STAKE = IRewardStake(0x7B7c000000000000000000000000000000000016);
