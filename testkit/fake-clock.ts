import { Clock, Timer } from '../lib/proxier/clock';

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/** A clock that moves only when told to; timers fire in time order during `advance`. */
export class FakeClock implements Clock {
  private t: number;
  private seq = 0;
  private timers: Pending[] = [];

  constructor(start = 1_700_000_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimer(fn: () => void, ms: number): Timer {
    const p: Pending = { at: this.t + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(p);
    return { cancel: () => void (p.cancelled = true) };
  }

  /** Pending (not cancelled) timers' due times, ascending. */
  pendingTimers(): number[] {
    return this.timers
      .filter((p) => !p.cancelled)
      .map((p) => p.at)
      .sort((a, b) => a - b);
  }

  /** Moves time forward by `ms` without firing timers: the time a fake's operation "takes". */
  spend(ms: number): void {
    this.t += ms;
  }

  /**
   * Moves time forward by `ms`, firing due timers in order; after each, lets promise
   * callbacks run (so an async job started by a timer can finish and arm the next timer).
   */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await flushPromises();
      this.timers = this.timers.filter((p) => !p.cancelled);
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.fn();
    }
    this.t = end;
    await flushPromises();
  }
}

/** Lets every queued promise callback (and those they queue) run. */
export async function flushPromises(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}
