// What a developer at a terminal sees while the node runs (`log_format = "plain"` on a TTY): each
// transaction's hash, gas used and status and the block that holds it, the way anvil prints them,
// and one line of progress every 10 s (height, blocks and transactions since the last line). The
// log itself goes to the log file (`noded logs`); the terminal gets only its warnings and errors.
import type { EthChain, EthReceipt, NodeEvent } from '@noded/types';

export const PROGRESS_EVERY_MS = 10_000;

/** anvil's block time format: "Wed, 25 Nov 2026 15:31:02 +0000". */
function blockTime(seconds: bigint): string {
  return new Date(Number(seconds) * 1000).toUTCString().replace('GMT', '+0000');
}

/** The lines of one block that holds transactions. */
export function blockLines(
  block: { number: bigint; hash: string; timestamp: bigint },
  receipts: EthReceipt[],
): string[] {
  const out: string[] = [];
  for (const r of receipts) {
    out.push('', `    Transaction: ${r.transactionHash}`);
    if (r.contractAddress) out.push(`    Contract created: ${r.contractAddress}`);
    out.push(`    Gas used: ${r.gasUsed}`, `    Status: ${r.status === 1 ? 'success' : 'reverted'}`);
  }
  out.push(
    '',
    `    Block Number: ${block.number}`,
    `    Block Hash: ${block.hash}`,
    `    Block Time: "${blockTime(block.timestamp)}"`,
    '',
  );
  return out;
}

/** Starts printing; returns the function that stops it. */
export function startTerminalFeed(deps: {
  bus: { subscribe(listener: (ev: NodeEvent) => void): () => void };
  chain: Pick<EthChain, 'getBlockReceipts' | 'latestHeight'>;
  write: (text: string) => void;
}): () => void {
  let blocks = 0;
  let txs = 0;
  // Blocks are printed in order: each waits for the previous one's receipts.
  let printing: Promise<void> = Promise.resolve();
  const unsubscribe = deps.bus.subscribe((ev) => {
    if (ev.kind !== 'EthNewHead') return;
    blocks++;
    const b = ev.block;
    if (b.transactions.length === 0) return;
    txs += b.transactions.length;
    printing = printing.then(async () => {
      try {
        const receipts = await deps.chain.getBlockReceipts(b.number);
        deps.write(`${blockLines(b, receipts).join('\n')}\n`);
      } catch (err) {
        deps.write(`    Block Number: ${b.number} (receipts unavailable: ${(err as Error).message})\n`);
      }
    });
  });
  const timer = setInterval(() => {
    const time = new Date().toISOString().slice(11, 19);
    deps.write(
      `${time}  height ${deps.chain.latestHeight()}  ${blocks} block${blocks === 1 ? '' : 's'}, ${txs} transaction${txs === 1 ? '' : 's'} in the last ${PROGRESS_EVERY_MS / 1000} s\n`,
    );
    blocks = 0;
    txs = 0;
  }, PROGRESS_EVERY_MS);
  timer.unref();
  return () => {
    unsubscribe();
    clearInterval(timer);
  };
}
