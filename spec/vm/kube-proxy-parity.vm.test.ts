// The same table as the real kube-proxy: kube-proxy v1.37 (built from k8s.io/kubernetes by
// scripts/k8s/build.sh) in IPVS mode in one node namespace, kube-ipvs in another, with the same
// node name, addresses, KubeProxyConfiguration, ServiceAccount and API server (the lab's real
// kube-apiserver). After each step of a corpus of Services made with kubectl, each side's
// kernel state is read and compared, normalised (counters and order stripped): `ipvsadm -Sn`,
// `ipset save`, `iptables-save` / `ip6tables-save` nat and filter, the addresses on kube-ipvs0,
// and the sysctls either sets. Every difference must be one that docs/kube-proxy-parity.md
// explains (EXPLAINED below, each with its section there); anything else fails the test.
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { LoggedProcess, startKubeIpvs } from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';
import { connectToLab, labFromEnv, writeProjectedVolume } from '../../testkit/lab-client';
import { eventually } from '../../testkit/wait-for';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const KUBE_PROXY = path.join(ROOT, '.k8s', 'bin', 'kube-proxy');
const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const RUN = randomBytes(3).toString('hex');
const NS = `parity-${RUN}`;
const NODE = `parity-node-${RUN}`;
const KP_NS = 'kube-proxy-node';
const NODE_IP = '192.0.2.1';
const NODE_IP6 = '2001:db8:1::1';
const FILE_LABEL = { 'e2e.kube-ipvs.io/file': 'kube-proxy-parity' };
const SYSCTLS = [
  'net/ipv4/vs/conntrack', 'net/ipv4/vs/conn_reuse_mode', 'net/ipv4/vs/expire_nodest_conn',
  'net/ipv4/vs/expire_quiescent_template', 'net/ipv4/ip_forward', 'net/ipv4/conf/all/arp_ignore',
  'net/ipv4/conf/all/arp_announce', 'net/ipv4/conf/all/route_localnet', 'net/ipv4/vs/sloppy_tcp',
];

/**
 * Differences docs/kube-proxy-parity.md explains: a line that only one side has and that
 * matches `line` on that `side` of `surface`. `why` names the section.
 */
const EXPLAINED: readonly { surface: string; side: 'kube-proxy' | 'kube-ipvs'; line: RegExp; why: string }[] = [
  { surface: 'ipset', side: 'kube-ipvs', line: /^(create|add) KUBE-(6-)?IPVS-OWNED /, why: 'kube-ipvs\'s ownership record' },
];

type Obj = Record<string, unknown>;
type Snapshot = Record<string, string[]>;

function inNs(ns: string, cmd: string, args: readonly string[]): string {
  return ns ? run('ip', ['netns', 'exec', ns, cmd, ...args]) : run(cmd, args);
}

/** One side's kernel state, normalised: sorted lines, no counters, no comment lines. */
function snapshot(ns: string): Snapshot {
  // (ipset's initval is each set's random hash seed)
  const lines = (text: string) => text.replace(/ initval 0x[0-9a-f]+/g, '').split('\n').filter((l) => l !== '' && !l.startsWith('#')).sort();
  const tables = (cmd: string, table: string) =>
    lines(inNs(ns, cmd, ['-t', table]).replace(/ \[\d+:\d+\]$/gm, '').replace(/^(:\S+ \S+) \[\d+:\d+\]$/gm, '$1'));
  const sysctls = SYSCTLS.map((k) => `${k} = ${inNs(ns, 'cat', [`/proc/sys/${k}`]).trim()}`);
  const addrs = tryRun('ip', ns ? ['-n', ns, '-o', 'addr', 'show', 'dev', 'kube-ipvs0'] : ['-o', 'addr', 'show', 'dev', 'kube-ipvs0']);
  return {
    ipvs: lines(inNs(ns, 'ipvsadm', ['-Sn'])),
    ipset: lines(inNs(ns, 'ipset', ['save'])),
    'iptables nat': tables('iptables-save', 'nat'),
    'iptables filter': tables('iptables-save', 'filter'),
    'ip6tables nat': tables('ip6tables-save', 'nat'),
    'ip6tables filter': tables('ip6tables-save', 'filter'),
    'kube-ipvs0': lines(addrs.stdout.split('\n').map((l) => l.split(/\s+/)[3] ?? '').join('\n')),
    sysctls,
  };
}

interface Difference { surface: string; side: 'kube-proxy' | 'kube-ipvs'; line: string }

function differences(kp: Snapshot, ours: Snapshot): Difference[] {
  const out: Difference[] = [];
  for (const surface of Object.keys(kp)) {
    const a = new Set(kp[surface]);
    const b = new Set(ours[surface]);
    for (const line of a) if (!b.has(line)) out.push({ surface, side: 'kube-proxy', line });
    for (const line of b) if (!a.has(line)) out.push({ surface, side: 'kube-ipvs', line });
  }
  return out;
}

const unexplained = (d: readonly Difference[]) =>
  d.filter((x) => !EXPLAINED.some((e) => e.surface === x.surface && e.side === x.side && e.line.test(x.line)));

function service(name: string, spec: Obj, annotations: Record<string, string> = {}): Obj {
  return { apiVersion: 'v1', kind: 'Service', metadata: { namespace: NS, name, annotations, labels: FILE_LABEL }, spec: { ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }], ...spec } };
}

interface Ep { ip: string; node?: string; ready?: boolean; serving?: boolean; terminating?: boolean; zone?: string }
function slice(svc: string, name: string, eps: Ep[], o: { port?: number; addressType?: string; protocol?: string; portName?: string } = {}): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { namespace: NS, name, labels: { 'kubernetes.io/service-name': svc, 'endpointslice.kubernetes.io/managed-by': 'e2e.kube-ipvs.io', ...FILE_LABEL } },
    addressType: o.addressType ?? 'IPv4',
    ports: [{ name: o.portName ?? 'http', port: o.port ?? 8080, protocol: o.protocol ?? 'TCP' }],
    endpoints: eps.map((e) => ({
      addresses: [e.ip],
      conditions: { ready: e.ready ?? true, serving: e.serving ?? e.ready ?? true, terminating: e.terminating ?? false },
      nodeName: e.node ?? NODE,
      ...(e.zone ? { zone: e.zone, hints: { forZones: [{ name: e.zone }] } } : {}),
    })),
  };
}

function nodeNetwork(ns: string): void {
  const x = (args: string[]) => (ns ? run('ip', ['-n', ns, ...args]) : run('ip', args));
  x(['link', 'add', 'eth9', 'type', 'dummy']);
  x(['addr', 'add', `${NODE_IP}/24`, 'dev', 'eth9']);
  x(['addr', 'add', `${NODE_IP6}/64`, 'dev', 'eth9', 'nodad']);
  x(['link', 'set', 'eth9', 'up']);
  x(['link', 'set', 'lo', 'up']);
}

describe('the same table as the real kube-proxy --proxy-mode=ipvs', () => {
  const lab = labFromEnv();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-parity-'));
  let daemon: LoggedProcess;
  let kubeProxy: ChildProcess;
  const kpLog: string[] = [];

  /** Both sides read until each is the same twice in a row (each has synced what it saw), and `ready` holds of ours. */
  async function settled(ready: (s: Snapshot) => boolean): Promise<{ kp: Snapshot; ours: Snapshot }> {
    let last = '';
    return eventually('both sides settled', async () => {
      await new Promise((r) => setTimeout(r, 2500));
      const now = { kp: snapshot(KP_NS), ours: snapshot('') };
      const key = JSON.stringify(now);
      const stable = key === last && ready(now.ours);
      last = key;
      return { now, stable };
    }, (v) => v.stable, 240_000).then((v) => v.now);
  }

  beforeAll(async () => {
    run('ip', ['netns', 'add', KP_NS]);
    connectToLab();
    connectToLab(KP_NS, 1);
    nodeNetwork('');
    nodeNetwork(KP_NS);
    await lab.kubectl(['delete', 'services,endpointslices', '-A', '-l', 'e2e.kube-ipvs.io/file=kube-proxy-parity', '--wait=false']);
    await lab.apply([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      {
        apiVersion: 'v1', kind: 'Node',
        metadata: { name: NODE, labels: { 'kubernetes.io/hostname': NODE, 'topology.kubernetes.io/zone': 'zone-a' } },
        spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
        status: { addresses: [{ type: 'InternalIP', address: NODE_IP }, { type: 'InternalIP', address: NODE_IP6 }, { type: 'Hostname', address: NODE }] },
      },
    ]);
    const token = await lab.createToken('kube-system', 'kube-proxy', { duration: '1h' });
    writeProjectedVolume(SA_DIR, { token, 'ca.crt': await lab.ca(), namespace: 'kube-system' });
    const cm = yaml.load(fs.readFileSync(path.join(ROOT, 'manifests', 'configmap.yaml'), 'utf8')) as { data: Record<string, string> };
    fs.writeFileSync(path.join(dir, 'kubeconfig'), cm.data['kubeconfig.conf']!.replace(/^(\s*server:\s*).*$/m, `$1${await lab.server('a')}`));
    // one KubeProxyConfiguration for both (conntrack settings a network namespace cannot write, left alone)
    fs.writeFileSync(path.join(dir, 'config.conf'), [
      'apiVersion: kubeproxy.config.k8s.io/v1alpha1', 'kind: KubeProxyConfiguration', 'mode: ipvs',
      'clientConnection:', `  kubeconfig: ${path.join(dir, 'kubeconfig')}`,
      `hostnameOverride: ${NODE}`, 'clusterCIDR: 10.244.0.0/16,fd00:244::/48',
      `nodePortAddresses: [192.0.2.0/24, "2001:db8:1::/64"]`,
      'healthzBindAddress: 127.0.0.1:10256', 'metricsBindAddress: 127.0.0.1:10249',
      'conntrack:', '  maxPerCore: 0', '  tcpEstablishedTimeout: 0s', '  tcpCloseWaitTimeout: 0s',
      'ipvs:', '  syncPeriod: 30s', '',
    ].join('\n'));
    kubeProxy = spawn('ip', ['netns', 'exec', KP_NS, KUBE_PROXY, `--config=${path.join(dir, 'config.conf')}`, '--v=1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    for (const s of [kubeProxy.stdout!, kubeProxy.stderr!]) s.on('data', (d: Buffer) => kpLog.push(...d.toString().split('\n').filter(Boolean)));
    daemon = startKubeIpvs(['--config', path.join(dir, 'config.conf'), '--v=1']);
  });

  afterAll(async () => {
    kubeProxy?.kill('SIGTERM');
    await daemon?.kill('SIGTERM');
    await lab.kubectl(['delete', 'services,endpointslices', '-n', NS, '-l', 'e2e.kube-ipvs.io/file=kube-proxy-parity', '--wait=false'], undefined, true);
    await lab.kubectl(['delete', 'node', NODE, '--wait=false'], undefined, true);
    tryRun('ip', ['netns', 'del', KP_NS]);
    tryRun('ipvsadm', ['-C']);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(SA_DIR, { recursive: true, force: true });
  });

  const clusterIPs = new Map<string, string[]>();
  async function readBack(names: string[]): Promise<void> {
    for (const n of names) clusterIPs.set(n, (await lab.getJson<{ spec: { clusterIPs: string[] } }>(['service', n, '-n', NS])).spec.clusterIPs);
  }
  const hasAll = (s: Snapshot) => [...clusterIPs.values()].flat().every((ip) => s.ipvs.some((l) => l.includes(ip.includes(':') ? `[${ip}]` : `${ip}:`)));

  async function compare(step: string): Promise<void> {
    const { kp, ours } = await settled(hasAll);
    const d = differences(kp, ours);
    if (d.length) console.log(`${step}: ${d.length} differences:\n${d.map((x) => `  [${x.surface}] only ${x.side}: ${x.line}`).join('\n')}`);
    expect(unexplained(d)).toEqual([]);
  }

  it('step 1: every Service shape', async () => {
    await lab.apply([
      service('cip', {}),
      service('multi', { ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }, { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' }] }),
      service('np', { type: 'NodePort' }),
      service('lb', { type: 'LoadBalancer', loadBalancerSourceRanges: ['192.0.2.0/24'] }),
      service('lblocal', { type: 'LoadBalancer', externalTrafficPolicy: 'Local' }),
      service('ext', { externalIPs: ['203.0.113.20'], externalTrafficPolicy: 'Local', type: 'NodePort' }),
      service('sticky', { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } }),
      service('itp', { internalTrafficPolicy: 'Local' }),
      service('topo', { trafficDistribution: 'PreferClose' }),
      service('term', {}),
      service('dual', { ipFamilyPolicy: 'RequireDualStack', ipFamilies: ['IPv4', 'IPv6'], type: 'NodePort' }),
      service('sctp', { ports: [{ name: 'sctp', port: 9999, protocol: 'SCTP' }] }),
      service('empty', {}),
    ]);
    for (const [n, ip] of [['lb', '203.0.113.10'], ['lblocal', '203.0.113.11']] as const) {
      await lab.kubectl(['patch', 'service', n, '-n', NS, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] } } })]);
    }
    await lab.apply([
      slice('cip', 'cip-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      { ...slice('multi', 'multi-1', [{ ip: '10.244.1.2' }]), ports: [{ name: 'http', port: 8080, protocol: 'TCP' }, { name: 'dns', port: 5353, protocol: 'UDP' }] },
      slice('np', 'np-1', [{ ip: '10.244.1.2' }]),
      slice('lb', 'lb-1', [{ ip: '10.244.1.2' }]),
      slice('lblocal', 'lblocal-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      slice('ext', 'ext-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      slice('sticky', 'sticky-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      slice('itp', 'itp-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      slice('topo', 'topo-1', [{ ip: '10.244.1.2', zone: 'zone-a' }, { ip: '10.244.3.2', node: 'node-b', zone: 'zone-b' }]),
      slice('term', 'term-1', [{ ip: '10.244.1.2', ready: false, serving: true, terminating: true }, { ip: '10.244.3.2', node: 'node-b', ready: false, serving: false, terminating: true }]),
      slice('dual', 'dual-ipv4', [{ ip: '10.244.1.2' }]),
      slice('dual', 'dual-ipv6', [{ ip: 'fd00:244:1::2' }], { addressType: 'IPv6' }),
      slice('sctp', 'sctp-1', [{ ip: '10.244.1.2' }], { port: 9999, protocol: 'SCTP', portName: 'sctp' }),
    ]);
    await readBack(['cip', 'multi', 'np', 'lb', 'lblocal', 'ext', 'sticky', 'itp', 'topo', 'term', 'dual', 'sctp', 'empty']);
    await compare('step 1');
  });

  it('step 2: updates (an endpoint added and one terminating, a port changed, affinity off, a policy changed)', async () => {
    await lab.apply([
      slice('cip', 'cip-1', [{ ip: '10.244.1.2' }, { ip: '10.244.1.3' }, { ip: '10.244.3.2', node: 'node-b', ready: false, serving: true, terminating: true }]),
      service('np', { type: 'NodePort', ports: [{ name: 'http', port: 81, targetPort: 8080, protocol: 'TCP' }] }),
      service('sticky', { sessionAffinity: 'None' }),
      service('ext', { externalIPs: ['203.0.113.20'], externalTrafficPolicy: 'Cluster', type: 'NodePort' }),
    ]);
    await compare('step 2');
  });

  it('step 3: deletions', async () => {
    await lab.kubectl(['delete', 'service', 'lb', 'multi', 'dual', '-n', NS]);
    await lab.kubectl(['delete', 'endpointslice', 'lb-1', 'multi-1', 'dual-ipv4', 'dual-ipv6', '-n', NS]);
    for (const n of ['lb', 'multi', 'dual']) clusterIPs.delete(n);
    await compare('step 3');
    // kube-proxy had no error but its own deprecation notice (KEP-5495), logged at error level
    expect(kpLog.filter((l) => /^E\d{4}/.test(l) && !l.includes('The ipvs proxier has been deprecated')).slice(0, 5)).toEqual([]);
  });
});
