/**
 * A full garbage collection once the proxy has gone quiet after a burst of work.
 *
 * V8 collects its old generation when that generation reaches a limit it raised while the
 * proxy was busy: after an endpoint churn the heap keeps the garbage of the churn (tens of MB
 * of decoded watch events, /proc text and plans) and the pages holding it, with nothing left to
 * allocate that would trigger the collection. Go's runtime (kube-proxy) returns such memory by
 * itself; here one full collection, when no sync has run for `quietMs` and the used heap has
 * grown by `minGrowthBytes` since the last one, lets V8 free those pages. It holds the event
 * loop while it runs, so it runs only between syncs, never during a burst.
 *
 * The collection is V8's memory-reducing one (the gc extension's flavor 'last-resort': it
 * compacts and unmaps the freed pages). A plain gc() frees the objects but V8 keeps their pages
 * mapped and resident: on node 24 a heap of 300 MB with 144 MB live stayed at 448 MB RSS after a
 * plain gc() and fell to 204 MB after this one (168 ms against 68 ms).
 */
import type winston from 'winston';
import { Clock, Timer } from '../proxier/clock';

/** What IdleCollector needs: the collector, the heap's use, the time, its thresholds, a log. */
export interface IdleCollectorOptions {
  /** V8's full collection (globalThis.gc, present with node's --expose-gc); undefined: never collect */
  readonly gc: ((options?: GcOptions) => void) | undefined;
  /** bytes of the JS heap in use, garbage included (process.memoryUsage().heapUsed) */
  readonly heapUsed: () => number;
  readonly clock: Clock;
  /** how long no sync must have run */
  readonly quietMs: number;
  /** how much the used heap must have grown since the last collection */
  readonly minGrowthBytes: number;
  /** whether a sync is running now (the timer may fire during one that began since) */
  readonly busy: () => boolean;
  readonly log: winston.Logger;
  /** told after each collection: how long it held the loop, the used heap before and after */
  readonly collected?: (durationMs: number, heapUsedBefore: number, heapUsedAfter: number) => void;
}

/** The options of V8's gc extension (src/extensions/gc-extension.cc); older V8s ignore `flavor`. */
export interface GcOptions {
  readonly type?: 'major' | 'minor';
  readonly execution?: 'sync' | 'async';
  readonly flavor?: 'regular' | 'last-resort';
}

/** A full, synchronous, memory-reducing collection. */
export const MEMORY_REDUCING_GC: GcOptions = { type: 'major', execution: 'sync', flavor: 'last-resort' };

/** The proxy's quiet-time full collection (see the file comment). */
export class IdleCollector {
  private timer: Timer | undefined;
  private baseline: number;
  /** full collections this collector ran */
  collections = 0;

  constructor(private readonly opts: IdleCollectorOptions) {
    this.baseline = opts.heapUsed();
  }

  /** A sync ended: the quiet period starts again. */
  afterSync(): void {
    if (!this.opts.gc) return;
    this.timer?.cancel();
    this.timer = this.opts.clock.setTimer(() => this.collectIfGrown(), this.opts.quietMs);
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  private collectIfGrown(): void {
    this.timer = undefined;
    const gc = this.opts.gc;
    if (!gc) return;
    if (this.opts.busy()) return; // its end arms the timer again
    const before = this.opts.heapUsed();
    if (before - this.baseline < this.opts.minGrowthBytes) return;
    const start = performance.now();
    gc(MEMORY_REDUCING_GC);
    const durationMs = performance.now() - start;
    const after = this.opts.heapUsed();
    this.baseline = after;
    this.collections++;
    this.opts.collected?.(durationMs, before, after);
    this.opts.log.verbose('collected garbage after a quiet period', {
      heapUsedBeforeMB: Math.round(before / 2 ** 20),
      heapUsedAfterMB: Math.round(after / 2 ** 20),
      durationMs: Math.round(durationMs),
    });
  }
}
