// The installed yamux stream as scripts/patch-deps.mjs leaves it (rewrite 6): two real YamuxStreams
// joined by a wire that hands each frame to the other end a microtask later. Only the socket is
// stood in for; the window accounting, the send loop that waits for window updates and the updates
// themselves are the library's code.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { StreamState, YamuxStream } from '@chainsafe/libp2p-yamux/stream';

const DATA = 0;
const WINDOW_UPDATE = 1;
const WINDOW = 256 * 1024;

interface Header {
  type: number;
  flag: number;
  streamID: number;
  length: number;
}

const quiet = Object.assign(() => {}, { trace() {}, error() {}, enabled: false, newScope: () => quiet });

/** Two established streams; `updates` lists the window updates each end sent (flagless ones). */
function pair(rtt: number) {
  const updates = { sender: [] as number[], receiver: [] as number[] };
  const errors: Error[] = [];
  const ends: { sender?: YamuxStream; receiver?: YamuxStream } = {};
  const wire = (from: 'sender' | 'receiver') => (header: Header, data?: unknown) => {
    const to = from === 'sender' ? 'receiver' : 'sender';
    if (header.type === WINDOW_UPDATE && header.flag === 0) updates[from].push(header.length);
    queueMicrotask(() => {
      try {
        const s = ends[to]!;
        if (header.type === DATA) s.handleData({ header, data } as never);
        else s.handleWindowUpdate({ header } as never);
      } catch (err) {
        errors.push(err as Error);
      }
    });
    return true;
  };
  const make = (side: 'sender' | 'receiver') =>
    new YamuxStream({
      id: side,
      streamId: 1,
      state: StreamState.Established,
      direction: side === 'sender' ? 'outbound' : 'inbound',
      sendFrame: wire(side),
      getRTT: () => rtt,
      log: quiet,
      maxReadBufferLength: 64 * 1024 * 1024,
    } as never);
  ends.sender = make('sender');
  ends.receiver = make('receiver');
  return { sender: ends.sender, receiver: ends.receiver, updates, errors };
}

/** Sends `messages` and resolves with every byte the receiver got, in order. */
async function transfer(p: ReturnType<typeof pair>, messages: Uint8Array[]): Promise<Buffer> {
  const total = messages.reduce((n, m) => n + m.length, 0);
  const got: Buffer[] = [];
  let n = 0;
  const done = new Promise<void>((resolve) => {
    p.receiver.addEventListener('message', (evt) => {
      const d = (evt as unknown as { data: Uint8Array | { subarray(): Uint8Array } }).data;
      const bytes = Buffer.from(d instanceof Uint8Array ? d : d.subarray());
      got.push(bytes);
      n += bytes.length;
      if (n >= total) resolve();
    });
  });
  for (const m of messages) p.sender.send(m);
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      done,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`stalled: ${n} of ${total} bytes arrived`)), 5_000);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
  return Buffer.concat(got);
}

function messages(count: number, size: number): Uint8Array[] {
  return Array.from({ length: count }, (_, i) => new Uint8Array(size).fill(i % 251));
}

describe('yamux window updates (patched stream)', () => {
  it('the installed stream.js carries the rewrite', () => {
    const file = fileURLToPath(import.meta.resolve('@chainsafe/libp2p-yamux/stream'));
    assert.match(readFileSync(file, 'utf8'), /noded: window updates once half the window is used/);
  });

  it('sends one update per half window consumed, not one per frame, and every byte arrives in order', async () => {
    const p = pair(-1);
    const sent = messages(1000, 2000);
    const got = await transfer(p, sent);
    assert.deepEqual(got, Buffer.concat(sent));
    assert.deepEqual(p.errors, []);
    // 2,000,000 bytes: one update for each 128 KiB consumed (at most 16), where the unpatched
    // stream answered every data frame it received (145 here: the send loop joins queued messages).
    assert.ok(p.updates.receiver.length >= 1, 'the sender needed updates to send 2 MB');
    assert.ok(
      p.updates.receiver.length <= Math.ceil(2_000_000 / (WINDOW / 2)),
      `${p.updates.receiver.length} window updates for 2,000,000 bytes`,
    );
    for (const len of p.updates.receiver) assert.ok(len >= WINDOW / 2, `an update of ${len} bytes`);
    assert.deepEqual(p.updates.sender, [], 'the sender received nothing, so it sent no updates');
  });

  it('a message larger than several windows waits for updates and arrives whole', async () => {
    const p = pair(-1);
    const big = new Uint8Array(5 * WINDOW + 123);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7) & 0xff;
    const got = await transfer(p, [big]);
    assert.deepEqual(got, Buffer.from(big));
    assert.deepEqual(p.errors, []);
    assert.ok(p.updates.receiver.length >= 5, `${p.updates.receiver.length} updates for five windows`);
  });

  it('with the window growing (fast round trips) the sender never overruns the receiver', async () => {
    const p = pair(1_000_000);
    const sent = messages(3000, 3000);
    const got = await transfer(p, sent);
    assert.deepEqual(got, Buffer.concat(sent));
    assert.deepEqual(p.errors, [], 'no ReceiveWindowExceededError');
    // The window doubled at updates sent within four round trips: later updates grant more.
    const last = p.updates.receiver.at(-1)!;
    assert.ok(last > WINDOW, `the last update granted ${last} bytes`);
    assert.ok(p.updates.receiver.length < 60, `${p.updates.receiver.length} updates for 9 MB`);
  });
});
