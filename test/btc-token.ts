// The BTC token precompile's Solidity sources for the tests: the shipped interface and escrow
// (contracts/), compiled with solc-js together with a probe contract that exercises the edges
// (reverted frames, STATICCALL, DELEGATECALL, native value).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './e2e/harness.js';
import { type CompiledContract, compileSolidity } from './solc.js';

export const BTC = '0x7b7C000000000000000000000000000000000000';

/** A test-only contract calling the precompile the ways a contract can. */
export const BTC_PROBE_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {IBTC, BTC} from "./IBTC.sol";

contract BTCProbe {
    event Probed(bool ok);

    receive() external payable {}

    /// Moves BTC, then reverts: nothing of the transfer may be left.
    function sendThenRevert(address to, uint256 amount) external {
        BTC.transfer(to, amount);
        revert("probe: undone");
    }

    /// Survives the reverted inner call.
    function tryInner(address to, uint256 amount) external returns (bool ok) {
        try this.sendThenRevert(to, amount) {
            ok = true;
        } catch {
            ok = false;
        }
        emit Probed(ok);
    }

    function send(address to, uint256 amount) external returns (bool) {
        return BTC.transfer(to, amount);
    }

    function staticTransfer(address to, uint256 amount) external view returns (bool ok) {
        (ok, ) = address(BTC).staticcall{gas: 100000}(abi.encodeCall(IBTC.transfer, (to, amount)));
    }

    function staticBalance(address a) external view returns (bool ok, bytes memory data) {
        (ok, data) = address(BTC).staticcall(abi.encodeCall(IBTC.balanceOf, (a)));
    }

    function delegateTransfer(address to, uint256 amount) external returns (bool ok, bytes memory data) {
        (ok, data) = address(BTC).delegatecall(abi.encodeCall(IBTC.transfer, (to, amount)));
    }

    function payTransfer(address to, uint256 amount) external payable returns (bool ok, bytes memory data) {
        (ok, data) = address(BTC).call{value: msg.value}(abi.encodeCall(IBTC.transfer, (to, amount)));
    }

    function codeSize() external view returns (uint256) {
        return address(BTC).code.length;
    }

    function balances(address a) external view returns (uint256 viaToken, uint256 native) {
        return (BTC.balanceOf(a), a.balance);
    }
}
`;

/** contracts/<file> of the repository. */
export function contractSource(file: string): string {
  return readFileSync(join(repoRoot(), 'contracts', file), 'utf8');
}

/** IBTC.sol, BTCEscrow.sol and the probe, compiled (cancun, as the e2e contracts). */
export function compileBtcContracts(): Record<string, CompiledContract> {
  return compileSolidity(
    {
      'IBTC.sol': contractSource('IBTC.sol'),
      'BTCEscrow.sol': contractSource('BTCEscrow.sol'),
      'BTCProbe.sol': BTC_PROBE_SOURCE,
    },
    'cancun',
  );
}
