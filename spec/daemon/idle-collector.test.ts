import { spawnSync } from 'node:child_process';
import winston from 'winston';
import { KUBE_IPVS_NODE_FLAGS } from '../../lib/cli/node-flags';
import { GcOptions, IdleCollector, MEMORY_REDUCING_GC } from '../../lib/daemon/idle-collector';
import { FakeClock } from '../../testkit/fake-clock';

const MB = 2 ** 20;
const silent = winston.createLogger({ silent: true });

/** A collector over a heap whose use the test sets; gc() drops it to `live`. */
function setup(opts: { gc?: boolean; busy?: () => boolean } = {}) {
  const clock = new FakeClock();
  const heap = { used: 100 * MB, live: 100 * MB };
  const gcCalls: number[] = [];
  const gcOptions: (GcOptions | undefined)[] = [];
  const told: [number, number][] = [];
  const c = new IdleCollector({
    gc:
      opts.gc === false
        ? undefined
        : (o) => {
            gcCalls.push(clock.now());
            gcOptions.push(o);
            heap.used = heap.live;
          },
    collected: (_ms, before, after) => told.push([before, after]),
    heapUsed: () => heap.used,
    clock,
    quietMs: 5000,
    minGrowthBytes: 32 * MB,
    busy: opts.busy ?? (() => false),
    log: silent,
  });
  return { clock, heap, gcCalls, gcOptions, told, c };
}

describe('IdleCollector', () => {
  it('collects once the proxy has been quiet for quietMs after the heap grew by minGrowthBytes', async () => {
    const { clock, heap, gcCalls, gcOptions, told, c } = setup();
    const start = clock.now();
    heap.used = 140 * MB;
    c.afterSync();
    await clock.advance(4999);
    expect(gcCalls).toEqual([]);
    await clock.advance(1);
    expect(gcCalls).toEqual([start + 5000]);
    expect(gcOptions).toEqual([MEMORY_REDUCING_GC]);
    expect(told).toEqual([[140 * MB, 100 * MB]]);
    expect(c.collections).toBe(1);
  });

  it('does not collect during a burst: each sync ending starts the quiet period again', async () => {
    const { clock, heap, gcCalls, c } = setup();
    heap.used = 200 * MB;
    for (let i = 0; i < 10; i++) {
      c.afterSync();
      await clock.advance(4000);
    }
    expect(gcCalls).toEqual([]);
    await clock.advance(1000);
    expect(gcCalls).toHaveLength(1);
  });

  it('does not collect when the heap grew less than minGrowthBytes since the last collection', async () => {
    const { clock, heap, gcCalls, c } = setup();
    heap.used = 131 * MB;
    c.afterSync();
    await clock.advance(10_000);
    expect(gcCalls).toEqual([]);
    // measured from what the last collection left, not from the start
    heap.used = 150 * MB;
    heap.live = 120 * MB;
    c.afterSync();
    await clock.advance(5000);
    expect(gcCalls).toHaveLength(1);
    heap.used = 151 * MB;
    c.afterSync();
    await clock.advance(5000);
    expect(gcCalls).toHaveLength(1);
    heap.used = 152 * MB;
    c.afterSync();
    await clock.advance(5000);
    expect(gcCalls).toHaveLength(2);
  });

  it('does not collect while a sync is running', async () => {
    let busy = true;
    const { clock, heap, gcCalls, c } = setup({ busy: () => busy });
    heap.used = 200 * MB;
    c.afterSync();
    await clock.advance(10_000);
    expect(gcCalls).toEqual([]);
    busy = false;
    c.afterSync();
    await clock.advance(5000);
    expect(gcCalls).toHaveLength(1);
  });

  it('arms no timer without a collector (node run without --expose-gc), and stop cancels one', async () => {
    const none = setup({ gc: false });
    none.heap.used = 500 * MB;
    none.c.afterSync();
    expect(none.clock.pendingTimers()).toEqual([]);
    const { clock, heap, gcCalls, c } = setup();
    heap.used = 500 * MB;
    c.afterSync();
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
