// Kill -9 storms on a real network: 4 validators from `noded testnet`, transfers flowing, a random
// node killed with SIGKILL at a random moment and restarted (at most one down at a time), many
// times. Afterwards every node must be at the tip with the same block hash at every height, every
// receipt seen before a kill must still be there on every node, and no validator may have signed
// two different blocks at one height (no duplicate-vote evidence, no conflicting-votes log line,
// every commit signed only for its block). Used by storm.test.ts (a short storm in CI) and by
// storm-cli.ts (`npm run storm -- --kills 100`, recorded in docs/reliability.md).
import { JsonRpcProvider, type TransactionReceipt, Wallet } from 'ethers';
import { prng } from '../prng.js';
import { DEV_KEYS } from './harness.js';
import { createNetwork, heightOf, NETWORK_UP_MS, type Network, rpc, waitHeight } from './network.js';

export interface StormOptions {
  kills: number;
  /** Longest wait before a kill and before the restart, ms. */
  maxPauseMs?: number;
  /** Deterministic choice of nodes and pauses. */
  seed?: number;
  log?: (line: string) => void;
}

export interface StormReport {
  kills: number;
  killed: number[];
  tip: number;
  receiptsChecked: number;
  transfersSent: number;
  blocksWithEvidence: number;
  conflictingVoteLines: number;
  seconds: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The receipt of `hash` once it is in a block, or null after `ms`. Not ethers' waitForTransaction:
 * when the node is killed before its first getBlockNumber answers, that rejection escapes its
 * promise executor as an unhandled rejection, which fails the whole test file.
 */
async function receiptOf(
  provider: JsonRpcProvider,
  hash: string,
  ms: number,
): Promise<TransactionReceipt | null> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const r = await provider.getTransactionReceipt(hash);
    if (r) return r;
    await sleep(200);
  }
  return null;
}

export async function runStorm(opts: StormOptions): Promise<StormReport> {
  const log = opts.log ?? (() => {});
  const rand = prng(opts.seed ?? 1);
  const maxPause = opts.maxPauseMs ?? 3000;
  const started = Date.now();
  const net: Network = createNetwork({ validators: 4 });
  const all = [0, 1, 2, 3];
  const receipts = new Map<string, string>();
  let sent = 0;
  let flowing = true;
  const down = new Set<number>();
  // A node's output is dropped when it restarts: count its lines before each restart and at the end.
  const conflictLines = (text: string) => text.match(/conflicting votes from one validator/g)?.length ?? 0;
  let conflicts = 0;
  try {
    for (const i of all) net.start(i);
    await waitHeight(net, all, 2, NETWORK_UP_MS);
    log(`network up: ${net.nodes.map((n) => n.ip).join(' ')}`);

    // Transfers from 4 dev accounts, each through a node that is up, receipts remembered.
    const flow = (async () => {
      const nonces = new Map<number, number>();
      while (flowing) {
        const s = sent % 4;
        const target = all.find((i) => !down.has((s + i) % 4))!;
        const node = net.nodes[(s + target) % 4]!;
        const provider = new JsonRpcProvider(node.ethUrl, undefined, {
          staticNetwork: true,
          cacheTimeout: -1,
        });
        try {
          const wallet = new Wallet(DEV_KEYS[s]!, provider);
          const nonce = nonces.get(s) ?? (await provider.getTransactionCount(wallet.address, 'pending'));
          const tx = await wallet.sendTransaction({ to: Wallet.createRandom().address, value: 1n, nonce });
          nonces.set(s, nonce + 1);
          sent++;
          const r = await receiptOf(provider, tx.hash, 20_000);
          if (r) receipts.set(tx.hash, r.blockHash);
        } catch {
          // The node went down under us, or a nonce raced a restart: ask again next time.
          nonces.delete(s);
          await sleep(200);
        } finally {
          provider.destroy();
        }
      }
    })();

    const killed: number[] = [];
    for (let k = 0; k < opts.kills; k++) {
      await sleep(500 + Math.floor(rand() * maxPause));
      const i = Math.floor(rand() * 4);
      down.add(i);
      await net.kill(i, 'SIGKILL');
      killed.push(i);
      conflicts += conflictLines(net.nodes[i]!.output);
      await sleep(300 + Math.floor(rand() * maxPause));
      net.start(i);
      // Back: answering and within 2 heights of the others, before the next kill.
      const others = all.filter((x) => x !== i);
      await waitHeight(
        net,
        [i],
        Math.max(0, ...(await Promise.all(others.map((o) => heightOf(net.nodes[o]!))))) - 2,
        120_000,
      );
      down.delete(i);
      log(`kill ${k + 1}/${opts.kills}: node${i} killed and back at height ${await heightOf(net.nodes[i]!)}`);
    }
    flowing = false;
    await flow;

    // Every node at one tip, then every height compared.
    const tip = Math.max(...(await Promise.all(all.map((i) => heightOf(net.nodes[i]!))))) + 2;
    await waitHeight(net, all, tip, 120_000);
    for (let lo = 1; lo <= tip; lo += 20) {
      const hi = Math.min(tip, lo + 19);
      const pages = await Promise.all(
        all.map((i) => rpc(net.nodes[i]!.cometUrl, `/blockchain?minHeight=${lo}&maxHeight=${hi}`)),
      );
      const ids = pages.map((p) =>
        (p.block_metas as Array<{ block_id: { hash: string } }>).map((m) => m.block_id.hash).join(','),
      );
      if (new Set(ids).size !== 1) throw new Error(`nodes disagree between heights ${lo} and ${hi}`);
    }
    // Receipts seen before kills are still there, in the same block, on every node.
    let checked = 0;
    for (const [hash, blockHash] of receipts) {
      for (const i of all) {
        const provider = new JsonRpcProvider(net.nodes[i]!.ethUrl, undefined, {
          staticNetwork: true,
          cacheTimeout: -1,
        });
        const r = await provider.getTransactionReceipt(hash);
        provider.destroy();
        if (!r || r.blockHash !== blockHash) throw new Error(`node${i} lost the receipt of ${hash}`);
      }
      checked++;
    }
    // No validator signed two different blocks at one height: no evidence committed, no conflict seen.
    let withEvidence = 0;
    for (let h = 1; h <= tip; h++) {
      const b = await rpc(net.nodes[0]!.cometUrl, `/block?height=${h}`);
      const ev = ((b.block as Record<string, unknown>).evidence as { evidence: unknown[] }).evidence;
      if (ev.length > 0) withEvidence++;
    }
    for (const n of net.nodes) conflicts += conflictLines(n.output);
    return {
      kills: opts.kills,
      killed,
      tip,
      receiptsChecked: checked,
      transfersSent: sent,
      blocksWithEvidence: withEvidence,
      conflictingVoteLines: conflicts,
      seconds: Math.round((Date.now() - started) / 1000),
    };
  } finally {
    flowing = false;
    await net.cleanup();
  }
}
