// The datapath bench's figures (datapath-client.ts), pure: connections per second and connect
// latency percentiles from the client's samples.

/** The p-th percentile (0 < p <= 100) of `sorted` (ascending), nearest rank; undefined when empty. */
export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (!sorted.length) return undefined;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export interface DatapathSummary {
  readonly connections: number;
  readonly errors: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly connectP50Ms?: number;
  readonly connectP99Ms?: number;
  readonly connectMaxMs?: number;
}

/** One window's figures: `connectMs`, each completed connection's connect time; `errors`, the failed ones. */
export function summarize(connectMs: readonly number[], errors: number, seconds: number): DatapathSummary {
  const s = [...connectMs].sort((a, b) => a - b);
  return {
    connections: s.length,
    errors,
    seconds,
    perSecond: seconds > 0 ? s.length / seconds : 0,
    connectP50Ms: percentile(s, 50),
    connectP99Ms: percentile(s, 99),
    connectMaxMs: s[s.length - 1],
  };
}
