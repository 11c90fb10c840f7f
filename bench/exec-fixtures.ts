// What the in-process benchmarks (executor-throughput, hot-paths) share: the chain id, a key per
// account index, native-signed EIP-1559 transactions, and the tests' ERC-20 (deployed at genesis,
// so its constructor never runs; balances are set in storage slot 0's mapping).
import { createRequire } from 'node:module';
import { createFeeMarket1559Tx } from '@ethereumjs/tx';
import { secp256k1Sign } from '../libs/crypto/index.js';
import {
  defaultGasOptions,
  defaultMempoolOptions,
  Executor,
  type MempoolOptions,
} from '../libs/execution/index.js';
import { chainCommon } from '../libs/execution/src/evm/common.js';
import type { KVStore } from '../libs/storage/index.js';
import { EventBus, type Logger, silentLogger } from '../libs/types/index.js';
import { TOKEN_SOL } from '../test/execution/contracts.js';

export const EVM_CHAIN_ID = 31337n;
export const GWEI = 1_000_000_000n;

export function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : def;
}

export const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

export function privKey(i: number): Uint8Array {
  const k = new Uint8Array(32);
  k[0] = 0x5a;
  new DataView(k.buffer).setUint32(28, i + 1);
  return k;
}

export function sign(
  k: Uint8Array,
  nonce: bigint,
  to: `0x${string}`,
  value: bigint,
  data: `0x${string}`,
  gas: bigint,
): Uint8Array {
  const common = chainCommon(EVM_CHAIN_ID);
  const tx = createFeeMarket1559Tx(
    {
      chainId: EVM_CHAIN_ID,
      nonce,
      to,
      value,
      data,
      gasLimit: gas,
      maxFeePerGas: 500n * GWEI,
      maxPriorityFeePerGas: GWEI,
    },
    { common },
  );
  const { signature, recovery } = secp256k1Sign(tx.getHashedMessageToSign(), k);
  const r = BigInt(`0x${hex(signature.subarray(0, 32))}`);
  const s = BigInt(`0x${hex(signature.subarray(32))}`);
  return tx.addSignature(BigInt(recovery), r, s).serialize();
}

/** The token's runtime bytecode (solc-js, optimizer on). */
export function compileToken(): string {
  const require = createRequire(import.meta.url);
  const solc = require('solc') as { compile(input: string): string };
  const out = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { 'Token.sol': { content: TOKEN_SOL } },
        settings: {
          optimizer: { enabled: true, runs: 200 },
          outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } },
        },
      }),
    ),
  );
  return `0x${out.contracts['Token.sol'].Token.evm.deployedBytecode.object}`;
}

/** A chain-local executor on `kv` with the default gas rules; the mempool options may be changed. */
export function openExecutor(
  kv: KVStore,
  mempool: Partial<MempoolOptions> = {},
  logger: Logger = silentLogger,
): Promise<Executor> {
  return Executor.open({
    kv,
    chainId: 'chain-local',
    evmChainId: EVM_CHAIN_ID,
    mode: 'full',
    keepRecent: 100,
    gas: { ...defaultGasOptions },
    mempool: { ...defaultMempoolOptions, ...mempool },
    allowUnprotectedTxs: false,
    txFeeCap: 0n,
    bus: new EventBus(),
    logger,
  });
}
