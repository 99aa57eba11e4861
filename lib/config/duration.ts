// Go's time.Duration text (metav1.Duration in KubeProxyConfiguration): `30s`, `1m30s`,
// `500ms`, `1.5h`, `0`. Parsed the way time.ParseDuration does; kube-ipvs then refuses negative
// values (kube-proxy's validation does the same for every duration it reads).

const NS_PER_UNIT: Readonly<Record<string, number>> = {
  ns: 1,
  us: 1e3,
  µs: 1e3, // U+00B5 micro sign
  μs: 1e3, // U+03BC Greek mu
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/** time.Duration is an int64 of nanoseconds. */
const MAX_NS = 2 ** 63 - 1;

/**
 * Nanoseconds of a Go duration string. Throws a TypeError whose message quotes the input
 * (`time: invalid duration "1x"`, Go's wording) on bad syntax, a negative value or overflow.
 */
export function parseDurationNs(text: string): number {
  const invalid = (why = 'invalid duration'): TypeError => new TypeError(`time: ${why} ${JSON.stringify(text)}`);
  let s = text;
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw invalid();
  let total = 0;
  while (s !== '') {
    const m = /^([0-9]*)(?:\.([0-9]*))?/.exec(s);
    const whole = m?.[1] ?? '';
    const frac = m?.[2];
    if (whole === '' && (frac === undefined || frac === '')) throw invalid();
    s = s.slice(m![0].length);
    const unit = /^[^0-9.]+/.exec(s)?.[0];
    if (unit === undefined) throw invalid('missing unit in duration');
    const scale = NS_PER_UNIT[unit];
    if (scale === undefined) throw invalid(`unknown unit ${JSON.stringify(unit)} in duration`);
    s = s.slice(unit.length);
    let value = whole === '' ? 0 : Number(whole) * scale;
    if (frac) value += Math.round(Number(`0.${frac}`) * scale);
    total += value;
    if (!Number.isFinite(total) || total > MAX_NS) throw invalid();
  }
  if (negative && total !== 0) throw invalid('negative duration');
  return total;
}

/** Milliseconds of a Go duration string (see parseDurationNs). */
export function parseDurationMs(text: string): number {
  return parseDurationNs(text) / 1e6;
}

function trimFraction(value: number, digits: number): string {
  // value is an integer of 10^-digits units; prints "1.5", "2", "0.001"
  const s = String(value).padStart(digits + 1, '0');
  const int = s.slice(0, s.length - digits);
  const frac = s.slice(s.length - digits).replace(/0+$/, '');
  return frac ? `${int}.${frac}` : int;
}

/** time.Duration.String() of a non-negative number of nanoseconds: "0s", "500ms", "1m30s", "15m0s", "1h0m0s". */
export function formatDurationNs(ns: number): string {
  const n = Math.round(ns);
  if (n === 0) return '0s';
  if (n < 1e3) return `${n}ns`;
  if (n < 1e6) return `${trimFraction(n, 3)}µs`;
  if (n < 1e9) return `${trimFraction(n, 6)}ms`;
  const hours = Math.floor(n / 3600e9);
  const minutes = Math.floor((n % 3600e9) / 60e9);
  const seconds = trimFraction(n % 60e9, 9);
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

/** formatDurationNs of milliseconds. */
export function formatDurationMs(ms: number): string {
  return formatDurationNs(ms * 1e6);
}
