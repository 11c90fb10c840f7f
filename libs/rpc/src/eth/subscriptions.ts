// One WebSocket connection's state: its eth_subscribe subscriptions, liveness for ping/pong, and a
// send path that disconnects a subscriber whose unsent backlog passes ws_max_buffered_bytes.

import type { Logger } from '@noded/types';
import type { WebSocket } from 'ws';
import type { LogMatch } from './filters.js';

export type SubscriptionKind = 'newHeads' | 'logs' | 'newPendingTransactions' | 'syncing';

export interface Subscription {
  id: string;
  kind: SubscriptionKind;
  /** logs: address/topic criteria. */
  match?: LogMatch;
  /** newPendingTransactions: full transaction objects instead of hashes. */
  fullTx?: boolean;
  /** syncing: the last status sent (JSON), to notify only on change. */
  lastSyncing?: string;
  /**
   * newHeads, logs: the chain's latest height when the subscription was installed; only later blocks
   * are delivered. A client that read block H and then subscribed is not sent H: an rpc-edge hears of
   * a height a little after its state-store already answers reads at it (docs/cluster.md "rpc-edge").
   */
  fromHeight?: bigint;
  /** Notifications wait here until the eth_subscribe reply itself has been sent. */
  backlog: string[] | null;
}

const MAX_BACKLOG = 1_000;

/**
 * Pings a WebSocket peer may leave unanswered before it is dropped: with 2, a peer is dropped when
 * two pings in a row got no pong (two to three ws_ping_interval after it went silent), so one
 * pong delayed past the next ping by a stalled event loop (the node's or the client's) does not
 * cut a healthy client.
 */
export const MAX_MISSED_PONGS = 2;

export class WsSession {
  readonly subs = new Map<string, Subscription>();
  /** Pings sent since the last pong: the server drops the peer at MAX_MISSED_PONGS. */
  unanswered = 0;
  closed = false;

  constructor(
    private readonly ws: WebSocket,
    private readonly maxBufferedBytes: number,
    private readonly logger: Logger,
    readonly remote: string,
  ) {}

  /** Sends one text frame; false (and the connection dropped) when the peer does not keep up. */
  send(text: string): boolean {
    if (this.closed || this.ws.readyState !== this.ws.OPEN) return false;
    if (this.maxBufferedBytes > 0 && this.ws.bufferedAmount > this.maxBufferedBytes) {
      this.logger.warn(
        { remote: this.remote, bufferedBytes: this.ws.bufferedAmount, limit: this.maxBufferedBytes },
        'disconnecting slow WebSocket subscriber (ws_max_buffered_bytes exceeded)',
      );
      this.terminate();
      return false;
    }
    this.ws.send(text);
    return true;
  }

  /** Sends an eth_subscription notification; `resultJson` is the already serialised result. */
  notify(sub: Subscription, resultJson: string): boolean {
    const text = `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${sub.id}","result":${resultJson}}}`;
    if (sub.backlog !== null) {
      if (sub.backlog.length < MAX_BACKLOG) sub.backlog.push(text);
      return true;
    }
    return this.send(text);
  }

  /** Starts delivery once the subscription id has reached the client. */
  activate(id: string): void {
    const sub = this.subs.get(id);
    if (sub === undefined || sub.backlog === null) return;
    const queued = sub.backlog;
    sub.backlog = null;
    for (const text of queued) if (!this.send(text)) return;
  }

  ping(): void {
    if (this.closed) return;
    this.unanswered += 1;
    try {
      this.ws.ping();
    } catch {
      // Not open (yet or any more): it counts as unanswered, like a ping that got no pong.
    }
  }

  terminate(): void {
    this.closed = true;
    this.subs.clear();
    this.ws.terminate();
  }
}
