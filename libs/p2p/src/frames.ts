// Length-prefixed frames over a byte stream: a 4-byte big-endian length, then the payload. A stream
// carries one channel's messages; the reader enforces the channel's size limit before buffering.
import { P2PError } from './errors.js';

export const FRAME_HEADER_BYTES = 4;

export function frame(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  new DataView(out.buffer).setUint32(0, payload.length);
  out.set(payload, FRAME_HEADER_BYTES);
  return out;
}

/** Reassembles frames from arbitrary chunks; throws P2PError('OVERSIZED') past `maxBytes`. */
export class FrameReader {
  private chunks: Uint8Array[] = [];
  private buffered = 0;
  private need = -1;

  constructor(
    private readonly maxBytes: number,
    private readonly channel: string,
  ) {}

  /** Adds a chunk; returns the frames it completes, in order. */
  push(chunk: Uint8Array): Uint8Array[] {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
    const out: Uint8Array[] = [];
    for (;;) {
      if (this.need < 0) {
        if (this.buffered < FRAME_HEADER_BYTES) return out;
        const head = this.take(FRAME_HEADER_BYTES);
        this.need = new DataView(head.buffer, head.byteOffset, FRAME_HEADER_BYTES).getUint32(0);
        if (this.need > this.maxBytes) {
          throw new P2PError(
            'OVERSIZED',
            `${this.channel} message of ${this.need} bytes is over the channel's limit of ${this.maxBytes}`,
          );
        }
      }
      if (this.buffered < this.need) return out;
      out.push(this.take(this.need));
      this.need = -1;
    }
  }

  /** Bytes received but not yet part of a whole frame. */
  get pending(): number {
    return this.buffered;
  }

  private take(n: number): Uint8Array {
    const first = this.chunks[0];
    if (first && first.length >= n) {
      const part = first.subarray(0, n);
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return part;
    }
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const c = this.chunks[0]!;
      const k = Math.min(c.length, n - at);
      out.set(c.subarray(0, k), at);
      at += k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    this.buffered -= n;
    return out;
  }
}
