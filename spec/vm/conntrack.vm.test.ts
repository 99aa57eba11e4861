// Stale UDP conntrack, inside the VM.
// (a) ConntrackNetlink against the real kernel and FakeConntrack, pinned to the same behaviour:
//     real UDP flows (over lo, IPv4 and IPv6), listed, deleted by tuple, ENOENT when gone or
//     when the id names an older entry.
// (b) The real daemon, a UDP client outside the cluster CIDR sending from one fixed source port:
//     - the blackhole kube-proxy's cleanup exists for (#105192, a node reboot): the client sends
//       to the ClusterIP before the Service is programmed; the packets leave through an
//       upstream router with a masquerade, and conntrack keeps that flow (reply source: the
//       ClusterIP itself). The Service appears with its first endpoint: the daemon deletes the
//       flow in that sync, and the client's next packet reaches the pod;
//     - the scenario: the backend pod is replaced; the client's next packet reaches the
//       new backend (on Linux 5.9+ with expire_nodest_conn=1 the kernel itself drops the
//       conntrack entries of a deleted real server's IPVS connections; the daemon's dump then
//       finds none or the one it lost the race for);
//     - the control: the same blackhole on a virtual server kube-ipvs does not own (ipvsadm by
//       hand), where nobody cleans: the first packet after IPVS takes over is lost (on this
//       6.1 kernel IPVS then drops the stale entry itself; the next packet gets through).
//
// Addresses: pods 10.244.0.0/16 (clusterCIDR; the upstream router is 10.244.9.2), services
// 10.96.0.0/16, the external client 192.0.2.2 behind the node address 192.0.2.1.
import { ChildProcess, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConntrackNetlink, openConntrack } from '../../lib/kernel/conntrack/conntrack-netlink';
import { FakeConntrack } from '../../testkit/kernel/fake-conntrack';
import { Conntrack } from '../../lib/kernel/conntrack/conntrack';
import { ConntrackFlow } from '../../lib/model/conntrack';
import { staleConntrackFlows } from '../../lib/reconcile/stale-conntrack';
import {
  ApiClient,
  e2eProxyConfig,
  LoggedProcess,
  LogLine,
  startFixtureApiServer,
  startKubeIpvs,
} from '../../testkit/processes';
import { deletePod, makePod, run, tryRun } from '../../testkit/netns';

const UDP = 17;
const TCP = 6;
const SERVER_PORT = 7777;

// conntrack hooks are registered in a network namespace only once something there needs them
function enableConntrack(): void {
  run('iptables', ['-A', 'OUTPUT', '-m', 'conntrack', '--ctstate', 'INVALID', '-j', 'DROP']);
  run('ip6tables', ['-A', 'OUTPUT', '-m', 'conntrack', '--ctstate', 'INVALID', '-j', 'DROP']);
}

/** Sends one datagram from host:srcPort to host:SERVER_PORT, resolves when the server got it. */
async function udpExchange(
  server: dgram.Socket,
  family: 'udp4' | 'udp6',
  host: string,
  srcPort: number,
): Promise<void> {
  const got = new Promise<void>((resolve) => {
    const on = (_m: Buffer, r: dgram.RemoteInfo) => {
      if (r.port !== srcPort) return;
      server.off('message', on);
      resolve();
    };
    server.on('message', on);
  });
  const c = dgram.createSocket(family);
  await new Promise<void>((resolve) => c.bind(srcPort, host, () => resolve()));
  await new Promise<void>((resolve, reject) => c.send('x', SERVER_PORT, host, (e) => (e ? reject(e) : resolve())));
  await got;
  c.close();
}

const udpFlow = (family: 'ipv4' | 'ipv6', host: string, srcPort: number) => ({
  family,
  protocol: UDP,
  orig: { src: host, dst: host, srcPort, dstPort: SERVER_PORT },
  reply: { src: host, dst: host, srcPort: SERVER_PORT, dstPort: srcPort },
});

describe('conntrack: kernel and fake behave the same', () => {
  const servers: dgram.Socket[] = [];

  beforeAll(async () => {
    enableConntrack();
    for (const [type, host] of [
      ['udp4', '127.0.0.1'],
      ['udp6', '::1'],
    ] as const) {
      const s = dgram.createSocket(type);
      await new Promise<void>((resolve) => s.bind(SERVER_PORT, host, () => resolve()));
      servers.push(s);
    }
  });
  afterAll(() => {
    for (const s of servers) s.close();
  });

  const cases: [string, () => Promise<{ ct: Conntrack; flows: ConntrackFlow[] }>][] = [
    [
      'fake',
      async () => {
        const ct = new FakeConntrack();
        const flows = [
          ct.add(udpFlow('ipv4', '127.0.0.1', 41000)),
          ct.add(udpFlow('ipv4', '127.0.0.1', 41001)),
          ct.add(udpFlow('ipv6', '::1', 41000)),
        ];
        return { ct, flows };
      },
    ],
    [
      'kernel',
      async () => {
        const ct = openConntrack();
        await udpExchange(servers[0]!, 'udp4', '127.0.0.1', 41000);
        await udpExchange(servers[0]!, 'udp4', '127.0.0.1', 41001);
        await udpExchange(servers[1]!, 'udp6', '::1', 41000);
        const ours = (f: ConntrackFlow) => f.orig.dstPort === SERVER_PORT;
        const flows = [
          ...(await ct.listFlows('ipv4', UDP)).filter(ours),
          ...(await ct.listFlows('ipv6', UDP)).filter(ours),
        ];
        return { ct, flows: flows.sort((a, b) => a.family.localeCompare(b.family) || a.orig.srcPort - b.orig.srcPort) };
      },
    ],
  ];

  describe.each(cases)('%s', (_name, make) => {
    it("lists the flows with their tuples, deletes by tuple, ENOENT (gone) when already deleted or when the id is another entry's", async () => {
      const { ct, flows } = await make();
      try {
        const strip = (f: ConntrackFlow) => ({
          family: f.family,
          protocol: f.protocol,
          orig: f.orig,
          reply: f.reply,
          zone: f.zone,
        });
        expect(flows.map(strip)).toEqual([
          { ...udpFlow('ipv4', '127.0.0.1', 41000), zone: 0 },
          { ...udpFlow('ipv4', '127.0.0.1', 41001), zone: 0 },
          { ...udpFlow('ipv6', '::1', 41000), zone: 0 },
        ]);
        for (const f of flows) expect(f.id).toEqual(expect.any(Number));
        const [a, b, c] = flows as [ConntrackFlow, ConntrackFlow, ConntrackFlow];
        const listed = async (fam: 'ipv4' | 'ipv6', proto: number) =>
          (await ct.listFlows(fam, proto))
            .filter((f) => f.orig.dstPort === SERVER_PORT)
            .map((f) => f.orig.srcPort)
            .sort();
        // the protocol filter: no UDP flow in the TCP dump
        expect(await listed('ipv4', TCP)).toEqual([]);

        expect(await ct.deleteFlows([a, c])).toEqual({ deleted: 2, gone: 0, failures: [] });
        expect(await listed('ipv4', UDP)).toEqual([41001]);
        expect(await listed('ipv6', UDP)).toEqual([]);
        // again: already gone
        expect(await ct.deleteFlows([a])).toEqual({ deleted: 0, gone: 1, failures: [] });
        // the right tuple with another entry's id: ENOENT, and the entry stays
        expect(await ct.deleteFlows([{ ...b, id: (b.id! + 1) >>> 0 }])).toEqual({ deleted: 0, gone: 1, failures: [] });
        expect(await listed('ipv4', UDP)).toEqual([41001]);
        // without an id: by tuple alone
        const { id: _id, ...noId } = b;
        expect(await ct.deleteFlows([noId])).toEqual({ deleted: 1, gone: 0, failures: [] });
        expect(await listed('ipv4', UDP)).toEqual([]);
      } finally {
        ct.close();
      }
    });
  });
});

// ---- (b) the daemon ----

const API_PORT = 16444;
const NODE = 'node-a';
const NODE_IP = '192.0.2.1';
const POD1 = { name: 'ctpod1', ip: '10.244.1.2', gw: '10.244.1.1' };
const POD2 = { name: 'ctpod2', ip: '10.244.2.2', gw: '10.244.2.1' };
const UPSTREAM = { name: 'ctup', ip: '10.244.9.2', gw: '10.244.9.1' };
const CLIENT = { name: 'ctclient', ip: '192.0.2.2', gw: NODE_IP };
const VIP = '10.96.0.53';
const FOREIGN_VIP = '10.96.1.53';
const CLIENT_PORT = 45000;
const CONTROL_PORT = 45001;

type Obj = Record<string, unknown>;
const meta = (namespace: string, name: string, extra: Obj = {}) => ({
  namespace,
  name,
  uid: `uid-${namespace}-${name}`,
  ...extra,
});
const dnsService: Obj = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: meta('kube-system', 'dns'),
  spec: {
    type: 'ClusterIP',
    clusterIP: VIP,
    clusterIPs: [VIP],
    ipFamilies: ['IPv4'],
    sessionAffinity: 'None',
    ports: [{ name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' }],
  },
  status: { loadBalancer: {} },
};
const dnsSlice = (podIP: string): Obj => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: meta('kube-system', 'dns-1', {
    labels: {
      'kubernetes.io/service-name': 'dns',
      'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
    },
  }),
  addressType: 'IPv4',
  ports: [{ name: 'dns', port: 5353, protocol: 'UDP' }],
  endpoints: [{ addresses: [podIP], conditions: { ready: true, serving: true, terminating: false }, nodeName: NODE }],
});
const nodeObj: Obj = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE, uid: 'uid-node-a', labels: { 'kubernetes.io/hostname': NODE } },
  spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
  status: { addresses: [{ type: 'InternalIP', address: NODE_IP }] },
};

/** A UDP echo server in `ns`: answers "<name> <datagram>". Resolves once bound. */
async function udpEcho(ns: string, name: string, addr: string, port: number): Promise<ChildProcess> {
  const script =
    `const s=require('dgram').createSocket('udp4');s.on('message',(m,r)=>s.send(${JSON.stringify(name + ' ')}+m,r.port,r.address));` +
    `s.bind(${port},${JSON.stringify(addr)},()=>console.log('ready'))`;
  return ready(
    spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] }),
    name,
  );
}

function ready(child: ChildProcess, name: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start`)), 120_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.on('exit', (code) => reject(new Error(`${name} exited ${code}`)));
  });
}

/**
 * UDP clients in `ns`, one per fixed source port, in one process; ask() sends one line from
 * that port to its destination and resolves with the reply line naming it, or undefined after
 * `timeoutMs` (a datagram lost is not retried: what happens to one packet is the point).
 */
class FixedPortClients {
  private readonly replies: string[] = [];
  private constructor(private readonly child: ChildProcess) {
    child.stdout!.on('data', (d: Buffer) => this.replies.push(...d.toString().split('\n').filter(Boolean)));
  }

  static async start(
    ns: string,
    src: string,
    routes: readonly { srcPort: number; dst: string; port: number }[],
  ): Promise<FixedPortClients> {
    const script =
      `const dgram=require('dgram');const routes=${JSON.stringify(routes)};let n=0;const socks={};` +
      `for(const r of routes){const s=dgram.createSocket('udp4');socks[r.srcPort]=[s,r];s.on('message',(m)=>console.log(String(m)));` +
      `s.bind(r.srcPort,${JSON.stringify(src)},()=>{if(++n===routes.length)console.log('ready')})}` +
      `require('readline').createInterface({input:process.stdin}).on('line',(l)=>{const [p,msg]=l.split(' ');const [s,r]=socks[p];s.send(msg,r.port,r.dst)})`;
    const child = await ready(
      spawn('ip', ['netns', 'exec', ns, process.execPath, '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] }),
      'udp clients',
    );
    return new FixedPortClients(child);
  }

  async ask(srcPort: number, word: string, timeoutMs: number): Promise<string | undefined> {
    this.child.stdin!.write(`${srcPort} ${word}\n`);
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const r = this.replies.find((x) => x.endsWith(' ' + word));
      if (r) return r;
      await new Promise((res) => setTimeout(res, 100));
    }
    return undefined;
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}

describe('conntrack: stale UDP flows and the real daemon', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-ct-'));
  const api = new ApiClient(`http://127.0.0.1:${API_PORT}`);
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;
  const children: ChildProcess[] = [];
  let clients: FixedPortClients;
  let ct: ConntrackNetlink;

  beforeAll(async () => {
    // the daemon first: its start (node loading the client library in the emulated guest) is
    // the slow part, and overlaps with the pods' start
    for (const p of [POD1, POD2, UPSTREAM, CLIENT]) makePod(p.name, p.ip, p.gw);
    // before a ClusterIP is local, packets to it leave through the upstream router, masqueraded
    // (it does not forward them); an unanswered UDP flow lives 30 s: long enough here
    run('ip', ['route', 'add', '10.96.0.0/16', 'via', UPSTREAM.ip]);
    run('ip', ['netns', 'exec', UPSTREAM.name, 'sysctl', '-qw', 'net.ipv4.ip_forward=0']);
    run('iptables', ['-t', 'nat', '-A', 'POSTROUTING', '-o', `veth-${UPSTREAM.name}`, '-j', 'MASQUERADE']);
    run('sysctl', [
      '-qw',
      'net.netfilter.nf_conntrack_udp_timeout=600',
      'net.netfilter.nf_conntrack_udp_timeout_stream=600',
    ]);
    apiserver = await startFixtureApiServer(dir, API_PORT, [nodeObj]);
    fs.writeFileSync(
      path.join(dir, 'config.conf'),
      e2eProxyConfig({
        dir,
        node: NODE,
        ipvs: ['syncPeriod: 10m'],
        healthz: '127.0.0.1:10266',
        metrics: '127.0.0.1:10259',
      }),
    );
    daemon = startKubeIpvs(['--config', path.join(dir, 'config.conf'), '--v=2']);
    ct = openConntrack();
    const [e1, e2, c] = await Promise.all([
      udpEcho(POD1.name, 'pod1', POD1.ip, 5353),
      udpEcho(POD2.name, 'pod2', POD2.ip, 5353),
      FixedPortClients.start(CLIENT.name, CLIENT.ip, [
        { srcPort: CLIENT_PORT, dst: VIP, port: 53 },
        { srcPort: CONTROL_PORT, dst: FOREIGN_VIP, port: 53 },
      ]),
    ]);
    children.push(e1, e2);
    clients = c;
  });

  afterAll(async () => {
    ct?.close();
    clients?.kill();
    await daemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    for (const c of children) c.kill('SIGKILL');
    for (const p of [POD1, POD2, UPSTREAM, CLIENT]) deletePod(p.name);
    tryRun('ip', ['link', 'del', 'ctl0']);
    tryRun('ipvsadm', ['-C']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const isSync = (l: LogLine) => l.message === 'sync done';
  const isCleanup = (l: LogLine) => typeof l.message === 'string' && l.message.startsWith('conntrack: deleted');
  const flowsOf = async (srcPort: number, vip: string) =>
    (await ct.listFlows('ipv4', UDP)).filter(
      (f) => f.orig.src === CLIENT.ip && f.orig.srcPort === srcPort && f.orig.dst === vip,
    );

  it('a flow blackholed before the Service existed is deleted in the sync that gives it its first endpoint', async () => {
    // no UDP Service: no conntrack request at all
    const first = await daemon.waitFor(isSync, 'the first sync', 0, 240_000);
    expect(first).toMatchObject({ full: true, ipvsWrites: 0, conntrackOps: 0 });
    expect(
      run('sysctl', ['-n', 'net.ipv4.vs.conntrack', 'net.ipv4.vs.expire_nodest_conn']).split('\n').filter(Boolean),
    ).toEqual(['1', '1']);

    expect(await clients.ask(CLIENT_PORT, 'zero', 3_000)).toBeUndefined();
    const before = await flowsOf(CLIENT_PORT, VIP);
    expect(before.map((f) => `${f.reply.src}:${f.reply.srcPort} -> ${f.reply.dst}`)).toEqual([
      `${VIP}:53 -> ${UPSTREAM.gw}`,
    ]);

    const from = daemon.lines.length;
    // the slice first: the Service's first plan has its endpoint (one sync, VS + RS)
    await api.create('/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices', dnsSlice(POD1.ip));
    await api.create('/api/v1/namespaces/kube-system/services', dnsService);
    const cleaned = await daemon.waitFor(isCleanup, 'the conntrack cleanup', from);
    expect(cleaned.message).toBe('conntrack: deleted 1 stale entries (ipv4 UDP)');
    const sync = await daemon.waitFor(
      (l) => isSync(l) && (l.conntrackOps as number) > 0,
      'the sync that cleaned',
      from,
    );
    // virtual server + real server; one dump + one delete
    expect(sync).toMatchObject({ full: false, ipvsWrites: 2, conntrackOps: 2 });
    expect(await flowsOf(CLIENT_PORT, VIP)).toEqual([]);

    // same source port, next packet: through IPVS to the pod, and back
    expect(await clients.ask(CLIENT_PORT, 'one', 20_000)).toBe('pod1 one');
    expect((await flowsOf(CLIENT_PORT, VIP)).map((f) => `${f.reply.src}:${f.reply.srcPort}`)).toEqual([
      `${POD1.ip}:5353`,
    ]);
  });

  it("the backend pod is replaced: the client's next packet reaches the new one, no flow names the old one", async () => {
    const from = daemon.lines.length;
    await api.replace('/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices/dns-1', dnsSlice(POD2.ip));
    const cleaned = await daemon.waitFor(isCleanup, 'the conntrack cleanup', from);
    // the kernel (5.9+, expire_nodest_conn=1) usually dropped the entry with the IPVS connection first
    expect([
      'conntrack: deleted 0 stale entries (ipv4 UDP)',
      'conntrack: deleted 1 stale entries (ipv4 UDP)',
    ]).toContain(cleaned.message);
    const sync = await daemon.waitFor(
      (l) => isSync(l) && (l.conntrackOps as number) > 0,
      'the sync that cleaned',
      from,
    );
    // real server pod1 deleted (UDP: at once), pod2 added; one dump (+ one delete if it was still there)
    expect(sync).toMatchObject({
      full: false,
      ipvsWrites: 2,
      conntrackOps: cleaned.message!.includes('deleted 1') ? 2 : 1,
    });
    expect((await flowsOf(CLIENT_PORT, VIP)).filter((f) => f.reply.src === POD1.ip)).toEqual([]);
    expect(await clients.ask(CLIENT_PORT, 'two', 20_000)).toBe('pod2 two');
    expect((await flowsOf(CLIENT_PORT, VIP)).map((f) => f.reply.src)).toEqual([POD2.ip]);
  });

  it('control: on a virtual server nobody cleans, the stale flow costs the first packet after IPVS takes over', async () => {
    expect(await clients.ask(CONTROL_PORT, 'a', 3_000)).toBeUndefined();
    const stale = await flowsOf(CONTROL_PORT, FOREIGN_VIP);
    expect(stale.map((f) => `${f.reply.src}:${f.reply.srcPort} -> ${f.reply.dst}`)).toEqual([
      `${FOREIGN_VIP}:53 -> ${UPSTREAM.gw}`,
    ]);
    // and the cleanup would pick it
    const frontend = {
      family: 'ipv4' as const,
      protocol: UDP,
      address: FOREIGN_VIP,
      port: 53,
      endpoints: [{ address: POD1.ip, port: 5353 }],
    };
    expect(staleConntrackFlows(stale, [frontend])).toEqual(stale);
    // a virtual server kube-ipvs does not own (not on kube-ipvs0, not in its sets): never touched
    run('ip', ['link', 'add', 'ctl0', 'type', 'dummy']);
    run('ip', ['addr', 'add', `${FOREIGN_VIP}/32`, 'dev', 'ctl0']);
    run('ip', ['link', 'set', 'ctl0', 'up']);
    run('ipvsadm', ['-A', '-u', `${FOREIGN_VIP}:53`, '-s', 'rr']);
    run('ipvsadm', ['-a', '-u', `${FOREIGN_VIP}:53`, '-r', `${POD1.ip}:5353`, '-m']);
    // as observed on the VM's 6.1 kernel: the first packet meets the stale entry and is lost,
    // and the entry is gone after it (the daemon's cleanup made the first packet of the first
    // test get through); the next packet starts afresh
    expect(await clients.ask(CONTROL_PORT, 'b', 5_000)).toBeUndefined();
    expect(await flowsOf(CONTROL_PORT, FOREIGN_VIP)).toEqual([]);
    expect(await clients.ask(CONTROL_PORT, 'c', 20_000)).toBe('pod1 c');
  });
});
