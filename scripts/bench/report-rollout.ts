// Prints rollout-starts.ts's results: per size, NODES proxies started at once, kube-ipvs beside
// the real kube-proxy, what their starts cost the one API server, and kube-ipvs/kube-proxy.
//
//   node dist/scripts/bench/report-rollout.js RESULTS.jsonl
import { readFileSync } from 'node:fs';

interface LatencyMs {
  median?: number;
  p99?: number;
  max?: number;
}
interface Starts {
  services: number;
  endpoints: number;
  nodes: number;
  side: string;
  requests: Record<string, number>;
  requestsTotal: number;
  requestsPerSecond?: number;
  latencyMs: LatencyMs;
  apiserverCpuSeconds: number;
  listBytes: number;
  watchEventBytes: number;
  watchListSeconds: number;
  allSyncedSeconds: number;
  /** kube-ipvs's KUBE_FEATURE_WatchListClient when the bench set it */
  watchListClient?: string;
}

const starts = readFileSync(process.argv[2]!, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Starts & { bench: string; what: string })
  .filter((r) => r.bench === 'rollout' && r.what === 'starts');
const f = (v: number | undefined, digits = 0) => (v === undefined ? '-' : v.toFixed(digits));
const header = [
  'services x endpoints',
  'starts',
  'side',
  'requests',
  'by verb',
  'req/s',
  'latency ms (median / p99 / max)',
  'apiserver CPU less idle',
  'list/get KB',
  'watch KB',
  'last synced',
];
const body = starts.map((r) => [
  `${r.services}x${r.endpoints}`,
  String(r.nodes),
  r.watchListClient ? `${r.side} (WatchListClient=${r.watchListClient})` : r.side,
  String(r.requestsTotal),
  Object.entries(r.requests)
    .sort()
    .map(([v, n]) => `${v} ${n}`)
    .join(', '),
  f(r.requestsPerSecond),
  `${f(r.latencyMs.median)} / ${f(r.latencyMs.p99)} / ${f(r.latencyMs.max)}`,
  `${f(r.apiserverCpuSeconds, 2)} s`,
  f(r.listBytes / 1024),
  f(r.watchEventBytes / 1024),
  `${f(r.allSyncedSeconds, 1)} s`,
]);
if (body.length) {
  const w = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => (i <= 4 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
  console.log(
    "\nproxies started at once against one API server (each in its own namespace, stopped once its Service and EndpointSlice caches synced): requests and latency from the audit log, CPU and bytes from kube-apiserver's metrics\n",
  );
  console.log(line(header));
  console.log('-'.repeat(w.reduce((a, b) => a + b + 2, -2)));
  for (const r of body) console.log(line(r));
  for (const size of new Set(starts.map((r) => `${r.services}x${r.endpoints}`))) {
    const of = (side: string) => starts.find((r) => `${r.services}x${r.endpoints}` === size && r.side === side);
    const a = of('kube-ipvs');
    const b = of('kube-proxy');
    if (!a || !b) continue;
    const ratio = (x: number, y: number) => (y > 0 ? `${(x / y).toFixed(2)}x` : '-');
    console.log(
      `${size}, kube-ipvs/kube-proxy: requests ${ratio(a.requestsTotal, b.requestsTotal)}, apiserver CPU ${ratio(a.apiserverCpuSeconds, b.apiserverCpuSeconds)}, bytes ${ratio(a.listBytes + a.watchEventBytes, b.listBytes + b.watchEventBytes)}`,
    );
  }
}
