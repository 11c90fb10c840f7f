// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title The bridge-out precompile: burns native BTC and records an outbound entry for relayers.
/// @notice Parameters (least amount, outflow per window, destination chains, admin) come from
/// genesis app_state.bridge. Every function is non-payable; bridgeOut burns from the caller's
/// native balance. See docs/bridge.md.
interface IBridgeOut {
    event BridgeOut(
        uint256 indexed sequence,
        address indexed sender,
        uint8 indexed chain,
        address token,
        uint256 amount,
        bytes recipient
    );
    event PauseChanged(bool paused, address admin);

    /// @notice Burns `amount` of the caller's BTC (token must be the BTC token precompile) for
    /// `recipient` (its bytes on the destination chain, 1 to 64) on `chain`.
    /// @return sequence The entry's sequence number (1, 2, 3, …).
    function bridgeOut(address token, uint256 amount, uint8 chain, bytes calldata recipient)
        external
        returns (uint256 sequence);

    /// @notice The admin's pause switch.
    function setPaused(bool paused) external;

    function paused() external view returns (bool);

    function admin() external view returns (address);

    /// @return The last sequence number given (entries are 1..outboundCount()).
    function outboundCount() external view returns (uint256);

    function outbound(uint256 sequence)
        external
        view
        returns (address sender, uint256 amount, uint8 chain, bytes memory recipient, uint64 blockNumber, uint64 timestamp);

    function outboundByRecipient(bytes calldata recipient) external view returns (uint256[] memory sequences);

    function params()
        external
        view
        returns (
            uint256 minAmount,
            uint256 windowSeconds,
            uint256 maxOutflowPerWindow,
            uint256 chains,
            uint256 windowStart,
            uint256 windowOutflow,
            uint256 totalBridgedOut
        );

    /// Bridge in (deposits minted from the source chain): the last processed deposit sequence number,
    /// the BTC minted in total, the mapped source token, the inflow limit per window (0 = none) with
    /// the current window's start and inflow, the per-deposit cap (0 = none), and the deposits
    /// processed without a mint for being above it, with their amount.
    function inbound()
        external
        view
        returns (
            uint256 lastSequence,
            uint256 totalBridgedIn,
            address btcToken,
            uint256 maxInflowPerWindow,
            uint256 windowStart,
            uint256 windowInflow,
            uint256 maxDepositAmount,
            uint256 overCapDeposits,
            uint256 overCapAmount
        );
}

/// @dev The precompile's fixed address.
IBridgeOut constant BRIDGE_OUT = IBridgeOut(0x7B7C000000000000000000000000000000000012);
