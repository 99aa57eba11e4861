// HealthCheckNodePort end to end, inside the VM: the real `kube-ipvs --config FILE` process
// and the fake API server (real processes), probed over HTTP from an "external load balancer"
// network namespace the way a cloud LB probes a node.
//
// Addresses: the node serves NodePorts on 192.0.2.1 (nodePortAddresses 192.0.2.0/24); the
// prober lb1 is 192.0.2.2; pods 10.244.0.0/16, Services 10.96.0.0/16, LB ingress 203.0.113.10.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  ApiClient,
  e2eProxyConfig,
  LoggedProcess,
  LogLine,
  startFixtureApiServer,
  startKubeIpvs,
} from '../../testkit/processes';
import { deletePod, inNs, makePod, tryRun } from '../../testkit/netns';
import { eventually as pollUntil } from '../../testkit/wait-for';

const API_PORT = 16444;
const NODE = 'node-a';
const NODE_IP = '192.0.2.1';
const PROBER = { name: 'lb1', ip: '192.0.2.2', gw: NODE_IP };
const HC_PORT = 32100;
const BUSY_HC_PORT = 32101;

type Obj = Record<string, unknown>;
const meta = (namespace: string, name: string, extra: Obj = {}) => ({
  namespace,
  name,
  uid: `uid-${namespace}-${name}`,
  ...extra,
});

function lbService(name: string, clusterIP: string, nodePort: number, healthCheckNodePort: number, lbIP: string): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta('default', name),
    spec: {
      type: 'LoadBalancer',
      clusterIP,
      clusterIPs: [clusterIP],
      ipFamilies: ['IPv4'],
      sessionAffinity: 'None',
      ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort, protocol: 'TCP' }],
      externalTrafficPolicy: 'Local',
      healthCheckNodePort,
    },
    status: { loadBalancer: { ingress: [{ ip: lbIP, ipMode: 'VIP' }] } },
  };
}

function slice(svc: string, eps: { ip: string; node: string }[]): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: meta('default', `${svc}-1`, {
      labels: {
        'kubernetes.io/service-name': svc,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    }),
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: eps.map((e) => ({
      addresses: [e.ip],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: e.node,
    })),
  };
}

const node: Obj = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE, uid: 'uid-node-a', labels: { 'kubernetes.io/hostname': NODE } },
  spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
  status: { addresses: [{ type: 'InternalIP', address: NODE_IP }] },
};
const web = lbService('web', '10.96.0.10', 30080, HC_PORT, '203.0.113.10');
const webLocal = slice('web', [
  { ip: '10.244.1.2', node: NODE },
  { ip: '10.244.2.2', node: 'node-b' },
]);
const webMoved = slice('web', [
  { ip: '10.244.3.2', node: 'node-b' },
  { ip: '10.244.2.2', node: 'node-b' },
]);
// its health check port is taken by another program on the node
const busy = lbService('busy', '10.96.0.11', 30081, BUSY_HC_PORT, '203.0.113.11');
const busySlice = slice('busy', [{ ip: '10.244.1.3', node: NODE }]);

function config(dir: string): string {
  return e2eProxyConfig({ dir, node: NODE, ipvs: ['syncPeriod: 10m'] });
}

interface Probe {
  outcome: 'ok' | 'refused' | 'error';
  status?: number;
  headers?: Record<string, string>;
  body?: string;
}

/** One GET from the prober's namespace, as a cloud load balancer's health check sends it (curl -i). */
function probe(port: number): Probe {
  const { cmd, args } = inNs(PROBER.name, ['curl', '-sS', '-i', '--max-time', '5', `http://${NODE_IP}:${port}/`]);
  const r = tryRun(cmd, args);
  if (r.status === 7) return { outcome: 'refused' };
  if (r.status !== 0) return { outcome: 'error', body: `curl exit ${r.status ?? r.signal}: ${r.stderr}` };
  const [head, ...rest] = r.stdout.split('\r\n\r\n');
  const [statusLine, ...headerLines] = head!.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of headerLines) {
    const i = l.indexOf(':');
    const k = l.slice(0, i).toLowerCase();
    if (['content-type', 'x-content-type-options', 'x-load-balancing-endpoint-weight'].includes(k))
      headers[k] = l.slice(i + 1).trim();
  }
  return { outcome: 'ok', status: Number(statusLine!.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

const expectedBody = (name: string, n: number) =>
  `{\n\t"service": {\n\t\t"namespace": "default",\n\t\t"name": "${name}"\n\t},\n\t"localEndpoints": ${n},\n\t"serviceProxyHealthy": true\n}`;
const answer = (name: string, n: number): Probe => ({
  outcome: 'ok',
  status: n > 0 ? 200 : 503,
  headers: {
    'content-type': 'application/json',
    'x-content-type-options': 'nosniff',
    'x-load-balancing-endpoint-weight': String(n),
  },
  body: expectedBody(name, n),
});

/** The daemon applies a change after its watch event and a sync. */
const eventually = <T>(what: string, f: () => T, ok: (v: T) => boolean, timeoutMs = 60_000) =>
  pollUntil(what, f, ok, timeoutMs);

const isSync = (l: LogLine) => l.message === 'sync done';
const slicePath = (name: string) => `/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/${name}`;

describe('HealthCheckNodePort end to end (kube-ipvs process, fake API server, probes from a load balancer namespace)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-hcnp-'));
  const api = new ApiClient(`http://127.0.0.1:${API_PORT}`);
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;
  let squatter: net.Server;

  beforeAll(async () => {
    makePod(PROBER.name, PROBER.ip, PROBER.gw);
    squatter = net.createServer((c) => c.end());
    await new Promise<void>((r) => squatter.listen(BUSY_HC_PORT, NODE_IP, r));
    apiserver = await startFixtureApiServer(dir, API_PORT, [node, web, webLocal, busy, busySlice]);
    fs.writeFileSync(path.join(dir, 'config.conf'), config(dir));
    daemon = startKubeIpvs(['--config', path.join(dir, 'config.conf'), '--v=2']);
  });

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    await new Promise<void>((r) => (squatter ? squatter.close(() => r()) : r()));
    deletePod(PROBER.name);
    tryRun('ipvsadm', ['-C']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a local ready endpoint: 200 with localEndpoints 1 on the node IP, as kube-proxy answers', async () => {
    // (generous: the daemon's start alone can take minutes in the TCG guest on a busy host)
    await daemon.waitFor(isSync, 'the first sync', 0, 280_000);
    // the servers open right after the sync's rules are applied
    expect(
      await eventually(
        'web healthy',
        () => probe(HC_PORT),
        (p) => p.outcome === 'ok',
      ),
    ).toEqual(answer('web', 1));
  });

  it('a health check port in use: an error line naming that Service and port; the other Service is served', async () => {
    const line = await daemon.waitFor(
      (l) => l.level === 'error' && l.service === 'default/busy',
      'the busy port error',
    );
    expect(line).toMatchObject({
      port: BUSY_HC_PORT,
      message: expect.stringMatching(
        new RegExp(`^node ${NODE} failed to start healthcheck "default/busy" on port ${BUSY_HC_PORT}: .*EADDRINUSE`),
      ),
    });
    expect(daemon.lines.filter((l) => l.level === 'error' && l.service !== 'default/busy')).toEqual([]);
    expect(probe(HC_PORT)).toEqual(answer('web', 1));
  });

  it('the local endpoint moves to another node: 503 with localEndpoints 0', async () => {
    await api.replace(slicePath('web-1'), webMoved);
    expect(
      await eventually(
        'web unhealthy',
        () => probe(HC_PORT),
        (p) => p.status === 503,
      ),
    ).toEqual(answer('web', 0));
  });

  it('the Service is deleted: the port is closed (connection refused)', async () => {
    await api.delete('/api/v1/namespaces/default/services/web');
    await eventually(
      'web closed',
      () => probe(HC_PORT).outcome,
      (o) => o === 'refused',
    );
  });
});
