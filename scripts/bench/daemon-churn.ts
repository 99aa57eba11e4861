// Churn: endpoint updates at a fixed rate across random Services (churn-generator.ts, shared
// with kube-proxy's pattern in peer-churn.ts), written into the fake API server in this process
// (the daemon still receives every change through its watch), while the daemon runs. Each
// update replaces one endpoint of a random Service (a pod replaced) and carries
// endpoints.kubernetes.io/last-change-trigger-time, so the daemon's own
// kubeproxy_network_programming_duration_seconds histogram times every change from the API
// write to the end of the sync that applied it. Afterwards the kernel is compared with what
// the API state implies (daemon-oracle.ts) until they match.
import { Ipvs } from '../../lib/kernel/ipvs/ipvs';
import { FakeApiServer } from '../../testkit/fake-apiserver';
import { LoggedProcess } from '../../testkit/processes';
import { generateChurn } from './churn-generator';
import { compareKernel, desiredFromApi, TableComparison } from './daemon-oracle';
import { histogramDelta, metric, rssBytes, scrape } from './process-memory';
import { syncsIn, total } from './sync-log';

export interface ChurnOptions {
  readonly server: FakeApiServer;
  readonly daemon: LoggedProcess;
  readonly ipvs: Ipvs;
  readonly metricsUrl: string;
  readonly services: number;
  readonly endpoints: number;
  readonly rate: number;
  readonly seconds: number;
  /** change numbers start here (replacementIP of each must differ from the earlier changes') */
  readonly firstGen: number;
  /** give up waiting for the kernel to match after this long */
  readonly settleTimeoutMs?: number;
}

export interface ChurnResult {
  readonly targetRate: number;
  readonly seconds: number;
  readonly updates: number;
  readonly achievedRate: number;
  /** network programming latency (API write -> end of the sync that applied it), from the daemon's histogram */
  readonly lag: { count: number; meanSeconds: number; p99AtMostSeconds: number; maxAtMostSeconds: number };
  readonly syncs: number;
  /** queue depth: most Services one sync re-planned, and the daemon's pending endpoint changes gauge at its highest sample */
  readonly maxBatch: number;
  readonly maxPending: number;
  /** /metrics scrapes the daemon did not answer at once (its event loop busy in a sync) */
  readonly metricsRetries: number;
  readonly maxSyncMs: number;
  readonly ipvsWrites: number;
  readonly execs: number;
  /** from the last write until the kernel matched the API state (the oracle's planning and the compare's period included) */
  readonly settleSeconds: number;
  readonly final: TableComparison;
  readonly rssStart: number;
  readonly rssEnd: number;
  readonly rssMax: number;
  readonly heapStart: number;
  readonly heapEnd: number;
}

const HISTOGRAM = 'kubeproxy_network_programming_duration_seconds';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runChurn(o: ChurnOptions): Promise<ChurnResult> {
  const pid = o.daemon.child.pid!;
  const before = await scrape(o.metricsUrl);
  const rssStart = rssBytes(pid);
  const heapStart = metric(before, 'nodejs_heap_size_used_bytes');
  const fromLine = o.daemon.lines.length;

  let rssMax = rssStart;
  let maxPending = 0;
  /** scrapes the daemon did not answer at once (busy in a sync: its event loop is blocked) */
  let metricsRetries = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await sleep(1000);
      rssMax = Math.max(rssMax, rssBytes(pid));
      maxPending = Math.max(
        maxPending,
        metric(
          await scrape(o.metricsUrl, 60, () => metricsRetries++),
          'kubeproxy_sync_proxy_rules_endpoint_changes_pending',
        ),
      );
    }
  })();

  const written = await generateChurn(o);
  const sent = written.updates;
  const lastWriteAt = written.lastWriteAtMs;
  const writingSeconds = written.seconds;

  const desired = desiredFromApi(o.server);
  const settleDeadline = Date.now() + (o.settleTimeoutMs ?? 300_000);
  let final = await compareKernel(o.ipvs, desired);
  while (final.wrong > 0 && Date.now() < settleDeadline) {
    await sleep(500);
    final = await compareKernel(o.ipvs, desired);
  }
  const settleSeconds = (Date.now() - lastWriteAt) / 1000;
  // the sync that applied the last change may end after the kernel matched: its log line
  await sleep(1500);
  sampling = false;
  await sampler;
  const after = await scrape(o.metricsUrl);

  const syncs = syncsIn(o.daemon.lines.slice(fromLine));
  return {
    targetRate: o.rate,
    seconds: writingSeconds,
    updates: sent,
    achievedRate: sent / writingSeconds,
    lag: histogramDelta(before, after, HISTOGRAM),
    syncs: syncs.length,
    maxBatch: Math.max(0, ...syncs.filter((x) => !x.full).map((x) => x.replanned)),
    maxPending,
    metricsRetries,
    maxSyncMs: Math.max(0, ...syncs.map((x) => x.durationMs)),
    ipvsWrites: total(syncs, 'ipvsWrites'),
    execs: total(syncs, 'execs'),
    settleSeconds,
    final,
    rssStart,
    rssEnd: rssBytes(pid),
    rssMax,
    heapStart,
    heapEnd: metric(after, 'nodejs_heap_size_used_bytes'),
  };
}
