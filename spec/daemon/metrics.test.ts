// The /metrics contract: every series kube-proxy's IPVS mode registers (K8S
// pkg/proxy/metrics/metrics.go; ../shared/reference/kube-proxy-ipvs.md §1.9), with its type,
// labels and buckets, so dashboards and alerts written for kube-proxy keep working.
import perfHooks from 'node:perf_hooks';
import { exponentialBuckets } from 'prom-client';
import { NETWORK_PROGRAMMING_BUCKETS, ProxyMetrics, REST_CLIENT_DURATION_BUCKETS } from '../../lib/daemon/metrics';

type Kind = 'counter' | 'gauge' | 'histogram';
const KUBE_PROXY_IPVS: readonly [string, Kind, string[]][] = [
  // ip_family as kube-proxy 1.37's metrics.go has it (issue 41 item 6)
  ['kubeproxy_sync_proxy_rules_duration_seconds', 'histogram', ['ip_family']],
  ['kubeproxy_sync_full_proxy_rules_duration_seconds', 'histogram', ['ip_family']],
  ['kubeproxy_sync_partial_proxy_rules_duration_seconds', 'histogram', ['ip_family']],
  ['kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds', 'gauge', ['ip_family']],
  ['kubeproxy_sync_proxy_rules_last_timestamp_seconds', 'gauge', ['ip_family']],
  ['kubeproxy_sync_proxy_rules_endpoint_changes_pending', 'gauge', []],
  ['kubeproxy_sync_proxy_rules_endpoint_changes_total', 'counter', []],
  ['kubeproxy_sync_proxy_rules_service_changes_pending', 'gauge', []],
  ['kubeproxy_sync_proxy_rules_service_changes_total', 'counter', []],
  ['kubeproxy_proxy_healthz_total', 'counter', ['code']],
  ['kubeproxy_proxy_livez_total', 'counter', ['code']],
  ['kubeproxy_network_programming_duration_seconds', 'histogram', ['ip_family']],
  ['kubeproxy_sync_proxy_rules_no_local_endpoints_total', 'gauge', ['traffic_policy']],
  ['kubeproxy_sync_proxy_rules_iptables_restore_failures_total', 'counter', ['ip_family']],
  ['kubeproxy_conntrack_reconciler_sync_duration_seconds', 'histogram', []],
  ['kubeproxy_conntrack_reconciler_deleted_entries_total', 'counter', []],
];

async function families(m: ProxyMetrics): Promise<Map<string, { type: string; labels: string[] }>> {
  const out = new Map<string, { type: string; labels: string[] }>();
  for (const f of await m.registry.getMetricsAsJSON()) {
    const labels = new Set<string>();
    for (const v of f.values as { labels: Record<string, unknown> }[])
      for (const k of Object.keys(v.labels)) if (k !== 'le') labels.add(k);
    out.set(f.name, { type: String(f.type), labels: [...labels].sort() });
  }
  return out;
}

const SYNC = {
  full: false,
  replanned: 1,
  ipvsWrites: 1,
  ipvsReads: 0,
  ipvsFailures: 0,
  linkOps: 0,
  execs: 0,
  conntrackOps: 0,
  conntrackDeleted: 0,
  durationMs: 5,
  phasesMs: {},
};

describe('ProxyMetrics: kube-proxy IPVS mode series', () => {
  it("registers each of them with kube-proxy's type and labels", async () => {
    const m = new ProxyMetrics();
    m.healthzTotal.inc({ code: '200' });
    m.livezTotal.inc({ code: '200' });
    m.noLocalEndpoints.set({ traffic_policy: 'internal' }, 0);
    // the ip_family series exist once something is recorded (kube-proxy's too)
    m.recordSync(SYNC, false, 1000);
    m.recordSync({ ...SYNC, full: true }, false, 1000);
    m.recordQueued(1000);
    m.recordProgrammed([{ atMs: 500, family: 'ipv4' }], 1000);
    m.recordExec({ program: 'iptables-restore', result: 'error' });
    const got = await families(m);
    for (const [name, type, labels] of KUBE_PROXY_IPVS) {
      expect({ name, ...got.get(name) }).toEqual({ name, type, labels });
    }
  });

  it("uses kube-proxy's buckets", async () => {
    const m = new ProxyMetrics();
    m.recordSync(SYNC, false, 1000);
    m.recordProgrammed([{ atMs: 500, family: 'ipv4' }], 1000);
    const bounds = async (name: string) =>
      ((await m.registry.getSingleMetric(name)!.get()).values as { labels: { le?: number | string } }[])
        .map((v) => v.labels.le)
        .filter((le): le is number => typeof le === 'number');
    expect(await bounds('kubeproxy_sync_proxy_rules_duration_seconds')).toEqual(exponentialBuckets(0.001, 2, 15));
    expect(await bounds('kubeproxy_network_programming_duration_seconds')).toEqual(NETWORK_PROGRAMMING_BUCKETS);
    // component-base metrics.MergeBuckets starts from make([]float64, 1): a leading 0 bucket
    // (k8s.io/kubernetes v1.37.2 pkg/proxy/metrics/metrics.go, NetworkProgrammingLatency)
    const kubeProxy = [
      0,
      0.25,
      0.5,
      ...Array.from({ length: 59 }, (_, i) => 1 + i),
      ...Array.from({ length: 12 }, (_, i) => 60 + 5 * i),
      ...Array.from({ length: 7 }, (_, i) => 120 + 30 * i),
    ];
    expect(await bounds('kubeproxy_network_programming_duration_seconds')).toEqual(kubeProxy);
  });

  it('ip_family: IPv4 and IPv6 as kube-proxy writes them; a sync under every family, a slice under its own', async () => {
    const m = new ProxyMetrics();
    m.families = ['ipv4', 'ipv6'];
    m.recordSync(SYNC, false, 1000);
    m.recordProgrammed(
      [
        { atMs: 0, family: 'ipv6' },
        { atMs: 500, family: undefined },
      ],
      1000,
    );
    m.recordExec({ program: 'ip6tables-nft-restore', result: 'error' });
    const text = await m.registry.metrics();
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_duration_seconds_count\{ip_family="IPv4"\} 1$/m);
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_duration_seconds_count\{ip_family="IPv6"\} 1$/m);
    expect(text).toMatch(/^kubeproxy_network_programming_duration_seconds_sum\{ip_family="IPv6"\} 1$/m);
    // an FQDN slice (no family) under the primary one
    expect(text).toMatch(/^kubeproxy_network_programming_duration_seconds_sum\{ip_family="IPv4"\} 0.5$/m);
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_iptables_restore_failures_total\{ip_family="IPv6"\} 1$/m);
  });

  it("the proxied families' histograms are there at zero once the families are set, before any sync", async () => {
    const m = new ProxyMetrics();
    m.families = ['ipv6'];
    const text = await m.registry.metrics();
    expect(text).toMatch(/^kubeproxy_network_programming_duration_seconds_count\{ip_family="IPv6"\} 0$/m);
    expect(text).toMatch(/^kubeproxy_sync_proxy_rules_duration_seconds_count\{ip_family="IPv6"\} 0$/m);
    expect(text).not.toMatch(/ip_family="IPv4"/);
  });

  it("kube_ipvs_build_info: component-base's gauge and labels under kube-ipvs's name, no kubernetes_build_info (KubeVersionMismatch)", async () => {
    const m = new ProxyMetrics({ version: '1.2.3', platform: 'linux/arm64' });
    expect(await m.registry.metrics()).not.toMatch(/^kubernetes_build_info/m);
    const f = (await m.registry.getMetricsAsJSON()).find((x) => x.name === 'kube_ipvs_build_info');
    expect(f?.type).toBe('gauge');
    expect(f?.values).toEqual([
      {
        value: 1,
        labels: {
          major: '1',
          minor: '2',
          git_version: 'v1.2.3',
          git_commit: '',
          git_tree_state: '',
          build_date: '',
          go_version: '',
          compiler: 'tsc',
          platform: 'linux/arm64',
        },
      },
    ]);
  });

  it('execs by program and result; a failed iptables-restore of any backend counts as a restore failure', async () => {
    const m = new ProxyMetrics();
    for (const o of [
      { program: 'ipset', result: 'ok' },
      { program: 'iptables-restore', result: 'ok' },
      { program: 'iptables-legacy-restore', result: 'error' },
      { program: 'ip6tables-nft-restore', result: 'error' },
      { program: 'iptables-save', result: 'error' },
    ] as const)
      m.recordExec(o);
    const execs = (await m.execs.get()).values.map((v) => `${v.labels.program} ${v.labels.result} ${v.value}`).sort();
    expect(execs).toEqual([
      'ip6tables-nft-restore error 1',
      'ipset ok 1',
      'iptables-legacy-restore error 1',
      'iptables-restore ok 1',
      'iptables-save error 1',
    ]);
    // each under its family: iptables-* IPv4, ip6tables-* IPv6
    const failures = (await m.restoreFailures.get()).values.map((v) => `${v.labels.ip_family} ${v.value}`).sort();
    expect(failures).toEqual(['IPv4 1', 'IPv6 1']);
  });

  it('the table gauges are counted once per scrape, not per sync; with no counter set they stay 0', async () => {
    const m = new ProxyMetrics();
    const gauges = async () => {
      const text = await m.registry.metrics();
      return ['kube_ipvs_virtual_servers', 'kube_ipvs_real_servers', 'kube_ipvs_draining_real_servers'].map((n) =>
        Number(new RegExp(`^${n} (\\d+)$`, 'm').exec(text)![1]),
      );
    };
    expect(await gauges()).toEqual([0, 0, 0]);
    let asked = 0;
    let counts = { virtualServers: 3, realServers: 30, draining: 2 };
    m.tableCounts = () => (asked++, counts);
    const base = {
      full: false,
      replanned: 1,
      ipvsWrites: 1,
      ipvsReads: 0,
      ipvsFailures: 0,
      linkOps: 0,
      execs: 0,
      conntrackOps: 0,
      conntrackDeleted: 0,
      durationMs: 5,
      phasesMs: {},
    };
    m.recordSync(base, false, 1000);
    m.recordSync(base, false, 2000);
    expect(asked).toBe(0);
    expect(await gauges()).toEqual([3, 30, 2]);
    expect(asked).toBe(1); // one count serves the three gauges of a scrape
    counts = { virtualServers: 4, realServers: 41, draining: 0 };
    expect(await gauges()).toEqual([4, 41, 0]);
    expect(asked).toBe(2);
  });

  it('a sync with a conntrack cleanup observes its duration and adds its deletes; one without adds nothing', async () => {
    const m = new ProxyMetrics();
    const base = {
      full: false,
      replanned: 1,
      ipvsWrites: 1,
      ipvsReads: 0,
      ipvsFailures: 0,
      linkOps: 0,
      execs: 0,
      conntrackOps: 0,
      conntrackDeleted: 0,
      durationMs: 5,
      phasesMs: {},
    };
    m.recordSync(base, false, 1000);
    m.recordSync({ ...base, conntrackOps: 3, conntrackDeleted: 2, conntrackDurationMs: 4 }, false, 2000);
    expect((await m.conntrackDeleted.get()).values[0]!.value).toBe(2);
    const count = (await m.conntrackSyncDuration.get()).values.find(
      (v) => v.metricName === 'kubeproxy_conntrack_reconciler_sync_duration_seconds_count',
    );
    expect(count!.value).toBe(1);
  });

  it("API requests: client-go's rest_client_requests_total{code,host,method} and rest_client_request_duration_seconds{verb,host} with its buckets", async () => {
    const m = new ProxyMetrics();
    m.recordApiCall({ method: 'GET', host: '10.96.0.1:443', code: '200', seconds: 0.02 });
    m.recordApiCall({ method: 'GET', host: '10.96.0.1:443', code: '200', seconds: 0.3 });
    m.recordApiCall({ method: 'GET', host: '10.96.0.1:443', code: '401', seconds: 0.01 });
    m.recordApiCall({ method: 'POST', host: '10.96.0.1:443', code: '<error>', seconds: 3 });
    const got = await families(m);
    expect(got.get('rest_client_requests_total')).toEqual({ type: 'counter', labels: ['code', 'host', 'method'] });
    expect(got.get('rest_client_request_duration_seconds')).toEqual({ type: 'histogram', labels: ['host', 'verb'] });
    const text = await m.registry.metrics();
    expect(text).toContain('rest_client_requests_total{code="200",host="10.96.0.1:443",method="GET"} 2');
    expect(text).toContain('rest_client_requests_total{code="401",host="10.96.0.1:443",method="GET"} 1');
    expect(text).toContain('rest_client_requests_total{code="<error>",host="10.96.0.1:443",method="POST"} 1');
    expect(text).toContain('rest_client_request_duration_seconds_bucket{le="0.025",verb="GET",host="10.96.0.1:443"} 2');
    expect(text).toContain('rest_client_request_duration_seconds_count{verb="POST",host="10.96.0.1:443"} 1');
    expect(REST_CLIENT_DURATION_BUCKETS).toEqual([0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60]);
    const bounds = ((await m.restClientDuration.get()).values as { labels: { le?: number | string } }[])
      .map((v) => v.labels.le)
      .filter((le) => typeof le === 'number');
    expect([...new Set(bounds)]).toEqual(REST_CLIENT_DURATION_BUCKETS);
  });

  it('kube_ipvs_refused_frontends{reason}: every refused frontend of a Service now, each reason exported, 0 when none (issue 25 item 2)', async () => {
    const m = new ProxyMetrics();
    let refused = [
      {
        service: 'aaa/np',
        field: 'spec.ports[].nodePort',
        value: '192.0.2.1',
        reason: 'ForeignVirtualServer',
        message: 'm',
      },
      {
        service: 'aaa/t',
        field: 'spec.externalIPs',
        value: '203.0.113.200',
        reason: 'VIPInExcludedCIDR',
        message: 'm',
      },
      {
        service: 'aaa/u',
        field: 'spec.externalIPs',
        value: '203.0.113.201',
        reason: 'VIPInExcludedCIDR',
        message: 'm',
      },
    ];
    m.refusedFrontends = () => refused;
    expect((await families(m)).get('kube_ipvs_refused_frontends')).toEqual({ type: 'gauge', labels: ['reason'] });
    let text = await m.registry.metrics();
    expect(text).toContain('kube_ipvs_refused_frontends{reason="ForeignVirtualServer"} 1');
    expect(text).toContain('kube_ipvs_refused_frontends{reason="VIPInExcludedCIDR"} 2');
    expect(text).toContain('kube_ipvs_refused_frontends{reason="VirtualServerConflict"} 0');
    refused = [];
    text = await m.registry.metrics();
    expect(text).toContain('kube_ipvs_refused_frontends{reason="ForeignVirtualServer"} 0');
  });

  it('kube_ipvs_informer_not_watching_seconds{resource}: how long each informer has had no open watch, 0 while it has one (what /healthz no longer fails on, issue 39 item 7)', async () => {
    const m = new ProxyMetrics();
    let gaps: { resource: string; seconds: number }[] = [];
    m.notWatching = () => gaps;
    expect((await families(m)).get('kube_ipvs_informer_not_watching_seconds')).toEqual({
      type: 'gauge',
      labels: ['resource'],
    });
    let text = await m.registry.metrics();
    for (const r of ['services', 'endpointslices', 'nodes'])
      expect(text).toContain(`kube_ipvs_informer_not_watching_seconds{resource="${r}"} 0`);
    gaps = [{ resource: 'services', seconds: 125.5 }];
    text = await m.registry.metrics();
    expect(text).toContain('kube_ipvs_informer_not_watching_seconds{resource="services"} 125.5');
    expect(text).toContain('kube_ipvs_informer_not_watching_seconds{resource="nodes"} 0');
    gaps = [];
    expect(await m.registry.metrics()).toContain('kube_ipvs_informer_not_watching_seconds{resource="services"} 0');
  });
});

describe('ProxyMetrics: the event-loop delay monitor', () => {
  test("samples every 100 ms, not prom-client's 10 ms default (100 wakeups a second of an idle daemon)", () => {
    const spy = jest.spyOn(perfHooks, 'monitorEventLoopDelay');
    try {
      new ProxyMetrics();
      // one monitor, its timer every 100 ms (a test that names the constant could not fail on it)
      expect(spy.mock.calls.map((c) => c[0])).toEqual([{ resolution: 100 }]);
    } finally {
      spy.mockRestore();
    }
  });
});
