// The same table as the real kube-proxy: kube-proxy v1.37 (built from k8s.io/kubernetes by
// scripts/k8s/build.sh) in IPVS mode in one node namespace, kube-ipvs in another, with the same
// node name, addresses, KubeProxyConfiguration, ServiceAccount and API server (the lab's real
// kube-apiserver). After each step of a corpus of Services made with kubectl, each side's
// kernel state is read and compared, normalised (counters and order stripped): `ipvsadm -Sn`,
// `ipset save`, `iptables-save` / `ip6tables-save` nat and filter, the addresses on kube-ipvs0,
// and the sysctls either sets. Every difference must be one that docs/kube-proxy-parity.md
// explains (EXPLAINED below, each with its section there); anything else fails the test.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  e2eProxyConfig,
  LoggedProcess,
  SERVICE_ACCOUNT_DIR,
  startKubeIpvs,
  startKubeProxy,
} from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';
import { Difference, Snapshot, differences, ipvsTable, snapshot } from '../../testkit/node-snapshot';
import { connectToLab, kubeProxyIdentity, labFromEnv } from '../../testkit/lab-client';
import { LabEndpoint, labNode, labService, labSlice } from '../../testkit/lab-objects';
import { eventually } from '../../testkit/wait-for';

const RUN = randomBytes(3).toString('hex');
const NS = `parity-${RUN}`;
const NODE = `parity-node-${RUN}`;
const KP_NS = 'kube-proxy-node';
const NODE_IP = '192.0.2.1';
const NODE_IP6 = '2001:db8:1::1';
const FILE_LABEL = { 'e2e.kube-ipvs.io/file': 'kube-proxy-parity' };
/**
 * Differences docs/kube-proxy-parity.md explains: a line that only one side has and that
 * matches `line` on that `side` of `surface`. `why` names the section.
 */
const EXPLAINED: readonly { surface: string; side: 'kube-proxy' | 'kube-ipvs'; line: RegExp; why: string }[] = [
  {
    surface: 'ipset',
    side: 'kube-ipvs',
    line: /^(create|add) KUBE-(6-)?IPVS-OWNED /,
    why: "kube-ipvs's ownership record",
  },
];

type Obj = Record<string, unknown>;
/** what a step's readiness reads: the IPVS table */
type IpvsOnly = Pick<Snapshot, 'ipvs'>;

const unexplained = (d: readonly Difference[]) =>
  d.filter((x) => !EXPLAINED.some((e) => e.surface === x.surface && e.side === x.side && e.line.test(x.line)));

const service = (name: string, spec: Obj) => labService(NS, name, spec, { labels: FILE_LABEL });
type Ep = Omit<LabEndpoint, 'node'> & { node?: string };
const slice = (svc: string, name: string, eps: Ep[], o: Parameters<typeof labSlice>[4] = {}) =>
  labSlice(
    NS,
    svc,
    name,
    eps.map((e) => ({ node: NODE, ...e })),
    { ...o, labels: FILE_LABEL },
  );

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
  let kubeProxy: LoggedProcess;

  /**
   * Both sides read until `ready` (what the step changed is there) holds of each and each is the
   * same twice in a row (each has synced what it saw). `ready` of both, not only of ours: two
   * equal reads 2.5 s apart can come before kube-proxy has seen the step (a step 2 compared
   * kube-proxy's table of step 1 once snapshots got cheaper)
   */
  async function settled(ready: (s: IpvsOnly) => boolean): Promise<{ kp: Snapshot; ours: Snapshot }> {
    // first the IPVS tables alone (one exec a side, not a whole node's seven), until both hold the step
    await eventually(
      'both sides have the step',
      () => ({ kp: { ipvs: ipvsTable(KP_NS) }, ours: { ipvs: ipvsTable('') } }),
      (v) => ready(v.ours) && ready(v.kp),
      240_000,
    );
    let last = '';
    return eventually(
      'both sides settled',
      async () => {
        await new Promise((r) => setTimeout(r, 2500));
        const now = { kp: snapshot(KP_NS), ours: snapshot('') };
        const key = JSON.stringify(now);
        const stable = key === last && ready(now.ours) && ready(now.kp);
        last = key;
        return { now, stable };
      },
      (v) => v.stable,
      240_000,
    ).then((v) => v.now);
  }

  beforeAll(async () => {
    run('ip', ['netns', 'add', KP_NS]);
    connectToLab();
    connectToLab(KP_NS, 1);
    nodeNetwork('');
    nodeNetwork(KP_NS);
    await lab.kubectl([
      'delete',
      'services,endpointslices',
      '-A',
      '-l',
      'e2e.kube-ipvs.io/file=kube-proxy-parity',
      '--wait=false',
    ]);
    await lab.apply([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      labNode(NODE, [NODE_IP, NODE_IP6], { 'topology.kubernetes.io/zone': 'zone-a' }),
    ]);
    await kubeProxyIdentity(lab, dir, { duration: '1h' });
    // one KubeProxyConfiguration for both
    fs.writeFileSync(
      path.join(dir, 'config.conf'),
      e2eProxyConfig({
        dir,
        node: NODE,
        ipvs: ['syncPeriod: 30s'],
        forKubeProxy: true,
        clusterCIDR: '10.244.0.0/16,fd00:244::/48',
        nodePortAddresses: ['192.0.2.0/24', '2001:db8:1::/64'],
      }),
    );
    kubeProxy = startKubeProxy([`--config=${path.join(dir, 'config.conf')}`, '--v=2'], KP_NS);
    daemon = startKubeIpvs(['--config', path.join(dir, 'config.conf'), '--v=1']);
  });

  afterAll(async () => {
    await kubeProxy?.kill('SIGTERM');
    await daemon?.kill('SIGTERM');
    await lab.kubectl(
      ['delete', 'services,endpointslices', '-n', NS, '-l', 'e2e.kube-ipvs.io/file=kube-proxy-parity', '--wait=false'],
      undefined,
      true,
    );
    await lab.kubectl(['delete', 'node', NODE, '--wait=false'], undefined, true);
    tryRun('ip', ['netns', 'del', KP_NS]);
    tryRun('ipvsadm', ['-C']);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(SERVICE_ACCOUNT_DIR, { recursive: true, force: true });
  });

  const clusterIPs = new Map<string, string[]>();
  async function readBack(names: string[]): Promise<void> {
    for (const n of names)
      clusterIPs.set(
        n,
        (await lab.getJson<{ spec: { clusterIPs: string[] } }>(['service', n, '-n', NS])).spec.clusterIPs,
      );
  }
  const inTable = (s: IpvsOnly, ip: string) => s.ipvs.some((l) => l.includes(ip.includes(':') ? `[${ip}]` : `${ip}:`));
  const hasAll = (s: IpvsOnly) => [...clusterIPs.values()].flat().every((ip) => inTable(s, ip));
  const vsLine = (s: IpvsOnly, name: string, port: number) =>
    s.ipvs.find((l) => l.startsWith(`-A -t ${clusterIPs.get(name)![0]}:${port} `));

  /** the addresses a line names: `ipvsadm -Sn`'s `10.96.0.10:80` and `[fd00::a]:80`, ipset's `10.96.0.10,tcp:80` */
  const addressesIn = (line: string) =>
    line.split(/[\s,[\]]+/).map((t) => (t.includes('.') ? t.replace(/:\d+$/, '') : t));
  /** the Service of this file (by name) whose ClusterIP `line` names, or 'no Service of this file' */
  const owner = (line: string) => {
    const named = new Set(addressesIn(line));
    return [...clusterIPs].find(([, ips]) => ips.some((ip) => named.has(ip)))?.[0] ?? 'no Service of this file';
  };

  async function compare(step: string, ready: (s: IpvsOnly) => boolean = hasAll): Promise<void> {
    const { kp, ours } = await settled(ready);
    const d = differences(kp, ours);
    if (d.length)
      console.log(
        `${step}: ${d.length} differences:\n${d.map((x) => `  [${x.surface}] only ${x.side}: ${x.line} (${owner(x.line)})`).join('\n')}`,
      );
    // each unexplained line named with the Service whose address it holds (a ClusterIP is
    // random), and what either side logged of that Service or of topology (kube-proxy at --v=2
    // says when it ignores zone hints and why)
    const named = unexplained(d).map((x) => ({ ...x, service: owner(x.line) }));
    for (const svc of new Set(named.map((x) => x.service))) {
      const about = (text: readonly string[]) => text.filter((l) => l.includes(`/${svc}`) || /topology|zone/i.test(l));
      console.log(
        `${step}: what the sides logged of ${svc} or topology:\n  kube-proxy:\n${about(kubeProxy.text).slice(-20).join('\n')}\n  kube-ipvs:\n${about(daemon.text).slice(-20).join('\n')}`,
      );
    }
    expect(named).toEqual([]);
  }

  it('step 1: every Service shape', async () => {
    await lab.apply([
      service('cip', {}),
      service('multi', {
        ports: [
          { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' },
          { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' },
        ],
      }),
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
    for (const [n, ip] of [
      ['lb', '203.0.113.10'],
      ['lblocal', '203.0.113.11'],
    ] as const) {
      await lab.kubectl([
        'patch',
        'service',
        n,
        '-n',
        NS,
        '--subresource=status',
        '--type=merge',
        '-p',
        JSON.stringify({ status: { loadBalancer: { ingress: [{ ip, ipMode: 'VIP' }] } } }),
      ]);
    }
    await lab.apply([
      slice('cip', 'cip-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      {
        ...slice('multi', 'multi-1', [{ ip: '10.244.1.2' }]),
        ports: [
          { name: 'http', port: 8080, protocol: 'TCP' },
          { name: 'dns', port: 5353, protocol: 'UDP' },
        ],
      },
      slice('np', 'np-1', [{ ip: '10.244.1.2' }]),
      slice('lb', 'lb-1', [{ ip: '10.244.1.2' }]),
      slice('lblocal', 'lblocal-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      slice('ext', 'ext-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      slice('sticky', 'sticky-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      slice('itp', 'itp-1', [{ ip: '10.244.1.2' }, { ip: '10.244.3.2', node: 'node-b' }]),
      slice('topo', 'topo-1', [
        { ip: '10.244.1.2', zone: 'zone-a' },
        { ip: '10.244.3.2', node: 'node-b', zone: 'zone-b' },
      ]),
      slice('term', 'term-1', [
        { ip: '10.244.1.2', ready: false, serving: true, terminating: true },
        { ip: '10.244.3.2', node: 'node-b', ready: false, serving: false, terminating: true },
      ]),
      slice('dual', 'dual-ipv4', [{ ip: '10.244.1.2' }]),
      slice('dual', 'dual-ipv6', [{ ip: 'fd00:244:1::2' }], { addressType: 'IPv6' }),
      slice('sctp', 'sctp-1', [{ ip: '10.244.1.2' }], { port: 9999, protocol: 'SCTP', portName: 'sctp' }),
    ]);
    await readBack([
      'cip',
      'multi',
      'np',
      'lb',
      'lblocal',
      'ext',
      'sticky',
      'itp',
      'topo',
      'term',
      'dual',
      'sctp',
      'empty',
    ]);
    await compare('step 1');
  });

  it('step 2: updates (an endpoint added and one terminating, a port changed, affinity off, a policy changed)', async () => {
    await lab.apply([
      slice('cip', 'cip-1', [
        { ip: '10.244.1.2' },
        { ip: '10.244.1.3' },
        { ip: '10.244.3.2', node: 'node-b', ready: false, serving: true, terminating: true },
      ]),
      service('np', { type: 'NodePort', ports: [{ name: 'http', port: 81, targetPort: 8080, protocol: 'TCP' }] }),
      service('sticky', { sessionAffinity: 'None' }),
      service('ext', { externalIPs: ['203.0.113.20'], externalTrafficPolicy: 'Cluster', type: 'NodePort' }),
    ]);
    // each change of the step is in the table: the added endpoint, the new port, no persistence
    await compare(
      'step 2',
      (s) =>
        hasAll(s) &&
        s.ipvs.some((l) => l.startsWith(`-a -t ${clusterIPs.get('cip')![0]}:80 -r 10.244.1.3:8080 `)) &&
        vsLine(s, 'np', 81) !== undefined &&
        vsLine(s, 'sticky', 80)?.includes(' -p ') === false,
    );
  });

  it('step 3: deletions', async () => {
    await lab.kubectl(['delete', 'service', 'lb', 'multi', 'dual', '-n', NS]);
    await lab.kubectl(['delete', 'endpointslice', 'lb-1', 'multi-1', 'dual-ipv4', 'dual-ipv6', '-n', NS]);
    const gone = ['lb', 'multi', 'dual'].flatMap((n) => clusterIPs.get(n)!);
    for (const n of ['lb', 'multi', 'dual']) clusterIPs.delete(n);
    await compare('step 3', (s) => hasAll(s) && gone.every((ip) => !inTable(s, ip)));
    // kube-proxy had no error but its own deprecation notice (KEP-5495), logged at error level
    expect(
      kubeProxy.text
        .filter((l) => /^E\d{4}/.test(l) && !l.includes('The ipvs proxier has been deprecated'))
        .slice(0, 5),
    ).toEqual([]);
  });
});
