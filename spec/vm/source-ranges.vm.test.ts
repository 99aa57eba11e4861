// loadBalancerSourceRanges fail closed, end to end: the real daemon (`kube-ipvs --config`)
// against the fake API server process, the real kernel's IPVS, ipsets and iptables, and real
// HTTP from client namespaces outside the cluster.
//  - `closed`: its only source range cannot be read ('192.0.2.0/24x'): the load balancer
//    admits nobody, not even a client the range seems to name; a log line and an Event say so;
//  - `sloppy`: '010.0.0.0/8', read as kube-proxy reads it (ParseCIDRSloppy: 10.0.0.0/8):
//    a 10.x client is admitted, another is not.
// The same daemon serves its metrics on 0.0.0.0 (as clusters do for Prometheus): the
// /kube-ipvs/ views answer the node's own clients only, an outside client gets 403.
//
// Addresses: pod 10.244.1.2 (the backend, clusterCIDR 10.244.0.0/16), services 10.96.0.0/16,
// the node 192.0.2.1; outside clients 192.0.2.2, 10.9.0.2 and 198.51.100.2, each in its own
// namespace routed through the node; LB ingress 203.0.113.30 (closed) and 203.0.113.31 (sloppy).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChildProcess } from 'node:child_process';
import {
  ApiClient,
  e2eProxyConfig,
  LoggedProcess,
  LogLine,
  startFixtureApiServer,
  startKubeIpvs,
} from '../../testkit/processes';
import { eventually } from '../../testkit/wait-for';
import { connect, deletePod, makePod, run, startEchoServer, tryRun } from '../../testkit/netns';

const API_PORT = 16444;
const NODE = 'node-a';
const NODE_IP = '192.0.2.1';
const POD = { name: 'srpod', ip: '10.244.1.2', gw: '10.244.1.1' };
const EXT_192 = { name: 'sr192', ip: '192.0.2.2', gw: NODE_IP };
const EXT_10 = { name: 'sr10', ip: '10.9.0.2', gw: '10.9.0.1' };
const EXT_198 = { name: 'sr198', ip: '198.51.100.2', gw: '198.51.100.1' };
const CLIENTS = [EXT_192, EXT_10, EXT_198];
const CLOSED_LB = '203.0.113.30';
const SLOPPY_LB = '203.0.113.31';

type Obj = Record<string, unknown>;
const meta = (name: string, extra: Obj = {}) => ({ namespace: 'default', name, uid: `uid-${name}`, ...extra });

function lbService(name: string, clusterIP: string, lbIP: string, ranges: string[]): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(name),
    spec: {
      type: 'LoadBalancer',
      clusterIP,
      clusterIPs: [clusterIP],
      ipFamilies: ['IPv4'],
      sessionAffinity: 'None',
      externalTrafficPolicy: 'Cluster',
      ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 0, protocol: 'TCP' }],
      loadBalancerSourceRanges: ranges,
    },
    status: { loadBalancer: { ingress: [{ ip: lbIP, ipMode: 'VIP' }] } },
  };
}
function slice(svc: string): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: meta(`${svc}-1`, { labels: { 'kubernetes.io/service-name': svc } }),
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: [
      { addresses: [POD.ip], conditions: { ready: true, serving: true, terminating: false }, nodeName: NODE },
    ],
  };
}
const node: Obj = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE, uid: 'uid-node-a' },
  spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
  status: { addresses: [{ type: 'InternalIP', address: NODE_IP }] },
};
const FIXTURES = [
  node,
  lbService('closed', '10.96.0.30', CLOSED_LB, ['192.0.2.0/24x']),
  slice('closed'),
  lbService('sloppy', '10.96.0.31', SLOPPY_LB, ['010.0.0.0/8']),
  slice('sloppy'),
];

const isSync = (l: LogLine) => l.message === 'sync done';

describe('loadBalancerSourceRanges fail closed (daemon, real kernel, real traffic)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-sr-'));
  const api = new ApiClient(`http://127.0.0.1:${API_PORT}`);
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    for (const p of [POD, ...CLIENTS]) makePod(p.name, p.ip, p.gw);
    children.push(await startEchoServer(POD.name, 'pod', POD.ip, 8080));
    apiserver = await startFixtureApiServer(dir, API_PORT, FIXTURES);
    const cfg = path.join(dir, 'config.conf');
    fs.writeFileSync(
      cfg,
      e2eProxyConfig({
        dir,
        node: NODE,
        ipvs: ['scheduler: rr', 'syncPeriod: 10m'],
        healthz: '127.0.0.1:10266',
        metrics: '0.0.0.0:10259',
      }),
    );
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
    await daemon.waitFor(isSync, 'the first sync');
  });

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    for (const c of children) c.kill('SIGKILL');
    for (const p of [POD, ...CLIENTS]) deletePod(p.name);
    tryRun('ipvsadm', ['-C']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  // what the two load balancers program is the step file
  // spec/golden/cases/loadbalancer-source-ranges-unreadable.yaml
  it('the backend answers through the ClusterIP (the VIPs are live; only the firewall decides)', () => {
    expect(connect('', '10.96.0.30', 80)).toMatchObject({ outcome: 'ok' });
    expect(connect('', '10.96.0.31', 80)).toMatchObject({ outcome: 'ok' });
  });

  it('an LB whose only source range is unreadable admits nobody from outside', () => {
    for (const c of CLIENTS)
      expect({ client: c.ip, ...connect(c.name, CLOSED_LB, 80, 3) }).toEqual({
        client: c.ip,
        outcome: 'timeout',
        reply: '',
      });
  });

  it("'010.0.0.0/8' admits a 10.x source and refuses another", () => {
    // (externalTrafficPolicy Cluster: the backend sees the node, masqueraded)
    expect(connect(EXT_10.name, SLOPPY_LB, 80)).toEqual({
      outcome: 'ok',
      reply: expect.stringMatching(/^pod client=/),
    });
    expect(connect(EXT_198.name, SLOPPY_LB, 80, 3).outcome).toBe('timeout');
    expect(connect(EXT_192.name, SLOPPY_LB, 80, 3).outcome).toBe('timeout');
  });

  it('metrics on 0.0.0.0: /metrics answers anyone, the /kube-ipvs/ views only the node itself (403 from outside)', () => {
    const curl = (ns: string, url: string) => {
      const argv = ['curl', '-sS', '--max-time', '20', '-o', '/dev/null', '-w', '%{http_code}', url];
      return run(ns ? 'ip' : argv[0]!, ns ? ['netns', 'exec', ns, ...argv] : argv.slice(1)).trim();
    };
    expect(curl(EXT_192.name, `http://${NODE_IP}:10259/metrics`)).toBe('200');
    for (const view of ['services', 'status', 'diff']) {
      expect({ view, code: curl(EXT_192.name, `http://${NODE_IP}:10259/kube-ipvs/${view}`) }).toEqual({
        view,
        code: '403',
      });
      expect({ view, code: curl('', `http://127.0.0.1:10259/kube-ipvs/${view}`) }).toEqual({ view, code: '200' });
    }
  });

  it('says so: a log line and a Warning Event on the Service', async () => {
    const line = daemon.lines.find(
      (l) =>
        typeof l.message === 'string' && l.message.includes("refused spec.loadBalancerSourceRanges[0] '192.0.2.0/24x'"),
    );
    expect(line?.message).toContain('admits no client');
    const found = await eventually(
      "the Service's Event",
      async () =>
        ((await api.get('/api/v1/namespaces/default/events')) as { items: Obj[] }).items.filter(
          (e) => (e.involvedObject as Obj).name === 'closed',
        ),
      (events) => events.length > 0,
      60_000,
    );
    expect(found).toEqual([
      expect.objectContaining({
        type: 'Warning',
        reason: 'InvalidField',
        message: expect.stringContaining('admits no client'),
      }),
    ]);
  });
});
