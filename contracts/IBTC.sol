// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title The BTC token precompile: an ERC-20 (with EIP-2612 permit) view of the native coin.
/// @notice Balances are native BTC balances (balanceOf(a) == a.balance); transfer, transferFrom
/// and permit move and approve native BTC. The precompile refuses native value (every function
/// is non-payable) and DELEGATECALL/CALLCODE. Gas costs are fixed: see docs/btc-token.md.
interface IBTC {
    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    /// @return "Bitcoin"
    function name() external view returns (string memory);

    /// @return "BTC"
    function symbol() external view returns (string memory);

    /// @return 18 (1 BTC = 10^18 base units, as the native coin)
    function decimals() external view returns (uint8);

    /// @return The native supply at the end of the last block, less what this block burned so far.
    function totalSupply() external view returns (uint256);

    /// @return The native balance of `account`.
    function balanceOf(address account) external view returns (uint256);

    /// @notice Moves `value` native BTC from the caller to `to`; emits Transfer (also for 0 and to oneself).
    function transfer(address to, uint256 value) external returns (bool);

    function allowance(address owner, address spender) external view returns (uint256);

    /// @notice Sets the caller's allowance for `spender`; emits Approval.
    function approve(address spender, uint256 value) external returns (bool);

    /// @notice Moves native BTC of `from` on its allowance to the caller; an allowance of
    /// type(uint256).max is never spent down.
    function transferFrom(address from, address to, uint256 value) external returns (bool);

    /// @notice EIP-2612: sets `owner`'s allowance for `spender` from the owner's signature.
    function permit(
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;

    function nonces(address owner) external view returns (uint256);

    /// @notice EIP-712 domain: name "Bitcoin", version "1", the chain id, this address.
    function DOMAIN_SEPARATOR() external view returns (bytes32);
}

/// @dev The precompile's fixed address.
IBTC constant BTC = IBTC(0x7b7C000000000000000000000000000000000000);
