import { spawnSync } from 'node:child_process';
import winston from 'winston';
import { KUBE_IPVS_NODE_FLAGS } from '../../lib/cli/node-flags';
import { join } from 'node:path';
import { GcOptions, IdleCollector, MEMORY_REDUCING_GC } from '../../lib/daemon/idle-collector';
import { FakeClock } from '../../testkit/fake-clock';

const MB = 2 ** 20;
const silent = winston.createLogger({ silent: true });

/** A collector over a process whose resident memory the test sets; gc() drops it to `live`. */
function setup(opts: { gc?: boolean; busy?: () => boolean; trim?: boolean; young?: boolean } = {}) {
  const clock = new FakeClock();
  // young: of `resident`, the young generation (its own figure only with opts.young)
  const mem = { resident: 100 * MB, live: 100 * MB, young: 0 };
  /** what the collector called, in order */
  const calls: string[] = [];
  const gcCalls: number[] = [];
  const gcOptions: (GcOptions | undefined)[] = [];
  const told: [number, number][] = [];
  const c = new IdleCollector({
    gc:
      opts.gc === false
        ? undefined
        : (o) => {
            calls.push('gc');
            gcCalls.push(clock.now());
            gcOptions.push(o);
            mem.resident = mem.live;
            // the memory-reducing collection shrinks the young generation to its least
            mem.young = MB;
          },
    // malloc's free pages: 10 MB below what the collection left
    trim: opts.trim
      ? () => {
          calls.push('trim');
          mem.resident -= 10 * MB;
        }
      : undefined,
    collected: (_ms, before, after) => told.push([before, after]),
    resident: () => mem.resident,
    young: opts.young ? () => mem.young : undefined,
    clock,
    quietMs: 5000,
    idleIntervalMs: 5 * 60_000,
    minGrowthBytes: 32 * MB,
    busy: opts.busy ?? (() => false),
    log: silent,
  });
  return { clock, mem, calls, gcCalls, gcOptions, told, c };
}

describe('IdleCollector', () => {
  it('collects once no change has come for quietMs after a burst that grew resident memory by minGrowthBytes', async () => {
    const { clock, mem, gcCalls, gcOptions, told, c } = setup();
    const start = clock.now();
    mem.resident = 140 * MB;
    c.changed();
    await clock.advance(4999);
    expect(gcCalls).toEqual([]);
    await clock.advance(1);
    expect(gcCalls).toEqual([start + 5000]);
    expect(gcOptions).toEqual([MEMORY_REDUCING_GC]);
    expect(told).toEqual([[140 * MB, 100 * MB]]);
  });

  it('trims the C heap after each collection, and reports the memory after both; never without one', async () => {
    const { clock, mem, calls, told, c } = setup({ trim: true });
    mem.resident = 140 * MB;
    c.changed();
    await clock.advance(4999);
    expect(calls).toEqual([]);
    await clock.advance(1);
    // after the collection freed what held malloc's chunks
    expect(calls).toEqual(['gc', 'trim']);
    expect(told).toEqual([[140 * MB, 90 * MB]]);
    // grown less than minGrowthBytes since: no collection, no trim
    mem.resident = 100 * MB;
    c.changed();
    await clock.advance(5000);
    expect(calls).toEqual(['gc', 'trim']);
  });

  it('does not collect during a burst, however many syncs end in it', async () => {
    const { clock, mem, gcCalls, c } = setup();
    mem.resident = 200 * MB;
    for (let i = 0; i < 40; i++) {
      c.changed();
      await clock.advance(500);
      c.afterSync(false);
      await clock.advance(500);
    }
    expect(gcCalls).toEqual([]);
    await clock.advance(4000);
    expect(gcCalls).toHaveLength(1);
  });

  it('does not collect in a churn longer than the idle interval', async () => {
    const { clock, mem, gcCalls, c } = setup();
    mem.resident = 200 * MB;
    for (let i = 0; i < 12 * 60; i++) {
      c.changed();
      if (i % 30 === 0) c.afterSync(true);
      await clock.advance(1000);
    }
    expect(gcCalls).toEqual([]);
    await clock.advance(4000);
    expect(gcCalls).toHaveLength(1);
  });

  it('after a burst, syncs that go on (draining) do not hold the collection back', async () => {
    const { clock, mem, gcCalls, c } = setup();
    mem.resident = 200 * MB;
    c.changed();
    for (let i = 0; i < 10; i++) {
      await clock.advance(1000);
      c.afterSync(false);
    }
    expect(gcCalls).toHaveLength(1);
  });

  it('a collection due during a sync runs at its end', async () => {
    let busy = true;
    const { clock, mem, gcCalls, c } = setup({ busy: () => busy });
    mem.resident = 200 * MB;
    c.changed();
    await clock.advance(60_000);
    expect(gcCalls).toEqual([]);
    busy = false;
    c.afterSync(false);
    await clock.advance(0);
    expect(gcCalls).toHaveLength(1);
  });

  it('without changes, collects at most once per idleIntervalMs (the periodic syncs)', async () => {
    const { clock, mem, gcCalls, c } = setup();
    const start = clock.now();
    // a full sync every 30 s, each leaving 40 MB of garbage
    for (let t = 0; t < 12 * 60_000; t += 30_000) {
      mem.resident += 40 * MB;
      c.afterSync(true);
      await clock.advance(30_000);
    }
    expect(gcCalls.map((at) => at - start)).toEqual([5 * 60_000, 10 * 60_000]);
  });

  it('does not collect when resident memory grew less than minGrowthBytes since the last collection', async () => {
    const { clock, mem, gcCalls, c } = setup();
    mem.resident = 131 * MB;
    c.changed();
    await clock.advance(10_000);
    expect(gcCalls).toEqual([]);
    // measured from what the last collection left, not from the start
    mem.resident = 150 * MB;
    mem.live = 120 * MB;
    c.changed();
    await clock.advance(5000);
    expect(gcCalls).toHaveLength(1);
    mem.resident = 151 * MB;
    c.changed();
    await clock.advance(5000);
    expect(gcCalls).toHaveLength(1);
    mem.resident = 152 * MB;
    c.changed();
    await clock.advance(5000);
    expect(gcCalls).toHaveLength(2);
  });

  /** A collector whose first collection came 5 s after a burst that grew the young generation to its 32 MB and the rest by 40 MB. */
  async function afterFirstCollection() {
    const t = setup({ young: true });
    const start = t.clock.now();
    t.mem.resident = 172 * MB;
    t.mem.young = 32 * MB;
    t.c.changed();
    await t.clock.advance(5000);
    expect(t.gcCalls).toHaveLength(1);
    // the collection shrank the young generation to 1 MB
    expect(t.mem.resident).toBe(100 * MB);
    return { ...t, start };
  }

  it('does not count the young generation growing back after a collection as growth', async () => {
    const { clock, mem, gcCalls, c, start } = await afterFirstCollection();
    // every periodic full sync then grows the young generation back to its 32 MB (RSS +31 MB
    // over what the collection left): no collection for that, however long
    for (let t = 0; t < 10 * 60_000; t += 30_000) {
      mem.resident = 100 * MB + 31 * MB + 4 * MB;
      mem.young = 32 * MB;
      c.afterSync(true);
      await clock.advance(30_000);
    }
    expect(gcCalls).toHaveLength(1);
    // nor for a lone change then: the full sync showed it needs all of it
    c.changed();
    c.afterSync(false);
    await clock.advance(5000);
    expect(gcCalls).toHaveLength(1);
    // growth beyond the young generation still calls one
    mem.resident = 100 * MB + 31 * MB + 33 * MB;
    const grownAt = clock.now();
    c.afterSync(true);
    await clock.advance(30_000);
    expect(gcCalls.map((at) => at - start)).toEqual([5000, grownAt - start]);
  });

  it('counts the young generation a burst grew beyond what the first full sync after a collection grew it to', async () => {
    const { clock, mem, gcCalls, c, start } = await afterFirstCollection();
    // a lone change and its partial sync
    mem.resident = 100 * MB + 2 * MB;
    mem.young = 2 * MB;
    c.changed();
    c.afterSync(false);
    await clock.advance(5000);
    // a small table: the periodic full syncs grow the young generation to 4 MB only
    for (let i = 0; i < 4; i++) {
      mem.resident = 100 * MB + 3 * MB;
      mem.young = 4 * MB;
      c.afterSync(true);
      await clock.advance(30_000);
    }
    expect(gcCalls).toHaveLength(1);
    // a churn grows it to 32 MB and the rest by 10 MB: 28 + 10 MB over what a full sync needs.
    // Its partial syncs measure nothing, even one after which no change came (it took in one
    // that came during the sync before): the young generation they end with is the churn's
    const churnAt = clock.now();
    mem.resident = 100 * MB + 31 * MB + 10 * MB;
    mem.young = 32 * MB;
    c.changed();
    c.afterSync(false);
    c.afterSync(false);
    await clock.advance(5000);
    expect(gcCalls.map((at) => at - start)).toEqual([5000, churnAt - start + 5000]);
    // learned again after each collection: a burst before the next full sync leaves the young
    // generation out whole, as at the start
    mem.resident = 100 * MB + 31 * MB + 10 * MB;
    mem.young = 32 * MB;
    c.changed();
    c.afterSync(false);
    await clock.advance(60_000);
    expect(gcCalls).toHaveLength(2);
  });

  it('arms no timer without a collector (node run without --expose-gc), and stop cancels one', async () => {
    const none = setup({ gc: false });
    none.mem.resident = 500 * MB;
    none.c.changed();
    none.c.afterSync(false);
    expect(none.clock.pendingTimers()).toEqual([]);
    const { clock, mem, gcCalls, c } = setup();
    mem.resident = 500 * MB;
    c.changed();
    c.stop();
    await clock.advance(10_000);
    expect(gcCalls).toEqual([]);
  });
});

// the reason for the flavor, on the node that runs these tests: a plain full collection leaves
// the freed pages resident, the memory-reducing one gives them back
describe("V8's memory-reducing collection", () => {
  const rssAfter = (call: string): { before: number; after: number } => {
    const script = `
      let junk = [];
      for (let i = 0; i < 2e6; i++) junk.push({ a: i, b: 'x' + i });
      junk = undefined;
      const before = process.memoryUsage().rss;
      ${call};
      process.stdout.write(JSON.stringify({ before, after: process.memoryUsage().rss }));`;
    const r = spawnSync(process.execPath, [...KUBE_IPVS_NODE_FLAGS, '-e', script], { encoding: 'utf8' });
    return JSON.parse(r.stdout) as { before: number; after: number };
  };

  it('gives back the pages of a collected heap, which a plain gc() keeps', () => {
    const plain = rssAfter('gc()');
    const reducing = rssAfter(`gc(${JSON.stringify(MEMORY_REDUCING_GC)})`);
    expect(plain.before).toBeGreaterThan(150 * MB);
    expect(reducing.before).toBeGreaterThan(150 * MB);
    expect(reducing.after).toBeLessThan(reducing.before - 100 * MB);
    expect(reducing.after).toBeLessThan(plain.after - 50 * MB);
  });
});

// youngGenerationResident names V8's spaces: were they renamed, it would read 0, and the collector
// would again collect after every periodic full sync. Pinned on the node that runs the daemon.
describe('youngGenerationResident', () => {
  it("reads V8's young generation: grown to its 32 MB by allocation, shrunk by the memory-reducing collection", () => {
    const script = `
      const { youngGenerationResident, MEMORY_REDUCING_GC } = require(${JSON.stringify(join(__dirname, '../../lib/daemon/idle-collector.js'))});
      const keep = [];
      for (let r = 0; r < 20; r++) { const a = []; for (let i = 0; i < 3e5; i++) a.push({ i, s: 'x' + i }); keep.push(a[5]); }
      const grown = youngGenerationResident();
      gc(MEMORY_REDUCING_GC);
      process.stdout.write(JSON.stringify({ grown, shrunk: youngGenerationResident() }));`;
    const r = spawnSync(process.execPath, [...KUBE_IPVS_NODE_FLAGS, '-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const { grown, shrunk } = JSON.parse(r.stdout) as { grown: number; shrunk: number };
    // --max-semi-space-size=16: two semispaces of 16 MB at most
    expect(grown).toBeGreaterThan(16 * MB);
    expect(grown).toBeLessThanOrEqual(48 * MB);
    expect(shrunk).toBeLessThan(4 * MB);
  });
});
