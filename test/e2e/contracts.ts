// Solidity sources for end-to-end tests, compiled with solc-js (offline) at test time.
import { type CompiledContract, compileSolidity } from '../solc.js';

export const TOKEN_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract TestToken {
    string public name;
    string public symbol;
    uint8 public constant decimals = 18;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(string memory name_, string memory symbol_, uint256 supply) {
        name = name_;
        symbol = symbol_;
        totalSupply = supply;
        balanceOf[msg.sender] = supply;
        emit Transfer(address(0), msg.sender, supply);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        require(balanceOf[msg.sender] >= value, "insufficient balance");
        balanceOf[msg.sender] -= value;
        balanceOf[to] += value;
        emit Transfer(msg.sender, to, value);
        return true;
    }

    function approve(address spender, uint256 value) external returns (bool) {
        allowance[msg.sender][spender] = value;
        emit Approval(msg.sender, spender, value);
        return true;
    }

    function transferFrom(address from, address to, uint256 value) external returns (bool) {
        require(allowance[from][msg.sender] >= value, "insufficient allowance");
        require(balanceOf[from] >= value, "insufficient balance");
        allowance[from][msg.sender] -= value;
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
        return true;
    }
}
`;

export const PROBE_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Probe {
    uint256 public counter;
    event Bumped(address indexed by, uint256 indexed newValue, string note);
    error NotAllowed(uint256 code);

    function bump(string calldata note) external returns (uint256) {
        counter += 1;
        emit Bumped(msg.sender, counter, note);
        return counter;
    }

    function failWithReason() external pure {
        revert("probe says no");
    }

    function failWithCustom() external pure {
        revert NotAllowed(42);
    }

    function failWithPanic() external pure returns (uint256) {
        uint256 zero = 0;
        return 1 / zero;
    }

    function chainId() external view returns (uint256) {
        return block.chainid;
    }
}
`;

export type Compiled = CompiledContract;

/** Compiles one source file for the e2e tests (EVM cancun, as the Hardhat project does). */
export function compile(source: string): Record<string, Compiled> {
  return compileSolidity({ 'main.sol': source }, 'cancun');
}
