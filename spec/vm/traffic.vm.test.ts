// Real traffic through the node data plane our modules build, inside the VM only:
// pods are network namespaces on veth pairs routed by the node (no bridge); the VIPs are bound
// on kube-ipvs0 by the Link module; the IPVS services come from openIpvs(); ipsets and
// iptables from the Ipset / Iptables modules with kube-proxy's rules (planIpsets/planIptables);
// sysctls from the Sysctl module. Every server echoes the client address it sees.
//
// Addresses: pods 10.244.0.0/16 (clusterCIDR), services 10.96.0.0/16, external clients on
// 192.0.2.0/24 (allowed by the LB source range) and 198.51.100.0/24 (not allowed), LB ingress
// 203.0.113.10 (RFC 5737 ranges).
import { ChildProcess } from 'node:child_process';
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { Ipvs } from '../../lib/kernel/ipvs/ipvs';
import { openLink } from '../../lib/kernel/link/link-rtnetlink';
import { Link, KUBE_IPVS0 } from '../../lib/kernel/link/link';
import { bindAddresses, ensureDummyDevice, listLocalAddresses } from '../../lib/kernel/link/dummy-device';
import { selectNodePortAddresses } from '../../lib/kernel/link/node-addresses';
import { ProcSysctl } from '../../lib/kernel/sysctl/sysctl';
import { ensureIpvsSysctls } from '../../lib/kernel/sysctl/ipvs-sysctls';
import { createIpset } from '../../lib/kernel/ipset/ipset-restore';
import { createIptables } from '../../lib/kernel/iptables/iptables-restore';
import { ExecIptablesRunner } from '../../lib/kernel/iptables/iptables-restore';
import { ExecIpsetRunner } from '../../lib/kernel/ipset/ipset-restore';
import { LazyNftTables } from '../../lib/kernel/nftables/nftables-netlink';
import { ChildProcessExec } from '../../lib/kernel/exec';
import { cleanup } from '../../lib/cleanup/cleanup';
import { nonEmptySetKeys, planIpsets } from '../../lib/plan/ipsets';
import { planIptables } from '../../lib/plan/iptables';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../lib/uapi/ip_vs';
import { connect, deletePod, ip, makePod, run, startEchoServer, tryRun } from '../../testkit/netns';
import { entryIp, entryIpPort, entryIpPortIp, entryIpPortNet, entryPort } from '../../lib/model/ipset';

const CLUSTER_IP = '10.96.0.10';
const LB_IP = '203.0.113.10';
const NODE_PORT = 30080;
const POD1 = { name: 'pod1', ip: '10.244.1.2', gw: '10.244.1.1' }; // backend
const POD2 = { name: 'pod2', ip: '10.244.2.2', gw: '10.244.2.1' }; // client pod
const EXT1 = { name: 'ext1', ip: '192.0.2.2', gw: '192.0.2.1' }; // external, allowed
const EXT2 = { name: 'ext2', ip: '198.51.100.2', gw: '198.51.100.1' }; // external, not allowed
const NODE_IP = EXT1.gw; // the node address NodePorts are served on (nodePortAddresses 192.0.2.0/24)
const HOST_PORT = 22222; // a node-local listener on 0.0.0.0, never a service port
const FOREIGN = { chain: 'TRAFFIC-FOREIGN', set: 'TRAFFIC-FOREIGN-SET', link: 'trafficfrgn0' };

const echo = (client: string) => `pod1 client=${client}`;

describe.each<['nft' | 'legacy']>([['nft'], ['legacy']])(
  'traffic through kube-ipvs data plane, iptables-%s',
  (backend) => {
    let ipvs: Ipvs;
    let link: Link;
    const servers: ChildProcess[] = [];

    beforeAll(async () => {
      await ensureIpvsSysctls(new ProcSysctl(), { strictARP: false });
      for (const p of [POD1, POD2, EXT1, EXT2]) makePod(p.name, p.ip, p.gw);
      servers.push(await startEchoServer(POD1.name, 'pod1', POD1.ip, 8080));
      servers.push(await startEchoServer('', 'host', '0.0.0.0', HOST_PORT));

      // foreign objects cleanup must leave alone
      run(`iptables-${backend}`, ['-N', FOREIGN.chain]);
      run(`iptables-${backend}`, ['-A', FOREIGN.chain, '-j', 'RETURN']);
      run(`iptables-${backend}`, ['-A', 'INPUT', '-p', 'tcp', '--dport', '2', '-j', FOREIGN.chain]);
      run('ipset', ['create', FOREIGN.set, 'hash:ip']);
      ip('link', 'add', FOREIGN.link, 'type', 'dummy');

      link = await openLink();
      const { link: kipvs } = await ensureDummyDevice(link);
      expect(await bindAddresses(link, kipvs.index, [CLUSTER_IP, LB_IP])).toEqual([null, null]);
      const nodeIPs = selectNodePortAddresses(await listLocalAddresses(link, kipvs.index, ['ipv4']), ['192.0.2.0/24']);
      expect(nodeIPs).toEqual([NODE_IP]);

      ipvs = await openIpvs();
      const rs = { af: AF_INET, address: POD1.ip, port: 8080, fwdMethod: IP_VS_CONN_F.MASQ, weight: 1 } as const;
      for (const [address, port] of [
        [CLUSTER_IP, 80],
        [LB_IP, 80],
        ...nodeIPs.map((n) => [n, NODE_PORT] as const),
      ] as const) {
        const vs = { af: AF_INET, protocol: IPPROTO_TCP, address, port, fwmark: 0 } as const;
        await ipvs.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
        await ipvs.apply({ kind: 'newDest', vs, rs });
      }

      const sets = planIpsets('ipv4', {
        CLUSTER_IP: [entryIpPort(CLUSTER_IP, 'tcp', 80)],
        LOOP_BACK: [entryIpPortIp(POD1.ip, 'tcp', 8080, POD1.ip)],
        NODE_PORT_TCP: [entryPort(NODE_PORT)],
        LOAD_BALANCER: [entryIpPort(LB_IP, 'tcp', 80)],
        LOAD_BALANCER_FW: [entryIpPort(LB_IP, 'tcp', 80)],
        LOAD_BALANCER_SOURCE_CIDR: [entryIpPortNet(LB_IP, 'tcp', 80, '192.0.2.0/24')],
        IPVS_IPS: [entryIp(CLUSTER_IP), entryIp(LB_IP)],
      });
      await createIpset().sync(sets);
      // the daemon records every frontend it programs (proxier/ownership-record.ts); with a
      // record, cleanup trusts nothing else
      await createIpset().write(
        'create KUBE-IPVS-OWNED hash:ip,port family inet hashsize 1024 maxelem 65536 comment\n' +
          [entryIpPort(CLUSTER_IP, 'tcp', 80), entryIpPort(LB_IP, 'tcp', 80), entryIpPort(NODE_IP, 'tcp', NODE_PORT)]
            .map((m) => `add KUBE-IPVS-OWNED ${m} comment "rr/0x0000/0"`)
            .join('\n') +
          '\n',
      );
      await createIptables({ family: 'ipv4', backend }).sync(
        planIptables({
          family: 'ipv4',
          clusterCIDR: '10.244.0.0/16',
          nonEmptySets: nonEmptySetKeys('ipv4', sets),
          randomFully: true,
        }),
      );
    });

    afterAll(async () => {
      for (const s of servers) s.kill();
      for (const p of [POD1, POD2, EXT1, EXT2]) deletePod(p.name);
      ipvs?.close();
      link?.close();
      tryRun(`iptables-${backend}`, ['-D', 'INPUT', '-p', 'tcp', '--dport', '2', '-j', FOREIGN.chain]);
      tryRun(`iptables-${backend}`, ['-F', FOREIGN.chain]);
      tryRun(`iptables-${backend}`, ['-X', FOREIGN.chain]);
      tryRun('ipset', ['destroy', FOREIGN.set]);
      tryRun('ip', ['link', 'del', FOREIGN.link]);
      tryRun('ip', ['link', 'del', KUBE_IPVS0]);
    });

    it('node -> ClusterIP: masqueraded (source is a VIP, not in clusterCIDR), the pod sees the node', () => {
      expect(connect('', CLUSTER_IP, 80)).toEqual({ outcome: 'ok', reply: echo(POD1.gw) });
    });

    it('pod -> ClusterIP: not masqueraded, the backend sees the client pod', () => {
      expect(connect(POD2.name, CLUSTER_IP, 80)).toEqual({ outcome: 'ok', reply: echo(POD2.ip) });
    });

    it('hairpin pod -> its own service: KUBE-LOOP-BACK masquerades to the node address', () => {
      expect(connect(POD1.name, CLUSTER_IP, 80)).toEqual({ outcome: 'ok', reply: echo(POD1.gw) });
    });

    it('NodePort from an external client: masqueraded, the pod sees the node', () => {
      expect(connect(EXT1.name, NODE_IP, NODE_PORT)).toEqual({ outcome: 'ok', reply: echo(POD1.gw) });
    });

    it('a host port through a VIP is rejected by KUBE-IPVS-FILTER; through a node address it answers', () => {
      expect(connect(POD2.name, POD2.gw, HOST_PORT)).toEqual({ outcome: 'ok', reply: `host client=${POD2.ip}` });
      // REJECT's default icmp-port-unreachable makes connect() fail at once (ECONNREFUSED)
      expect(connect(POD2.name, CLUSTER_IP, HOST_PORT).outcome).toBe('refused');
      const counters = run(`iptables-${backend}`, ['-t', 'filter', '-L', 'KUBE-IPVS-FILTER', '-v', '-n', '-x']);
      const reject = counters.split('\n').find((l) => /REJECT/.test(l));
      expect(Number(reject?.trim().split(/\s+/)[0])).toBeGreaterThan(0);
    });

    it('LB source ranges: an allowed client gets through, another is dropped', () => {
      expect(connect(EXT1.name, LB_IP, 80)).toEqual({ outcome: 'ok', reply: echo(POD1.gw) });
      expect(connect(EXT2.name, LB_IP, 80, 3).outcome).toBe('timeout');
    });

    it('cleanup removes the data plane and leaves the foreign chain, rule, set and link', async () => {
      const exec = new ChildProcessExec();
      // its netlink socket opens on first use and would keep jest's process alive
      const nftables = new LazyNftTables();
      const report = await cleanup({
        ipvs,
        link,
        iptables: [new ExecIptablesRunner({ family: 'ipv4', backend, exec })],
        ipset: new ExecIpsetRunner(exec),
        nftables,
      }).finally(() => nftables.close());
      expect(report.failures).toEqual([]);
      expect(report.virtualServersKept).toEqual([]);
      expect(await ipvs.listServices()).toEqual([]);
      expect(connect(POD2.name, CLUSTER_IP, 80, 3).outcome).not.toBe('ok');
      expect(run(`iptables-${backend}-save`, ['-t', 'filter'])).toContain(
        `-A INPUT -p tcp -m tcp --dport 2 -j ${FOREIGN.chain}`,
      );
      expect(run(`iptables-${backend}-save`, ['-t', 'filter'])).toContain(`-A ${FOREIGN.chain} -j RETURN`);
      expect(run('ipset', ['list', '-n']).split('\n')).toContain(FOREIGN.set);
      expect(ip('-d', '-o', 'link', 'show', FOREIGN.link)).toMatch(/ dummy /);
      expect(run('ipset', ['list', '-n'])).not.toMatch(/KUBE-/);
    });
  },
);
