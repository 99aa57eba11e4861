// Expected names/types/entries written by hand from shared/reference/kube-proxy-ipvs.md §1.2.
import {
  IPSET_INFO, entryIp, entryIpPort, entryIpPortIp, entryIpPortNet, entryPort, nonEmptySetKeys, planIpsets,
} from '../../lib/plan/ipsets';
import { SetName, ipsetName } from '../../lib/plan/names';

describe('the 17 kube-proxy ipsets', () => {
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
    ]);
    expect(new Set(v6).size).toBe(17);
    expect(ipsetName(SetName.CLUSTER_IP, 'ipv4')).toBe('KUBE-CLUSTER-IP');
  });

  it.each([
    ['hash:ip', entryIp('10.96.0.10'), '10.96.0.10'],
    ['hash:ip,port', entryIpPort('10.96.0.10', 'udp', 53), '10.96.0.10,udp:53'],
    ['hash:ip,port,ip', entryIpPortIp('10.0.0.5', 'tcp', 80, '10.0.0.5'), '10.0.0.5,tcp:80,10.0.0.5'],
    ['hash:ip,port,net', entryIpPortNet('1.2.3.4', 'tcp', 80, '10.0.1.0/24'), '1.2.3.4,tcp:80,10.0.1.0/24'],
    ['hash:ip,port,net host bits cleared', entryIpPortNet('1.2.3.4', 'tcp', 80, '10.0.1.9/24'), '1.2.3.4,tcp:80,10.0.1.0/24'],
    ['hash:ip,port,net /32 without prefix', entryIpPortNet('1.2.3.4', 'sctp', 80, '10.0.2.7/32'), '1.2.3.4,sctp:80,10.0.2.7'],
    ['bitmap:port', entryPort(30080), '30080'],
    ['IPv6 as inet_ntop prints it', entryIpPort('2001:DB8:0:0::A', 'tcp', 80), '2001:db8::a,tcp:80'],
    ['IPv6 net', entryIpPortNet('fd00::1', 'tcp', 80, 'fd00:1:2:3::/48'), 'fd00::1,tcp:80,fd00:1:2::/48'],
  ])('entry %s: %s', (_n, got, want) => {
    expect(got).toBe(want);
  });

  it('planIpsets gives all 17 sets, empty ones included, and nonEmptySetKeys finds the filled ones', () => {
    const plan = planIpsets('ipv6', { CLUSTER_IP: [entryIpPort('fd00::a', 'tcp', 80)], NODE_PORT_TCP: [entryPort(30080)] });
    expect(plan.size).toBe(17);
    expect(plan.get('KUBE-6-CLUSTER-IP')).toEqual({ type: 'hash:ip,port', family: 'ipv6', members: new Set(['fd00::a,tcp:80']) });
    expect(plan.get('KUBE-6-IPVS-IPS')!.members.size).toBe(0);
    expect([...nonEmptySetKeys('ipv6', plan)].sort()).toEqual(['CLUSTER_IP', 'NODE_PORT_TCP']);
  });
});
