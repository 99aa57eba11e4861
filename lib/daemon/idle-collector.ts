/**
 * A full garbage collection once the proxy has gone quiet after a burst of work.
 *
 * V8 collects its old generation when that generation reaches a limit it raised while the
 * proxy was busy: after an endpoint churn the heap keeps the garbage of the churn (tens of MB
 * of decoded watch events, /proc text and plans) and the pages holding it, with nothing left to
 * allocate that would trigger the collection. Go's runtime (kube-proxy) returns such memory by
 * itself. Here one full collection runs when the resident memory has grown by `minGrowthBytes`
 * since the last one left it (the used heap alone misses it: after the churn V8 held 186 MB of
 * committed heap for 129 MB used, and the process 332 MB), not counting the young generation
 * up to what a full sync needs (`young`: the collection shrinks it, and at 10,000 x 10 a
 * periodic full sync grows it back to its full size, 32 MB with the daemon's flags: counted,
 * that alone called a collection after every periodic full sync, 1.2 s of held event loop
 * each). What a full sync needs is learned: the young generation at the end of the first full
 * sync after each collection, which shrank it (at 1,000 x 10 about 4 MB, so the 28 MB a churn
 * grew it to and left unused count there; at 10,000 x 10 all 32 MB). It only grows between
 * collections, so a sync that comes later, or any sync before the first full one, would
 * measure what came before it too. And either
 *  - no Service or EndpointSlice change has come for `quietMs` (a burst ended; syncs may go on
 *    meanwhile, draining real servers), or
 *  - it is `idleIntervalMs` since the last collection and no change has come for `quietMs`
 *    (the periodic full syncs' garbage, at most once per interval: each collection holds the
 *    event loop).
 * Never while a sync runs: one that is due then runs when the sync ends.
 *
 * The collection is V8's memory-reducing one (the gc extension's flavor 'last-resort': it
 * compacts and unmaps the freed pages). A plain gc() frees the objects but V8 keeps their pages
 * mapped and resident (spec/daemon/idle-collector.test.ts pins the difference). Then malloc's
 * free pages are given back too (`trim`): the collection frees the Buffers whose memory malloc
 * holds, and glibc keeps those pages resident by itself.
 */
import { getHeapSpaceStatistics } from 'node:v8';
import type winston from 'winston';
import { Clock, Timer } from '../proxier/clock';

/** What IdleCollector needs: the collector, the resident memory, the time, its thresholds, a log. */
export interface IdleCollectorOptions {
  /** V8's full collection (globalThis.gc, present with node's --expose-gc); undefined: never collect */
  readonly gc: ((options?: GcOptions) => void) | undefined;
  /** gives the C heap's free pages back after each collection (malloc-trim.ts); undefined: not done */
  readonly trim?: () => unknown;
  /** the process's resident memory, bytes (process.memoryUsage.rss) */
  readonly resident: () => number;
  /**
   * the part of `resident` that is V8's young generation, bytes, which the memory-reducing
   * collection shrinks and syncs grow back: not counted as growth up to what the first full
   * sync after the last collection grew it to (all of it until that sync has ended).
   * Undefined: none.
   */
  readonly young?: () => number;
  readonly clock: Clock;
  /** how long no change must have come after a burst */
  readonly quietMs: number;
  /** the least time between two collections that no burst asked for */
  readonly idleIntervalMs: number;
  /** how much the resident memory must have grown since the last collection left it */
  readonly minGrowthBytes: number;
  /** whether a sync is running now (the timer may fire during one that began since) */
  readonly busy: () => boolean;
  readonly log: winston.Logger;
  /** told after each collection: how long it held the loop, the resident memory before and after */
  readonly collected?: (durationMs: number, residentBefore: number, residentAfter: number) => void;
}

/** The options of V8's gc extension (src/extensions/gc-extension.cc); older V8s ignore `flavor`. */
export interface GcOptions {
  readonly type?: 'major' | 'minor';
  readonly execution?: 'sync' | 'async';
  readonly flavor?: 'regular' | 'last-resort';
}

/** The resident bytes of V8's young generation (its new space and new large objects). */
export function youngGenerationResident(): number {
  let bytes = 0;
  for (const s of getHeapSpaceStatistics())
    if (s.space_name === 'new_space' || s.space_name === 'new_large_object_space') bytes += s.physical_space_size;
  return bytes;
}

/** A full, synchronous, memory-reducing collection. */
export const MEMORY_REDUCING_GC: GcOptions = { type: 'major', execution: 'sync', flavor: 'last-resort' };

/** The proxy's quiet-time full collection (see the file comment). */
export class IdleCollector {
  private timer: Timer | undefined;
  private timerAt = Infinity;
  private baseline: number;
  private lastChangeAt = -Infinity;
  /** a change came since the last collection */
  private changedSince = false;
  private lastCollectionAt: number;
  /** a collection came due during a sync: it runs at the sync's end */
  private deferred = false;
  /**
   * the young generation at the end of the first full sync after the last collection: what a
   * full sync grows it back to; Infinity until that sync has ended
   */
  private youngNeeded = Infinity;

  constructor(private readonly opts: IdleCollectorOptions) {
    this.baseline = opts.resident() - this.young();
    this.lastCollectionAt = opts.clock.now();
  }

  /** The young generation's resident bytes now. */
  private young(): number {
    return this.opts.young?.() ?? 0;
  }

  /** The resident bytes not counted as growth: the young generation, up to what a full sync needs. */
  private leftOut(): number {
    return Math.min(this.young(), this.youngNeeded);
  }

  /** A Service or EndpointSlice change came: the quiet period starts again. */
  changed(): void {
    if (!this.opts.gc) return;
    this.lastChangeAt = this.opts.clock.now();
    this.changedSince = true;
    // a timer set sooner finds the change when it fires and waits again: no timer per event
    this.arm(this.lastChangeAt + this.opts.quietMs, false);
  }

  /**
   * A sync ended (`full`: it read the whole kernel table back): a deferred collection runs now;
   * otherwise one is due at the idle interval.
   */
  afterSync(full: boolean): void {
    if (!this.opts.gc) return;
    const now = this.opts.clock.now();
    if (full && this.youngNeeded === Infinity) this.youngNeeded = this.young();
    if (this.deferred) {
      this.deferred = false;
      this.arm(now, true);
    } else this.arm(Math.max(now, this.lastCollectionAt + this.opts.idleIntervalMs), false);
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Sets the timer to `at`; `replace`: even when one is set (sooner or later), else only sooner. */
  private arm(at: number, replace: boolean): void {
    if (this.timer && !replace && this.timerAt <= at) return;
    this.timer?.cancel();
    this.timerAt = at;
    this.timer = this.opts.clock.setTimer(() => this.fire(), at - this.opts.clock.now());
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.opts.clock.now();
    // changes still coming: never in a burst, wait for the quiet period
    if (now - this.lastChangeAt < this.opts.quietMs) {
      this.arm(this.lastChangeAt + this.opts.quietMs, true);
      return;
    }
    // a burst ended, or the idle interval has passed
    if (!this.changedSince && now - this.lastCollectionAt < this.opts.idleIntervalMs) return;
    if (this.opts.busy()) {
      this.deferred = true;
      return;
    }
    const before = this.opts.resident();
    if (before - this.leftOut() - this.baseline < this.opts.minGrowthBytes) return;
    this.collect(before, now);
  }

  private collect(before: number, now: number): void {
    const start = performance.now();
    this.opts.gc!(MEMORY_REDUCING_GC);
    // what the collection freed outside V8's heap (Buffers' memory) stays resident until trimmed
    this.opts.trim?.();
    const durationMs = performance.now() - start;
    const after = this.opts.resident();
    this.baseline = after - this.young();
    this.lastCollectionAt = now;
    this.changedSince = false;
    // learned again from the next full sync: the table may have grown or shrunk since
    this.youngNeeded = Infinity;
    this.opts.collected?.(durationMs, before, after);
    this.opts.log.verbose('collected garbage after a quiet period', {
      residentBeforeMB: Math.round(before / 2 ** 20),
      residentAfterMB: Math.round(after / 2 ** 20),
      durationMs: Math.round(durationMs),
    });
  }
}
