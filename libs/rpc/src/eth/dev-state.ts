// The dev-chain methods of a single-validator chain-local node, under their anvil_ and hardhat_
// names: setBalance, setNonce, setCode, setStorageAt, impersonateAccount,
// stopImpersonatingAccount, anvil_nodeInfo and hardhat_metadata (docs/json-rpc.md, "Dev-chain
// methods"). Every other node answers them with -32000 naming the method. State changes travel as
// dev operations in the next block (libs/execution/src/dev.ts); the call returns once that block
// is committed, so a read of 'latest' right after it sees the change.
import { randomBytes } from 'node:crypto';
import type { EthChain, Hex } from '@noded/types';
import { invalidParams, serverError } from './errors.js';
import { bytesToHex, quantity } from './hex.js';
import { type ArgSpec, type ArgsOf, address, bytes, type Decoder, decodeArgs, req } from './params.js';
import { impersonatedTransaction, type UnsignedTx } from './tx-codec.js';

type Handler = (params: unknown, ctx: never) => Promise<unknown>;

/** What a node with dev controls tells the RPC (undefined everywhere else). */
export interface DevChainInfo {
  /** The hardfork the EVM runs (anvil_nodeInfo.hardFork). */
  hardfork: string;
}

export interface DevStateDeps {
  chain: EthChain;
  /** Set only on the single validator of chain-local (the node decides; see node.ts). */
  devChain: DevChainInfo | undefined;
  clientVersion: string;
  /** What follows the method's name in a refusal (default DEV_ONLY). */
  refusal?: string;
}

/** Why a node without dev controls refuses their methods. */
export const DEV_ONLY = 'is only available on a single-validator chain-local node';

/** The answer every node without dev controls gives (code -32000). */
export function devOnly(method: string, refusal = DEV_ONLY) {
  return serverError(`${method} ${refusal}`);
}

/** A hex quantity of at most `bits` bits; unlike geth's hexutil, leading zeros are accepted (anvil's U256). */
function devQuantity(bits: number, what: string): Decoder<bigint> {
  return (v) => {
    if (typeof v !== 'string' || !/^0[xX][0-9a-fA-F]+$/.test(v)) {
      throw invalidParams(`${what} must be a 0x-prefixed hex quantity, got ${JSON.stringify(v)}`);
    }
    const n = BigInt(v);
    if (n >= 1n << BigInt(bits)) throw invalidParams(`${what} ${v} does not fit in ${bits} bits`);
    return n;
  };
}

/** A storage slot: a quantity or 32-byte word, as 32 bytes. */
const slotParam: Decoder<Hex> = (v) => {
  const n = devQuantity(256, 'storage slot')(v);
  return `0x${n.toString(16).padStart(64, '0')}`;
};

/** A storage value: exactly 32 bytes, as Hardhat and anvil require. */
const wordParam: Decoder<Hex> = (v) => {
  if (typeof v !== 'string' || !/^0[xX][0-9a-fA-F]*$/.test(v)) {
    throw invalidParams(`storage value must be 0x-prefixed hex data, got ${JSON.stringify(v)}`);
  }
  if (v.length !== 66) {
    throw invalidParams(
      `storage value must be exactly 32 bytes (0x and 64 hex digits), got ${(v.length - 2) / 2} bytes`,
    );
  }
  return v.toLowerCase() as Hex;
};

export class DevState {
  /** hardhat_metadata.instanceId: new for every start of the node. */
  private readonly instanceId: Hex = bytesToHex(randomBytes(32));

  constructor(private readonly deps: DevStateDeps) {}

  get enabled(): boolean {
    const c = this.deps.chain;
    return (
      this.deps.devChain !== undefined &&
      c.devSetState !== undefined &&
      c.devImpersonate !== undefined &&
      c.devImpersonatedAccounts !== undefined
    );
  }

  /**
   * Impersonated addresses (lowercase), in the order they were added. The chain keeps them (the
   * executor), so that every rpc-edge of a cluster answers from the same set.
   */
  async impersonatedAccounts(): Promise<Hex[]> {
    return this.enabled ? this.deps.chain.devImpersonatedAccounts!() : [];
  }

  async isImpersonated(addr: Hex): Promise<boolean> {
    return (await this.impersonatedAccounts()).includes(addr.toLowerCase() as Hex);
  }

  /** Queues the transaction of an impersonated sender; resolves with its hash. */
  sendImpersonated(from: Hex, tx: UnsignedTx): Promise<Hex> {
    const send = this.deps.chain.devSendImpersonated;
    if (send === undefined)
      throw devOnly('eth_sendTransaction from an impersonated account', this.deps.refusal);
    const { raw } = impersonatedTransaction(tx, from.toLowerCase() as Hex);
    return send.call(this.deps.chain, from.toLowerCase() as Hex, raw);
  }

  /** Adds the dev methods to `methods`. */
  register(methods: Map<string, Handler>): void {
    const def = <const S extends readonly ArgSpec<unknown>[]>(
      name: string,
      specs: S,
      fn: (args: ArgsOf<S>) => unknown,
    ): void => {
      methods.set(name, async (params) => {
        if (!this.enabled) throw devOnly(name, this.deps.refusal);
        return fn(decodeArgs(params, specs));
      });
    };
    const c = this.deps.chain;
    const setState: NonNullable<EthChain['devSetState']> = (change) => c.devSetState!(change);
    for (const ns of ['anvil', 'hardhat'] as const) {
      // Hardhat answers true, anvil null.
      const ok = ns === 'hardhat' ? true : null;
      def(`${ns}_setBalance`, [req(address), req(devQuantity(256, 'balance'))], async ([a, value]) => {
        await setState({ kind: 'balance', address: a, value });
        return ok;
      });
      def(`${ns}_setNonce`, [req(address), req(devQuantity(64, 'nonce'))], async ([a, value]) => {
        await setState({ kind: 'nonce', address: a, value });
        return ok;
      });
      def(`${ns}_setCode`, [req(address), req(bytes)], async ([a, code]) => {
        await setState({ kind: 'code', address: a, code });
        return ok;
      });
      def(`${ns}_setStorageAt`, [req(address), req(slotParam), req(wordParam)], async ([a, slot, value]) => {
        await setState({ kind: 'storage', address: a, slot, value });
        return ok;
      });
      def(`${ns}_impersonateAccount`, [req(address)], async ([a]) => {
        await c.devImpersonate!(a.toLowerCase() as Hex, true);
        return ok;
      });
      def(`${ns}_stopImpersonatingAccount`, [req(address)], async ([a]) => {
        const was = await c.devImpersonate!(a.toLowerCase() as Hex, false);
        return ns === 'hardhat' ? was : null;
      });
    }
    def('hardhat_metadata', [], async () => {
      const n = c.latestHeight();
      const b = await c.getBlockByNumber(n);
      return {
        clientVersion: this.deps.clientVersion,
        chainId: Number(c.chainId()),
        instanceId: this.instanceId,
        latestBlockNumber: Number(n),
        latestBlockHash: b?.hash ?? null,
      };
    });
    def('anvil_nodeInfo', [], async () => {
      const n = c.latestHeight();
      const b = await c.getBlockByNumber(n);
      return {
        currentBlockNumber: quantity(n),
        currentBlockTimestamp: Number(b?.timestamp ?? 0n),
        currentBlockHash: b?.hash ?? null,
        hardFork: this.deps.devChain?.hardfork ?? null,
        transactionOrder: 'fees',
        environment: {
          baseFee: quantity(c.nextBaseFee()),
          chainId: Number(c.chainId()),
          gasLimit: quantity(b?.gasLimit ?? 0n),
          gasPrice: quantity(c.nextBaseFee() + c.suggestedTip()),
        },
        forkConfig: { forkUrl: null, forkBlockNumber: null, forkRetryBackoff: null },
      };
    });
  }
}
