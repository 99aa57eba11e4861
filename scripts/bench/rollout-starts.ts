// make bench, issue 28: NODES proxies started at once against one API server, as after a
// DaemonSet rollout, kube-ipvs and the real kube-proxy (IPVS mode, .k8s/bin) one side after
// the other in the same VM boot, against the lab's real kube-apiserver + etcd holding the
// objects run.sh loaded (lab-load.ts). Each proxy runs in a network namespace of its own
// (connectToLab slot 1..NODES), all with the same configuration, node name and kube-proxy
// ServiceAccount token; each is stopped (SIGTERM) once its Service and EndpointSlice caches
// are synced (kube-ipvs: its `informers synced` line; kube-proxy: client-go's "Caches are
// synced" for "service config" and "endpoint slice config"), so the rest of its first sync,
// which costs the API server nothing, does not starve the others' starts of the guest's CPUs.
// Per side, from the mark before the first start to the last proxy synced:
//  - requests by verb and their rate (the audit log, by User-Agent), and the API server's
//    own latency for the ones that end (list, get, create: ResponseComplete's stageTimestamp
//    minus requestReceivedTimestamp), median, p99 and max;
//  - the API server's CPU seconds (its process_cpu_seconds_total), less what it burns with no
//    client (its rate over BASELINE_SECONDS just before, times the window): not split by
//    client, but one side runs at a time and nothing else talks to the lab;
//  - seconds from the starts to the last proxy synced (the guest's CPUs bound this: NODES
//    processes start on 2 emulated CPUs);
//  - the bytes the server sent (list bodies and watch events, as api-cost.ts counts them).
// Prints JSON lines; report-kube-proxy.ts prints them as a table.
//
//   node dist/scripts/bench/rollout-starts.js SERVICES ENDPOINTS   (in the VM, KUBE_IPVS_LAB set)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AuditEvent, kubeProxyIdentity, LabClient, labFromEnv } from '../../testkit/lab-client';
import { tryRun } from '../../testkit/netns';
import { benchNodeNamespace, cachesSynced, recordLine } from './bench-node';
import { auditRequests, serverMetrics } from './api-cost';
import { e2eProxyConfig, SERVICE_ACCOUNT_DIR, startKubeIpvs, startKubeProxy } from '../../testkit/processes';
import { NODE_NAME } from './lab-bench-objects';
import { median, sumSeries } from './process-memory';

type Side = 'kube-proxy' | 'kube-ipvs';

const [servicesArg = '1000', endpointsArg = '10'] = process.argv.slice(2);
const env = (name: string, fallback: string) => process.env[name] || fallback;
const NODES = Number(env('BENCH_ROLLOUT_NODES', '20'));
const SIDES = env('BENCH_ROLLOUT_SIDES', 'kube-proxy kube-ipvs').split(/\s+/).filter(Boolean) as Side[];
const SYNC_TIMEOUT_MS = Number(env('BENCH_ROLLOUT_TIMEOUT_SECONDS', '900')) * 1000;
const BASELINE_SECONDS = Number(env('BENCH_ROLLOUT_BASELINE_SECONDS', '30'));
/**
 * kube-ipvs's KUBE_FEATURE_WatchListClient (client-go's gate) per run of its side: "true"
 * streams its lists, "false" pages them, "false true" runs it both ways; unset, its default
 */
const WATCH_LIST = (process.env.BENCH_ROLLOUT_WATCH_LIST ?? '').split(/\s+/).filter(Boolean);
const nsOf = (side: Side, k: number) => `ro-${side === 'kube-ipvs' ? 'ipvs' : 'kp'}-${k}`;

function record(side: Side | undefined, what: string, value: Record<string, unknown>): void {
  const size = { services: Number(servicesArg), endpoints: Number(endpointsArg), nodes: NODES };
  recordLine({ bench: 'rollout', ...size, ...(side ? { side } : {}), what, ...value });
}

/** Node namespace `k` of `side` (benchNodeNamespace, lab slot k). */
function nodeNamespace(side: Side, k: number): string {
  benchNodeNamespace(nsOf(side, k), k);
  return nsOf(side, k);
}

/** The side's requests since the mark (auditRequests): by verb, their span, and the server's latency of those that ended. */
function requestsOf(events: readonly AuditEvent[], userAgentPrefix: string) {
  const { requests, requestsTotal, received, latenciesMs } = auditRequests(events, userAgentPrefix);
  const sorted = [...latenciesMs].sort((x, y) => x - y);
  return {
    requests,
    requestsTotal,
    requestSpanSeconds: received.length > 1 ? (Math.max(...received) - Math.min(...received)) / 1000 : 0,
    latencyMs: {
      median: median(sorted),
      p99: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))],
      max: sorted[sorted.length - 1],
    },
  };
}

async function measure(side: Side, lab: LabClient, cfg: string, watchList = ''): Promise<void> {
  console.error(
    `>> ${side}${watchList ? ` (KUBE_FEATURE_WatchListClient=${watchList})` : ''}: ${NODES} starts at once`,
  );
  const namespaces = Array.from({ length: NODES }, (_, i) => nodeNamespace(side, i + 1));
  // what the API server burns with no client (its own loops, the lab's second server's
  // watches): taken off the window, which is as long as the slower side's starts take
  const quiet0 = await serverMetrics(lab);
  const q0 = Date.now();
  await new Promise((r) => setTimeout(r, BASELINE_SECONDS * 1000));
  const quiet1 = await serverMetrics(lab);
  const quietCpuPerSecond =
    ((sumSeries(quiet1, 'process_cpu_seconds_total') ?? 0) - (sumSeries(quiet0, 'process_cpu_seconds_total') ?? 0)) /
    ((Date.now() - q0) / 1000);
  const auditMark = await lab.auditMark();
  const before = await serverMetrics(lab);
  const t0 = Date.now();
  const procs = namespaces.map((ns) =>
    side === 'kube-proxy'
      ? startKubeProxy([`--config=${cfg}`, '--v=1', '--logging-format=json'], ns)
      : startKubeIpvs(['--config', cfg, '--v=1'], watchList ? { KUBE_FEATURE_WatchListClient: watchList } : {}, ns),
  );
  const syncedAfter: number[] = [];
  try {
    await Promise.all(
      procs.map(async (p) => {
        await cachesSynced(side, p, SYNC_TIMEOUT_MS);
        syncedAfter.push((Date.now() - t0) / 1000);
        // its start is over: the rest of its first sync asks the API server nothing
        await p.kill('SIGTERM');
      }),
    );
  } finally {
    await Promise.all(procs.map((p) => p.kill('SIGKILL').catch(() => undefined)));
  }
  const after = await serverMetrics(lab);
  const windowSeconds = (Date.now() - t0) / 1000;
  const allSyncedSeconds = Math.max(...syncedAfter);
  const delta = (name: string, keep?: (labels: string) => boolean) =>
    (sumSeries(after, name, keep) ?? 0) - (sumSeries(before, name, keep) ?? 0);
  const reqs = requestsOf(await lab.audit(auditMark), `${side}/`);
  record(side, 'starts', {
    ...(watchList ? { watchListClient: watchList } : {}),
    allSyncedSeconds,
    syncedMedianSeconds: median(syncedAfter),
    ...reqs,
    requestsPerSecond: reqs.requestSpanSeconds > 0 ? reqs.requestsTotal / reqs.requestSpanSeconds : undefined,
    apiserverCpuSeconds: delta('process_cpu_seconds_total') - quietCpuPerSecond * windowSeconds,
    apiserverCpuSecondsRaw: delta('process_cpu_seconds_total'),
    apiserverQuietCpuPerSecond: quietCpuPerSecond,
    windowSeconds,
    listBytes: delta(
      'apiserver_response_sizes_sum',
      (l) => /verb="(LIST|GET)"/.test(l) && /resource="(services|endpointslices|nodes|servicecidrs)"/.test(l),
    ),
    watchEventBytes: delta('apiserver_watch_events_sizes_sum'),
    watchListSeconds: delta('apiserver_watch_list_duration_seconds_sum'),
  });
  for (const ns of namespaces) tryRun('ip', ['netns', 'del', ns]);
}

async function main(): Promise<void> {
  const lab = labFromEnv();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-rollout-'));
  await kubeProxyIdentity(lab, dir, { duration: '6h' });
  const cfg = path.join(dir, 'proxy.conf');
  // every proxy in a namespace of its own: the same loopback addresses do not collide
  writeFileSync(
    cfg,
    e2eProxyConfig({
      dir,
      node: NODE_NAME,
      ipvs: ['syncPeriod: 30s'],
      forKubeProxy: true,
      metrics: '127.0.0.1:10249',
      healthz: '127.0.0.1:10256',
    }),
  );
  record(undefined, 'conditions', { lab: (await lab.info()).version, cpus: os.cpus().length, sides: SIDES });
  try {
    const runs: { side: Side; watchList: string }[] = SIDES.flatMap((side) =>
      side === 'kube-ipvs' && WATCH_LIST.length > 0
        ? WATCH_LIST.map((watchList) => ({ side, watchList }))
        : [{ side, watchList: '' }],
    );
    for (const { side, watchList } of runs) {
      await measure(side, lab, cfg, watchList);
      // the API server settles (the watches it still holds are closed) before the next side
      await new Promise((r) => setTimeout(r, 10_000));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(SERVICE_ACCOUNT_DIR, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
