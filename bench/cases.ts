// The transaction loads of one run, derived from the options alone (pure: test/bench checks them):
// bursts of value and ERC-20 transfers from 1, 8 and 19 senders, sequential per sender (one
// eth_sendRawTransaction in flight) and pipelined (several); one sender's send-receipt-next loop; a
// sustained load of a fixed sending time; and the generator against the canned server.
import type { BenchOptions, TxKind, WorkloadName } from './args.js';

/** The senders the dev mnemonic funds beside the deployer (accounts 1..19). */
export const MAX_SENDERS = 19;

export interface LoadCase {
  /** Stable key of the case in the JSON and the table. */
  id: string;
  /** What the table calls it. */
  label: string;
  workload: Extract<WorkloadName, 'ceiling' | 'load' | 'loop' | 'sustained'>;
  kind: TxKind;
  senders: number;
  inflight: number;
  maxPending: number;
  perSender: number;
  /** Sustained and ceiling: sending stops after this many ms; 0 = a burst of every transaction. */
  sendForMs: number;
}

const KIND_LABEL: Record<TxKind, string> = { transfer: 'value transfers', erc20: 'ERC-20 transfers' };

export function kindLabel(kind: TxKind): string {
  return KIND_LABEL[kind];
}

export function loadCases(o: BenchOptions): LoadCase[] {
  const out: LoadCase[] = [];
  const w = o.workloads;
  const pipelined = Math.max(...o.inflight);
  if (w.includes('ceiling')) {
    const perSender = Math.ceil((o.sustainedRate * o.ceilingSeconds * 5) / MAX_SENDERS);
    out.push({
      id: `ceiling-transfer-${MAX_SENDERS}x${pipelined}`,
      label: `generator vs canned server, ${MAX_SENDERS} senders x ${pipelined} in flight`,
      workload: 'ceiling',
      kind: 'transfer',
      senders: MAX_SENDERS,
      inflight: pipelined,
      maxPending: o.maxPending,
      perSender,
      sendForMs: o.ceilingSeconds * 1000,
    });
  }
  if (w.includes('loop')) {
    out.push({
      id: `loop-transfer-${o.loop}`,
      label: `sequential loop of ${o.loop} transfers (send, receipt, next)`,
      workload: 'loop',
      kind: 'transfer',
      senders: 1,
      inflight: 1,
      maxPending: 1,
      perSender: o.loop,
      sendForMs: 0,
    });
  }
  if (w.includes('load')) {
    for (const kind of o.kinds) {
      for (const senders of o.loadSenders) {
        for (const inflight of o.inflight) {
          out.push({
            id: `load-${kind}-${senders}x${inflight}`,
            label: `${KIND_LABEL[kind]}, ${senders} sender${senders > 1 ? 's' : ''} x ${inflight} in flight, ${o.perSender} each`,
            workload: 'load',
            kind,
            senders,
            inflight,
            maxPending: o.maxPending,
            perSender: o.perSender,
            sendForMs: 0,
          });
        }
      }
    }
  }
  if (w.includes('sustained')) {
    for (const kind of o.kinds) {
      out.push({
        id: `sustained-${kind}-${MAX_SENDERS}x${pipelined}`,
        label: `${KIND_LABEL[kind]} sustained ${o.sustainedSeconds} s, ${MAX_SENDERS} senders x ${pipelined} in flight`,
        workload: 'sustained',
        kind,
        senders: MAX_SENDERS,
        inflight: pipelined,
        maxPending: o.maxPending,
        perSender: Math.ceil((o.sustainedRate * o.sustainedSeconds) / MAX_SENDERS),
        sendForMs: o.sustainedSeconds * 1000,
      });
    }
  }
  return out;
}

/** Distinct senders any case needs (the token's funding covers them all). */
export function sendersNeeded(cases: LoadCase[], o: BenchOptions): number {
  return Math.max(o.senders, ...cases.filter((c) => c.workload !== 'ceiling').map((c) => c.senders), 1);
}
