// What the workloads send: the dev accounts of the test mnemonic, a solc-js-compiled ERC-20 token,
// fee fields read from the node, and EIP-1559 transactions signed locally (never timed).
import { createRequire } from 'node:module';
import { RLP } from '@ethereumjs/rlp';
import { keccak256 as keccak, secp256k1Sign } from '@noded/crypto';
import {
  getAddress,
  getBytes,
  HDNodeWallet,
  hexlify,
  Interface,
  keccak256,
  Signature,
  type SigningKey,
  Transaction,
  toUtf8Bytes,
} from 'ethers';
import { hexQty, type JsonRpcClient } from './rpc.js';

export const TEST_MNEMONIC = 'test test test test test test test test test test test junk';
export const CHAIN_ID = 31337n;

export interface DevAccount {
  index: number;
  address: string;
  key: SigningKey;
}

/** Accounts m/44'/60'/0'/0/0..count-1, funded by both nodes' genesis (10000 ETH/BTC each). */
export function devAccounts(count: number): DevAccount[] {
  const root = HDNodeWallet.fromPhrase(TEST_MNEMONIC, '', "m/44'/60'/0'/0");
  return Array.from({ length: count }, (_, i) => {
    const w = root.deriveChild(i);
    return { index: i, address: w.address, key: w.signingKey };
  });
}

/** Deterministic receivers (no keys needed): keccak("noded-bench-receiver-<i>"). */
export function receivers(count: number): string[] {
  return Array.from({ length: count }, (_, i) =>
    getAddress(`0x${keccak256(toUtf8Bytes(`noded-bench-receiver-${i}`)).slice(26)}`),
  );
}

const TOKEN_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Minimal ERC-20 for the benchmark: the whole supply goes to the deployer.
contract BenchToken {
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;
    uint256 public totalSupply;
    uint8 public constant decimals = 18;
    string public constant name = "Bench Token";
    string public constant symbol = "BENCH";

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(uint256 supply) {
        totalSupply = supply;
        balanceOf[msg.sender] = supply;
        emit Transfer(address(0), msg.sender, supply);
    }

    function transfer(address to, uint256 value) external returns (bool) {
        uint256 have = balanceOf[msg.sender];
        require(have >= value, "balance too low");
        unchecked { balanceOf[msg.sender] = have - value; }
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
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= value, "allowance too low");
        require(balanceOf[from] >= value, "balance too low");
        if (allowed != type(uint256).max) allowance[from][msg.sender] = allowed - value;
        balanceOf[from] -= value;
        balanceOf[to] += value;
        emit Transfer(from, to, value);
        return true;
    }
}
`;

export interface CompiledToken {
  abi: Interface;
  bytecode: string;
  solcVersion: string;
}

let compiled: CompiledToken | undefined;

/** Compiles BenchToken with the solc package (solc-js, offline); cached for the run. */
export function compileToken(): CompiledToken {
  if (compiled) return compiled;
  const require = createRequire(import.meta.url);
  const solc = require('solc') as { compile(input: string): string; version(): string };
  const input = {
    language: 'Solidity',
    sources: { 'BenchToken.sol': { content: TOKEN_SOURCE } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: 'cancun',
      outputSelection: { '*': { BenchToken: ['abi', 'evm.bytecode.object'] } },
    },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: Array<{ severity: string; formattedMessage: string }>;
    contracts?: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  const c = out.contracts?.['BenchToken.sol']?.BenchToken;
  if (errors.length > 0 || !c) throw new Error(`solc: ${errors.map((e) => e.formattedMessage).join('\n')}`);
  compiled = {
    abi: new Interface(c.abi as never),
    bytecode: `0x${c.evm.bytecode.object}`,
    solcVersion: solc.version(),
  };
  return compiled;
}

export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

const GWEI = 1_000_000_000n;

/**
 * Fees as a wallet picks them: the next block's base fee from eth_feeHistory (falling back to the
 * latest block's baseFeePerGas) times `headroom` (ethers uses 2), plus a 1 gwei tip.
 */
export async function currentFees(rpc: JsonRpcClient, headroom = 2n): Promise<Fees> {
  let base: bigint | undefined;
  try {
    const h = await rpc.call<{ baseFeePerGas?: string[] }>('eth_feeHistory', ['0x1', 'latest', []]);
    const list = h.baseFeePerGas ?? [];
    if (list.length > 0) base = BigInt(list[list.length - 1]);
  } catch {
    // Fall through to the block header.
  }
  if (base === undefined) {
    const b = await rpc.call<{ baseFeePerGas?: string }>('eth_getBlockByNumber', ['latest', false]);
    base = BigInt(b.baseFeePerGas ?? GWEI);
  }
  const tip = GWEI;
  return { maxFeePerGas: base * headroom + tip, maxPriorityFeePerGas: tip };
}

export interface SignedTx {
  raw: string;
  hash: string;
  from: string;
  nonce: number;
}

export interface TxFields {
  to: string | null;
  value?: bigint;
  data?: string;
  gasLimit: bigint;
  nonce: number;
}

/** Builds and signs one EIP-1559 transaction (type 2) for chain 31337 (native secp256k1, not ethers' JS signer). */
export function signTx(key: SigningKey, from: string, fees: Fees, f: TxFields): SignedTx {
  const tx = Transaction.from({
    type: 2,
    chainId: CHAIN_ID,
    nonce: f.nonce,
    to: f.to,
    value: f.value ?? 0n,
    data: f.data ?? '0x',
    gasLimit: f.gasLimit,
    maxFeePerGas: fees.maxFeePerGas,
    maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
  });
  const { signature, recovery } = secp256k1Sign(getBytes(tx.unsignedHash), getBytes(key.privateKey));
  tx.signature = Signature.from({
    r: hexlify(signature.subarray(0, 32)),
    s: hexlify(signature.subarray(32)),
    yParity: recovery as 0 | 1,
  });
  return { raw: tx.serialized, hash: tx.hash!, from, nonce: f.nonce };
}

const bytesOf = (hex: string): Uint8Array => Buffer.from(hex.startsWith('0x') ? hex.slice(2) : hex, 'hex');
/** A quantity as RLP wants it: big-endian, no leading zero bytes (0 is empty). */
function qty(n: bigint | number): Uint8Array {
  const v = BigInt(n);
  if (v === 0n) return new Uint8Array(0);
  const h = v.toString(16);
  return Buffer.from(h.length % 2 ? `0${h}` : h, 'hex');
}
const hex0x = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}`;

/**
 * The same EIP-1559 transaction as signTx, encoded by hand (RLP, keccak and the native secp256k1 of
 * libs/crypto): several times faster than ethers' Transaction, for the hundreds of thousands a
 * sustained load pre-signs. test/bench checks that both give the same bytes.
 */
export function fastSignTx(privateKey: Uint8Array, from: string, fees: Fees, f: TxFields): SignedTx {
  const fields: Uint8Array[] = [
    qty(CHAIN_ID),
    qty(f.nonce),
    qty(fees.maxPriorityFeePerGas),
    qty(fees.maxFeePerGas),
    qty(f.gasLimit),
    f.to === null ? new Uint8Array(0) : bytesOf(f.to),
    qty(f.value ?? 0n),
    f.data ? bytesOf(f.data) : new Uint8Array(0),
  ];
  const unsigned = RLP.encode([...fields, []]);
  const digest = keccak(Buffer.concat([Uint8Array.of(2), unsigned]));
  const { signature, recovery } = secp256k1Sign(digest, privateKey);
  const strip = (b: Uint8Array) => {
    let i = 0;
    while (i < b.length && b[i] === 0) i++;
    return b.subarray(i);
  };
  const signed = Buffer.concat([
    Uint8Array.of(2),
    RLP.encode([
      ...fields,
      [],
      qty(recovery),
      strip(signature.subarray(0, 32)),
      strip(signature.subarray(32)),
    ]),
  ]);
  return { raw: hex0x(signed), hash: hex0x(keccak(signed)), from, nonce: f.nonce };
}

export async function pendingNonce(rpc: JsonRpcClient, address: string): Promise<number> {
  return Number(BigInt(await rpc.call<string>('eth_getTransactionCount', [address, 'pending'])));
}

export async function estimateGas(
  rpc: JsonRpcClient,
  tx: { from: string; to: string; data?: string; value?: bigint },
): Promise<bigint> {
  const params: Record<string, string> = { from: tx.from, to: tx.to };
  if (tx.data) params.data = tx.data;
  if (tx.value) params.value = hexQty(tx.value);
  return BigInt(await rpc.call<string>('eth_estimateGas', [params]));
}
