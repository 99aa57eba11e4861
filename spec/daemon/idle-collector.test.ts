import winston from 'winston';
import { IdleCollector } from '../../lib/daemon/idle-collector';
import { FakeClock } from '../../testkit/fake-clock';

const MB = 2 ** 20;
const silent = winston.createLogger({ silent: true });

/** A collector over a heap whose use the test sets; gc() drops it to `live`. */
function setup(opts: { gc?: boolean; busy?: () => boolean } = {}) {
  const clock = new FakeClock();
  const heap = { used: 100 * MB, live: 100 * MB };
  const gcCalls: number[] = [];
  const c = new IdleCollector({
    gc:
      opts.gc === false
        ? undefined
        : () => {
            gcCalls.push(clock.now());
            heap.used = heap.live;
          },
    heapUsed: () => heap.used,
    clock,
    quietMs: 5000,
    minGrowthBytes: 32 * MB,
    busy: opts.busy ?? (() => false),
    log: silent,
  });
  return { clock, heap, gcCalls, c };
}

describe('IdleCollector', () => {
  it('collects once the proxy has been quiet for quietMs after the heap grew by minGrowthBytes', async () => {
    const { clock, heap, gcCalls, c } = setup();
    const start = clock.now();
    heap.used = 140 * MB;
    c.afterSync();
    await clock.advance(4999);
    expect(gcCalls).toEqual([]);
    await clock.advance(1);
    expect(gcCalls).toEqual([start + 5000]);
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
