// One block's transactions run in order against an overlay of the committed state. FinalizeBlock
// runs one; so does the executor ahead of a proposal (docs/execution.md, "Execution ahead of the
// proposal"). A transaction run ahead sits above a checkpoint of its own, so the run can be cut
// back to any prefix of what it ran when the proposal turns out to differ.
import type { Block } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import type { EVMMockBlockchainInterface } from '@ethereumjs/evm';
import type { VM } from '@ethereumjs/vm';
import { sha256 } from '@noded/crypto';
import type { AbciEvent, ExecTxResult } from '@noded/types';
import { EMPTY, fromHex, toHex, toKey } from './bytes.js';
import type { StoredReceipt, StoredTx } from './chain/store.js';
import {
  type BlockContext,
  makeBlock,
  makeProbedBlock,
  makeVm,
  preCheck,
  revertReason,
  runTx,
} from './evm/run.js';
import { effectiveTip } from './feeMarket.js';
import { type AccountData, hasCode, newAccount } from './state/account.js';
import { JournaledState, type StateSource } from './state/journaled.js';
import { checkStateless, type DecodedTx, type StatelessLimits, TxCode, TxRejectedError } from './txs.js';

export function attr(key: string, value: string, index = true) {
  return { key, value, index };
}

/** CometBFT's transaction hash: SHA-256 of the bytes, upper-case hex. */
function tmHash(raw: Uint8Array): string {
  return Buffer.from(sha256(raw)).toString('hex').toUpperCase();
}

/** The largest balance an account can hold (2^256 - 1); EthereumJS refuses a credit past it. */
const MAX_UINT256 = (1n << 256n) - 1n;
/** The gas of a call that runs no code, with no calldata and no access list (EIP-7623's floor is the same). */
const PLAIN_TRANSFER_GAS = 21_000n;
/** The logs bloom of a transaction without logs. */
const EMPTY_BLOOM = new Uint8Array(256);

/** What BlockRun.execute reads of a transaction's run: runTx's result, or the same for a plain transfer. */
interface TxRun {
  totalGasSpent: bigint;
  execResult: {
    logs?: Array<[Uint8Array, Uint8Array[], Uint8Array]>;
    exceptionError?: { error: string };
    returnValue: Uint8Array;
  };
  createdAddress?: { bytes: Uint8Array };
  bloom: { bitvector: Uint8Array };
}

/** How a run executes; the default is what a node runs. */
export interface BlockRunOptions {
  /**
   * Plain value transfers (BlockRun.plainTransfer) skip the EVM; false sends every transaction
   * through EthereumJS' runTx (tests compare the two).
   */
  plainTransfers?: boolean;
}

/** What one transaction of the block produced. */
export interface TxRecord {
  /** The transaction's hash (lowercase 0x hex), or undefined when it did not decode. */
  hashHex: string | undefined;
  /** Set when it was a plain transfer, applied without the EVM (BlockRun.plainTransfer). */
  plain?: true;
  result: ExecTxResult;
  /** Present when the transaction executed (whatever its status); absent when it was rejected. */
  included?: {
    tx: StoredTx;
    receipt: StoredReceipt;
    bloom: Uint8Array;
    hash: Uint8Array;
    /** Tip per gas the proposer received. */
    tip: bigint;
  };
}

export class BlockRun {
  readonly records: TxRecord[] = [];
  /** Gas used by the transactions recorded so far. */
  gasUsed = 0n;
  /** Set when a transaction run ahead read TIMESTAMP or PREVRANDAO, which are not known yet. */
  private contextRead = false;
  private included = 0;
  /**
   * The EVM's block (header fields for the opcodes), made at the first transaction, as the VM is:
   * an empty block needs none, and making one (an @ethereumjs header, validated) was a tenth of an
   * empty block's execution in a block sync profile.
   */
  private evmBlock: Block | undefined;
  private ctx: BlockContext;
  /** The context is still a run ahead's placeholder: reading its timestamp or mixHash is recorded. */
  private probed: boolean;
  /**
   * The VM, made at the first transaction: an empty block needs none, and making one (the EVM,
   * its opcode table for the hardfork, the precompiles) was most of an empty block's execution.
   */
  private vm: Promise<VM> | undefined;

  private constructor(
    private readonly common: Common,
    readonly state: JournaledState,
    private readonly blockchain: EVMMockBlockchainInterface,
    ctx: BlockContext,
    ahead: boolean,
    private readonly limits: StatelessLimits,
    private readonly plainTransfers: boolean,
  ) {
    this.ctx = ctx;
    this.probed = ahead;
  }

  private get block(): Block {
    this.evmBlock ??= this.probed
      ? makeProbedBlock(this.common, this.ctx, () => {
          this.contextRead = true;
        })
      : makeBlock(this.common, this.ctx);
    return this.evmBlock;
  }

  /**
   * A run over `source`. With `ahead`, the context's timestamp and mixHash are placeholders: a
   * transaction that reads them is not kept by `runAhead`, and `useContext` gives the real ones.
   */
  static async open(
    common: Common,
    source: StateSource,
    blockchain: EVMMockBlockchainInterface,
    ctx: BlockContext,
    limits: StatelessLimits,
    ahead: boolean,
    opts: BlockRunOptions = {},
  ): Promise<BlockRun> {
    return new BlockRun(
      common,
      new JournaledState(source),
      blockchain,
      ctx,
      ahead,
      limits,
      opts.plainTransfers ?? true,
    );
  }

  /** The real block context, for the transactions run from now on. */
  useContext(ctx: BlockContext): void {
    this.ctx = ctx;
    this.probed = false;
    this.evmBlock = undefined;
  }

  /** Runs the block's next transaction (or records why it was rejected). */
  async apply(d: DecodedTx | TxRejectedError, baseFee: bigint): Promise<void> {
    const outcome = await this.execute(d, baseFee);
    if (!(outcome instanceof TxRejectedError)) {
      this.push(outcome);
      return;
    }
    this.push({
      hashHex: d instanceof TxRejectedError ? undefined : d.hashHex,
      result: {
        code: outcome.code,
        data: EMPTY,
        log: outcome.message,
        info: '',
        gasWanted: d instanceof TxRejectedError ? 0n : d.gasLimit,
        gasUsed: 0n,
        events: [],
        codespace: 'evm',
      },
    });
  }

  /** Records a block entry that is not an Ethereum transaction (a dev operation, dev.ts). */
  recordOther(result: ExecTxResult): void {
    this.push({ hashHex: undefined, result });
  }

  /**
   * Runs `d` ahead of the proposal, above a checkpoint of its own. Keeps it only when it executed
   * without reading the unknown context; returns false otherwise, with the state as it was.
   * After a false caused by the context (`contextRead`), nothing more may be run ahead: the
   * transactions after it could depend on it.
   */
  async runAhead(d: DecodedTx, baseFee: bigint): Promise<boolean> {
    await this.state.checkpoint();
    const outcome = await this.execute(d, baseFee);
    if (outcome instanceof TxRejectedError || this.contextRead) {
      await this.state.revert();
      return false;
    }
    this.push(outcome);
    return true;
  }

  /** Whether a transaction run ahead read the block's timestamp or PREVRANDAO. */
  get blocked(): boolean {
    return this.contextRead;
  }

  /** Cuts the run back to its first `n` records, which must all have been run ahead. */
  async truncate(n: number): Promise<void> {
    while (this.records.length > n) {
      const r = this.records.pop()!;
      await this.state.revert();
      if (r.included) {
        this.included--;
        this.gasUsed -= r.included.receipt.gasUsed;
      }
    }
  }

  /** Ends the run's checkpoints: what was run stays. */
  settle(): void {
    this.state.release();
  }

  /**
   * A value transfer from an account without code to an account without code that is no precompile,
   * with no calldata and no access list, applied the way runTx applies it, without the EVM: the sender
   * pays 21,000 gas at the effective gas price and the value and bumps its nonce, the recipient gets
   * the value, the coinbase the tip on 21,000 gas. runTx runs no code for such a call, so its result
   * is exactly this; the EthereumJS machinery around it (journal, warm sets, message, receipt) was
   * most of a transfer's execution on the main thread. Undefined, with nothing written, for any
   * transaction this does not cover: then runTx runs it (and gives any refusal its own words). Not
   * covered, among others: an impersonated sender, an EIP-7702 transaction or sender, a sender,
   * recipient and coinbase that are not three different accounts, and a recipient or coinbase that
   * would end the transaction empty (EIP-161 deletes those; runTx does it).
   * The caller has run preCheck: the nonce matches and the balance covers gas limit x fee cap + value.
   */
  private async plainTransfer(vm: VM, d: DecodedTx): Promise<TxRun | undefined> {
    if (d.impersonated || d.to === null || d.type === 4 || d.minGas !== PLAIN_TRANSFER_GAS) return undefined;
    if (d.dataLength > 0 || d.accessListLength > 0) return undefined;
    const header = this.block.header;
    if (d.gasLimit > header.gasLimit || vm.evm.precompiles.has(d.to)) return undefined;
    const coinbase = toKey(header.coinbase.bytes);
    if (d.sender === d.to || d.sender === coinbase || d.to === coinbase) return undefined;
    const baseFee = header.baseFeePerGas ?? 0n;
    const from = await this.state.readAccount(d.sender);
    if (from === undefined || hasCode(from)) return undefined;
    const to = await this.state.readAccount(d.to);
    if (to !== undefined && hasCode(to)) return undefined;
    const miner = await this.state.readAccount(coinbase);
    const tip = effectiveTip(d.feeCap, d.tipCap, baseFee);
    const paid = PLAIN_TRANSFER_GAS * (baseFee + tip) + d.value;
    const toBalance = (to?.balance ?? 0n) + d.value;
    const minerBalance = (miner?.balance ?? 0n) + PLAIN_TRANSFER_GAS * tip;
    if (from.balance < paid || toBalance > MAX_UINT256 || minerBalance > MAX_UINT256) return undefined;
    const empty = (a: AccountData | undefined, balance: bigint) => balance === 0n && (a?.nonce ?? 0n) === 0n;
    if (empty(to, toBalance) || empty(miner, minerBalance)) return undefined;
    this.state.writeAccount(d.sender, { ...from, nonce: from.nonce + 1n, balance: from.balance - paid });
    this.state.writeAccount(d.to, { ...(to ?? newAccount()), balance: toBalance });
    this.state.writeAccount(coinbase, { ...(miner ?? newAccount()), balance: minerBalance });
    return {
      totalGasSpent: PLAIN_TRANSFER_GAS,
      execResult: { logs: [], returnValue: EMPTY },
      bloom: { bitvector: EMPTY_BLOOM },
    };
  }

  private push(r: TxRecord): void {
    this.records.push(r);
    if (r.included) {
      this.included++;
      this.gasUsed += r.included.receipt.gasUsed;
    }
  }

  private async execute(
    d: DecodedTx | TxRejectedError,
    baseFee: bigint,
  ): Promise<TxRecord | TxRejectedError> {
    if (d instanceof TxRejectedError) return d;
    try {
      checkStateless(d, this.limits);
    } catch (err) {
      return err as TxRejectedError;
    }
    const pre = await preCheck(d, this.state, baseFee);
    if (pre !== undefined) return new TxRejectedError(TxCode.execution, pre);
    // An impersonated contract sends as Hardhat and anvil let it: its code is hidden from runTx's
    // EIP-3607 check only, as for eth_call, and put back whatever runTx did.
    this.vm ??= makeVm(this.common, this.state, this.blockchain);
    const vm = await this.vm;
    let res: TxRun | undefined = this.plainTransfers ? await this.plainTransfer(vm, d) : undefined;
    const plain = res !== undefined;
    if (res === undefined) {
      const sender = d.impersonated ? await this.state.readAccount(d.sender) : undefined;
      const hide = sender !== undefined && hasCode(sender);
      const block = this.block;
      if (hide) this.state.hideSenderCode(d.sender, sender);
      try {
        res = await runTx(vm, {
          tx: d.tx,
          block,
          skipHardForkValidation: true,
          blockGasUsed: this.gasUsed,
        });
      } catch (err) {
        return new TxRejectedError(
          TxCode.execution,
          `transaction rejected by the EVM: ${(err as Error).message.replace(/ \(.*$/, '')}`,
        );
      } finally {
        if (hide) this.state.restoreSenderCode(d.sender, sender.codeHash);
      }
    }
    const ethIndex = this.included;
    const spent = res.totalGasSpent;
    const tip = effectiveTip(d.feeCap, d.tipCap, baseFee);
    const logs = (res.execResult.logs ?? []).map(([address, topics, data]) => ({ address, topics, data }));
    const failed = res.execResult.exceptionError;
    const receipt: StoredReceipt = {
      type: d.type,
      status: failed ? 0 : 1,
      cumulativeGasUsed: this.gasUsed + spent,
      gasUsed: spent,
      effectiveGasPrice: baseFee + tip,
      from: fromHex(d.sender),
      to: d.to ? fromHex(d.to) : null,
      contractAddress: d.to === null && res.createdAddress ? res.createdAddress.bytes : null,
      logs,
      bloom: res.bloom.bitvector,
    };
    const recipient = d.to ? `0x${d.to}` : receipt.contractAddress ? toHex(receipt.contractAddress) : '';
    const evAttrs = [
      attr('amount', d.value.toString()),
      attr('ethereumTxHash', d.hashHex),
      attr('txIndex', String(ethIndex)),
      attr('txGasUsed', spent.toString()),
      attr('txHash', tmHash(d.raw)),
      attr('recipient', recipient),
    ];
    let failLog = '';
    if (failed) {
      const reason = failed.error === 'revert' ? revertReason(res.execResult.returnValue) : undefined;
      failLog =
        failed.error === 'revert'
          ? `execution reverted${reason !== undefined ? `: ${reason}` : ''}`
          : failed.error;
      evAttrs.push(attr('ethereumTxFailed', failLog));
    }
    const events: AbciEvent[] = [{ type: 'ethereum_tx', attributes: evAttrs }];
    if (logs.length > 0) {
      events.push({
        type: 'tx_log',
        attributes: logs.map((l) =>
          attr(
            'txLog',
            JSON.stringify({ address: toHex(l.address), topics: l.topics.map(toHex), data: toHex(l.data) }),
            false,
          ),
        ),
      });
    }
    events.push({
      type: 'message',
      attributes: [
        attr('action', '/noded.evm.v1.MsgEthereumTx'),
        attr('sender', `0x${d.sender}`),
        attr('module', 'evm'),
        attr('txType', String(d.type)),
      ],
    });
    return {
      hashHex: d.hashHex,
      ...(plain ? { plain: true as const } : {}),
      result: {
        code: 0,
        data: res.execResult.returnValue,
        log: failLog,
        info: '',
        gasWanted: d.gasLimit,
        gasUsed: spent,
        events,
        codespace: '',
      },
      included: {
        tx: { raw: d.raw, sender: fromHex(d.sender) },
        receipt,
        bloom: res.bloom.bitvector,
        hash: d.hash,
        tip,
      },
    };
  }
}
