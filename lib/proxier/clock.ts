/** Time as the proxier sees it: injected, so tests advance it instead of sleeping. */
export interface Timer {
  cancel(): void;
}

/** The time and timers the proxier uses. */
export interface Clock {
  /** milliseconds since the epoch */
  now(): number;
  setTimer(fn: () => void, ms: number): Timer;
}

/** The real clock: Date.now and unref'd setTimeout. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    t.unref?.();
    return { cancel: () => clearTimeout(t) };
  },
};
