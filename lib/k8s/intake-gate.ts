/**
 * The watches' intake, held while a sync runs.
 *
 * Node runs the informers' watch streams and the proxier's syncs on one thread. A sync awaits
 * the kernel (each IPVS batch, each exec), and at every await the event loop hands the thread
 * to whatever the watches have brought meanwhile: under a churn the watch data is always there,
 * and each turn decodes and tracks a whole chunk of events before the sync's next step. At
 * 1,000 x 10 and 100 changes/s in the test VM a partial sync of 432 IPVS writes took 13.3 s so;
 * the next one, of 1,658 writes, took 0.26 s (scripts/bench/README.md). Every event taken in during
 * the long sync waited for its end and the next sync: a lag of the sync's whole length.
 * kube-proxy's informers decode on other threads and never stand in its sync's way.
 *
 * So a sync holds the gate: the watches pause their bodies (the HTTP/2 stream's window, 4 MiB,
 * keeps the server sending ahead; api-request.ts) and take the events in once it is over.
 * A sync still running after `maxHoldMs` lets them go on beside it, as before: the API server
 * closes a watch whose events wait too long (its cacher's "unresponsive" watcher).
 */

/**
 * How long one sync may hold the watches' intake (ms). The bench's EndpointSlice events are
 * about 1.8 KB: the stream window holds some 2,300, 2 s of 1,000 changes a second.
 */
export const INTAKE_HOLD_MAX_MS = 2_000;

/**
 * The longest run of events taken in within one turn of the event loop (ms). libuv reads a
 * socket with data waiting up to 32 times in one callback (uv__read), and each read's events
 * were decoded and tracked at once, so a backlog of the HTTP/2 window went in as one turn: no
 * timer, no sync, no scrape or health check meanwhile (the longest event-loop delay in the
 * test VM's churn reached 17 s beside a sync of 21.6 s without the gate; scripts/bench/README.md).
 */
export const INTAKE_SLICE_MS = 50;

/** The gate a sync holds and the watches wait on (see the file comment). */
export class IntakeGate {
  private timer: NodeJS.Timeout | undefined;
  private heldNow = false;
  private waiting: (() => void)[] = [];
  /** when this turn's slice of intake began; undefined: none yet this turn */
  private sliceStart: number | undefined;

  /**
   * `maxHoldMs` 0: never held. `sliceMs` 0: no limit per turn. `onExpired`: a hold ran out (for
   * a log line). `now`: the clock of the slices (ms).
   */
  constructor(
    readonly maxHoldMs: number = INTAKE_HOLD_MAX_MS,
    readonly sliceMs: number = INTAKE_SLICE_MS,
    private readonly onExpired?: (ms: number) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Whether a sync holds the intake now. */
  get held(): boolean {
    return this.heldNow;
  }

  /** Whether an event may be taken in now: not held, and this turn's slice not spent. */
  get open(): boolean {
    if (this.heldNow) return false;
    if (this.sliceMs <= 0) return true;
    const t = this.now();
    if (this.sliceStart === undefined) {
      this.sliceStart = t;
      // the next turn begins a slice of its own
      setImmediate(() => (this.sliceStart = undefined));
      return true;
    }
    return t - this.sliceStart < this.sliceMs;
  }

  /** Holds the intake until release(), or maxHoldMs at most. */
  hold(): void {
    if (this.heldNow || this.maxHoldMs <= 0) return;
    this.heldNow = true;
    this.timer = setTimeout(() => {
      this.onExpired?.(this.maxHoldMs);
      this.release();
    }, this.maxHoldMs);
    this.timer.unref();
  }

  /**
   * Lets the watches go on: each waiting one is called back in a later turn of the event
   * loop, not in the caller's (the sync that releases is not charged with their events).
   */
  release(): void {
    if (!this.heldNow) return;
    this.heldNow = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    const waiting = this.waiting;
    this.waiting = [];
    if (waiting.length > 0) setImmediate(() => waiting.forEach((f) => f()));
  }

  /**
   * For a watch that found the gate closed: calls `f` once events may be taken in again,
   * after the release when held, else in a later turn (after the timers and I/O that waited).
   */
  later(f: () => void): void {
    if (this.heldNow) this.waiting.push(f);
    else setImmediate(f);
  }
}
