// The daemon against the REAL control plane (scripts/lab: kube-apiserver v1.37 and etcd built
// from Go modules, running on the host; RBAC, audit log, kubeadm's kube-proxy objects), inside
// the VM: the real `kube-ipvs --config FILE` process authenticates as kubeadm's
// kube-system/kube-proxy ServiceAccount with a bound token from the TokenRequest API, laid out
// as the kubelet's atomic writer lays out a projected volume, and reads kubeadm's
// kubeconfig.conf from manifests/new-cluster/configmap.yaml. Every Service is created with kubectl, so the
// real allocation (ClusterIPs, NodePorts), defaulting and validation apply; LoadBalancer status
// goes through the status subresource; EndpointSlices are the test's (no controller manager
// runs), with endpoints.kubernetes.io/last-change-trigger-time. Real traffic from a pod
// namespace and an outside one; the audit log says who asked for what and what it got.
//
// Addresses as in daemon.vm: pods 10.244.N.2 (gateway .1), the node serves NodePorts on
// 192.0.2.1, external clients 192.0.2.2 (allowed by the LB source range) and 198.51.100.2
// (not), LB ingress 203.0.113.10, external IP 203.0.113.20. Service IPs are the API server's.
import { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { e2eProxyConfig, LoggedProcess, LogLine, SERVICE_ACCOUNT_DIR, startKubeIpvs } from '../../testkit/processes';
import { addPodIpv6, connect, deletePod, makePod, run, startEchoServer, tryRun } from '../../testkit/netns';
import { AuditEvent, connectToLab, kubeProxyIdentity, labFromEnv } from '../../testkit/lab-client';
import { LabEndpoint, labNode, labService, labSlice } from '../../testkit/lab-objects';
import { eventually } from '../../testkit/wait-for';

const SA_USER = 'system:serviceaccount:kube-system:kube-proxy';
// unique per run (the guest's pids repeat from boot to boot; a lab may outlive a run): no
// controller manager runs, so a deleted namespace stays Terminating, refusing new objects
const RUN = randomBytes(3).toString('hex');
const NS = `cp-${RUN}`;
const NODE = `cp-node-${RUN}`;
/** on every object this file makes, so that a later run can delete what an interrupted one left */
const FILE_LABEL = { 'e2e.kube-ipvs.io/file': 'control-plane' };
const NODE_IP = '192.0.2.1';
const NODE_IP6 = '2001:db8:1::1';
const POD1 = { name: 'pod1', ip: '10.244.1.2', gw: '10.244.1.1', ip6: 'fd00:244:1::2', gw6: 'fd00:244:1::1' }; // on this node
const POD2 = { name: 'pod2', ip: '10.244.2.2', gw: '10.244.2.1', ip6: 'fd00:244:2::2', gw6: 'fd00:244:2::1' }; // client pod
const POD3 = { name: 'pod3', ip: '10.244.3.2', gw: '10.244.3.1' }; // "on node-b", zone-b
const EXT1 = { name: 'ext1', ip: '192.0.2.2', gw: NODE_IP }; // outside, allowed
const EXT2 = { name: 'ext2', ip: '198.51.100.2', gw: '198.51.100.1' }; // outside, not allowed
const PODS = [POD1, POD2, POD3, EXT1, EXT2];
const LB_IP = '203.0.113.10';
const EXT_IP = '203.0.113.20';

type Obj = Record<string, unknown>;

const service = (name: string, spec: Obj, annotations: Record<string, string> = {}) =>
  labService(NS, name, spec, { labels: FILE_LABEL, annotations });
type Ep = Omit<LabEndpoint, 'node'> & { node?: string };
const slice = (svc: string, name: string, eps: Ep[], o: Parameters<typeof labSlice>[4] = {}) =>
  labSlice(
    NS,
    svc,
    name,
    eps.map((e) => ({ node: NODE, ...e })),
    { ...o, labels: FILE_LABEL },
  );

const ipvsRules = (): string[] => run('ipvsadm', ['-Sn']).split('\n').filter(Boolean).sort();
const isSync = (l: LogLine) => l.message === 'sync done';

/** The daemon's /metrics value of `name` (a sample line without labels). */
function metric(name: string): number {
  const text = run('curl', ['-sS', '--max-time', '10', 'http://127.0.0.1:10249/metrics']);
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (!line) throw new Error(`no ${name} on /metrics`);
  return Number(line.split(' ')[1]);
}

describe('kube-ipvs against the real kube-apiserver (RBAC, bound token, kubectl-made Services, real traffic)', () => {
  const lab = labFromEnv();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-cp-'));
  const cfgFile = path.join(dir, 'config.conf');
  let daemon: LoggedProcess;
  let auditFrom = 0;
  const children: ChildProcess[] = [];
  /** each Service's allocated spec, read back after kubectl created it */
  const allocated = new Map<string, { clusterIP: string; clusterIPs: string[]; nodePort?: number }>();
  const vip = (name: string) => allocated.get(name)!.clusterIP;

  async function readBack(name: string): Promise<void> {
    const s = await lab.getJson<{ spec: { clusterIP: string; clusterIPs: string[]; ports: { nodePort?: number }[] } }>([
      'service',
      name,
      '-n',
      NS,
    ]);
    allocated.set(name, {
      clusterIP: s.spec.clusterIP,
      clusterIPs: s.spec.clusterIPs,
      ...(s.spec.ports[0]!.nodePort ? { nodePort: s.spec.ports[0]!.nodePort } : {}),
    });
  }

  /**
   * The daemon's own requests since the test began (told apart by its User-Agent), one per
   * request: its last stage (ResponseComplete, or ResponseStarted for a watch still open).
   */
  async function daemonRequests(): Promise<AuditEvent[]> {
    const byId = new Map<string, AuditEvent>();
    for (const e of await lab.audit(auditFrom)) if (e.userAgent?.startsWith('kube-ipvs/')) byId.set(e.auditID, e);
    return [...byId.values()];
  }

  /** What we own in `ipvsadm -Sn`: lines that name one of this file's addresses. */
  function ownRules(): string[] {
    const addrs = [...[...allocated.values()].flatMap((a) => a.clusterIPs), LB_IP, EXT_IP];
    const ports = [...allocated.values()].map((a) => a.nodePort).filter((p): p is number => p !== undefined);
    return ipvsRules().filter((l) => {
      const vs = /-[tuf] (\S+)/.exec(l)?.[1] ?? '';
      return (
        addrs.some((a) => vs.startsWith(a.includes(':') ? `[${a}]:` : `${a}:`)) ||
        ports.some((p) => vs === `${NODE_IP}:${p}`)
      );
    });
  }

  beforeAll(async () => {
    connectToLab();
    fs.writeFileSync('/proc/sys/net/ipv6/conf/all/forwarding', '1');
    for (const p of PODS) makePod(p.name, p.ip, p.gw);
    for (const p of [POD1, POD2]) addPodIpv6(p.name, p.ip6, p.gw6);
    children.push(await startEchoServer(POD1.name, 'pod1', POD1.ip, 8080));
    children.push(await startEchoServer(POD1.name, 'pod1-v6', POD1.ip6, 8080));
    children.push(await startEchoServer(POD3.name, 'pod3', POD3.ip, 8080));

    // what an earlier run in this lab left (its external IPs would compete with ours)
    await lab.kubectl([
      'delete',
      'services,endpointslices',
      '-A',
      '-l',
      'e2e.kube-ipvs.io/file=control-plane',
      '--wait=false',
    ]);
    auditFrom = await lab.auditMark();
    // the node (as the kubelet would register it) and a namespace of this file's own
    await lab.apply([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      labNode(NODE, [NODE_IP, NODE_IP6], { 'topology.kubernetes.io/zone': 'zone-a' }),
      // the Secret the daemon's token is bound to (deleting it would revoke the token)
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { namespace: 'kube-system', name: `kube-ipvs-${NS}` },
        type: 'Opaque',
      },
    ]);
    const node = await lab.getJson<{ status: { addresses: unknown[] } }>(['node', NODE]);
    expect(node.status.addresses).toHaveLength(3);

    await lab.apply([
      service('web', {
        type: 'LoadBalancer',
        loadBalancerSourceRanges: ['192.0.2.0/24'],
        externalTrafficPolicy: 'Cluster',
      }),
      service('local', { type: 'NodePort', externalIPs: [EXT_IP], externalTrafficPolicy: 'Local' }),
      service('sticky', { sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } } }),
      service('itp', { internalTrafficPolicy: 'Local' }),
      service('topo', { trafficDistribution: 'PreferClose' }),
      service('term', {}),
      service('dual', { ipFamilyPolicy: 'RequireDualStack', ipFamilies: ['IPv4', 'IPv6'] }),
      service('dns', { ports: [{ name: 'dns', port: 53, protocol: 'UDP' }] }),
    ]);
    for (const n of ['web', 'local', 'sticky', 'itp', 'topo', 'term', 'dual', 'dns']) await readBack(n);
    await lab.kubectl([
      'patch',
      'service',
      'web',
      '-n',
      NS,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { loadBalancer: { ingress: [{ ip: LB_IP, ipMode: 'VIP' }] } } }),
    ]);
    await lab.apply([
      slice('web', 'web-1', [{ ip: POD1.ip }]),
      slice('local', 'local-1', [{ ip: POD1.ip }, { ip: POD3.ip, node: 'node-b' }]),
      slice('sticky', 'sticky-1', [{ ip: POD1.ip }, { ip: POD3.ip, node: 'node-b' }]),
      slice('itp', 'itp-1', [{ ip: POD1.ip }, { ip: POD3.ip, node: 'node-b' }]),
      slice('topo', 'topo-1', [
        { ip: POD1.ip, zone: 'zone-a' },
        { ip: POD3.ip, node: 'node-b', zone: 'zone-b' },
      ]),
      // every endpoint terminating but still serving: kube-proxy falls back to them
      slice('term', 'term-1', [{ ip: POD1.ip, ready: false, serving: true, terminating: true }]),
      slice('dual', 'dual-ipv4', [{ ip: POD1.ip }]),
      slice('dual', 'dual-ipv6', [{ ip: POD1.ip6 }], { addressType: 'IPv6' }),
    ]);

    // the kubelet's projected service-account volume: a bound token, the CA, the namespace
    await kubeProxyIdentity(lab, dir, { duration: '10m', boundSecret: `kube-ipvs-${NS}` });
    fs.writeFileSync(
      cfgFile,
      e2eProxyConfig({
        dir,
        node: NODE,
        ipvs: ['scheduler: rr', 'syncPeriod: 10m'],
        nodePortAddresses: ['192.0.2.0/24', '2001:db8:1::/64'],
      }),
    );
    daemon = startKubeIpvs(['--config', cfgFile, '--v=2']);
  });

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    for (const c of children) c.kill('SIGKILL');
    for (const p of PODS) deletePod(p.name);
    tryRun('ipvsadm', ['-C']);
    // the objects first: without the namespace controller the namespace itself never goes
    await lab.kubectl(
      ['delete', 'services,endpointslices', '-n', NS, '-l', 'e2e.kube-ipvs.io/file=control-plane', '--wait=false'],
      undefined,
      true,
    );
    await lab.kubectl(['delete', 'namespace', NS, '--wait=false'], undefined, true);
    await lab.kubectl(['delete', 'node', NODE, '--wait=false'], undefined, true);
    await lab.kubectl(['delete', 'secret', '-n', 'kube-system', `kube-ipvs-${NS}`, '--wait=false'], undefined, true);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(SERVICE_ACCOUNT_DIR, { recursive: true, force: true });
  });

  it('programs every Service shape as the real API server allocated and defaulted it', async () => {
    await daemon.waitFor(isSync, 'the first sync', 0, 280_000);
    const np = (n: string) => allocated.get(n)!.nodePort!;
    const dual6 = allocated.get('dual')!.clusterIPs.find((a) => a.includes(':'))!;
    expect(allocated.get('dual')!.clusterIPs).toHaveLength(2);
    const want = [
      // web: LoadBalancer, ClusterIP + LB ingress + NodePort
      `-A -t ${vip('web')}:80 -s rr`,
      `-a -t ${vip('web')}:80 -r ${POD1.ip}:8080 -m -w 1`,
      `-A -t ${LB_IP}:80 -s rr`,
      `-a -t ${LB_IP}:80 -r ${POD1.ip}:8080 -m -w 1`,
      `-A -t ${NODE_IP}:${np('web')} -s rr`,
      `-a -t ${NODE_IP}:${np('web')} -r ${POD1.ip}:8080 -m -w 1`,
      // local: eTP Local; the external IP and NodePort get the local endpoint only
      `-A -t ${vip('local')}:80 -s rr`,
      `-a -t ${vip('local')}:80 -r ${POD1.ip}:8080 -m -w 1`,
      `-a -t ${vip('local')}:80 -r ${POD3.ip}:8080 -m -w 1`,
      `-A -t ${EXT_IP}:80 -s rr`,
      `-a -t ${EXT_IP}:80 -r ${POD1.ip}:8080 -m -w 1`,
      `-A -t ${NODE_IP}:${np('local')} -s rr`,
      `-a -t ${NODE_IP}:${np('local')} -r ${POD1.ip}:8080 -m -w 1`,
      // sticky: ClientIP affinity 600 s
      `-A -t ${vip('sticky')}:80 -s rr -p 600`,
      `-a -t ${vip('sticky')}:80 -r ${POD1.ip}:8080 -m -w 1`,
      `-a -t ${vip('sticky')}:80 -r ${POD3.ip}:8080 -m -w 1`,
      // itp: iTP Local, the local endpoint only; topo: this zone's hint only
      `-A -t ${vip('itp')}:80 -s rr`,
      `-a -t ${vip('itp')}:80 -r ${POD1.ip}:8080 -m -w 1`,
      `-A -t ${vip('topo')}:80 -s rr`,
      `-a -t ${vip('topo')}:80 -r ${POD1.ip}:8080 -m -w 1`,
      // term: the serving terminating endpoint, as the fallback
      `-A -t ${vip('term')}:80 -s rr`,
      `-a -t ${vip('term')}:80 -r ${POD1.ip}:8080 -m -w 1`,
      // dual: one virtual server per family
      `-A -t ${vip('dual')}:80 -s rr`,
      `-a -t ${vip('dual')}:80 -r ${POD1.ip}:8080 -m -w 1`,
      `-A -t [${dual6}]:80 -s rr`,
      `-a -t [${dual6}]:80 -r [${POD1.ip6}]:8080 -m -w 1`,
      // dns: UDP without endpoints
      `-A -u ${vip('dns')}:53 -s rr`,
    ].sort();
    await eventually('the table of every shape', ownRules, (r) => JSON.stringify(r) === JSON.stringify(want));
    // and the API server's own Service, default/kubernetes, at its real ClusterIP
    expect(ipvsRules()).toContain('-A -t 10.96.0.1:443 -s rr');
  });

  it('carries real traffic from a pod and from outside through each frontend', async () => {
    const web = vip('web');
    expect(connect(POD2.name, web, 80)).toEqual({ outcome: 'ok', reply: `pod1 client=${POD2.ip}` });
    expect(connect(EXT1.name, NODE_IP, allocated.get('web')!.nodePort!).reply).toMatch(/^pod1 client=/);
    expect(connect(EXT1.name, LB_IP, 80).reply).toMatch(/^pod1 client=/);
    expect(connect(EXT2.name, LB_IP, 80, 3).outcome).toBe('timeout');
    for (let i = 0; i < 3; i++)
      expect(connect(EXT1.name, EXT_IP, 80)).toEqual({ outcome: 'ok', reply: `pod1 client=${EXT1.ip}` });
    for (const n of ['itp', 'topo', 'term'])
      expect(`${n} ${connect(POD2.name, vip(n), 80).reply}`).toBe(`${n} pod1 client=${POD2.ip}`);
    const replies = new Set<string>();
    for (let i = 0; i < 4; i++) replies.add(connect(POD2.name, vip('sticky'), 80).reply);
    expect(replies.size).toBe(1);
    const dual6 = allocated.get('dual')!.clusterIPs.find((a) => a.includes(':'))!;
    expect(connect(POD2.name, dual6, 80)).toEqual({ outcome: 'ok', reply: `pod1-v6 client=${POD2.ip6}` });
  });

  it('a Service created while it runs is programmed; network_programming_duration agrees with the trigger-time annotation', async () => {
    const before = {
      count: metric('kubeproxy_network_programming_duration_seconds_count{ip_family="IPv4"}'),
      sum: metric('kubeproxy_network_programming_duration_seconds_sum{ip_family="IPv4"}'),
    };
    await lab.apply([service('late', {})]);
    await readBack('late');
    // the change was triggered 30 s ago (as the EndpointSlice controller stamps the first
    // event that led to it): the latency is at least that
    const triggered = new Date(Date.now() - 30_000);
    const applied = Date.now();
    await lab.apply([slice('late', 'late-1', [{ ip: POD1.ip }], { triggered })]);
    await eventually('the late Service', ownRules, (r) =>
      r.includes(`-a -t ${vip('late')}:80 -r ${POD1.ip}:8080 -m -w 1`),
    );
    const programmed = Date.now();
    const after = await eventually(
      'the histogram',
      () => ({
        count: metric('kubeproxy_network_programming_duration_seconds_count{ip_family="IPv4"}'),
        sum: metric('kubeproxy_network_programming_duration_seconds_sum{ip_family="IPv4"}'),
      }),
      (m) => m.count > before.count,
    );
    expect(after.count - before.count).toBe(1);
    const observed = after.sum - before.sum;
    // the annotation has whole seconds: up to 1 s earlier than `triggered`
    expect(observed).toBeGreaterThanOrEqual((applied - triggered.getTime()) / 1000 - 1);
    expect(observed).toBeLessThanOrEqual((programmed - triggered.getTime()) / 1000 + 1);
    expect(connect(POD2.name, vip('late'), 80).reply).toBe(`pod1 client=${POD2.ip}`);
  });

  it('a Service it cannot program gets a Warning Event that the real validation accepts', async () => {
    await lab.apply([service('bad', {}, { 'kube-ipvs.io/scheduler': 'no-such-scheduler' })]);
    await readBack('bad');
    await lab.apply([slice('bad', 'bad-1', [{ ip: POD1.ip }])]);
    const events = await eventually(
      'the Warning Event about Service bad',
      async () =>
        (
          await lab.getJson<{
            items: {
              reason: string;
              type: string;
              regarding?: { name: string };
              involvedObject?: { name: string };
              note?: string;
              message?: string;
            }[];
          }>(['events', '-n', NS])
        ).items,
      (items) => items.some((e) => (e.involvedObject ?? e.regarding)?.name === 'bad'),
    );
    const ev = events.find((e) => (e.involvedObject ?? e.regarding)?.name === 'bad')!;
    expect(ev.type).toBe('Warning');
    expect(`${ev.message ?? ev.note}`).toContain('no-such-scheduler');
    // the healthy Services are untouched
    expect(connect(POD2.name, vip('web'), 80).reply).toBe(`pod1 client=${POD2.ip}`);
  });

  it("identity: every request is kube-system/kube-proxy's and answered 2xx; lists, watches and Events only", async () => {
    const mine = await daemonRequests();
    const byVerb = new Map<string, number>();
    for (const e of mine) {
      const k = `${e.verb} ${e.objectRef?.resource ?? e.requestURI} ${e.responseStatus?.code}`;
      byVerb.set(k, (byVerb.get(k) ?? 0) + 1);
    }
    console.log(
      `the daemon's requests (audit log, ${mine.length} events):\n${[...byVerb]
        .sort()
        .map(([k, n]) => `  ${n} ${k}`)
        .join('\n')}`,
    );
    expect(mine.length).toBeGreaterThan(0);
    expect([...new Set(mine.map((e) => e.user.username))]).toEqual([SA_USER]);
    expect(
      mine.filter((e) => !(e.responseStatus?.code && e.responseStatus.code >= 200 && e.responseStatus.code < 300)),
    ).toEqual([]);
    expect([...new Set(mine.map((e) => e.verb))].sort()).toEqual(expect.arrayContaining(['list', 'watch']));
    expect(mine.filter((e) => !['list', 'watch', 'create', 'patch'].includes(e.verb))).toEqual([]);
    expect(mine.filter((e) => ['create', 'patch'].includes(e.verb) && e.objectRef?.resource !== 'events')).toEqual([]);
    expect(mine.some((e) => e.verb === 'create' && e.objectRef?.resource === 'events')).toBe(true);
    expect(
      mine
        .filter((e) => e.objectRef?.resource === 'nodes')
        .every((e) => e.requestURI.includes(`metadata.name%3D${NODE}`)),
    ).toBe(true);
  });
});
