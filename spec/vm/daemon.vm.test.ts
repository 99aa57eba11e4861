// The daemon end to end, inside the VM: the real `kube-ipvs --config FILE` process, its
// informers talking list/watch to the project's fake API server (another real process) over
// HTTPS with bearer-token authentication, the real kernel, and real traffic from client
// namespaces. The daemon reads kubeadm's kubeconfig.conf exactly as manifests/new-cluster/configmap.yaml
// ships it (only `server:` replaced): the CA and the service-account token at
// /var/run/secrets/kubernetes.io/serviceaccount, as in the pod (the guest's root is a tmpfs
// overlay: the directory is made here); the token is rotated while the daemon runs.
//
// Addresses: pods 10.244.0.0/16 (clusterCIDR; pod N is 10.244.N.2 behind gateway 10.244.N.1),
// services 10.96.0.0/16, external clients on 192.0.2.0/24 (allowed by the LB source range;
// the node serves NodePorts on 192.0.2.1) and 198.51.100.0/24 (not allowed), LB ingress
// 203.0.113.10, external IP 203.0.113.20, a second CNI's pods in 10.250.0.0/16 (excluded).
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ApiClient,
  e2eProxyConfig,
  LoggedProcess,
  LogLine,
  SERVICE_ACCOUNT_DIR as SA_DIR,
  shippedKubeconfig,
  startFakeApiServer,
  startKubeIpvs,
} from '../../testkit/processes';
import { connect, deletePod, ip, longClient, makePod, run, startEchoServer, tryRun } from '../../testkit/netns';
import { makeTestPki } from '../../testkit/test-pki';
import { INET_KUBE_PROXY_NFT_TABLE, kubeProxyNftTable } from '../../testkit/kube-proxy-leftovers';
import { eventually } from '../../testkit/wait-for';

const API_PORT = 16443;
const ADMIN_TOKEN = 'e2e-admin-token';

const NODE = 'node-a';
const NODE_IP = '192.0.2.1';
const POD1 = { name: 'pod1', ip: '10.244.1.2', gw: '10.244.1.1' }; // backend on this node
const POD2 = { name: 'pod2', ip: '10.244.2.2', gw: '10.244.2.1' }; // client pod
const POD3 = { name: 'pod3', ip: '10.244.3.2', gw: '10.244.3.1' }; // backend "on node-b"
const EXT1 = { name: 'ext1', ip: '192.0.2.2', gw: NODE_IP }; // external, allowed
const EXT2 = { name: 'ext2', ip: '198.51.100.2', gw: '198.51.100.1' }; // external, not allowed
const LB_IP = '203.0.113.10';
const EXT_IP = '203.0.113.20';

// ---- Kubernetes objects (as the API server stores them) ----

type Obj = Record<string, unknown>;
const meta = (namespace: string, name: string, extra: Obj = {}) => ({
  namespace,
  name,
  uid: `uid-${namespace}-${name}`,
  ...extra,
});

function service(ns: string, name: string, spec: Obj, status: Obj = {}, annotations: Record<string, string> = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(ns, name, { annotations }),
    spec: { type: 'ClusterIP', sessionAffinity: 'None', ipFamilies: ['IPv4'], ...spec, clusterIPs: [spec.clusterIP] },
    status: { loadBalancer: {}, ...status },
  };
}

interface Ep {
  ip: string;
  node?: string;
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
}
function slice(
  ns: string,
  svc: string,
  name: string,
  port: number,
  eps: Ep[],
  portName = 'http',
  protocol = 'TCP',
): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: meta(ns, name, {
      labels: {
        'kubernetes.io/service-name': svc,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
      annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': new Date().toISOString() },
    }),
    addressType: 'IPv4',
    ports: [{ name: portName, port, protocol }],
    endpoints: eps.map((e) => ({
      addresses: [e.ip],
      conditions: {
        ready: e.ready ?? true,
        serving: e.serving ?? e.ready ?? true,
        terminating: e.terminating ?? false,
      },
      nodeName: e.node ?? NODE,
    })),
  };
}

const node: Obj = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: NODE,
    uid: 'uid-node-a',
    labels: { 'kubernetes.io/hostname': NODE, 'topology.kubernetes.io/zone': 'zone-a' },
  },
  spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
  status: {
    addresses: [
      { type: 'InternalIP', address: NODE_IP },
      { type: 'Hostname', address: NODE },
    ],
  },
};

const web = service(
  'default',
  'web',
  {
    type: 'LoadBalancer',
    clusterIP: '10.96.0.10',
    ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30080, protocol: 'TCP' }],
    loadBalancerSourceRanges: ['192.0.2.0/24'],
    externalTrafficPolicy: 'Cluster',
  },
  { loadBalancer: { ingress: [{ ip: LB_IP, ipMode: 'VIP' }] } },
);
const webSlice = slice('default', 'web', 'web-1', 8080, [{ ip: POD1.ip }]);

const local = service('default', 'local', {
  type: 'NodePort',
  clusterIP: '10.96.0.11',
  externalIPs: [EXT_IP],
  ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: 30081, protocol: 'TCP' }],
  externalTrafficPolicy: 'Local',
});
const localSlice = slice('default', 'local', 'local-1', 8080, [{ ip: POD1.ip }, { ip: POD3.ip, node: 'node-b' }]);

const sticky = service('default', 'sticky', {
  clusterIP: '10.96.0.12',
  ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
  sessionAffinity: 'ClientIP',
  sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
});
const stickySlice = slice('default', 'sticky', 'sticky-1', 8080, [{ ip: POD1.ip }, { ip: POD3.ip, node: 'node-b' }]);

// a Service of a second CNI: every endpoint inside the excluded 10.250.0.0/16
const macvlan = service('default', 'macvlan', {
  clusterIP: '10.96.0.13',
  ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
});
const macvlanSlice = slice('default', 'macvlan', 'macvlan-1', 8080, [{ ip: '10.250.0.5' }]);

// UDP without endpoints: a virtual server without real servers
const dns = service('kube-system', 'dns', {
  clusterIP: '10.96.0.14',
  ports: [{ name: 'dns', port: 53, protocol: 'UDP' }],
});

// a long-lived TCP connection goes through this one while the daemon is killed and restarted
const long = service('default', 'long', {
  clusterIP: '10.96.0.15',
  ports: [{ name: 'tcp', port: 9000, targetPort: 9000, protocol: 'TCP' }],
});
const longSlice = slice('default', 'long', 'long-1', 9000, [{ ip: POD1.ip }], 'tcp');

const FIXTURES = [
  node,
  web,
  webSlice,
  local,
  localSlice,
  sticky,
  stickySlice,
  macvlan,
  macvlanSlice,
  dns,
  long,
  longSlice,
];

const svcPath = (ns: string, name: string) => `/api/v1/namespaces/${ns}/services/${name}`;
const slicePath = (ns: string, name: string) => `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/${name}`;

// ---- kernel views ----

/** `ipvsadm -Sn` as sorted lines (the kernel's hash order is not stable). */
function ipvsRules(): string[] {
  return run('ipvsadm', ['-Sn']).split('\n').filter(Boolean).sort();
}
function boundAddresses(): string[] {
  const out = run('ip', ['-o', '-4', 'addr', 'show', 'dev', 'kube-ipvs0']);
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(/\s+/)[3]!.split('/')[0]!)
    .sort();
}
function ipsetMembers(set: string): string[] {
  return run('ipset', ['list', set]).split('Members:\n')[1]!.split('\n').filter(Boolean).sort();
}

const isSync = (l: LogLine) => l.message === 'sync done';

function config(dir: string, scheduler: string): string {
  return e2eProxyConfig({
    dir,
    node: NODE,
    ipvs: [`scheduler: ${scheduler}`, 'syncPeriod: 10m', 'excludeClusterCIDRs: [10.250.0.0/16]'],
  });
}

/** A TCP echo server in `ns` on addr:port. */
function tcpEcho(ns: string, addr: string, port: number): ChildProcess {
  const script = `require('net').createServer((c)=>c.pipe(c)).listen(${port},${JSON.stringify(addr)})`;
  return spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', script], { stdio: 'ignore' });
}

describe('kube-ipvs daemon end to end (fake API server, real kernel, real traffic)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-e2e-'));
  const cfgFile = path.join(dir, 'config.conf');
  const pki = makeTestPki(path.join(dir, 'pki'));
  // the test writes as an admin would; the daemon authenticates with the service-account token
  const api = new ApiClient(`https://127.0.0.1:${API_PORT}`, { token: ADMIN_TOKEN, ca: pki.ca });
  const apiserverArgs = (fixtures: string) => [
    '--port',
    String(API_PORT),
    '--host',
    '127.0.0.1',
    '--fixtures',
    path.join(dir, fixtures),
    '--tls-dir',
    pki.dir,
    '--token-file',
    path.join(SA_DIR, 'token'),
    '--token',
    ADMIN_TOKEN,
  ];
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    for (const p of [POD1, POD2, POD3, EXT1, EXT2]) makePod(p.name, p.ip, p.gw);
    children.push(await startEchoServer(POD1.name, 'pod1', POD1.ip, 8080));
    children.push(await startEchoServer(POD3.name, 'pod3', POD3.ip, 8080));
    children.push(tcpEcho(POD1.name, POD1.ip, 9000));
    fs.writeFileSync(path.join(dir, 'fixtures.json'), JSON.stringify(FIXTURES));
    fs.mkdirSync(SA_DIR, { recursive: true });
    fs.writeFileSync(path.join(SA_DIR, 'ca.crt'), pki.ca);
    fs.writeFileSync(path.join(SA_DIR, 'token'), 'sa-token-1');
    apiserver = await startFakeApiServer(apiserverArgs('fixtures.json'));
    fs.writeFileSync(path.join(dir, 'kubeconfig'), shippedKubeconfig(`https://127.0.0.1:${API_PORT}`));
    fs.writeFileSync(cfgFile, config(dir, 'rr'));
    // kube-proxy ran here in nftables mode before: its tables send web's ClusterIP to an
    // endpoint long gone (pod 9); someone's inet kube-proxy table is not its
    run(
      'nft',
      ['-f', '-'],
      kubeProxyNftTable('ip', { vip: '10.96.0.10', port: 80, endpoint: '10.244.9.2:8080' }) +
        kubeProxyNftTable('ip6', { vip: 'fd00:96::10', port: 80, endpoint: 'fd00:244:9::2:8080' }) +
        INET_KUBE_PROXY_NFT_TABLE,
    );
    daemon = startKubeIpvs(['--config', cfgFile, '--v=2']);
  });

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    for (const c of children) c.kill('SIGKILL');
    for (const p of [POD1, POD2, POD3, EXT1, EXT2]) deletePod(p.name);
    tryRun('ipvsadm', ['-C']);
    tryRun('nft', ['delete', 'table', 'inet', 'kube-proxy']);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(SA_DIR, { recursive: true, force: true });
  });

  // Desired IPVS table of the fixtures: per Service the VSes and real servers kube-proxy makes.
  const RR_TABLE = [
    // web: ClusterIP, LB ingress, NodePort on 192.0.2.1; one endpoint
    '-A -t 10.96.0.10:80 -s rr',
    `-a -t 10.96.0.10:80 -r ${POD1.ip}:8080 -m -w 1`,
    `-A -t ${LB_IP}:80 -s rr`,
    `-a -t ${LB_IP}:80 -r ${POD1.ip}:8080 -m -w 1`,
    `-A -t ${NODE_IP}:30080 -s rr`,
    `-a -t ${NODE_IP}:30080 -r ${POD1.ip}:8080 -m -w 1`,
    // local (eTP Local): ClusterIP gets both endpoints, external IP and NodePort only the local one
    '-A -t 10.96.0.11:80 -s rr',
    `-a -t 10.96.0.11:80 -r ${POD1.ip}:8080 -m -w 1`,
    `-a -t 10.96.0.11:80 -r ${POD3.ip}:8080 -m -w 1`,
    `-A -t ${EXT_IP}:80 -s rr`,
    `-a -t ${EXT_IP}:80 -r ${POD1.ip}:8080 -m -w 1`,
    `-A -t ${NODE_IP}:30081 -s rr`,
    `-a -t ${NODE_IP}:30081 -r ${POD1.ip}:8080 -m -w 1`,
    // sticky: persistent 600
    '-A -t 10.96.0.12:80 -s rr -p 600',
    `-a -t 10.96.0.12:80 -r ${POD1.ip}:8080 -m -w 1`,
    `-a -t 10.96.0.12:80 -r ${POD3.ip}:8080 -m -w 1`,
    // dns: UDP, no endpoints
    '-A -u 10.96.0.14:53 -s rr',
    // long
    '-A -t 10.96.0.15:9000 -s rr',
    `-a -t 10.96.0.15:9000 -r ${POD1.ip}:9000 -m -w 1`,
  ].sort();

  it('programs every Service shape from the API server, and nothing for the excluded CNI', async () => {
    // bounded generously: on a loaded host the guest takes minutes to load the daemon's modules
    const first = await daemon.waitFor(isSync, 'the first sync', 0, 280_000);
    expect(ipvsRules()).toEqual(RR_TABLE);
    expect(boundAddresses()).toEqual(
      ['10.96.0.10', '10.96.0.11', '10.96.0.12', '10.96.0.14', '10.96.0.15', LB_IP, EXT_IP].sort(),
    );
    expect(ipsetMembers('KUBE-CLUSTER-IP')).toEqual([
      '10.96.0.10,tcp:80',
      '10.96.0.11,tcp:80',
      '10.96.0.12,tcp:80',
      '10.96.0.14,udp:53',
      '10.96.0.15,tcp:9000',
    ]);
    // kube-proxy puts an eTP=Local NodePort in both sets (the LOCAL set's RETURN rule comes first)
    expect(ipsetMembers('KUBE-NODE-PORT-TCP')).toEqual(['30080', '30081']);
    expect(ipsetMembers('KUBE-NODE-PORT-LOCAL-TCP')).toEqual(['30081']);
    expect(ipsetMembers('KUBE-EXTERNAL-IP-LOCAL')).toEqual([`${EXT_IP},tcp:80`]);
    expect(ipsetMembers('KUBE-LOAD-BALANCER-SOURCE-CIDR')).toEqual([`${LB_IP},tcp:80,192.0.2.0/24`]);
    // (iptables-save prints the `! -s` match first)
    expect(run('iptables-save', ['-t', 'nat'])).toContain(
      '-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ',
    );
    // the initial sync wrote each virtual server and real server once: one op per -A/-a line
    const writes = RR_TABLE.length;
    expect(first).toMatchObject({ full: true, ipvsWrites: writes, ipvsFailures: 0 });
    // the start-up phases the bench reads: modules loaded, then both lists done once, before
    // the first sync; each with its ms since the process started
    const starting = daemon.lines.filter((l) => String(l.message).startsWith('kube-ipvs starting'));
    const listed = daemon.lines.filter((l) => l.message === 'informers synced');
    expect([starting.length, listed.length]).toEqual([1, 1]);
    expect(daemon.lines.indexOf(listed[0]!)).toBeLessThan(daemon.lines.indexOf(first));
    expect(listed[0]!.sinceStartMs as number).toBeGreaterThanOrEqual(starting[0]!.sinceStartMs as number);
  });

  it("kube-proxy's nftables-mode tables are gone after the first sync, one info line each; the inet kube-proxy table stays", async () => {
    const first = daemon.lines.findIndex(isSync);
    const removed = (family: string) =>
      `removed kube-proxy's nftables-mode table ${family} kube-proxy (kube-proxy deletes it too when it starts in ipvs mode)`;
    const ip6 = await daemon.waitFor((l) => l.message === removed('ip6'), 'the ip6 kube-proxy table removed', first);
    const lines = daemon.lines.filter((l) => String(l.message).startsWith("removed kube-proxy's"));
    expect(lines.map((l) => `${l.level} ${l.message}`)).toEqual([`info ${removed('ip')}`, `info ${removed('ip6')}`]);
    expect(daemon.lines.indexOf(lines[0]!)).toBeGreaterThan(first);
    expect(daemon.lines.indexOf(ip6)).toBe(daemon.lines.indexOf(lines[0]!) + 1);
    const tables = run('nft', ['list', 'tables']).split('\n').filter(Boolean);
    expect(tables).toContain('table inet kube-proxy');
    expect(tables.filter((t) => /^table ip6? kube-proxy$/.test(t))).toEqual([]);
    // its stale DNAT is gone with it: the traffic test below reaches pod1 through 10.96.0.10
    expect(
      daemon.lines.filter((l) => String(l.message).startsWith("removing kube-proxy's nftables-mode tables failed")),
    ).toEqual([]);
  });

  it('the first periodic check after the dual-stack cold start: one IPVS read, no write, no process', async () => {
    // both families on iptables-nft: their restores moved the namespace's one nf_tables
    // generation in turn, IPv4's first (IPv6's restore tells IPv4 it was its own)
    const backends = daemon.lines
      .filter((l) => String(l.message).startsWith('iptables backend'))
      .map((l) => `${l.family} ${l.backend}`);
    expect([...new Set(backends)].sort()).toEqual(['ipv4 nft', 'ipv6 nft']);
    // a change of the sync period alone runs a full sync at once, re-planning nothing
    const from = daemon.lines.length;
    fs.writeFileSync(cfgFile, config(dir, 'rr').replace('syncPeriod: 10m', 'syncPeriod: 9m'));
    const check = await daemon.waitFor((l) => isSync(l) && l.full === true, 'the first full check', from);
    expect({
      ipvsReads: check.ipvsReads,
      ipvsWrites: check.ipvsWrites,
      execs: check.execs,
      linkOps: check.linkOps,
    }).toEqual({ ipvsReads: 1, ipvsWrites: 0, execs: 0, linkOps: 3 });
    fs.writeFileSync(cfgFile, config(dir, 'rr'));
    await daemon.waitFor(
      (l) => isSync(l) && l.full === true,
      'the full sync of the restored config',
      daemon.lines.indexOf(check) + 1,
    );
  });

  it('carries real traffic: pod and node to ClusterIP, NodePort, LB with source ranges, eTP=Local external IP', () => {
    expect(connect(POD2.name, '10.96.0.10', 80)).toEqual({ outcome: 'ok', reply: `pod1 client=${POD2.ip}` });
    expect(connect('', '10.96.0.10', 80).outcome).toBe('ok');
    expect(connect(EXT1.name, NODE_IP, 30080).reply).toMatch(/^pod1 client=/);
    expect(connect(EXT1.name, LB_IP, 80).reply).toMatch(/^pod1 client=/);
    expect(connect(EXT2.name, LB_IP, 80, 3).outcome).toBe('timeout');
    // eTP=Local: only the local endpoint, client source preserved (no masquerade)
    for (let i = 0; i < 3; i++)
      expect(connect(EXT1.name, EXT_IP, 80)).toEqual({ outcome: 'ok', reply: `pod1 client=${EXT1.ip}` });
  });

  it('session affinity: the same backend every time', () => {
    const replies = new Set<string>();
    for (let i = 0; i < 6; i++) replies.add(connect(POD2.name, '10.96.0.12', 80).reply);
    expect(replies.size).toBe(1);
    expect([...replies][0]).toMatch(/^pod[13] client=10\.244\.2\.2$/);
  });

  it('an event that changes nothing the proxy uses causes no write and no exec', async () => {
    const from = daemon.lines.length;
    await api.patch(svcPath('default', 'web'), { metadata: { labels: { team: 'blue' } } });
    await new Promise((r) => setTimeout(r, 3000));
    const syncs = daemon.lines.slice(from).filter(isSync);
    expect(
      syncs.filter((l) => (l.ipvsWrites as number) > 0 || (l.execs as number) > 0 || (l.linkOps as number) > 0),
    ).toEqual([]);
  });

  it('one endpoint added: one real server per virtual server of that Service, no exec', async () => {
    const from = daemon.lines.length;
    await api.replace(
      slicePath('default', 'web-1'),
      slice('default', 'web', 'web-1', 8080, [{ ip: POD1.ip }, { ip: POD3.ip, node: 'node-b' }]),
    );
    const s = await daemon.waitFor((l) => isSync(l) && (l.ipvsWrites as number) > 0, 'the endpoint sync', from);
    expect(s).toMatchObject({ full: false, ipvsWrites: 3, ipvsFailures: 0, execs: 0 });
    expect(ipvsRules()).toEqual(
      expect.arrayContaining([
        `-a -t 10.96.0.10:80 -r ${POD3.ip}:8080 -m -w 1`,
        `-a -t ${LB_IP}:80 -r ${POD3.ip}:8080 -m -w 1`,
      ]),
    );
  });

  it("one Service added: its virtual server and real server, its VIP, one ipset restore and the ownership record's write", async () => {
    const from = daemon.lines.length;
    await api.create(
      '/api/v1/namespaces/default/services',
      service('default', 'added', { clusterIP: '10.96.0.16', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] }),
    );
    await api.create(
      '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices',
      slice('default', 'added', 'added-1', 8080, [{ ip: POD1.ip }]),
    );
    await eventually('the added service', ipvsRules, (r) =>
      r.includes(`-a -t 10.96.0.16:80 -r ${POD1.ip}:8080 -m -w 1`),
    );
    // the kernel changes before the sync's log line is written: wait for the lines, then for
    // anything late, then count
    const total = (k: string) =>
      daemon.lines
        .slice(from)
        .filter(isSync)
        .reduce((n, l) => n + (l[k] as number), 0);
    await eventually(
      'the sync lines',
      () => total('ipvsWrites'),
      (n) => n >= 2,
    );
    await new Promise((r) => setTimeout(r, 2000));
    expect(total('ipvsWrites')).toBe(2);
    // the sets' restore, and the record's member written before the create (ownership-record.ts)
    expect(total('execs')).toBe(2);
    expect(boundAddresses()).toContain('10.96.0.16');
    expect(connect(POD2.name, '10.96.0.16', 80).reply).toBe(`pod1 client=${POD2.ip}`);
  });

  it('the service-account token rotated while the daemon runs: a Service created after the rotation is programmed', async () => {
    const from = daemon.lines.length;
    // the kubelet writes the new projected token atomically; from now on the API server
    // accepts only the new one, and the open watches are dropped so that the daemon must
    // authenticate again (a 401 with the old token re-reads the file, or the minute is up)
    fs.writeFileSync(path.join(SA_DIR, '..token.tmp'), 'sa-token-2');
    fs.renameSync(path.join(SA_DIR, '..token.tmp'), path.join(SA_DIR, 'token'));
    await api.request('POST', '/fake/drop-watches');
    await api.create(
      '/api/v1/namespaces/default/services',
      service('default', 'rotated', { clusterIP: '10.96.0.17', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] }),
    );
    await api.create(
      '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices',
      slice('default', 'rotated', 'rotated-1', 8080, [{ ip: POD1.ip }]),
    );
    await eventually('the service created after the rotation', ipvsRules, (r) =>
      r.includes(`-a -t 10.96.0.17:80 -r ${POD1.ip}:8080 -m -w 1`),
    );
    expect(connect(POD2.name, '10.96.0.17', 80).reply).toBe(`pod1 client=${POD2.ip}`);
    // the rotation is no refusal: nothing to tell the operator
    expect(daemon.lines.slice(from).filter((l) => /API server (refused|denied)/.test(l.message ?? ''))).toEqual([]);
    await api.delete(svcPath('default', 'rotated'));
    await api.delete(slicePath('default', 'rotated-1'));
    await eventually('the rotated service gone', ipvsRules, (r) => !r.some((l) => l.includes('10.96.0.17')));
  });

  it('rolling update: the old endpoint drains (weight 0), new connections never fail', async () => {
    await api.replace(
      slicePath('default', 'web-1'),
      slice('default', 'web', 'web-1', 8080, [
        { ip: POD1.ip, ready: false, serving: true, terminating: true },
        { ip: POD3.ip, node: 'node-b' },
      ]),
    );
    const results: string[] = [];
    for (let i = 0; i < 8; i++) results.push(connect(POD2.name, '10.96.0.10', 80).outcome);
    await eventually('pod1 draining', ipvsRules, (r) => r.includes(`-a -t 10.96.0.10:80 -r ${POD1.ip}:8080 -m -w 0`));
    await api.replace(
      slicePath('default', 'web-1'),
      slice('default', 'web', 'web-1', 8080, [{ ip: POD3.ip, node: 'node-b' }]),
    );
    for (let i = 0; i < 8; i++) results.push(connect(POD2.name, '10.96.0.10', 80).outcome);
    expect(results.every((o) => o === 'ok')).toBe(true);
    expect(connect(POD2.name, '10.96.0.10', 80).reply).toBe(`pod3 client=${POD2.ip}`);
  });

  it("health and metrics: kube-proxy's /healthz, /livez and kubeproxy_* series", async () => {
    const healthz = await fetch('http://127.0.0.1:10256/healthz');
    expect(healthz.status).toBe(200);
    expect(await healthz.json()).toMatchObject({
      nodeEligible: true,
      lastUpdated: expect.any(String),
      currentTime: expect.any(String),
    });
    expect((await fetch('http://127.0.0.1:10256/livez')).status).toBe(200);
    expect(await (await fetch('http://127.0.0.1:10249/proxyMode')).text()).toBe('ipvs');
    const metrics = await (await fetch('http://127.0.0.1:10249/metrics')).text();
    const value = (series: string) =>
      Number(
        metrics
          .split('\n')
          .find((l) => l.startsWith(series + ' '))
          ?.split(' ')[1],
      );
    expect(value('kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"}')).toBeGreaterThan(0);
    // client-go's API request series: the lists and watches, over HTTPS
    expect(value(`rest_client_requests_total{code="200",host="127.0.0.1:${API_PORT}",method="GET"}`)).toBeGreaterThan(
      0,
    );
    expect(
      value(`rest_client_request_duration_seconds_count{verb="GET",host="127.0.0.1:${API_PORT}"}`),
    ).toBeGreaterThan(0);
    expect(value('kubeproxy_network_programming_duration_seconds_count{ip_family="IPv4"}')).toBeGreaterThan(0);
    expect(value('kubeproxy_sync_proxy_rules_endpoint_changes_total')).toBeGreaterThan(0);
    expect(value('kubeproxy_proxy_healthz_total{code="200"}')).toBe(1);
    // the local Service (eTP=Local) has a local endpoint: no port without one
    expect(value('kubeproxy_sync_proxy_rules_no_local_endpoints_total{traffic_policy="external"}')).toBe(0);
    expect(value('kube_ipvs_virtual_servers')).toBe(10); // the 9 of the fixtures and the one added above
  });

  it('a second daemon with a stale token: one clear refusal line, /healthz 503 (readiness holds a rollout), /livez 200, nothing programmed', async () => {
    const wrong = path.join(dir, 'wrong');
    fs.mkdirSync(wrong, { recursive: true });
    fs.writeFileSync(path.join(wrong, 'token'), 'sa-token-stale');
    fs.writeFileSync(
      path.join(wrong, 'kubeconfig'),
      shippedKubeconfig(`https://127.0.0.1:${API_PORT}`).replace(path.join(SA_DIR, 'token'), path.join(wrong, 'token')),
    );
    fs.writeFileSync(
      path.join(wrong, 'config.conf'),
      e2eProxyConfig({ dir: wrong, node: NODE, ipvs: ['syncPeriod: 30s'], healthz: '127.0.0.1:10276', metrics: '' }),
    );
    // the first daemon may still delete real servers left draining (weight 0) by the rolling
    // update meanwhile: those lines are not compared
    const serving = () => ipvsRules().filter((l) => !l.endsWith(' -w 0'));
    const before = serving();
    const refused = (l: LogLine) => /API server refused the credentials \(401 Unauthorized\)/.test(l.message ?? '');
    const stale = startKubeIpvs(['--config', path.join(wrong, 'config.conf'), '--v=2']);
    try {
      const line = await stale.waitFor(refused, 'the refusal line', 0, 280_000);
      expect(line.message).toContain(path.join(wrong, 'kubeconfig'));
      expect(line.message).toContain(`https://127.0.0.1:${API_PORT}/`);
      // the health server listens once the daemon is up, which is before its first list
      let healthz = await fetch('http://127.0.0.1:10276/healthz').catch(() => undefined);
      for (let i = 0; !healthz && i < 240; i++) {
        await new Promise((r) => setTimeout(r, 250));
        healthz = await fetch('http://127.0.0.1:10276/healthz').catch(() => undefined);
      }
      if (!healthz) throw new Error('the stale daemon never served /healthz');
      expect(healthz.status).toBe(503);
      expect(await healthz.json()).toMatchObject({ initialSync: 'pending' });
      expect((await fetch('http://127.0.0.1:10276/livez')).status).toBe(200);
      // the informers keep retrying with backoff (several refusals by now); one line says so
      await new Promise((r) => setTimeout(r, 5_000));
      expect(stale.lines.filter(refused)).toHaveLength(1);
      expect(stale.lines.filter(isSync)).toEqual([]);
      expect(serving()).toEqual(before);
    } finally {
      await stale.kill('SIGTERM');
    }
  });

  it('a scheduler change in the config file applies live, in place (SET, no delete)', async () => {
    // a SET keeps the virtual server's counters; a delete + add would zero them
    const conns = () =>
      Number(
        run('ipvsadm', ['-Ln', '--stats', '--exact', '-t', '10.96.0.10:80'])
          .split('\n')
          .find((l) => l.startsWith('TCP'))!
          .trim()
          .split(/\s+/)[2],
      );
    const before = conns();
    expect(before).toBeGreaterThan(0);
    fs.writeFileSync(cfgFile, config(dir, 'lc'));
    const rules = await eventually('lc everywhere', ipvsRules, (r) =>
      r.filter((l) => l.startsWith('-A')).every((l) => l.includes('-s lc')),
    );
    expect(rules.filter((l) => l.startsWith('-A')).length).toBe(10);
    expect(conns()).toBeGreaterThanOrEqual(before);
    expect(daemon.child.exitCode).toBeNull(); // applied live, no restart
  });

  it('the per-Service annotation overrides the configured scheduler', async () => {
    await api.patch(svcPath('default', 'sticky'), { metadata: { annotations: { 'kube-ipvs.io/scheduler': 'sh' } } });
    await eventually('sticky on sh', ipvsRules, (r) => r.includes('-A -t 10.96.0.12:80 -s sh -p 600'));
    await api.patch(svcPath('kube-system', 'dns'), {
      metadata: { annotations: { 'kube-router.io/service.scheduler': 'wrr' } },
    });
    await eventually('dns on wrr', ipvsRules, (r) => r.includes('-A -u 10.96.0.14:53 -s wrr'));
  });

  it('a scheduler the kernel lacks fails that Service only, with a Kubernetes Event', async () => {
    await api.patch(svcPath('default', 'sticky'), {
      metadata: { annotations: { 'kube-ipvs.io/scheduler': 'nosuch' } },
    });
    await daemon.waitFor((l) => String(l.message).includes("scheduler 'nosuch'"), 'the scheduler error');
    type Events = { items: { involvedObject: { name: string }; reason: string; message: string }[] };
    const events = async () => ((await api.get('/api/v1/namespaces/default/events')) as Events).items;
    const end = Date.now() + 60_000;
    while (
      !(await events()).some((e) => e.involvedObject.name === 'sticky' && /nosuch/.test(e.message)) &&
      Date.now() < end
    ) {
      await new Promise((r) => setTimeout(r, 500));
    }
    expect((await events()).filter((e) => e.involvedObject.name === 'sticky').map((e) => e.reason)).toContain(
      'FailedToSyncIPVS',
    );
    // everything else still programmed and serving
    expect(connect(POD2.name, '10.96.0.10', 80).outcome).toBe('ok');
    expect(ipvsRules()).toContain('-A -t 10.96.0.12:80 -s sh -p 600');
    await api.patch(svcPath('default', 'sticky'), { metadata: { annotations: { 'kube-ipvs.io/scheduler': null } } });
  });

  it('Service and EndpointSlice deletion', async () => {
    await api.delete(svcPath('default', 'sticky'));
    await api.delete(slicePath('default', 'local-1'));
    const rules = await eventually(
      'sticky gone, local drained',
      ipvsRules,
      (r) =>
        !r.some((l) => l.includes('10.96.0.12:80')) &&
        !r.some((l) => l.includes('10.96.0.11:80') && l.includes('-w 1')),
    );
    expect(rules).toContain('-A -t 10.96.0.11:80 -s lc'); // a Service without endpoints keeps its virtual server
    await eventually('10.96.0.12 unbound', boundAddresses, (a) => !a.includes('10.96.0.12'));
    expect(ipsetMembers('KUBE-CLUSTER-IP')).not.toContain('10.96.0.12,tcp:80');
  });

  it('the API server restarted with its history lost: relist, converge, nothing flushed meanwhile', async () => {
    // (draining real servers, weight 0, may finish draining meanwhile: that is not a flush)
    const serving = () => ipvsRules().filter((l) => !l.endsWith('-w 0'));
    const before = serving();
    await apiserver.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 3000));
    expect(serving()).toEqual(before); // an unreachable API removes nothing
    // the new server has the same objects except `added` (deleted while the daemon could not see it)
    const objects = FIXTURES.filter(
      (o) => !['sticky', 'sticky-1', 'local-1', 'web-1'].includes((o.metadata as Obj).name as string),
    );
    objects.push(slice('default', 'web', 'web-1', 8080, [{ ip: POD3.ip, node: 'node-b' }]));
    fs.writeFileSync(path.join(dir, 'fixtures2.json'), JSON.stringify(objects));
    apiserver = await startFakeApiServer(apiserverArgs('fixtures2.json'));
    await eventually('added gone after relist', ipvsRules, (r) => !r.some((l) => l.includes('10.96.0.16')));
    expect(ipvsRules()).toEqual(
      expect.arrayContaining([`-a -t 10.96.0.10:80 -r ${POD3.ip}:8080 -m -w 1`, '-A -t 10.96.0.15:9000 -s lc']),
    );
  });

  it('SIGKILL and restart: a long connection through a VIP survives, the restart adopts with no IPVS write', async () => {
    const client = longClient(POD2.name, '10.96.0.15', 9000);
    children.push(client.child);
    await eventually(
      'pongs',
      () => client.out.length,
      (n) => n >= 3,
    );
    await daemon.kill('SIGKILL');
    const before = ipvsRules();
    daemon = startKubeIpvs(['--config', cfgFile, '--v=2']);
    const first = await daemon.waitFor(isSync, 'the first sync after restart');
    expect(first).toMatchObject({ full: true, ipvsWrites: 0, ipvsFailures: 0 });
    expect(ipvsRules()).toEqual(before);
    const n = client.out.length;
    await eventually(
      'more pongs after the restart',
      () => client.out.length,
      (m) => m >= n + 3,
    );
    expect(client.out.filter((l) => l === 'closed' || l.startsWith('error'))).toEqual([]);
    client.child.kill('SIGKILL');
  });

  it('drift repair: a real server deleted and a VIP removed behind its back come back on the periodic check', async () => {
    run('ipvsadm', ['-d', '-t', '10.96.0.15:9000', '-r', `${POD1.ip}:9000`]);
    ip('addr', 'del', '10.96.0.15/32', 'dev', 'kube-ipvs0');
    const from = daemon.lines.length;
    // SIGHUP is not needed: the test config's syncPeriod is 10m, so force the check through the config file
    fs.writeFileSync(cfgFile, config(dir, 'lc').replace('syncPeriod: 10m', 'syncPeriod: 2s'));
    await daemon.waitFor((l) => isSync(l) && l.full === true, 'a full sync', from);
    await eventually('repaired', ipvsRules, (r) => r.includes(`-a -t 10.96.0.15:9000 -r ${POD1.ip}:9000 -m -w 1`));
    await eventually('VIP back', boundAddresses, (a) => a.includes('10.96.0.15'));
  });

  it('the periodic check of an unchanged node: one IPVS read, no write, no process (ipsets over netlink, iptables-nft by generation)', async () => {
    // (syncPeriod is 2s since the test above) the first full sync after the repair proves the
    // iptables rules ours; the one after it has nothing to read but the kernel's own state
    let from = daemon.lines.length;
    await daemon.waitFor(
      (l) => isSync(l) && l.full === true && l.ipvsWrites === 0 && l.linkOps === 3,
      'a full sync that repaired nothing',
      from,
    );
    from = daemon.lines.length;
    const check = await daemon.waitFor((l) => isSync(l) && l.full === true, 'the next full sync', from);
    expect({
      ipvsReads: check.ipvsReads,
      ipvsWrites: check.ipvsWrites,
      execs: check.execs,
      linkOps: check.linkOps,
    }).toEqual({ ipvsReads: 1, ipvsWrites: 0, execs: 0, linkOps: 3 });
  });
});
