// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @dev The part of ERC-20 the bridge uses.
interface IERC20Like {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
    function transfer(address to, uint256 value) external returns (bool);
}

/// @title The source-chain side of the BTC bridge (deployed on the source EVM chain, not on noded).
/// @notice lock() takes wrapped BTC from the sender and emits AssetsLocked with sequence numbers
/// 1, 2, 3, … that noded's validators attest (the bridge-in half, docs/bridge.md). release() pays out
/// an outbound entry of noded's bridge-out precompile, once per outbound sequence number, and only
/// from the relayer set at deployment. `maxLock` (0: none) refuses a single lock above it: set it to
/// noded's genesis app_state.bridge.max_deposit_amount, since noded processes a larger deposit
/// without minting anything (and this contract has no way to give it back).
contract BTCBridgeSource {
    event AssetsLocked(uint256 indexed sequenceNumber, address indexed recipient, address indexed token, uint256 amount);
    event AssetsReleased(uint256 indexed outboundSequence, address indexed to, uint256 amount);

    /// @notice The wrapped-BTC ERC-20 this contract holds.
    IERC20Like public immutable token;
    /// @notice The only address allowed to release.
    address public immutable relayer;
    /// @notice The largest single lock (0: no cap); noded's max_deposit_amount.
    uint256 public immutable maxLock;
    /// @notice The last sequence number given (deposits are 1..lastSequence).
    uint256 public lastSequence;
    /// @notice Outbound sequence numbers of noded already paid out.
    mapping(uint256 => bool) public released;

    constructor(IERC20Like token_, address relayer_, uint256 maxLock_) {
        require(address(token_) != address(0), "bridge: token is the zero address");
        token = token_;
        relayer = relayer_;
        maxLock = maxLock_;
    }

    /// @notice Locks `amount` of the token (approved to this contract first) for `recipient` on noded.
    function lock(uint256 amount, address recipient) external returns (uint256 sequenceNumber) {
        require(amount > 0, "bridge: amount is zero");
        require(maxLock == 0 || amount <= maxLock, "bridge: amount is above maxLock");
        require(recipient != address(0), "bridge: recipient is the zero address");
        require(token.transferFrom(msg.sender, address(this), amount), "bridge: transferFrom failed");
        sequenceNumber = ++lastSequence;
        emit AssetsLocked(sequenceNumber, recipient, address(token), amount);
    }

    /// @notice Pays out noded's outbound entry `outboundSequence` (bridge_getOutbound) to `to`.
    function release(uint256 outboundSequence, address to, uint256 amount) external {
        require(msg.sender == relayer, "bridge: only the relayer releases");
        require(!released[outboundSequence], "bridge: outbound entry already released");
        released[outboundSequence] = true;
        require(token.transfer(to, amount), "bridge: transfer failed");
        emit AssetsReleased(outboundSequence, to, amount);
    }
}
