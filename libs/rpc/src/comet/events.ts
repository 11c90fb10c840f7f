// CometBFT's event bus as the RPC sees it: NodeEvents from the node turned into CometBFT events
// (type name, "tendermint/event/..." data, flattened "type.key" attributes) and fanned out to
// subscriptions selected by the query language.
import type { EventBus, Logger, NodeEvent } from '@noded/types';
import {
  blockIdJson,
  blockJson,
  eventJson,
  evidenceJson,
  execTxResultJson,
  finalizeBlockJson,
  flattenEvents,
  headerJson,
  type JsonObject,
  txHash,
  validatorFromUpdateJson,
  voteJson,
} from './encode.js';
import type { Query } from './query.js';
import { b64, hexUpper, str } from './wire.js';

/** One CometBFT event ready for subscribers. `data()` builds the JSON once, on first use. */
export interface CometEvent {
  /** tm.event value: NewBlock, NewBlockHeader, NewBlockEvents, NewEvidence, Tx, NewRound, ... */
  type: string;
  /** Flattened attributes including tm.event (the `events` field of the message). */
  events: Record<string, string[]>;
  /** {"type": "tendermint/event/...", "value": ...} */
  data(): JsonObject;
  /** The node event it came from. */
  source: NodeEvent;
}

/** Receives the events of one subscription. */
export interface SubscriptionSink {
  deliver(event: CometEvent): void;
}

/** Subscription refusals, with CometBFT's messages. */
export class SubscriptionError extends Error {
  constructor(
    readonly code: 'ALREADY_SUBSCRIBED' | 'NOT_FOUND',
    message: string,
  ) {
    super(message);
    this.name = 'SubscriptionError';
  }
}

function memo(build: () => JsonObject): () => JsonObject {
  let cached: JsonObject | undefined;
  return () => {
    cached ??= build();
    return cached;
  };
}

const ROUND_STEPS = [
  'NewHeight',
  'NewRound',
  'Propose',
  'Prevote',
  'PrevoteWait',
  'Precommit',
  'PrecommitWait',
  'Commit',
];

/** CometBFT's step name ("RoundStepPropose") from whatever spelling the engine uses. */
export function roundStepName(step: string): string {
  if (step.startsWith('RoundStep')) return step;
  const found = ROUND_STEPS.find((s) => s.toLowerCase() === step.replace(/[_\s-]/g, '').toLowerCase());
  return found ? `RoundStep${found}` : step;
}

/** CometBFT's numeric RoundStepType (1 NewHeight ... 8 Commit); 0 if unknown. */
export function roundStepNumber(step: string): number {
  const name = roundStepName(step).replace(/^RoundStep/, '');
  if (/^\d+$/.test(step)) return Number(step);
  return ROUND_STEPS.indexOf(name) + 1;
}

function simple(
  type: string,
  source: NodeEvent,
  extra: Record<string, string[]>,
  value: () => JsonObject,
): CometEvent {
  return {
    type,
    source,
    events: { ...extra, 'tm.event': [type] },
    data: memo(() => ({
      type: `tendermint/event/${type === 'NewRoundStep' ? 'RoundState' : type}`,
      value: value(),
    })),
  };
}

/** Converts a NodeEvent into the CometBFT events it stands for, in CometBFT's firing order. */
export function toCometEvents(ev: NodeEvent): CometEvent[] {
  switch (ev.kind) {
    case 'NewBlock': {
      const height = ev.block.header.height;
      const blockEvents = () => flattenEvents(ev.result.events, { 'block.height': [String(height)] });
      const out: CometEvent[] = [
        simple('NewBlock', ev, blockEvents(), () => ({
          block: blockJson(ev.block),
          block_id: blockIdJson(ev.blockId),
          result_finalize_block: finalizeBlockJson(ev.result),
        })),
        simple('NewBlockHeader', ev, { 'block.height': [String(height)] }, () => ({
          header: headerJson(ev.block.header),
        })),
        simple('NewBlockEvents', ev, blockEvents(), () => ({
          height: str(height),
          events: ev.result.events.map(eventJson),
          num_txs: str(ev.block.data.txs.length),
        })),
      ];
      for (const evidence of ev.block.evidence) {
        out.push(
          simple('NewEvidence', ev, {}, () => ({ height: str(height), evidence: evidenceJson(evidence) })),
        );
      }
      return out;
    }
    case 'Tx': {
      const events = flattenEvents(ev.result.events);
      events['tx.hash'] = [hexUpper(txHash(ev.tx))];
      events['tx.height'] = [String(ev.height)];
      return [
        simple('Tx', ev, events, () => {
          // abci.TxResult through cmtjson: omitempty drops a zero index and empty tx.
          const txResult: JsonObject = { height: str(ev.height) };
          if (ev.index !== 0) txResult.index = ev.index;
          if (ev.tx.length > 0) txResult.tx = b64(ev.tx);
          txResult.result = execTxResultJson(ev.result);
          return { TxResult: txResult };
        }),
      ];
    }
    case 'NewRound':
      return [
        simple('NewRound', ev, {}, () => ({
          height: str(ev.height),
          round: ev.round,
          step: 'RoundStepNewRound',
          proposer: { address: hexUpper(ev.proposerAddress), index: ev.proposerIndex },
        })),
      ];
    case 'NewRoundStep':
      return [
        simple('NewRoundStep', ev, {}, () => ({
          height: str(ev.height),
          round: ev.round,
          step: roundStepName(ev.step),
        })),
      ];
    case 'CompleteProposal':
      return [
        simple('CompleteProposal', ev, {}, () => ({
          height: str(ev.height),
          round: ev.round,
          step: 'RoundStepPropose',
          block_id: blockIdJson(ev.blockId),
        })),
      ];
    case 'Vote':
      return [simple('Vote', ev, {}, () => ({ Vote: voteJson(ev.vote) }))];
    case 'ValidatorSetUpdates':
      return [
        simple('ValidatorSetUpdates', ev, {}, () => ({
          validator_updates: ev.updates.map(validatorFromUpdateJson),
        })),
      ];
    default:
      return []; // Ethereum events belong to the :8546 subscriptions.
  }
}

interface Entry {
  query: Query;
  sink: SubscriptionSink;
}

/**
 * Subscriptions keyed by client (the remote address, as CometBFT) and canonical query text. Listens
 * to the EventBus while started.
 */
export class EventHub {
  private readonly clients = new Map<string, Map<string, Entry>>();
  private readonly queue: NodeEvent[] = [];
  private unsubscribeBus: (() => void) | undefined;

  constructor(
    private readonly bus: EventBus,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.unsubscribeBus ??= this.bus.subscribe((ev) => this.enqueue(ev));
  }

  stop(): void {
    this.unsubscribeBus?.();
    this.unsubscribeBus = undefined;
    this.clients.clear();
    this.queue.length = 0;
  }

  /**
   * Bus listeners must not block the publisher (consensus): events are rendered and sent on the
   * next turn of the event loop, in publication order.
   */
  private enqueue(ev: NodeEvent): void {
    if (this.clients.size === 0) return;
    this.queue.push(ev);
    if (this.queue.length === 1) {
      setImmediate(() => {
        const batch = this.queue.splice(0);
        for (const e of batch) {
          try {
            this.publish(e);
          } catch (err) {
            this.logger.error({ err: (err as Error).message, kind: e.kind }, 'could not render event');
          }
        }
      });
    }
  }

  /** Number of distinct clients holding at least one subscription. */
  numClients(): number {
    return this.clients.size;
  }

  numClientSubscriptions(client: string): number {
    return this.clients.get(client)?.size ?? 0;
  }

  subscribe(client: string, query: Query, sink: SubscriptionSink): void {
    let subs = this.clients.get(client);
    const key = query.toString();
    if (subs?.has(key)) throw new SubscriptionError('ALREADY_SUBSCRIBED', 'already subscribed');
    if (!subs) {
      subs = new Map();
      this.clients.set(client, subs);
    }
    subs.set(key, { query, sink });
  }

  unsubscribe(client: string, query: Query): void {
    const subs = this.clients.get(client);
    if (!subs?.delete(query.toString())) throw new SubscriptionError('NOT_FOUND', 'subscription not found');
    if (subs.size === 0) this.clients.delete(client);
  }

  unsubscribeAll(client: string): void {
    if (!this.clients.delete(client)) throw new SubscriptionError('NOT_FOUND', 'subscription not found');
  }

  /** Delivers a node event to every matching subscription. */
  publish(ev: NodeEvent): void {
    if (this.clients.size === 0) return;
    for (const cometEvent of toCometEvents(ev)) {
      for (const subs of [...this.clients.values()]) {
        for (const entry of [...subs.values()]) {
          if (!entry.query.matches(cometEvent.events)) continue;
          try {
            entry.sink.deliver(cometEvent);
          } catch (err) {
            this.logger.warn({ err: (err as Error).message, event: cometEvent.type }, 'subscriber failed');
          }
        }
      }
    }
  }
}
