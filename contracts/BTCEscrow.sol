// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {BTC} from "./IBTC.sol";

/// @title An example escrow that holds native BTC through the BTC token precompile.
/// @notice The depositor approves this contract on the precompile (or signs a permit), then
/// `deposit` pulls the BTC with transferFrom; the arbiter releases it to the payee with transfer,
/// or refunds it to the depositor. The contract never receives native value directly.
contract BTCEscrow {
    address public immutable depositor;
    address public immutable payee;
    address public immutable arbiter;
    uint256 public held;

    event Deposited(uint256 amount);
    event Released(address to, uint256 amount);

    constructor(address payee_, address arbiter_) {
        depositor = msg.sender;
        payee = payee_;
        arbiter = arbiter_;
    }

    function deposit(uint256 amount) external {
        require(msg.sender == depositor, "escrow: only the depositor deposits");
        require(BTC.transferFrom(depositor, address(this), amount), "escrow: transferFrom failed");
        held += amount;
        emit Deposited(amount);
    }

    function release() external {
        _pay(payee);
    }

    function refund() external {
        _pay(depositor);
    }

    function _pay(address to) private {
        require(msg.sender == arbiter, "escrow: only the arbiter pays out");
        uint256 amount = held;
        held = 0;
        require(BTC.transfer(to, amount), "escrow: transfer failed");
        emit Released(to, amount);
    }
}
