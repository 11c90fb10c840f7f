// What the in-process benchmarks (executor-throughput, hot-paths) share: the chain id, a key per
// account index, native-signed EIP-1559 transactions, and the tests' ERC-20 (deployed at genesis,
// so its constructor never runs; balances are set in storage slot 0's mapping). Signing, the
// executor's options and solc-js come from the tests' helpers, so both drive the executor alike.
import { defaultMempoolOptions, Executor, type MempoolOptions } from '@noded/execution';
import type { KVStore } from '@noded/storage';
import { EventBus, type Logger, silentLogger } from '@noded/types';
import { TOKEN_SOL } from '../test/execution/contracts.js';
import { CHAIN_ID, executorOptions, GWEI, signTx } from '../test/execution/helpers.js';
import { compileSolidity } from '../test/solc.js';

export const EVM_CHAIN_ID = CHAIN_ID;

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

/** A signed EIP-1559 transaction (fee cap 500 gwei, tip 1 gwei), signed natively as the tests sign. */
export function sign(
  k: Uint8Array,
  nonce: bigint,
  to: `0x${string}`,
  value: bigint,
  data: `0x${string}`,
  gas: bigint,
): Uint8Array {
  return signTx(k, { nonce, to, value, data, gas, maxFee: 500n * GWEI, tip: GWEI });
}

/** The token's runtime bytecode (solc-js, optimizer on). */
export function compileToken(): string {
  return compileSolidity({ 'Token.sol': TOKEN_SOL }).Token!.deployed;
}

/** A chain-local executor on `kv` with the default gas rules; the mempool options may be changed. */
export function openExecutor(
  kv: KVStore,
  mempool: Partial<MempoolOptions> = {},
  logger: Logger = silentLogger,
): Promise<Executor> {
  return Executor.open(
    executorOptions(kv, new EventBus(), {
      mempool: { ...defaultMempoolOptions, ...mempool },
      txFeeCap: 0n,
      logger,
    }),
  );
}
