// Senders of the load generator (bench/loadgen.ts), several per thread: each sender's pre-signed transactions go
// out in nonce order over `inflight` raw keep-alive connections (each connection sends the next one when
// the node answered its previous one), at most `maxPending` sent but without a receipt (19 senders x
// 250 fit the node's default pool of 5,000, so a full pool never refuses a sender); one more
// connection polls the receipts of the accepted ones (a JSON-RPC batch of the oldest, at most 100,
// every `pollMs` while none comes back). A transaction is done when its receipt is in our hands.
// Times are absolute (performance.timeOrigin + performance.now()), comparable across threads.
import { parentPort, workerData } from 'node:worker_threads';
import { WireConnection, WireError } from './httpwire.js';

/** What WireConnection says when the server closed the connection under a request. */
const CLOSED = 'connection closed by the server';

export interface SenderJob {
  host: string;
  port: number;
  path: string;
  raws: string[];
  hashes: string[];
  inflight: number;
  maxPending: number;
  pollMs: number;
  /** Stop sending this many ms after the start (sustained load); 0 = send everything. */
  sendForMs: number;
  /** The sender gives up when this many ms pass without a receipt (after its sending time, if any). */
  timeoutMs: number;
}

/** What a sender reports; index i is its i-th transaction. */
export interface SenderReport {
  submitAt: Float64Array;
  /** Receipt in our hands; NaN when none. */
  receiptAt: Float64Array;
  block: Int32Array;
  /** 0 not sent or no receipt, 1 status 1, 2 status 0 (reverted), 3 refused by eth_sendRawTransaction. */
  outcome: Uint8Array;
  firstError?: string;
  timedOut: boolean;
  /** eth_getTransactionReceipt calls made (each item of a batch counts), and how many came back null. */
  receiptCalls?: number;
  receiptMisses?: number;
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const RECEIPTS_PER_BATCH = 100;

async function run(job: SenderJob, startAt: number): Promise<SenderReport> {
  const n = job.raws.length;
  const rep: SenderReport = {
    submitAt: new Float64Array(n).fill(Number.NaN),
    receiptAt: new Float64Array(n).fill(Number.NaN),
    block: new Int32Array(n).fill(-1),
    outcome: new Uint8Array(n),
    timedOut: false,
    receiptCalls: 0,
    receiptMisses: 0,
  };
  const bodies = job.raws.map(
    (raw, i) => `{"jsonrpc":"2.0","id":${i},"method":"eth_sendRawTransaction","params":["${raw}"]}`,
  );
  const conns = Array.from({ length: job.inflight }, () => new WireConnection(job.host, job.port, job.path));
  const poller = new WireConnection(job.host, job.port, job.path);
  await Promise.all(
    [...conns, poller].map((c) => c.post('{"jsonrpc":"2.0","id":0,"method":"eth_chainId","params":[]}')),
  );
  const wait = startAt - now();
  if (wait > 0) await sleep(wait);
  // A stall deadline, not a time limit: it moves on with every receipt, so a long sequential loop on a
  // one-second-block chain runs to its end while a node that stops mining is given up on.
  let deadline = startAt + job.sendForMs + job.timeoutMs;
  const sendUntil = job.sendForMs > 0 ? startAt + job.sendForMs : Number.POSITIVE_INFINITY;

  let next = 0;
  let stopped = false;
  let sendersLeft = conns.length;
  /** Accepted, receipt not yet in hand, in nonce order. */
  const outstanding: number[] = [];
  let wake: (() => void) | undefined;
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const note = (msg: string) => {
    rep.firstError ??= msg;
  };

  /** Sends on the wire, not yet answered: they count in the window with the accepted ones. */
  let sending = 0;
  const sendLoop = async (c: WireConnection) => {
    while (!stopped && next < n) {
      if (now() > sendUntil || now() > deadline) break;
      if (outstanding.length + sending >= job.maxPending) {
        await new Promise<void>((r) => {
          pendingSlot.push(r);
        });
        continue;
      }
      const i = next++;
      rep.submitAt[i] = now();
      let reply: string;
      sending++;
      try {
        reply = await sendOnce(c, i);
      } catch (err) {
        note(`eth_sendRawTransaction: ${(err as Error).message}`);
        stopped = true;
        break;
      } finally {
        sending--;
      }
      if (reply.includes('"error"')) {
        rep.outcome[i] = 3;
        note(`eth_sendRawTransaction refused nonce-ordered transaction ${i}: ${reply.slice(0, 300)}`);
        stopped = true; // later nonces could never be mined
        break;
      }
      outstanding.push(i);
      if (outstanding.length > 1 && outstanding[outstanding.length - 2] > i)
        outstanding.sort((a, b) => a - b);
      poke();
    }
    sendersLeft--;
    poke();
  };
  /**
   * One send. A keep-alive connection the server closed while it was idle (the node's HTTP server
   * closes them after 5 s, which a sender waiting for a free slot in a slow node's window reaches)
   * may take the request with it: it is sent once more on a new connection. The first may have
   * reached the node, so the second's "already known" (still waiting) or "nonce too low" (since
   * mined: the sender's nonces are this thread's alone) counts as accepted.
   */
  const sendOnce = async (c: WireConnection, i: number): Promise<string> => {
    try {
      return await c.post(bodies[i]);
    } catch (err) {
      if (!(err instanceof WireError) || err.message !== CLOSED) throw err;
      const again = await c.post(bodies[i]);
      return /already known|nonce too low/.test(again)
        ? `{"jsonrpc":"2.0","id":${i},"result":"${job.hashes[i]}"}`
        : again;
    }
  };
  const pendingSlot: Array<() => void> = [];
  const freeSlots = () => {
    while (pendingSlot.length > 0 && outstanding.length + sending < job.maxPending) pendingSlot.shift()?.();
  };

  const pollLoop = async () => {
    for (;;) {
      if (now() > deadline) {
        rep.timedOut = outstanding.length > 0 || (!stopped && next < n && job.sendForMs === 0);
        break;
      }
      if (outstanding.length === 0) {
        if (sendersLeft === 0) break;
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, job.pollMs);
        });
        continue;
      }
      const chunk = outstanding.slice(0, RECEIPTS_PER_BATCH);
      const body = `[${chunk.map((i) => `{"jsonrpc":"2.0","id":${i},"method":"eth_getTransactionReceipt","params":["${job.hashes[i]}"]}`).join(',')}]`;
      let replies: Array<{
        id: number;
        result?: { status?: string; blockNumber?: string } | null;
        error?: unknown;
      }>;
      try {
        replies = JSON.parse(await poller.post(body));
      } catch (err) {
        note(`eth_getTransactionReceipt: ${(err as Error).message}`);
        await sleep(job.pollMs);
        continue;
      }
      const at = now();
      let got = 0;
      rep.receiptCalls = (rep.receiptCalls ?? 0) + chunk.length;
      for (const r of Array.isArray(replies) ? replies : []) {
        if (r.error) note(`eth_getTransactionReceipt: ${JSON.stringify(r.error).slice(0, 200)}`);
        const res = r.result;
        if (!res || typeof r.id !== 'number') continue;
        rep.receiptAt[r.id] = at;
        rep.block[r.id] = res.blockNumber ? Number.parseInt(res.blockNumber, 16) : -1;
        rep.outcome[r.id] = res.status === '0x1' ? 1 : 2;
        got++;
      }
      rep.receiptMisses = (rep.receiptMisses ?? 0) + chunk.length - got;
      if (got > 0) {
        deadline = Math.max(deadline, at + job.timeoutMs);
        for (let k = outstanding.length - 1; k >= 0; k--) {
          if (rep.outcome[outstanding[k]] !== 0) outstanding.splice(k, 1);
        }
        freeSlots();
      } else {
        await sleep(job.pollMs);
      }
    }
    stopped = true;
    for (const r of pendingSlot.splice(0)) r();
  };

  await Promise.all([...conns.map(sendLoop), pollLoop()]);
  for (const c of [...conns, poller]) c.close();
  return rep;
}

if (parentPort) {
  const port = parentPort;
  const jobs = workerData as SenderJob[];
  port.postMessage({ type: 'ready' });
  port.once('message', (m: { startAt: number }) => {
    Promise.all(jobs.map((job) => run(job, m.startAt))).then(
      (reps) => port.postMessage({ type: 'done', reps }),
      (err: Error) => port.postMessage({ type: 'failed', message: err.stack ?? err.message }),
    );
  });
}
