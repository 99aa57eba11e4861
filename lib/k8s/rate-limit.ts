/**
 * client-go's client-side rate limit (flowcontrol.NewTokenBucketRateLimiter, from
 * clientConnection.qps/burst, `--kube-api-qps`/`--kube-api-burst`): a bucket of `burst`
 * tokens refilled at `qps` a second; every request start takes one (lists, each list page,
 * watch starts, Event POSTs and PATCHes, and the one retry after a 401), in arrival order,
 * waiting when none is left, as client-go's Request.tryThrottle does. kube-proxy's
 * defaults (a 0 in the config): qps 5, burst 10. A watch holds no token while it is open.
 */
export interface RateLimiterClock {
  now(): number;
  setTimer(fn: () => void, ms: number): void;
}

const systemTimers: RateLimiterClock = {
  now: () => Date.now(),
  setTimer: (fn, ms) => void setTimeout(fn, ms).unref(),
};

/** client-go's token bucket rate limiter over API requests (see RateLimiterClock's comment). */
export class TokenBucketRateLimiter {
  private tokens: number;
  private at: number;

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly clock: RateLimiterClock = systemTimers,
  ) {
    if (!(qps > 0) || !(burst >= 1))
      throw new RangeError(`rate limit needs qps > 0 and burst >= 1, got qps ${qps}, burst ${burst}`);
    this.tokens = burst;
    this.at = clock.now();
  }

  /** Resolves when the caller may send: at once while tokens are left, else in its turn. */
  wait(): Promise<void> {
    const now = this.clock.now();
    if (now > this.at) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.qps);
      this.at = now;
    }
    // a reservation, as golang.org/x/time/rate's: the bucket goes negative, later callers wait longer
    this.tokens -= 1;
    if (this.tokens >= 0) return Promise.resolve();
    const ms = Math.ceil((-this.tokens / this.qps) * 1000);
    return new Promise((resolve) => this.clock.setTimer(resolve, ms));
  }
}
