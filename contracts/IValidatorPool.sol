// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// @title The validator pool precompile of noded (issue 25), at 0x7b7c000000000000000000000000000000000011.
/// @notice Bonds BTC (the native coin, 18 decimals) to validators. Voting power is
/// bonded / powerReduction for the top maxValidators validators by power that are not jailed and
/// whose operator's self-bond is at least minSelfBond; a change takes effect two blocks after the
/// block that made it. Bonded and unbonding BTC is held by the pool address itself (its balance).
/// A refusal reverts with Error(string) naming the rule. The pool cannot be reached by
/// delegatecall or callcode. See docs/staking.md.
interface IValidatorPool {
    event ValidatorCreated(
        address indexed operator, bytes32 consensusPubKey, string moniker, uint16 commissionBps, uint256 selfBond
    );
    event ValidatorEdited(address indexed operator, string moniker, uint16 commissionBps);
    event Delegated(address indexed delegator, address indexed operator, uint256 amount);
    event Undelegated(address indexed delegator, address indexed operator, uint256 amount, uint256 completionTime);
    event Withdrawn(address indexed delegator, uint256 amount);
    event Unjailed(address indexed operator);
    event RewardsClaimed(address indexed delegator, address indexed operator, uint256 reward, uint256 commission);
    event AllRewardsClaimed(address indexed delegator, uint256 validators, uint256 amount);
    event Redelegated(
        address indexed delegator, address indexed src, address indexed dst, uint256 amount, uint256 completionTime
    );

    /// @notice Makes the caller the operator of a new validator with consensus key `consensusPubKey`
    /// (ed25519, 32 bytes), self-bonding msg.value (at least minSelfBond).
    function createValidator(bytes32 consensusPubKey, string calldata moniker, uint16 commissionBps) external payable;

    /// @notice Changes the caller's validator's moniker (at most 70 bytes) and commission (0..10000).
    function editValidator(string calldata moniker, uint16 commissionBps) external;

    /// @notice Bonds msg.value to the validator operated by `validator`.
    function delegate(address validator) external payable;

    /// @notice Unbonds `amount` of the caller's delegation; it can be withdrawn at the returned
    /// time (block time + unbondingTime, seconds). At most 16 entries unbond at once per delegator.
    function undelegate(address validator, uint256 amount) external returns (uint256 completionTime);

    /// @notice Moves `amount` of the caller's delegation from `src`'s validator to `dst`'s at once,
    /// without unbonding. Until the returned time (block time + unbondingTime) the moved stake is
    /// still slashed for infractions of `src` committed before the move, and no redelegation away
    /// from `dst` is accepted (no transitive redelegation). At most 16 redelegations mature at once.
    function redelegate(address src, address dst, uint256 amount) external returns (uint256 completionTime);

    /// @notice The delegator's redelegations still maturing: source and destination validators, the
    /// base units moved, the destination shares they bought, completion times (s) and heights.
    function redelegations(address delegator)
        external
        view
        returns (
            address[] memory src,
            address[] memory dst,
            uint256[] memory amounts,
            uint256[] memory sharesDst,
            uint256[] memory completionTimes,
            uint256[] memory heights
        );

    /// @notice Pays the caller every unbonding entry that has matured; returns the amount.
    function withdrawUnbonded() external returns (uint256 amount);

    /// @notice Returns the caller's validator, jailed for downtime, to the active candidates once
    /// its jail time has passed (refused before it, and for ever after a double sign).
    function unjail() external;

    /// @notice Pays the caller its delegation's rewards from the validator operated by `operator`
    /// and, when the caller is that operator, the validator's commission; returns the total.
    /// Refused when there is nothing to pay. See docs/staking.md "The fee split".
    function claimRewards(address operator) external returns (uint256 amount);

    /// @notice Pays the caller its rewards from every validator of delegatorValidators(caller) and,
    /// when the caller operates a validator, its commission, in one call: a RewardsClaimed event per
    /// validator that paid, then AllRewardsClaimed(caller, validators that paid, total). Returns the
    /// total; refused when there is nothing. At most 32 validators per delegator (the gas bound:
    /// 60,000 + 15,000 per validator of the list).
    function claimAllRewards() external returns (uint256 amount);

    /// @notice The validators `delegator` has shares of or unclaimed rewards from (at most 32).
    function delegatorValidators(address delegator) external view returns (address[] memory);

    /// @notice The validator's rewards not claimed yet by its delegators and operator (commission
    /// included), in base units; at least the sum of their pendingRewards and pendingCommission.
    function outstandingRewards(address operator) external view returns (uint256);

    /// @notice The rewards of `delegator`'s delegation to `operator` not claimed yet, in base units.
    function pendingRewards(address delegator, address operator) external view returns (uint256);

    /// @notice The commission of the validator operated by `operator` not claimed yet.
    function pendingCommission(address operator) external view returns (uint256);

    /// @notice Operators of every validator ever created, active or not, in creation order.
    function validators() external view returns (address[] memory);

    /// @notice A validator; votingPower is the power last handed to consensus (0: not active).
    function validator(address operator)
        external
        view
        returns (
            bytes32 consensusPubKey,
            string memory moniker,
            uint256 bonded,
            uint256 votingPower,
            bool jailed,
            uint16 commissionBps
        );

    /// @notice What the shares of `delegator` with the validator operated by `operator` are worth
    /// now, in base units (rounded down).
    function delegation(address delegator, address operator) external view returns (uint256);

    /// @notice The shares of `delegator` with the validator operated by `operator`.
    function delegationShares(address delegator, address operator) external view returns (uint256);

    /// @notice A validator's bonded tokens and the total shares of its delegators (the exchange rate).
    function validatorShares(address operator) external view returns (uint256 tokens, uint256 shares);

    /// @notice A validator's liveness record: its consensus address, the height its window count
    /// started, blocks counted, the time its jail ends (seconds; 2^64-1 when tombstoned), whether it
    /// double-signed, and the blocks missed in the current window.
    function signingInfo(address operator)
        external
        view
        returns (
            address consensusAddress,
            uint256 startHeight,
            uint256 indexOffset,
            uint256 jailedUntil,
            bool tombstoned,
            uint256 missedBlocks
        );

    /// @notice The delegator's unbonding entries.
    function unbondings(address delegator)
        external
        view
        returns (address[] memory validators_, uint256[] memory amounts, uint256[] memory completionTimes);

    /// @notice The validator's bond status as the Cosmos SDK numbers it: 3 bonded (in the set handed
    /// to consensus), 2 unbonding (it left the set; until `unbondingEnd`, in seconds, 0 when unknown),
    /// 1 unbonded. A redelegation away from it matures at block time + unbonding_time, at
    /// `unbondingEnd`, or at once. `unbondingHeight` is the height of the block that took it out of
    /// the set (0 while bonded, or when it left before heights were kept).
    function validatorStatus(address operator)
        external
        view
        returns (uint8 status, uint256 unbondingEnd, uint256 unbondingHeight);

    /// @notice The delegator's unbonding entries with the block height of each undelegate (0 for
    /// entries made before heights were kept); what REST's unbonding_delegations shows.
    function unbondingEntries(address delegator)
        external
        view
        returns (
            address[] memory validators_,
            uint256[] memory amounts,
            uint256[] memory completionTimes,
            uint256[] memory heights
        );

    /// @notice The genesis parameters; fractions are scaled by 1e18.
    function params()
        external
        view
        returns (
            uint256 minSelfBond,
            uint256 unbondingTime,
            uint256 maxValidators,
            uint256 powerReduction,
            uint256 slashFractionDoubleSign,
            uint256 slashFractionDowntime,
            uint256 signedBlocksWindow,
            uint256 minSignedPerWindow,
            uint256 downtimeJailDuration
        );
}
