// The Emitter contract both executor log tests deploy, and the shapes they read logs in.
import { join } from 'node:path';
import { Executor } from '@noded/execution';
import { RocksKV } from '@noded/storage';
import { EventBus, type Hex } from '@noded/types';
import { id as eventTopic } from 'ethers';
import {
  addr,
  compile,
  ETH,
  executorOptions,
  GENESIS_TIME,
  TEST_CONSENSUS_PARAMS,
  type TestNode,
} from '../execution/helpers.js';

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

/**
 * The real executor on a RocksDB in `dir`, at genesis: each of `senders` holds 100 ETH and the Emitter
 * is deployed at E1 and E2. The caller closes `kv`.
 */
export async function openEmitterChain(
  dir: string,
  senders: Uint8Array[],
): Promise<TestNode & { kv: RocksKV }> {
  const runtime = compile({ 'Emitter.sol': EMITTER_SOL }).Emitter!.deployed;
  const kv = await RocksKV.open(join(dir, 'application.db'));
  const bus = new EventBus();
  const ex = await Executor.open(executorOptions(kv, bus));
  await ex.initChain({
    chainId: 'chain-local',
    time: GENESIS_TIME,
    initialHeight: 1,
    validators: [],
    consensusParams: TEST_CONSENSUS_PARAMS,
    appState: {
      evm: {
        chain_id: '31337',
        accounts: [
          ...senders.map((k) => ({ address: addr(k), balance: (100n * ETH).toString() })),
          { address: E1, balance: '0', code: runtime },
          { address: E2, balance: '0', code: runtime },
        ],
      },
    },
  });
  return { ex, kv, bus, events: [], height: 0, time: 1_700_000_000_000_000_000n };
}
