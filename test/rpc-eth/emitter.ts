// The Emitter contract both executor log tests deploy, and the shapes they read logs in.
import { id as eventTopic } from 'ethers';
import type { Hex } from '../../libs/types/index.js';

export const EMITTER_SOL = `
// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract Emitter {
    event Pair(bytes32 indexed a, bytes32 indexed b, uint256 seq);
    function emitPairs(bytes32[] calldata as_, bytes32[] calldata bs, uint256 seq) external {
        for (uint256 i = 0; i < as_.length; i++) emit Pair(as_[i], bs[i], seq + i);
    }
}
`;

/** topic0 of Emitter's event. */
export const PAIR = eventTopic('Pair(bytes32,bytes32,uint256)') as Hex;
/** A 32-byte word holding `n`. */
export const word = (n: number): Hex => `0x${n.toString(16).padStart(64, '0')}`;
/** The two addresses the Emitter is deployed at. */
export const E1: Hex = `0x${'e1'.repeat(20)}`;
export const E2: Hex = `0x${'e2'.repeat(20)}`;
export const hex = (n: number) => `0x${n.toString(16)}`;

/** A log as eth_getLogs returns it. */
export interface RpcLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  transactionIndex: Hex;
  logIndex: Hex;
  removed: boolean;
}
