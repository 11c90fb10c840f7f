// The light channel (/noded/light/1): light nodes ask full nodes for light blocks (signed header +
// validator set), one request per message, answered on the same channel:
//
//   request   [0x01][id u32][height u64]                     height 0: the latest stored
//   response  [0x02][id u32][n u32][light block: n bytes][next height's validator set, may be empty]
//   error     [0x03][id u32][reason, UTF-8, at most 1 KiB]
//
// The light block is CometBFT's tendermint.types.LightBlock protobuf, the validator set its
// ValidatorSet (libs/consensus light codec). A full node answers from its block store; it never
// decides what a light node should trust (the light client verifies everything it receives).
// A malformed request is answered with an error and counts against the peer: the third one
// disconnects it, as does a frame of unknown type. Requests in flight per peer are limited.
import {
  decodeLightBlock,
  decodeValidatorSet,
  encodeLightBlock,
  encodeValidatorSet,
  type FetchedLightBlock,
} from '@noded/consensus';
import type { BlockMeta, Commit, Logger, Validator } from '@noded/types';
import { P2PError } from './errors.js';
import type { ChannelHost } from './host.js';

export const LIGHT_PROTOCOL = '/noded/light/1';

const REQUEST = 1;
const RESPONSE = 2;
const ERROR = 3;
const REQUEST_BYTES = 13;
const MAX_REASON_BYTES = 1024;
/** Largest message: a light block of 10,000 validators and the next set fit well below it. */
export const MAX_LIGHT_MESSAGE_BYTES = 8 * 1024 * 1024;
/** Malformed requests a peer may send before it is disconnected. */
export const MAX_BAD_REQUESTS = 3;
/** Requests of one peer served at once; more are answered with an error. */
export const MAX_REQUESTS_IN_FLIGHT = 8;

/** What a full node serves light blocks from. */
export interface LightBlockSource {
  /** The light block of `height` ('latest': the highest stored); undefined when not stored. */
  lightBlock(height: number | 'latest'): Promise<FetchedLightBlock | undefined>;
  /** Stored heights, for the error message of a height outside them. */
  range(): { base: number; latest: number };
}

/** The block store reads a light block is made of (ConsensusRuntime and NodeReader have them). */
export interface BlockStoreReads {
  blockStoreBase(): number;
  blockStoreHeight(): number;
  loadBlockMeta(height: number): Promise<BlockMeta | undefined>;
  loadCommit(height: number): Promise<{ commit: Commit; canonical: boolean } | undefined>;
  validators(height: number): Promise<Validator[] | undefined>;
}

/** A full node's source: header from the block meta, its commit, validators of h and of h + 1. */
export function lightBlockSourceOf(store: BlockStoreReads): LightBlockSource {
  return {
    range: () => ({ base: store.blockStoreBase(), latest: store.blockStoreHeight() }),
    async lightBlock(height) {
      const h = height === 'latest' ? store.blockStoreHeight() : height;
      if (h <= 0 || h < store.blockStoreBase() || h > store.blockStoreHeight()) return undefined;
      const [meta, commit, validators, next] = await Promise.all([
        store.loadBlockMeta(h),
        store.loadCommit(h),
        store.validators(h),
        store.validators(h + 1),
      ]);
      if (!meta || !commit || !validators) return undefined;
      return { block: { header: meta.header, commit: commit.commit, validators }, nextValidators: next };
    },
  };
}

export type LightRequestErrorCode =
  | 'NOT_CONNECTED'
  | 'TIMEOUT'
  | 'DISCONNECTED'
  /** The peer answered with an error (its reason is the message). */
  | 'REFUSED'
  /** The peer's answer does not decode. */
  | 'INVALID_RESPONSE';

export class LightRequestError extends Error {
  constructor(
    readonly code: LightRequestErrorCode,
    readonly peer: string,
    message: string,
  ) {
    super(message);
    this.name = 'LightRequestError';
  }
}

export interface LightChannelOptions {
  /** Set on full nodes: the channel then answers requests. */
  source?: LightBlockSource;
  logger: Logger;
  /** Time to wait for an answer (default 5 s). */
  requestTimeoutMs?: number;
}

interface Pending {
  peer: string;
  height: number | 'latest';
  resolve(v: FetchedLightBlock): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function header(type: number, id: number, bodyBytes: number): { out: Uint8Array; view: DataView } {
  const out = new Uint8Array(5 + bodyBytes);
  const view = new DataView(out.buffer);
  out[0] = type;
  view.setUint32(1, id);
  return { out, view };
}

export function encodeLightRequest(id: number, height: number | 'latest'): Uint8Array {
  const { out, view } = header(REQUEST, id, 8);
  view.setBigUint64(5, height === 'latest' ? 0n : BigInt(height));
  return out;
}

function encodeError(id: number, reason: string): Uint8Array {
  let bytes = enc.encode(reason);
  if (bytes.length > MAX_REASON_BYTES) bytes = bytes.subarray(0, MAX_REASON_BYTES);
  const { out } = header(ERROR, id, bytes.length);
  out.set(bytes, 5);
  return out;
}

function encodeResponse(f: FetchedLightBlock): Uint8Array {
  const lb = encodeLightBlock(f.block);
  const next =
    f.nextValidators && f.nextValidators.length > 0
      ? encodeValidatorSet(f.nextValidators)
      : new Uint8Array(0);
  const { out, view } = header(RESPONSE, 0, 4 + lb.length + next.length);
  view.setUint32(5, lb.length);
  out.set(lb, 9);
  out.set(next, 9 + lb.length);
  return out;
}

export class LightChannel {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly strikes = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  private readonly log: Logger;
  private readonly offPeers: () => void;
  private closed = false;

  constructor(
    private readonly host: ChannelHost,
    private readonly opts: LightChannelOptions,
  ) {
    this.log = opts.logger;
    host.register({
      protocol: LIGHT_PROTOCOL,
      maxMessageBytes: MAX_LIGHT_MESSAGE_BYTES,
      // A throw here disconnects the peer with the error as the reason.
      onMessage: (peer, payload) => this.receive(peer, payload),
    });
    this.offPeers = host.onPeer({
      up: () => {},
      down: (peer) => {
        this.strikes.delete(peer);
        this.inFlight.delete(peer);
        for (const [id, p] of this.pending) {
          if (p.peer !== peer) continue;
          this.pending.delete(id);
          clearTimeout(p.timer);
          p.reject(new LightRequestError('DISCONNECTED', peer, `peer ${peer} disconnected before answering`));
        }
      },
    });
  }

  close(): void {
    this.closed = true;
    this.offPeers();
    for (const [id, p] of this.pending) {
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(new LightRequestError('DISCONNECTED', p.peer, 'the light channel was closed'));
    }
  }

  /** Asks `peer` for the light block at `height` (or its latest). */
  request(peer: string, height: number | 'latest'): Promise<FetchedLightBlock> {
    if (height !== 'latest' && (!Number.isSafeInteger(height) || height <= 0)) {
      return Promise.reject(new RangeError(`light block height must be a positive integer, got ${height}`));
    }
    if (this.closed)
      return Promise.reject(new LightRequestError('DISCONNECTED', peer, 'the light channel was closed'));
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
    return new Promise((resolve, reject) => {
      const ms = this.opts.requestTimeoutMs ?? 5000;
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new LightRequestError('TIMEOUT', peer, `peer ${peer} did not answer within ${ms} ms`));
      }, ms);
      this.pending.set(id, { peer, height, resolve, reject, timer });
      if (!this.host.send(peer, LIGHT_PROTOCOL, encodeLightRequest(id, height))) {
        this.pending.delete(id);
        clearTimeout(timer);
        reject(
          new LightRequestError(
            'NOT_CONNECTED',
            peer,
            `peer ${peer} is not connected or does not serve ${LIGHT_PROTOCOL}`,
          ),
        );
      }
    });
  }

  private receive(peer: string, payload: Uint8Array): void {
    if (payload.length < 5) {
      throw new P2PError('INVALID_MESSAGE', `light channel: frame of ${payload.length} bytes`);
    }
    const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
    const type = payload[0];
    const id = view.getUint32(1);
    if (type === REQUEST) this.serve(peer, id, payload, view);
    else if (type === RESPONSE || type === ERROR) this.answer(peer, id, type, payload, view);
    else throw new P2PError('INVALID_MESSAGE', `light channel: unknown message type ${type}`);
  }

  private strike(peer: string, id: number, reason: string): void {
    const n = (this.strikes.get(peer) ?? 0) + 1;
    this.strikes.set(peer, n);
    this.host.send(peer, LIGHT_PROTOCOL, encodeError(id, `bad request: ${reason}`));
    this.log.debug({ peer, reason, strikes: n }, 'bad light block request');
    if (n >= MAX_BAD_REQUESTS) {
      this.host.disconnect(peer, `light channel: ${n} bad requests (last: ${reason})`);
    }
  }

  private serve(peer: string, id: number, payload: Uint8Array, view: DataView): void {
    if (payload.length !== REQUEST_BYTES) {
      this.strike(peer, id, `a request is ${REQUEST_BYTES} bytes, got ${payload.length}`);
      return;
    }
    const raw = view.getBigUint64(5);
    if (raw > BigInt(Number.MAX_SAFE_INTEGER)) {
      this.strike(peer, id, `height ${raw} is out of range`);
      return;
    }
    const source = this.opts.source;
    if (!source) {
      this.host.send(
        peer,
        LIGHT_PROTOCOL,
        encodeError(id, 'this node serves no light blocks (it is a light node)'),
      );
      return;
    }
    const busy = this.inFlight.get(peer) ?? 0;
    if (busy >= MAX_REQUESTS_IN_FLIGHT) {
      this.strike(peer, id, `more than ${MAX_REQUESTS_IN_FLIGHT} requests in flight`);
      return;
    }
    this.inFlight.set(peer, busy + 1);
    const height = raw === 0n ? ('latest' as const) : Number(raw);
    void source
      .lightBlock(height)
      .then((found) => {
        if (!found) {
          const r = source.range();
          const have =
            r.latest > 0 ? `this node has heights ${r.base} to ${r.latest}` : 'this node has no blocks yet';
          return encodeError(id, `height ${height} is not available: ${have}`);
        }
        const out = encodeResponse(found);
        if (out.length > MAX_LIGHT_MESSAGE_BYTES) {
          return encodeError(
            id,
            `the light block at height ${found.block.header.height} is ${out.length} bytes, over ${MAX_LIGHT_MESSAGE_BYTES}`,
          );
        }
        new DataView(out.buffer).setUint32(1, id);
        return out;
      })
      .catch((err: Error) => {
        this.log.warn({ peer, height, err: err.message }, 'could not serve a light block');
        return encodeError(id, `internal error: ${err.message}`);
      })
      .then((reply) => {
        const n = (this.inFlight.get(peer) ?? 1) - 1;
        if (n > 0) this.inFlight.set(peer, n);
        else this.inFlight.delete(peer);
        this.host.send(peer, LIGHT_PROTOCOL, reply);
      });
  }

  private answer(peer: string, id: number, type: number, payload: Uint8Array, view: DataView): void {
    const p = this.pending.get(id);
    // A late answer (after its timeout) or one for another peer's request is dropped.
    if (!p || p.peer !== peer) return;
    this.pending.delete(id);
    clearTimeout(p.timer);
    if (type === ERROR) {
      const reason = dec.decode(payload.subarray(5, 5 + MAX_REASON_BYTES));
      p.reject(new LightRequestError('REFUSED', peer, `peer ${peer} refused: ${reason}`));
      return;
    }
    try {
      if (payload.length < 9) throw new Error('truncated response');
      const n = view.getUint32(5);
      if (9 + n > payload.length) throw new Error(`light block of ${n} bytes runs past the end`);
      const block = decodeLightBlock(payload.subarray(9, 9 + n));
      const rest = payload.subarray(9 + n);
      const nextValidators = rest.length > 0 ? decodeValidatorSet(rest) : undefined;
      if (p.height !== 'latest' && block.header.height !== p.height) {
        throw new Error(`asked for height ${p.height}, got ${block.header.height}`);
      }
      p.resolve({ block, nextValidators });
    } catch (err) {
      p.reject(
        new LightRequestError(
          'INVALID_RESPONSE',
          peer,
          `peer ${peer} sent an invalid light block: ${(err as Error).message}`,
        ),
      );
    }
  }
}
