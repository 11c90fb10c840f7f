// The BTC token precompile at 0x7b7c000000000000000000000000000000000000: an ERC-20 (with EIP-2612
// permit) view of the native coin, so dApps that expect a token can hold and move BTC. Balances are
// the native balances themselves; allowances and permit nonces live in the EVM storage of the
// precompile's own account (Solidity's layout, see docs/btc-token.md), so they are in the state
// root, reverted with the frame that wrote them and kept across restarts like any contract's.
import type { Common } from '@ethereumjs/common';
import { type ExecResult, type Log, type PrecompileInput } from '@ethereumjs/evm';
import { Address } from '@ethereumjs/util';
import { ethAddressFromPublicKey, keccak256, secp256k1Recover } from '@noded/crypto';
import { bytesToBigInt, concat, equal, fromHex, toHex, toKey } from '../bytes.js';
import type { JournaledState } from '../state/journaled.js';
import {
  AbiError,
  Args,
  addressWord,
  boolWord,
  eventTopic,
  selectorOf,
  stringReturn,
  uintWord,
} from './abi.js';
import { type CallFrame, openCall, revertResult } from './call-frame.js';

export const BTC_TOKEN_ADDRESS = fromHex('0x7b7c000000000000000000000000000000000000');
const SELF = toKey(BTC_TOKEN_ADDRESS);

/**
 * The code the precompile's account holds, so eth_getCode is non-empty and tools (and Solidity's
 * extcodesize check) treat the address as a contract: PUSH1 0 PUSH1 0 REVERT. The EVM never runs
 * it; calls to the address run the precompile.
 */
export const BTC_TOKEN_CODE = fromHex('0x60006000fd');

export const BTC_TOKEN_NAME = 'Bitcoin';
export const BTC_TOKEN_SYMBOL = 'BTC';
export const BTC_TOKEN_DECIMALS = 18n;
/** The EIP-712 domain's version. */
export const BTC_TOKEN_VERSION = '1';

const word = (n: bigint) => toKey(uintWord(n));
/** Storage slot 0: the native supply at the end of the last block (written by the executor). */
export const SUPPLY_SLOT = word(0n);
/** Slot 1: mapping(address owner => mapping(address spender => uint256)) allowances. */
const ALLOWANCES_SLOT = uintWord(1n);
/** Slot 2: mapping(address owner => uint256) permit nonces. */
const NONCES_SLOT = uintWord(2n);

function allowanceSlot(owner: Uint8Array, spender: Uint8Array): string {
  const inner = keccak256(concat(addressWord(owner), ALLOWANCES_SLOT));
  return toKey(keccak256(concat(addressWord(spender), inner)));
}

function nonceSlot(owner: Uint8Array): string {
  return toKey(keccak256(concat(addressWord(owner), NONCES_SLOT)));
}

/** Fixed gas of each function, charged whether it succeeds or reverts (docs/btc-token.md). */
export const BTC_TOKEN_GAS = {
  name: 1_000n,
  symbol: 1_000n,
  decimals: 1_000n,
  DOMAIN_SEPARATOR: 1_000n,
  totalSupply: 2_200n,
  balanceOf: 2_700n,
  allowance: 2_200n,
  nonces: 2_200n,
  transfer: 35_000n,
  approve: 27_000n,
  transferFrom: 45_000n,
  permit: 55_000n,
  /** Calldata without a known selector. */
  unknown: 1_000n,
} as const;

const TRANSFER_TOPIC = eventTopic('Transfer(address,address,uint256)');
const APPROVAL_TOPIC = eventTopic('Approval(address,address,uint256)');
const PERMIT_TYPEHASH = keccak256(
  new TextEncoder().encode(
    'Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)',
  ),
);
const DOMAIN_TYPEHASH = keccak256(
  new TextEncoder().encode(
    'EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)',
  ),
);
const UINT256_MAX = (1n << 256n) - 1n;
/** secp256k1n / 2: EIP-2 refuses signatures with a higher s (malleable). */
const HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/** The EIP-712 domain separator of the token on the chain `chainId`. */
export function btcDomainSeparator(chainId: bigint): Uint8Array {
  return keccak256(
    concat(
      DOMAIN_TYPEHASH,
      keccak256(new TextEncoder().encode(BTC_TOKEN_NAME)),
      keccak256(new TextEncoder().encode(BTC_TOKEN_VERSION)),
      uintWord(chainId),
      addressWord(BTC_TOKEN_ADDRESS),
    ),
  );
}

/** A refusal: reverts the frame with `BTC: <reason>` as Error(string). */
class Refusal extends Error {}

interface Call {
  args: Args;
  frame: CallFrame;
  state: JournaledState;
  common: Common;
  evm: object;
  logs: Log[];
}

interface Method {
  signature: string;
  gas: bigint;
  words: number;
  writes: boolean;
  run(c: Call): Promise<Uint8Array>;
}

async function balanceOf(state: JournaledState, a: Uint8Array): Promise<bigint> {
  return (await state.readAccount(toKey(a)))?.balance ?? 0n;
}

async function readUint(state: JournaledState, slot: string): Promise<bigint> {
  return bytesToBigInt(await state.readSlot(SELF, slot));
}

function writeUint(state: JournaledState, slot: string, v: bigint): void {
  state.writeSlot(SELF, slot, uintWord(v));
}

/** Moves native BTC; a zero amount or a transfer to oneself changes no account. */
async function move(state: JournaledState, from: Uint8Array, to: Uint8Array, amount: bigint): Promise<void> {
  if (equal(to, new Uint8Array(20))) throw new Refusal('transfer to the zero address');
  if (equal(to, BTC_TOKEN_ADDRESS)) {
    throw new Refusal('transfer to the token address itself (nothing could move that BTC again)');
  }
  const have = await balanceOf(state, from);
  if (have < amount) {
    throw new Refusal(`transfer amount ${amount} exceeds the balance ${have} of ${toHex(from)}`);
  }
  if (amount === 0n || equal(from, to)) return;
  await state.modifyAccountFields(new Address(from), { balance: have - amount });
  await state.modifyAccountFields(new Address(to), { balance: (await balanceOf(state, to)) + amount });
}

function log(topic: Uint8Array, a: Uint8Array, b: Uint8Array, value: bigint): Log {
  return [BTC_TOKEN_ADDRESS, [topic, addressWord(a), addressWord(b)], uintWord(value)];
}

function approve(c: Call, owner: Uint8Array, spender: Uint8Array, value: bigint): void {
  if (equal(spender, new Uint8Array(20))) throw new Refusal('approve to the zero address');
  writeUint(c.state, allowanceSlot(owner, spender), value);
  c.logs.push(log(APPROVAL_TOPIC, owner, spender, value));
}

function blockTimestamp(evm: object): bigint {
  const block = (evm as { _block?: { header: { timestamp: bigint } } })._block;
  if (!block) throw new Error('the BTC token precompile ran outside a block');
  return block.header.timestamp;
}

const METHODS: Method[] = [
  {
    signature: 'name()',
    gas: BTC_TOKEN_GAS.name,
    words: 0,
    writes: false,
    run: async () => stringReturn(BTC_TOKEN_NAME),
  },
  {
    signature: 'symbol()',
    gas: BTC_TOKEN_GAS.symbol,
    words: 0,
    writes: false,
    run: async () => stringReturn(BTC_TOKEN_SYMBOL),
  },
  {
    signature: 'decimals()',
    gas: BTC_TOKEN_GAS.decimals,
    words: 0,
    writes: false,
    run: async () => uintWord(BTC_TOKEN_DECIMALS),
  },
  {
    signature: 'DOMAIN_SEPARATOR()',
    gas: BTC_TOKEN_GAS.DOMAIN_SEPARATOR,
    words: 0,
    writes: false,
    run: async (c) => btcDomainSeparator(c.common.chainId()),
  },
  {
    signature: 'totalSupply()',
    gas: BTC_TOKEN_GAS.totalSupply,
    words: 0,
    writes: false,
    // The supply at the end of the last block less what this block destroyed so far (burns are
    // journaled, so a reverted burn is not counted).
    run: async (c) => uintWord((await readUint(c.state, SUPPLY_SLOT)) - c.state.burned),
  },
  {
    signature: 'balanceOf(address)',
    gas: BTC_TOKEN_GAS.balanceOf,
    words: 1,
    writes: false,
    run: async (c) => uintWord(await balanceOf(c.state, c.args.address(0, 'account'))),
  },
  {
    signature: 'allowance(address,address)',
    gas: BTC_TOKEN_GAS.allowance,
    words: 2,
    writes: false,
    run: async (c) =>
      uintWord(
        await readUint(c.state, allowanceSlot(c.args.address(0, 'owner'), c.args.address(1, 'spender'))),
      ),
  },
  {
    signature: 'nonces(address)',
    gas: BTC_TOKEN_GAS.nonces,
    words: 1,
    writes: false,
    run: async (c) => uintWord(await readUint(c.state, nonceSlot(c.args.address(0, 'owner')))),
  },
  {
    signature: 'transfer(address,uint256)',
    gas: BTC_TOKEN_GAS.transfer,
    words: 2,
    writes: true,
    run: async (c) => {
      const from = c.frame.caller.bytes;
      const to = c.args.address(0, 'to');
      const amount = c.args.uint(1);
      await move(c.state, from, to, amount);
      c.logs.push(log(TRANSFER_TOPIC, from, to, amount));
      return boolWord(true);
    },
  },
  {
    signature: 'approve(address,uint256)',
    gas: BTC_TOKEN_GAS.approve,
    words: 2,
    writes: true,
    run: async (c) => {
      approve(c, c.frame.caller.bytes, c.args.address(0, 'spender'), c.args.uint(1));
      return boolWord(true);
    },
  },
  {
    signature: 'transferFrom(address,address,uint256)',
    gas: BTC_TOKEN_GAS.transferFrom,
    words: 3,
    writes: true,
    run: async (c) => {
      const spender = c.frame.caller.bytes;
      const from = c.args.address(0, 'from');
      const to = c.args.address(1, 'to');
      const amount = c.args.uint(2);
      const slot = allowanceSlot(from, spender);
      const allowed = await readUint(c.state, slot);
      if (allowed < amount) {
        throw new Refusal(
          `transfer amount ${amount} exceeds the allowance ${allowed} of ${toHex(spender)} from ${toHex(from)}`,
        );
      }
      // An infinite allowance (2^256-1) is never spent down, as in OpenZeppelin's ERC-20.
      if (allowed !== UINT256_MAX && amount > 0n) writeUint(c.state, slot, allowed - amount);
      await move(c.state, from, to, amount);
      c.logs.push(log(TRANSFER_TOPIC, from, to, amount));
      return boolWord(true);
    },
  },
  {
    signature: 'permit(address,address,uint256,uint256,uint8,bytes32,bytes32)',
    gas: BTC_TOKEN_GAS.permit,
    words: 7,
    writes: true,
    run: async (c) => {
      const owner = c.args.address(0, 'owner');
      const spender = c.args.address(1, 'spender');
      const value = c.args.uint(2);
      const deadline = c.args.uint(3);
      const v = c.args.uintN(4, 8, 'v');
      const r = c.args.word(5);
      const s = c.args.word(6);
      const now = blockTimestamp(c.evm);
      if (deadline < now)
        throw new Refusal(`permit expired: deadline ${deadline} is before the block time ${now}`);
      const nonce = await readUint(c.state, nonceSlot(owner));
      const structHash = keccak256(
        concat(
          PERMIT_TYPEHASH,
          addressWord(owner),
          addressWord(spender),
          uintWord(value),
          uintWord(nonce),
          uintWord(deadline),
        ),
      );
      const digest = keccak256(
        concat(Uint8Array.of(0x19, 0x01), btcDomainSeparator(c.common.chainId()), structHash),
      );
      const signer = recoverSigner(digest, v, r, s);
      if (!signer || !equal(signer, owner)) {
        throw new Refusal(
          `invalid permit signature: it is not ${toHex(owner)}'s signature of this permit with nonce ${nonce}`,
        );
      }
      writeUint(c.state, nonceSlot(owner), nonce + 1n);
      approve(c, owner, spender, value);
      return new Uint8Array(0);
    },
  },
];

function recoverSigner(digest: Uint8Array, v: bigint, r: Uint8Array, s: Uint8Array): Uint8Array | undefined {
  if (v !== 27n && v !== 28n) return undefined;
  const sv = bytesToBigInt(s);
  if (sv === 0n || sv > HALF_N || bytesToBigInt(r) === 0n) return undefined;
  try {
    return ethAddressFromPublicKey(secp256k1Recover(digest, concat(r, s), Number(v - 27n)));
  } catch {
    return undefined;
  }
}

const BY_SELECTOR = new Map(METHODS.map((m) => [selectorOf(m.signature), m]));

function revert(gas: bigint, reason: string): ExecResult {
  return revertResult(gas, `BTC: ${reason}`);
}

/** The precompile function registered at BTC_TOKEN_ADDRESS (run.ts makeVm). */
export async function btcTokenPrecompile(input: PrecompileInput): Promise<ExecResult> {
  const evm = input._EVM as object;
  const open = openCall(input, {
    what: 'the BTC token precompile',
    name: 'token',
    prefix: 'BTC: ',
    address: BTC_TOKEN_ADDRESS,
    methods: BY_SELECTOR,
    unknownGas: BTC_TOKEN_GAS.unknown,
  });
  if ('result' in open) return open.result;
  const { frame, method, gas } = open;
  const logs: Log[] = [];
  try {
    const args = new Args(input.data, method.signature, method.words);
    const c: Call = {
      args,
      frame,
      state: input._EVM.stateManager as unknown as JournaledState,
      common: input.common,
      evm,
      logs,
    };
    const returnValue = await method.run(c);
    return { returnValue, executionGasUsed: gas, logs };
  } catch (err) {
    if (err instanceof Refusal || err instanceof AbiError) return revert(gas, err.message);
    throw err;
  }
}
