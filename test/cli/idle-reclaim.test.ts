// The idle heap reclaim (services/noded/src/idle-reclaim.ts) on this test's own thread: a heap grown
// by a load and then left quiet is collected once and its pages given back; a busy thread, or one
// whose busy spell did not grow its heap, is left alone.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getHeapStatistics } from 'node:v8';
import {
  defaultIdleReclaimOptions,
  type Reclaimed,
  startIdleReclaim,
  workerIdleReclaimOptions,
} from '@noded/service-shared/src/idle-reclaim.js';

const MB = 1 << 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const fast = { intervalMs: 100, quietIntervals: 3, quietUtilization: 0.25, quietFraction: 0.5 };

/** About `mb` MB of small objects that live long enough to reach the old generation. */
async function grownHeap(mb: number): Promise<number> {
  let keep: Array<{ i: number; s: string }> | null = [];
  const start = getHeapStatistics().total_physical_size;
  while (getHeapStatistics().total_physical_size - start < mb * MB) {
    for (let i = 0; i < 50_000; i++) keep.push({ i, s: `item ${i} of a load` });
    await new Promise((r) => setImmediate(r));
  }
  const n = keep.length;
  keep = null;
  return n;
}

describe('startIdleReclaim', () => {
  it('collects a heap that grew and went quiet, and its physical size comes down', async () => {
    const seen: Reclaimed[] = [];
    const r = startIdleReclaim((x) => seen.push(x), { ...fast, minGrowthBytes: 8 * MB });
    assert.ok(r, 'this V8 gives a collection function');
    try {
      await sleep(200); // first readings of the heap size
      assert.ok((await grownHeap(60)) > 0);
      const grown = getHeapStatistics().total_physical_size;
      for (let i = 0; i < 100 && seen.length === 0; i++) await sleep(40);
      assert.ok(seen.length >= 1, 'a collection once the thread went quiet');
      assert.ok(seen[0]!.before >= grown - 8 * MB, `measured before the collection: ${seen[0]!.before}`);
      assert.ok(
        seen[0]!.before - seen[0]!.after >= 20 * MB,
        `gave back ${(seen[0]!.before - seen[0]!.after) / MB} MB`,
      );
      assert.ok(getHeapStatistics().total_physical_size < grown - 20 * MB);
    } finally {
      r?.stop();
    }
  });

  it('counts a thread at a third of its load as quiet (quietFraction), not only one under 25%', async () => {
    // After a load that kept the thread fully busy, it stays 35% busy: over quietUtilization, as a quiet
    // node's thread is on a machine whose other work slows every callback, but under half its load.
    const afterLoadAtAThird = async (quietFraction: number) => {
      const r = startIdleReclaim(() => {}, { ...fast, quietFraction, minGrowthBytes: 8 * MB });
      assert.ok(r);
      try {
        await sleep(200);
        assert.ok((await grownHeap(40)) > 0);
        const until = Date.now() + 1_500;
        while (Date.now() < until && r.count() === 0) {
          const spin = Date.now() + 14; // 14 ms of work in every 40 ms
          while (Date.now() < spin) {}
          await sleep(26);
        }
        return r.count();
      } finally {
        r.stop();
      }
    };
    assert.equal(await afterLoadAtAThird(0.5), 1);
    assert.equal(await afterLoadAtAThird(0), 0, 'without quietFraction 35% busy is never quiet');
  });

  it("collects a worker's heap grown under a light load (about 5-10% busy)", async () => {
    // 2 s readings: one major collection of the growing heap (30-40 ms, two or three times that on
    // a machine whose other work takes the cores) stays a small part of one.
    const r = startIdleReclaim(() => {}, {
      ...fast,
      intervalMs: 2_000,
      ...workerIdleReclaimOptions,
      minGrowthBytes: 8 * MB,
    });
    assert.ok(r);
    try {
      await sleep(2_300); // the first reading of the heap size comes before its growth
      // 30 MB grown in steps of about 4 ms of allocation every 80 ms: the worker's share of a load.
      const start = getHeapStatistics().total_physical_size;
      let keep: Array<{ i: number; s: string }> | null = [];
      while (getHeapStatistics().total_physical_size - start < 30 * MB) {
        const step = Date.now() + 4;
        while (Date.now() < step) for (let i = 0; i < 1_000; i++) keep.push({ i, s: `item ${i} of a load` });
        await sleep(76);
      }
      keep = null;
      // Three quiet readings, and up to one more for the reading under way.
      for (let i = 0; i < 90 && r.count() === 0; i++) await sleep(100);
      assert.equal(r.count(), 1);
    } finally {
      r.stop();
    }
  });

  it("arms the workers' 1% on a light load's readings (the indexer's 1.5-3.5%), never the main thread's 25%", async () => {
    // Event-loop utilisation counts wall time: beside five allocating processes on two cores, the
    // load above read 19% and armed the main thread's options. The readings are given here, the heap
    // grown for real.
    const afterLightReadings = async (options: Parameters<typeof startIdleReclaim>[1], load: number[]) => {
      const readings: number[] = [];
      const r = startIdleReclaim(() => {}, {
        ...fast,
        ...options,
        minGrowthBytes: 8 * MB,
        utilization: () => readings.shift() ?? 0.005,
      });
      assert.ok(r);
      const held: Array<Array<{ i: number; s: string }>> = [];
      try {
        await sleep(350); // quiet readings of the heap before its growth
        const start = getHeapStatistics().total_physical_size;
        while (getHeapStatistics().total_physical_size - start < 30 * MB) {
          const chunk: Array<{ i: number; s: string }> = [];
          for (let i = 0; i < 50_000; i++) chunk.push({ i, s: `item ${i} of a load` });
          held.push(chunk);
          await new Promise((r) => setImmediate(r));
        }
        readings.push(...load);
        for (let i = 0; i < 20 && r.count() === 0; i++) await sleep(100);
        assert.equal(readings.length, 0, 'every reading was taken');
        return r.count();
      } finally {
        r.stop();
        held.length = 0;
      }
    };
    assert.equal(await afterLightReadings(workerIdleReclaimOptions, [0.016, 0.021, 0.027, 0.02, 0.018]), 1);
    assert.equal(
      await afterLightReadings(
        { quietUtilization: defaultIdleReclaimOptions.quietUtilization },
        [0.06, 0.09, 0.07, 0.1, 0.05],
      ),
      0,
      "the main thread's options never arm at 5-10% busy",
    );
  });

  it('sweeps a thread that a steady load keeps neither quiet nor collected, once its old generation grew', async () => {
    // A busy thread (never quiet) whose objects live just long enough to be promoted, then die: the
    // JSON-RPC thread's pattern. V8 has no reason to collect a small old generation; the sweep does, once.
    const underLoad = async (sweepAfterMs: number) => {
      const seen: Reclaimed[] = [];
      const r = startIdleReclaim((x) => seen.push(x), {
        ...fast,
        quietFraction: 0,
        minGrowthBytes: 1024 * MB,
        sweepAfterMs,
        sweepGrowthBytes: 2 * MB,
      });
      assert.ok(r);
      try {
        const held: Array<Array<{ i: number; s: string }>> = [];
        const until = Date.now() + 2_500;
        while (Date.now() < until && seen.length === 0) {
          // 30 ms of work in every 40 ms: busy. Each batch is held across a few scavenges, then dropped.
          const spin = Date.now() + 30;
          const batch: Array<{ i: number; s: string }> = [];
          while (Date.now() < spin) for (let i = 0; i < 500; i++) batch.push({ i, s: `promoted ${i}` });
          held.push(batch);
          if (held.length > 4) held.shift();
          await sleep(10);
        }
        return { seen };
      } finally {
        r.stop();
      }
    };
    const swept = await underLoad(300);
    assert.ok(swept.seen.length >= 1, 'swept under the load');
    assert.ok(swept.seen[0]!.sweep, 'by the sweep, not as a quiet thread');
    const alone = await underLoad(0);
    assert.equal(alone.seen.length, 0, 'without the sweep a busy thread is left alone');
  });

  it('leaves a busy thread alone, however much its heap grew', async () => {
    const r = startIdleReclaim(() => {}, { ...fast, minGrowthBytes: 1 * MB });
    assert.ok(r);
    try {
      await sleep(200);
      const held: string[][] = [];
      const until = Date.now() + 800;
      while (Date.now() < until) {
        // 30 ms of work in every 40 ms: about 75% busy.
        const spin = Date.now() + 30;
        const chunk: string[] = [];
        while (Date.now() < spin) chunk.push(`busy ${chunk.length}`);
        held.push(chunk);
        await sleep(10);
      }
      assert.equal(r.count(), 0);
      assert.ok(held.length > 0);
    } finally {
      r?.stop();
    }
  });

  it('does not collect after a busy spell that did not grow the heap, but hands every quiet run to onQuiet', async () => {
    let quiet = 0;
    const r = startIdleReclaim(() => {}, { ...fast, minGrowthBytes: 16 * MB, onQuiet: () => quiet++ });
    assert.ok(r);
    try {
      await sleep(200);
      const spin = Date.now() + 300; // busy, allocating next to nothing
      while (Date.now() < spin) {}
      await sleep(800);
      assert.equal(r.count(), 0);
      assert.ok(quiet >= 2, `native memory is not in the heap: onQuiet runs without heap growth (${quiet})`);
      const before = quiet;
      const again = Date.now() + 300; // busy: no quiet run while it lasts
      while (Date.now() < again) {}
      assert.equal(quiet, before);
      await sleep(450);
      assert.ok(quiet > before, 'and again after every run of quiet readings');
    } finally {
      r?.stop();
    }
  });
});
