/**
 * Prometheus metrics (prom-client) with kube-proxy's names, types and buckets
 * (K8S pkg/proxy/metrics/metrics.go), so dashboards and alerts written for kube-proxy keep
 * working, plus kube-ipvs's own `kube_ipvs_*` series. One registry per daemon.
 */
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  collectDefaultMetrics,
  exponentialBuckets,
  linearBuckets,
} from 'prom-client';
import { BuildInfo, goPlatform } from '../model/build-info';
import type { IpFamily } from '../model/ip-family';
import type { SyncResult } from '../proxier/proxier';
import type { ExecObservation } from '../kernel/exec';
import type { ApiCall } from '../k8s/api-request';
import type { RefusedFrontend } from '../model/views';

/** The refusals of a Service's frontend, each a Warning Event of this reason: always exported, 0 when none. */
export const REFUSAL_REASONS: readonly string[] = [
  'ForeignVirtualServer',
  'VIPInExcludedCIDR',
  'VirtualServerConflict',
];

/** client-go's rest_client_request_duration_seconds buckets (component-base/metrics/prometheus/restclient). */
export const REST_CLIENT_DURATION_BUCKETS: readonly number[] = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60];

/**
 * kube-proxy's network programming buckets: 0, 0.25, 0.5, 1..59, 60..115 step 5, 120..300
 * step 30. The leading 0 is kube-proxy's too: component-base's metrics.MergeBuckets starts
 * from make([]float64, 1) (k8s.io/kubernetes v1.37.2 pkg/proxy/metrics/metrics.go).
 */
export const NETWORK_PROGRAMMING_BUCKETS: readonly number[] = [
  0,
  ...linearBuckets(0.25, 0.25, 2),
  ...linearBuckets(1, 1, 59),
  ...linearBuckets(60, 5, 12),
  ...linearBuckets(120, 30, 7),
];

/** The applied table's sizes (Proxier.counts()). */
export interface TableCounts {
  readonly virtualServers: number;
  readonly realServers: number;
  readonly draining: number;
}

/**
 * kube_ipvs_build_info: component-base's kubernetes_build_info labels (metrics/version.go
 * RegisterBuildInfo) under kube-ipvs's own name (kube-prometheus' KubeVersionMismatch counts
 * the distinct git_version of kubernetes_build_info across components: kube-ipvs's would fire
 * it), filled
 * with what applies to kube-ipvs: major, minor and git_version from its own version (not
 * Kubernetes'), compiler "tsc", platform the node's; git_commit, git_tree_state and
 * build_date are not recorded in a build (empty), and go_version is empty (no Go).
 */
export function buildInfoLabels(b: BuildInfo): Record<string, string> {
  const [major = '', minor = ''] = b.version.split('.');
  return {
    major,
    minor,
    git_version: `v${b.version}`,
    git_commit: '',
    git_tree_state: '',
    build_date: '',
    go_version: '',
    compiler: 'tsc',
    platform: b.platform,
  };
}

/** kube-proxy's ip_family label values: v1.IPFamily, "IPv4" and "IPv6". */
export const ipFamilyLabel = (family: IpFamily): 'IPv4' | 'IPv6' => (family === 'ipv6' ? 'IPv6' : 'IPv4');

/** The informers' resources (lib/k8s/informers.ts), each exported by kube_ipvs_informer_not_watching_seconds. */
const INFORMER_RESOURCES = ['services', 'endpointslices', 'nodes'] as const;

/**
 * The timer behind nodejs_eventloop_lag_* (prom-client's monitorEventLoopDelay): prom-client's
 * 10 ms default woke an idle daemon 100 times a second, 0.62 CPU-s a minute on the host (a bare
 * node with the default metrics; 0.12 at 100 ms); at 1,000 x 10 in the TCG guest kube-ipvs idled
 * at 4.4-4.9 CPU-s a minute with it, 2.2 at 100 ms (scripts/bench/README.md). A stall of 100 ms
 * or more still shows in _max.
 */
const EVENT_LOOP_MONITORING_PRECISION_MS = 100;

/** The daemon's Prometheus metrics, kube-proxy's and kube-ipvs's, in one registry. */
export class ProxyMetrics {
  readonly registry = new Registry();
  readonly buildInfo: Gauge;
  readonly syncDuration: Histogram<'ip_family'>;
  readonly syncFullDuration: Histogram<'ip_family'>;
  readonly syncPartialDuration: Histogram<'ip_family'>;
  readonly lastSync: Gauge<'ip_family'>;
  readonly lastQueued: Gauge<'ip_family'>;
  readonly endpointChangesPending: Gauge;
  readonly endpointChangesTotal: Counter;
  readonly serviceChangesPending: Gauge;
  readonly serviceChangesTotal: Counter;
  readonly healthzTotal: Counter<'code'>;
  readonly livezTotal: Counter<'code'>;
  readonly networkProgramming: Histogram<'ip_family'>;
  readonly noLocalEndpoints: Gauge<'traffic_policy'>;
  readonly restoreFailures: Counter<'ip_family'>;

  private proxied: readonly IpFamily[] = ['ipv4'];

  /**
   * The families the daemon proxies (set once they are chosen): one sync programs them all,
   * so a sync's duration and time are recorded under each, as kube-proxy's per-family
   * proxiers each record their own. Setting them shows each family's histograms and restore
   * failures at zero from the first scrape.
   */
  get families(): readonly IpFamily[] {
    return this.proxied;
  }

  set families(families: readonly IpFamily[]) {
    this.proxied = families;
    for (const family of families) {
      const labels = { ip_family: ipFamilyLabel(family) };
      for (const h of [this.syncDuration, this.syncFullDuration, this.syncPartialDuration, this.networkProgramming])
        h.zero(labels);
      this.restoreFailures.inc(labels, 0);
    }
  }
  readonly netlinkOps: Counter<'kind' | 'result'>;
  readonly execs: Counter<'program' | 'result'>;
  readonly driftRepairs: Counter;
  readonly idleCollections: Histogram;
  readonly virtualServers: Gauge;
  readonly realServers: Gauge;
  readonly draining: Gauge;
  readonly refused: Gauge<'reason'>;
  readonly informerNotWatching: Gauge<'resource'>;
  readonly conntrackSyncDuration: Histogram;
  readonly conntrackDeleted: Counter;
  readonly restClientRequests: Counter<'code' | 'host' | 'method'>;
  readonly restClientDuration: Histogram<'verb' | 'host'>;
  readonly watchDecodeRelists: Counter<'resource'>;

  constructor(build: BuildInfo = { version: '0.0.0', platform: goPlatform() }) {
    const registers = [this.registry];
    this.buildInfo = new Gauge({
      name: 'kube_ipvs_build_info',
      help:
        "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, " +
        'and compiler from which kube-ipvs was built, and platform on which it is running.',
      labelNames: [
        'major',
        'minor',
        'git_version',
        'git_commit',
        'git_tree_state',
        'build_date',
        'go_version',
        'compiler',
        'platform',
      ],
      registers,
    });
    this.buildInfo.set(buildInfoLabels(build), 1);
    const dur = exponentialBuckets(0.001, 2, 15);
    this.syncDuration = new Histogram({
      name: 'kubeproxy_sync_proxy_rules_duration_seconds',
      help: 'SyncProxyRules latency in seconds',
      buckets: dur,
      labelNames: ['ip_family'],
      registers,
    });
    this.syncFullDuration = new Histogram({
      name: 'kubeproxy_sync_full_proxy_rules_duration_seconds',
      help: 'SyncProxyRules latency in seconds for full resyncs',
      buckets: dur,
      labelNames: ['ip_family'],
      registers,
    });
    this.syncPartialDuration = new Histogram({
      name: 'kubeproxy_sync_partial_proxy_rules_duration_seconds',
      help: 'SyncProxyRules latency in seconds for partial resyncs',
      buckets: dur,
      labelNames: ['ip_family'],
      registers,
    });
    this.lastSync = new Gauge({
      name: 'kubeproxy_sync_proxy_rules_last_timestamp_seconds',
      help: 'The last time proxy rules were successfully synced',
      labelNames: ['ip_family'],
      registers,
    });
    this.lastQueued = new Gauge({
      name: 'kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds',
      help: 'The last time a sync of proxy rules was queued',
      labelNames: ['ip_family'],
      registers,
    });
    this.endpointChangesPending = new Gauge({
      name: 'kubeproxy_sync_proxy_rules_endpoint_changes_pending',
      help: 'Pending proxy rules Endpoint changes',
      registers,
    });
    this.endpointChangesTotal = new Counter({
      name: 'kubeproxy_sync_proxy_rules_endpoint_changes_total',
      help: 'Cumulative proxy rules Endpoint changes',
      registers,
    });
    this.serviceChangesPending = new Gauge({
      name: 'kubeproxy_sync_proxy_rules_service_changes_pending',
      help: 'Pending proxy rules Service changes',
      registers,
    });
    this.serviceChangesTotal = new Counter({
      name: 'kubeproxy_sync_proxy_rules_service_changes_total',
      help: 'Cumulative proxy rules Service changes',
      registers,
    });
    this.healthzTotal = new Counter({
      name: 'kubeproxy_proxy_healthz_total',
      help: 'Cumulative proxy healthz HTTP status',
      labelNames: ['code'],
      registers,
    });
    this.livezTotal = new Counter({
      name: 'kubeproxy_proxy_livez_total',
      help: 'Cumulative proxy livez HTTP status',
      labelNames: ['code'],
      registers,
    });
    this.networkProgramming = new Histogram({
      name: 'kubeproxy_network_programming_duration_seconds',
      help: 'In Cluster Network Programming Latency in seconds',
      buckets: [...NETWORK_PROGRAMMING_BUCKETS],
      labelNames: ['ip_family'],
      registers,
    });
    this.noLocalEndpoints = new Gauge({
      name: 'kubeproxy_sync_proxy_rules_no_local_endpoints_total',
      help: 'Number of services with a Local traffic policy and no endpoints',
      labelNames: ['traffic_policy'],
      registers,
    });
    // kube-proxy's conntrack reconciler (K8S PR #130204): one observation per cleanup that ran
    this.conntrackSyncDuration = new Histogram({
      name: 'kubeproxy_conntrack_reconciler_sync_duration_seconds',
      help: 'ReconcileConntrackFlowsLatency latency in seconds',
      buckets: dur,
      registers,
    });
    this.conntrackDeleted = new Counter({
      name: 'kubeproxy_conntrack_reconciler_deleted_entries_total',
      help: 'Cumulative conntrack flows deleted by conntrack reconciler',
      registers,
    });
    // client-go's (k8s.io/client-go/tools/metrics, registered by component-base's restclient
    // package): every request kube-ipvs makes to the API server, each retry counted
    this.restClientRequests = new Counter({
      name: 'rest_client_requests_total',
      help: 'Number of HTTP requests, partitioned by status code, method, and host.',
      labelNames: ['code', 'host', 'method'],
      registers,
    });
    this.restClientDuration = new Histogram({
      name: 'rest_client_request_duration_seconds',
      help: 'Request latency in seconds. Broken down by verb, and host.',
      labelNames: ['verb', 'host'],
      buckets: [...REST_CLIENT_DURATION_BUCKETS],
      registers,
    });
    // an informer relisted after watch events that did not decode (lib/k8s/informers.ts)
    this.watchDecodeRelists = new Counter({
      name: 'kube_ipvs_watch_decode_relists_total',
      help: 'Relists after watch events that repeatedly did not decode at one resourceVersion, by resource',
      labelNames: ['resource'],
      registers,
    });
    for (const resource of ['services', 'endpointslices', 'nodes']) this.watchDecodeRelists.inc({ resource }, 0);
    this.restoreFailures = new Counter({
      name: 'kubeproxy_sync_proxy_rules_iptables_restore_failures_total',
      help: 'Cumulative proxy iptables restore failures',
      labelNames: ['ip_family'],
      registers,
    });
    this.netlinkOps = new Counter({
      name: 'kube_ipvs_netlink_ops_total',
      help: 'IPVS netlink requests, by kind (read/write) and result',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.execs = new Counter({
      name: 'kube_ipvs_execs_total',
      help: 'ipset and iptables processes run, by program and result (exit 0 or not)',
      labelNames: ['program', 'result'],
      registers,
    });
    this.driftRepairs = new Counter({
      name: 'kube_ipvs_drift_repairs_total',
      help: 'Full syncs that found the kernel changed behind kube-ipvs and repaired it',
      registers,
    });
    this.idleCollections = new Histogram({
      name: 'kube_ipvs_idle_collection_duration_seconds',
      help: 'Full garbage collections run once the proxy went quiet after a burst (the event loop is held meanwhile)',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    // the table's sizes are counted when scraped, not after every sync: counting walks the
    // whole applied table (on a large node that held up every single change).
    // One scrape collects the three gauges one after another, before any promise settles: the
    // first counts, the others reuse that count.
    let scraped: TableCounts | undefined;
    const tableCounts = () => this.tableCounts?.();
    const counted = (pick: (c: TableCounts) => number) =>
      function (this: Gauge) {
        if (!scraped) {
          scraped = tableCounts();
          queueMicrotask(() => (scraped = undefined));
        }
        if (scraped) this.set(pick(scraped));
      };
    this.virtualServers = new Gauge({
      name: 'kube_ipvs_virtual_servers',
      help: 'IPVS virtual servers kube-ipvs manages',
      registers,
      collect: counted((c) => c.virtualServers),
    });
    this.realServers = new Gauge({
      name: 'kube_ipvs_real_servers',
      help: 'IPVS real servers kube-ipvs manages',
      registers,
      collect: counted((c) => c.realServers),
    });
    this.draining = new Gauge({
      name: 'kube_ipvs_draining_real_servers',
      help: 'Real servers at weight 0 waiting for their connections to end',
      registers,
      collect: counted((c) => c.draining),
    });
    const refusedNow = () => this.refusedFrontends?.() ?? [];
    this.refused = new Gauge({
      name: 'kube_ipvs_refused_frontends',
      help: "Frontends Services ask for that kube-ipvs does not program, by the refusal's Event reason",
      labelNames: ['reason'],
      registers,
      collect(this: Gauge<'reason'>) {
        const by = new Map<string, number>(REFUSAL_REASONS.map((r) => [r, 0]));
        for (const f of refusedNow()) by.set(f.reason, (by.get(f.reason) ?? 0) + 1);
        this.reset();
        for (const [reason, n] of by) this.set({ reason }, n);
      },
    });
    // informer staleness is a metric, not /healthz's code (issue 39 item 7: health-server.ts)
    const notWatchingNow = () => this.notWatching?.() ?? [];
    this.informerNotWatching = new Gauge({
      name: 'kube_ipvs_informer_not_watching_seconds',
      help: 'Seconds since the informer last had an open watch (Services, EndpointSlices, this Node); 0 while it has one',
      labelNames: ['resource'],
      registers,
      collect(this: Gauge<'resource'>) {
        this.reset();
        for (const resource of INFORMER_RESOURCES) this.set({ resource }, 0);
        for (const n of notWatchingNow()) this.set({ resource: n.resource }, n.seconds);
      },
    });
    collectDefaultMetrics({
      register: this.registry,
      eventLoopMonitoringPrecision: EVENT_LOOP_MONITORING_PRECISION_MS,
    });
  }

  /** What kube_ipvs_informer_not_watching_seconds shows, asked at each scrape: the informers without an open watch. */
  notWatching: (() => readonly { readonly resource: string; readonly seconds: number }[]) | undefined;

  /** What kube_ipvs_refused_frontends shows, asked at each scrape. */
  refusedFrontends: (() => readonly RefusedFrontend[]) | undefined;

  /**
   * One external command: kube_ipvs_execs_total{program,result}; a failed iptables-restore
   * (any backend, either family) also counts in kube-proxy's restore failures.
   */
  recordExec(o: ExecObservation): void {
    this.execs.inc({ program: o.program, result: o.result });
    if (o.result === 'error' && /^ip6?tables(-legacy|-nft)?-restore$/.test(o.program))
      this.restoreFailures.inc({ ip_family: o.program.startsWith('ip6') ? 'IPv6' : 'IPv4' });
  }

  /** A change queued now, for every family (kube-proxy's last_queued_timestamp). */
  recordQueued(atMs: number): void {
    for (const family of this.families) this.lastQueued.set({ ip_family: ipFamilyLabel(family) }, atMs / 1000);
  }

  /**
   * Network programming latency of the EndpointSlice changes a sync ended at `nowMs` took in,
   * each under its slice's family (an FQDN slice, which has none, under the primary family).
   */
  recordProgrammed(
    triggered: readonly { readonly atMs: number; readonly family: IpFamily | undefined }[],
    nowMs: number,
  ): void {
    for (const t of triggered)
      this.networkProgramming.observe(
        { ip_family: ipFamilyLabel(t.family ?? this.families[0] ?? 'ipv4') },
        Math.max(0, nowMs - t.atMs) / 1000,
      );
  }

  /** One API request (lib/k8s apiRequest's observer); client-go's verb label is the HTTP method. */
  recordApiCall(c: ApiCall): void {
    this.restClientRequests.inc({ code: c.code, host: c.host, method: c.method });
    this.restClientDuration.observe({ verb: c.method, host: c.host }, c.seconds);
  }

  /** What the kube_ipvs_virtual_servers / real_servers / draining gauges show, asked at each scrape. */
  tableCounts: (() => TableCounts) | undefined;

  /** One sync's figures. */
  recordSync(r: SyncResult, drift: boolean, at: number): void {
    const s = r.durationMs / 1000;
    for (const family of this.families) {
      const labels = { ip_family: ipFamilyLabel(family) };
      this.syncDuration.observe(labels, s);
      (r.full ? this.syncFullDuration : this.syncPartialDuration).observe(labels, s);
      this.lastSync.set(labels, at / 1000);
    }
    this.netlinkOps.inc({ kind: 'write', result: 'ok' }, r.ipvsWrites - r.ipvsFailures);
    this.netlinkOps.inc({ kind: 'write', result: 'error' }, r.ipvsFailures);
    this.netlinkOps.inc({ kind: 'read', result: 'ok' }, r.ipvsReads);
    if (r.conntrackDurationMs !== undefined) this.conntrackSyncDuration.observe(r.conntrackDurationMs / 1000);
    this.conntrackDeleted.inc(r.conntrackDeleted);
    if (drift) this.driftRepairs.inc();
  }
}
