// Prints steady-state.ts's results: per size, what one node costs the API server per hour of
// steady state, kube-ipvs beside the real kube-proxy (both running through the same window),
// and kube-ipvs/kube-proxy.
//
//   node dist/scripts/bench/report-steady.js RESULTS.jsonl
import { readFileSync } from 'node:fs';

interface SteadyApi {
  services: number;
  endpoints: number;
  side: string;
  phase: string;
  seconds: number;
  requests: Record<string, number>;
  requestsTotal: number;
  connections: number;
  receivedBytes: number;
}

const rows = readFileSync(process.argv[2]!, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as SteadyApi & { bench: string; what: string })
  .filter((r) => r.bench === 'steady' && r.what === 'api');
const perHour = (r: SteadyApi, v: number) => (r.phase === 'steady state' ? (v * 3600) / r.seconds : v);
const f = (v: number, digits = 0) => v.toFixed(digits);
const header = [
  'services x endpoints',
  'phase',
  'side',
  'seconds',
  'requests',
  'by verb',
  'connections',
  'KB received',
];
const body = rows.map((r) => [
  `${r.services}x${r.endpoints}`,
  r.phase === 'steady state' ? 'steady state, per hour' : r.phase,
  r.side,
  f(r.seconds),
  f(perHour(r, r.requestsTotal), 1),
  Object.entries(r.requests)
    .sort()
    .map(([v, n]) => `${v} ${f(perHour(r, n), 1)}`)
    .join(', ') || '-',
  f(perHour(r, r.connections), 1),
  f(perHour(r, r.receivedBytes) / 1024),
]);
if (body.length) {
  const w = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i <= 2 || i === 5 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  console.log(
    "\none node of each side, started at once and left alone with the server's default watch timeouts: requests from the audit log (by User-Agent), connections and bytes received counted in each side's namespace (every packet from the server, TLS and TCP included)\n",
  );
  console.log(line(header));
  console.log('-'.repeat(w.reduce((a, b) => a + b + 2, -2)));
  for (const r of body) console.log(line(r));
  for (const size of new Set(rows.map((r) => `${r.services}x${r.endpoints}`))) {
    const of = (side: string) =>
      rows.find((r) => `${r.services}x${r.endpoints}` === size && r.side === side && r.phase === 'steady state');
    const a = of('kube-ipvs');
    const b = of('kube-proxy');
    if (!a || !b) continue;
    const ratio = (x: number, y: number) => (y > 0 ? `${(x / y).toFixed(2)}x` : '-');
    console.log(
      `${size}, steady state, kube-ipvs/kube-proxy: requests ${ratio(a.requestsTotal / a.seconds, b.requestsTotal / b.seconds)}, connections ${ratio(a.connections / a.seconds, b.connections / b.seconds)}, bytes received ${ratio(a.receivedBytes / a.seconds, b.receivedBytes / b.seconds)}`,
    );
  }
}
