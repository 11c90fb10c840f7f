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
import { EMPTY, fromHex, toHex } from './bytes.js';
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
import { hasCode } from './state/account.js';
import { JournaledState, type StateSource } from './state/journaled.js';
import { checkStateless, type DecodedTx, type StatelessLimits, TxCode, TxRejectedError } from './txs.js';

export function attr(key: string, value: string, index = true) {
  return { key, value, index };
}

/** CometBFT's transaction hash: SHA-256 of the bytes, upper-case hex. */
function tmHash(raw: Uint8Array): string {
  return Buffer.from(sha256(raw)).toString('hex').toUpperCase();
}

/** What one transaction of the block produced. */
export interface TxRecord {
  /** The transaction's hash (lowercase 0x hex), or undefined when it did not decode. */
  hashHex: string | undefined;
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
  ): Promise<BlockRun> {
    return new BlockRun(common, new JournaledState(source), blockchain, ctx, ahead, limits);
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
    const sender = d.impersonated ? await this.state.readAccount(d.sender) : undefined;
    const hide = sender !== undefined && hasCode(sender);
    const block = this.block;
    if (hide) this.state.hideSenderCode(d.sender, sender);
    let res: Awaited<ReturnType<typeof runTx>>;
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
