/**
 * kube-proxy's BoundedFrequencyRunner (pkg/util/async): runs one async function, never two at
 * once, at most `burst` runs in a row and then no more often than once per `minIntervalMs`
 * (a token bucket), and at least once per `maxIntervalMs`. `run()` never blocks and coalesces:
 * requests made while a run is in progress cause exactly one more run after it.
 */
import { Clock, Timer } from './clock';

/** Options of BoundedFrequencyRunner: min and max interval, burst, clock. */
export interface RunnerOptions {
  readonly minIntervalMs: number;
  readonly maxIntervalMs: number;
  /** runs allowed back to back before minInterval applies (kube-proxy: 2) */
  readonly burst?: number;
  readonly clock: Clock;
  /** called after each run, once it is no longer in progress */
  readonly ended?: () => void;
}

/** kube-proxy's BoundedFrequencyRunner (see the file comment). */
export class BoundedFrequencyRunner {
  private tokens: number;
  private lastRefill: number;
  private timer: Timer | undefined;
  private timerAt = Infinity;
  private running: Promise<void> | undefined;
  private rerun = false;
  private stopped = true;
  private readonly burst: number;

  constructor(
    private readonly fn: () => Promise<void>,
    private readonly opts: RunnerOptions,
  ) {
    if (opts.maxIntervalMs < opts.minIntervalMs) throw new RangeError('maxInterval must be >= minInterval');
    this.burst = Math.max(1, opts.burst ?? 2);
    this.tokens = this.burst;
    this.lastRefill = opts.clock.now();
  }

  /** Starts the loop with an immediate first run. */
  start(): void {
    this.stopped = false;
    this.arm(this.opts.clock.now());
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Infinity;
  }

  /** Asks for a run as soon as the bounds allow. */
  run(): void {
    if (this.running) this.rerun = true;
    else this.arm(this.opts.clock.now());
  }

  /** Asks for a run no later than `ms` from now (a retry after a failure). */
  retryAfter(ms: number): void {
    this.arm(this.opts.clock.now() + ms);
  }

  /** Whether a run is in progress. */
  get inProgress(): boolean {
    return this.running !== undefined;
  }

  /** Resolves when no run is in progress. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Applies new intervals (a live configuration change); takes effect from the next run. */
  setIntervals(minIntervalMs: number, maxIntervalMs: number): void {
    (this.opts as { minIntervalMs: number }).minIntervalMs = minIntervalMs;
    (this.opts as { maxIntervalMs: number }).maxIntervalMs = Math.max(minIntervalMs, maxIntervalMs);
    if (!this.running && !this.stopped) this.arm(Math.min(this.timerAt, this.opts.clock.now() + maxIntervalMs));
  }

  private arm(at: number): void {
    if (this.stopped) return;
    if (this.timer && this.timerAt <= at) return;
    this.timer?.cancel();
    this.timerAt = at;
    this.timer = this.opts.clock.setTimer(() => this.fire(), at - this.opts.clock.now());
  }

  private refill(now: number): void {
    const min = this.opts.minIntervalMs;
    if (min <= 0) {
      this.tokens = this.burst;
    } else {
      this.tokens = Math.min(this.burst, this.tokens + (now - this.lastRefill) / min);
    }
    this.lastRefill = now;
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.stopped) return;
    if (this.running) {
      this.rerun = true;
      return;
    }
    const now = this.opts.clock.now();
    this.refill(now);
    if (this.tokens < 1) {
      // the next token: (1 - tokens) * minInterval from now
      this.arm(now + Math.ceil((1 - this.tokens) * this.opts.minIntervalMs));
      return;
    }
    this.tokens -= 1;
    this.running = this.fn()
      .catch(() => undefined) // the function logs its own failures; the loop must go on
      .finally(() => {
        this.running = undefined;
        const end = this.opts.clock.now();
        this.arm(end + this.opts.maxIntervalMs);
        if (this.rerun) {
          this.rerun = false;
          this.arm(end);
        }
        this.opts.ended?.();
      });
  }
}
