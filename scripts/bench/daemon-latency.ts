// make bench, daemon scenario (inside a fresh VM boot): the fake API server holds N Services x
// E endpoints; the real `kube-ipvs` process programs them (cold start), then 1,000 single
// endpoint changes are made one after another through the API, each timed from the API write
// to the end of the daemon sync that applied it (its "sync done" log line). The peer, in the
// same boot: kube-proxy's IPVS sync pattern for one endpoint change replayed through our
// netlink client (dump every service, GET each service twice, dump each one's real servers,
// one request in flight at a time) — what kube-proxy does for any change, however small.
// Prints JSON lines; scripts/bench/report-daemon.ts turns them into a table.
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { ApiClient, LogLine, startFakeApiServer, startKubeIpvs } from '../../lib/testing/processes';
import { AF_INET, IPPROTO_TCP } from '../../lib/netlink/uapi/ip_vs';

const [servicesArg = '1000', endpointsArg = '10', changesArg = '1000'] = process.argv.slice(2);
const SERVICES = Number(servicesArg);
const ENDPOINTS = Number(endpointsArg);
const CHANGES = Number(changesArg);
const PORT = 16444;

function record(what: string, value: Record<string, unknown>): void {
  const line = JSON.stringify({ bench: 'daemon', services: SERVICES, endpoints: ENDPOINTS, what, ...value });
  console.log(line);
  if (process.env.BENCH_OUT) appendFileSync(process.env.BENCH_OUT, line + '\n');
}

const clusterIP = (i: number) => `10.96.${(i >> 8) & 0xff}.${i & 0xff}`;
const endpointIP = (i: number, j: number) => `10.${100 + ((i * ENDPOINTS + j) >> 16)}.${((i * ENDPOINTS + j) >> 8) & 0xff}.${(i * ENDPOINTS + j) & 0xff}`;

function svc(i: number): object {
  return {
    apiVersion: 'v1', kind: 'Service',
    metadata: { namespace: 'bench', name: `svc-${i}`, uid: `uid-svc-${i}` },
    spec: { type: 'ClusterIP', clusterIP: clusterIP(i), clusterIPs: [clusterIP(i)], ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
  };
}
function slice(i: number, gen = 0): object {
  return {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { namespace: 'bench', name: `svc-${i}-1`, uid: `uid-slice-${i}`, labels: { 'kubernetes.io/service-name': `svc-${i}` } },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: Array.from({ length: ENDPOINTS }, (_, j) => ({
      // generation `gen` replaces endpoint 0 with a new address (a pod replaced)
      addresses: [j === 0 && gen > 0 ? `10.200.${(gen >> 8) & 0xff}.${gen & 0xff}` : endpointIP(i, j)],
      conditions: { ready: true },
      nodeName: 'node-b',
    })),
  };
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-daemon-'));
  const objects: object[] = [{ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a', uid: 'uid-node-a' }, status: { addresses: [{ type: 'InternalIP', address: '192.0.2.1' }] } }];
  for (let i = 0; i < SERVICES; i++) objects.push(svc(i), slice(i));
  writeFileSync(path.join(dir, 'fixtures.json'), JSON.stringify(objects));
  const api = await startFakeApiServer(['--port', String(PORT), '--host', '127.0.0.1', '--fixtures', path.join(dir, 'fixtures.json'), '--kubeconfig-out', path.join(dir, 'kubeconfig')]);
  writeFileSync(path.join(dir, 'config.conf'), [
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1', 'kind: KubeProxyConfiguration', 'mode: ipvs',
    `clientConnection: {kubeconfig: ${path.join(dir, 'kubeconfig')}}`, 'hostnameOverride: node-a',
    'clusterCIDR: 10.244.0.0/16', 'healthzBindAddress: 127.0.0.1:10266', 'metricsBindAddress: 127.0.0.1:10259',
    'ipvs: {syncPeriod: 1h}', '',
  ].join('\n'));
  const t0 = Date.now();
  const daemon = startKubeIpvs(['--config', path.join(dir, 'config.conf'), '--v=2']);
  const isSync = (l: LogLine) => l.message === 'sync done';
  const first = await daemon.waitFor(isSync, 'the cold-start sync', 0, 3_600_000);
  record('cold start', { seconds: (Date.parse(String(first.timestamp)) - t0) / 1000, ipvsWrites: first.ipvsWrites, execs: first.execs, syncSeconds: (first.durationMs as number) / 1000 });

  const client = new ApiClient(`http://127.0.0.1:${PORT}`);
  const latencies: number[] = [];
  const writes: number[] = [];
  for (let n = 1; n <= CHANGES; n++) {
    const i = (n * 7919) % SERVICES;
    const from = daemon.lines.length;
    const start = Date.now();
    await client.replace(`/apis/discovery.k8s.io/v1/namespaces/bench/endpointslices/svc-${i}-1`, slice(i, n));
    const done = await daemon.waitFor((l) => isSync(l) && (l.ipvsWrites as number) > 0, `change ${n}`, from, 600_000);
    latencies.push(Date.parse(String(done.timestamp)) - start);
    writes.push(done.ipvsWrites as number);
  }
  record('event to kernel', {
    changes: CHANGES, p50ms: pct(latencies, 50), p99ms: pct(latencies, 99), maxms: Math.max(...latencies),
    ipvsWritesPerChange: [...new Set(writes)].join('/'),
  });
  // the periodic full check (drift repair) on an unchanged node: a live config change to
  // syncPeriod makes the next sync a full one
  const cfg = path.join(dir, 'config.conf');
  const from = daemon.lines.length;
  writeFileSync(cfg, readFileSync(cfg, 'utf8').replace('syncPeriod: 1h', 'syncPeriod: 59m'));
  const check = await daemon.waitFor((l) => isSync(l) && l.full === true, 'the full check', from, 1_800_000);
  record('full check, no change', { seconds: (check.durationMs as number) / 1000, ipvsReads: check.ipvsReads, ipvsWrites: check.ipvsWrites, execs: check.execs });
  await daemon.kill('SIGTERM');
  await api.kill('SIGTERM');

  // the peer: kube-proxy's per-sync netlink pattern for one endpoint change, same table
  const ipvs = await openIpvs();
  const peer: number[] = [];
  for (let n = 0; n < 5; n++) {
    const start = process.hrtime.bigint();
    const all = await ipvs.listServices();
    for (const vs of all) {
      await ipvs.getService(vs); // syncService
      await ipvs.getService(vs); // syncEndpoint
      await ipvs.listRealServers(vs);
    }
    const vs = { af: AF_INET, protocol: IPPROTO_TCP, address: clusterIP(n), port: 80, fwmark: 0 } as const;
    await ipvs.apply({ kind: 'newDest', vs, rs: { af: AF_INET, address: `10.201.0.${n + 1}`, port: 8080, fwdMethod: 0, weight: 1 } });
    peer.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  ipvs.close();
  record('kube-proxy pattern, one change', { runs: peer.length, p50ms: pct(peer, 50), maxms: Math.max(...peer) });
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
