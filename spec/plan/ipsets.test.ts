// Expected names/types/entries written by hand from shared/reference/kube-proxy-ipvs.md §1.2.
// What a Service's members look like in `ipset save` (a /0 source range as two halves, a /32
// without its prefix) is the step file spec/golden/cases/loadbalancer-source-ranges-any.yaml.
import { InvalidIpsetEntryError } from '../../lib/errors';
import { nonEmptySetKeys, planIpsets } from '../../lib/plan/ipsets';
import { SetName, ipsetName } from '../../lib/model/names';
import {
  IPSET_INFO,
  IpsetProto,
  entriesIpPortNet,
  entryIp,
  entryIpPort,
  entryIpPortIp,
  entryIpPortNet,
  entryPort,
  ipsetMemberMismatch,
} from '../../lib/model/ipset';

describe("the 17 kube-proxy ipsets and kube-ipvs's record", () => {
  it('have kube-proxy names and types', () => {
    expect(IPSET_INFO.map((i) => `${i.name} ${i.type}`)).toEqual([
      'KUBE-LOOP-BACK hash:ip,port,ip',
      'KUBE-CLUSTER-IP hash:ip,port',
      'KUBE-EXTERNAL-IP hash:ip,port',
      'KUBE-EXTERNAL-IP-LOCAL hash:ip,port',
      'KUBE-LOAD-BALANCER hash:ip,port',
      'KUBE-LOAD-BALANCER-LOCAL hash:ip,port',
      'KUBE-LOAD-BALANCER-FW hash:ip,port',
      'KUBE-LOAD-BALANCER-SOURCE-IP hash:ip,port,ip',
      'KUBE-LOAD-BALANCER-SOURCE-CIDR hash:ip,port,net',
      'KUBE-NODE-PORT-TCP bitmap:port',
      'KUBE-NODE-PORT-LOCAL-TCP bitmap:port',
      'KUBE-NODE-PORT-UDP bitmap:port',
      'KUBE-NODE-PORT-LOCAL-UDP bitmap:port',
      'KUBE-NODE-PORT-SCTP-HASH hash:ip,port',
      'KUBE-NODE-PORT-LOCAL-SCTP-HASH hash:ip,port',
      'KUBE-HEALTH-CHECK-NODE-PORT bitmap:port',
      'KUBE-IPVS-IPS hash:ip',
      // kube-ipvs's own: every frontend it programmed (ownership across restarts)
      'KUBE-IPVS-OWNED hash:ip,port',
    ]);
  });

  it('IPv6 names: KUBE-6- prefix, cut to 31 characters', () => {
    const v6 = IPSET_INFO.map((i) => ipsetName(i.name, 'ipv6'));
    expect(v6).toEqual([
      'KUBE-6-LOOP-BACK',
      'KUBE-6-CLUSTER-IP',
      'KUBE-6-EXTERNAL-IP',
      'KUBE-6-EXTERNAL-IP-LOCAL',
      'KUBE-6-LOAD-BALANCER',
      'KUBE-6-LOAD-BALANCER-LOCAL',
      'KUBE-6-LOAD-BALANCER-FW',
      'KUBE-6-LOAD-BALANCER-SOURCE-IP',
      'KUBE-6-LOAD-BALANCER-SOURCE-CID',
      'KUBE-6-NODE-PORT-TCP',
      'KUBE-6-NODE-PORT-LOCAL-TCP',
      'KUBE-6-NODE-PORT-UDP',
      'KUBE-6-NODE-PORT-LOCAL-UDP',
      'KUBE-6-NODE-PORT-SCTP-HASH',
      'KUBE-6-NODE-PORT-LOCAL-SCTP-HAS',
      'KUBE-6-HEALTH-CHECK-NODE-PORT',
      'KUBE-6-IPVS-IPS',
      'KUBE-6-IPVS-OWNED',
    ]);
    expect(new Set(v6).size).toBe(18);
    expect(ipsetName(SetName.CLUSTER_IP, 'ipv4')).toBe('KUBE-CLUSTER-IP');
  });

  it.each([
    ['hash:ip', entryIp('10.96.0.10'), '10.96.0.10'],
    ['hash:ip,port', entryIpPort('10.96.0.10', 'udp', 53), '10.96.0.10,udp:53'],
    ['hash:ip,port,ip', entryIpPortIp('10.0.0.5', 'tcp', 80, '10.0.0.5'), '10.0.0.5,tcp:80,10.0.0.5'],
    ['hash:ip,port,net', entryIpPortNet('1.2.3.4', 'tcp', 80, '10.0.1.0/24'), '1.2.3.4,tcp:80,10.0.1.0/24'],
    [
      'hash:ip,port,net host bits cleared',
      entryIpPortNet('1.2.3.4', 'tcp', 80, '10.0.1.9/24'),
      '1.2.3.4,tcp:80,10.0.1.0/24',
    ],
    ['bitmap:port', entryPort(30080), '30080'],
    ['IPv6 as inet_ntop prints it', entryIpPort('2001:DB8:0:0::A', 'tcp', 80), '2001:db8::a,tcp:80'],
    ['IPv6 net', entryIpPortNet('fd00::1', 'tcp', 80, 'fd00:1:2:3::/48'), 'fd00::1,tcp:80,fd00:1:2::/48'],
  ])('entry %s: %s', (_n, got, want) => {
    expect(got).toBe(want);
  });

  it("planIpsets gives kube-proxy's 17 sets (not the record, written apart), empty ones included, and nonEmptySetKeys finds the filled ones", () => {
    const plan = planIpsets('ipv6', {
      CLUSTER_IP: [entryIpPort('fd00::a', 'tcp', 80)],
      NODE_PORT_TCP: [entryPort(30080)],
    });
    expect(plan.size).toBe(17);
    expect(plan.has('KUBE-6-IPVS-OWNED')).toBe(false);
    expect(plan.get('KUBE-6-CLUSTER-IP')).toEqual({
      type: 'hash:ip,port',
      family: 'ipv6',
      members: new Set(['fd00::a,tcp:80']),
    });
    expect(plan.get('KUBE-6-IPVS-IPS')!.members.size).toBe(0);
    expect([...nonEmptySetKeys('ipv6', plan)].sort()).toEqual(['CLUSTER_IP', 'NODE_PORT_TCP']);
  });

  it.each([
    ['protocol in upper case', entryIpPort('10.96.0.10', 'TCP' as IpsetProto, 80), '10.96.0.10,tcp:80'],
    ['IPv6 spelled long', entryIpPortIp('FD00:0:0:0:0:0:0:1', 'udp', 53, 'fd00::0:1'), 'fd00::1,udp:53,fd00::1'],
    ['IPv4-mapped IPv6', entryIp('::FFFF:10.1.2.3'), '::ffff:10.1.2.3'],
    ['/128 without prefix', entryIpPortNet('fd00::1', 'tcp', 80, 'fd00::9/128'), 'fd00::1,tcp:80,fd00::9'],
    ['bare address as a host net', entryIpPortNet('1.2.3.4', 'tcp', 80, '10.0.0.1'), '1.2.3.4,tcp:80,10.0.0.1'],
  ])('one spelling per member: %s', (_n, got, want) => {
    expect(got).toBe(want);
  });

  it.each([
    [
      '10.1.2.3/0 (host bits ignored)',
      '203.0.113.7',
      ['203.0.113.7,tcp:443,0.0.0.0/1', '203.0.113.7,tcp:443,128.0.0.0/1'],
    ],
  ])('entriesIpPortNet %s: ipset cannot hold a /0, so two half ranges', (net, ip, want) => {
    expect(entriesIpPortNet(ip, 'tcp', 443, net.split(' ')[0]!)).toEqual(want);
  });

  it('entryIpPortNet refuses a /0 (two members), pointing at entriesIpPortNet', () => {
    expect(() => entryIpPortNet('203.0.113.7', 'tcp', 443, '0.0.0.0/0')).toThrow(
      /203\.0\.113\.7,tcp:443,0\.0\.0\.0\/0: .*entriesIpPortNet/,
    );
  });

  it.each<[string, () => unknown, string]>([
    [
      'not an address',
      () => entryIp('10.96.0.1.5'),
      'invalid ipset entry 10.96.0.1.5: address 10.96.0.1.5 is not an IP address',
    ],
    ['leading zeros', () => entryIp('010.096.0.1'), 'address 010.096.0.1 is not an IP address'],
    ['a zone', () => entryIp('fe80::1%eth0'), 'address fe80::1%eth0 is not an IP address'],
    [
      'a newline',
      () => entryIpPort('10.96.0.1\n-A', 'tcp', 80),
      'invalid ipset entry "10.96.0.1\\n-A,tcp:80": address "10.96.0.1\\n-A" is not an IP address',
    ],
    ['port 0', () => entryIpPort('10.96.0.1', 'tcp', 0), 'port 0 is not in 1-65535'],
    ['port 65536', () => entryPort(65536), 'invalid ipset entry 65536: port 65536 is not in 1-65535'],
    ['port 1.5', () => entryIpPort('10.96.0.1', 'udp', 1.5), 'port 1.5 is not in 1-65535'],
    ['port as text', () => entryPort('80' as unknown as number), 'port 80 is not in 1-65535'],
    [
      'protocol icmp',
      () => entryIpPort('10.96.0.1', 'icmp' as IpsetProto, 80),
      'protocol icmp is not tcp, udp or sctp',
    ],
    [
      'mixed families',
      () => entryIpPortIp('10.0.0.5', 'tcp', 80, 'fd00::5'),
      'the second address is ipv6, the address ipv4',
    ],
    [
      'net of the other family',
      () => entriesIpPortNet('10.0.0.5', 'tcp', 80, '::/0'),
      'the network is ipv6, the address ipv4',
    ],
    ['prefix 33', () => entriesIpPortNet('10.0.0.5', 'tcp', 80, '10.0.0.0/33'), 'network 10.0.0.0/33 is not a CIDR'],
    [
      'prefix with sign',
      () => entriesIpPortNet('10.0.0.5', 'tcp', 80, '10.0.0.0/+8'),
      'network 10.0.0.0/+8 is not a CIDR',
    ],
    ['empty prefix', () => entriesIpPortNet('10.0.0.5', 'tcp', 80, '10.0.0.0/'), 'network 10.0.0.0/ is not a CIDR'],
  ])('refuses %s with InvalidIpsetEntryError naming the entry', (_n, f, message) => {
    let err: unknown;
    try {
      f();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidIpsetEntryError);
    expect(err).toMatchObject({ code: 'KIPVS_INVALID_IPSET_ENTRY' });
    expect((err as Error).message).toContain(message);
  });

  it.each([
    ['hash:ip,port', 'ipv4', '10.96.0.1,tcp:80', undefined],
    ['hash:ip,port', 'ipv6', '10.96.0.1,tcp:80', 'not ipv6, in a ipv6 set'],
    ['hash:ip,port,net', 'ipv6', 'fd00::1,tcp:80,10.0.0.0/8', 'not ipv6, in a ipv6 set'],
    ['hash:ip', 'ipv4', '10.96.0.1,tcp:80', '2 part(s), a hash:ip member has 1'],
    ['hash:ip,port,ip', 'ipv4', '10.96.0.1,tcp:80,10.0.0.0/8', 'a network, in a hash:ip,port,ip set'],
    ['bitmap:port', 'ipv4', '10.96.0.1', 'not a port, in a bitmap:port set'],
    ['bitmap:port', 'ipv6', '30080', undefined],
  ] as const)('ipsetMemberMismatch %s %s %s', (type, family, member, want) => {
    expect(ipsetMemberMismatch(type, family, member)).toBe(want);
  });
});
