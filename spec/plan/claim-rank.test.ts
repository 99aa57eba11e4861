// Which of two service ports claiming one virtual server keeps it (plan/claim-rank.ts).
// Addresses (testkit/builders.ts): ClusterIPs 10.96.0.0/12, external/LB IPs 203.0.113.0/24,
// this node 192.0.2.1.
import { Claim, claimOf, compareClaims, whyWins } from '../../lib/plan/claim-rank';
import { planServicePort } from '../../lib/plan/plan-service-port';
import { PlanContext, planContents } from '../../lib/plan/service-plan';
import { ServicePort } from '../../lib/model/service';

const sp = (o: Partial<ServicePort> = {}): ServicePort => ({
  namespace: 'ns',
  name: 'svc',
  portName: 'p',
  family: 'ipv4',
  protocol: 'TCP',
  port: 80,
  nodePort: 0,
  clusterIP: '10.96.0.10',
  externalIPs: [],
  loadBalancerIPs: [],
  loadBalancerSourceRanges: [],
  loadBalancerSourceRangesUnreadable: false,
  stickyMaxAgeSeconds: 0,
  externalPolicyLocal: false,
  internalPolicyLocal: false,
  healthCheckNodePort: 0,
  trafficDistribution: '',
  scheduler: '',
  ...o,
});

describe('the kind of a claim is the frontend that made it (issue 25 item 3)', () => {
  const ctx: PlanContext = {
    family: 'ipv4',
    scheduler: 'rr',
    nodeName: 'node-a',
    nodeZone: '',
    nodePortAddresses: ['192.0.2.1'],
    localAddresses: new Set(['192.0.2.1']),
    nodeIPs: ['192.0.2.1'],
    excludeClusterCIDRs: [],
  };
  const kinds = (o: Partial<ServicePort>) =>
    Object.fromEntries(
      planContents(planServicePort(sp(o), [], ctx)).virtualServers.map((v) => [`${v.vs.address}:${v.vs.port}`, v.kind]),
    );

  it.each<[string, Partial<ServicePort>, Record<string, string>]>([
    ['the ClusterIP', {}, { '10.96.0.10:80': 'ClusterIP' }],
    [
      'a NodePort on a node address',
      { nodePort: 30080 },
      { '10.96.0.10:80': 'ClusterIP', '192.0.2.1:30080': 'NodePort' },
    ],
    [
      'a load-balancer IP',
      { loadBalancerIPs: ['203.0.113.5'] },
      { '10.96.0.10:80': 'ClusterIP', '203.0.113.5:80': 'LoadBalancer' },
    ],
    [
      'an externalIP',
      { externalIPs: ['203.0.113.6'] },
      { '10.96.0.10:80': 'ClusterIP', '203.0.113.6:80': 'ExternalIP' },
    ],
    [
      "an externalIP equal to another Service's ClusterIP",
      { clusterIP: '10.96.0.30', externalIPs: ['10.96.0.10'] },
      { '10.96.0.30:80': 'ClusterIP', '10.96.0.10:80': 'ExternalIP' },
    ],
    // the port equal to its own nodePort does not make an externalIP a NodePort
    [
      "an externalIP on another Service's LB IP, at a port equal to its own nodePort",
      { port: 30443, nodePort: 30443, externalIPs: ['203.0.113.5'] },
      { '10.96.0.10:30443': 'ClusterIP', '203.0.113.5:30443': 'ExternalIP', '192.0.2.1:30443': 'NodePort' },
    ],
  ])('%s', (_name, o, want) => {
    expect(kinds(o)).toEqual(want);
  });

  it('claimOf keeps the kind it is given', () => {
    expect(claimOf('ns/svc:p/ipv4', sp({ nodePort: 30443, port: 30443 }), 'ExternalIP').kind).toBe('ExternalIP');
  });
});

describe('compareClaims', () => {
  const c = (key: string, kind: Claim['kind'], createdAt = Infinity): Claim => ({ key, kind, createdAt });

  it('ClusterIP > NodePort > LoadBalancer > ExternalIP, whatever the age and name', () => {
    const claims = [
      c('a/x:p/ipv4', 'ExternalIP', 1),
      c('b/x:p/ipv4', 'LoadBalancer', 2),
      c('z/x:p/ipv4', 'ClusterIP', 9),
      c('c/x:p/ipv4', 'NodePort', 3),
    ];
    expect([...claims].sort(compareClaims).map((x) => x.kind)).toEqual([
      'ClusterIP',
      'NodePort',
      'LoadBalancer',
      'ExternalIP',
    ]);
  });

  it('same kind: the older Service, then the service port key; no timestamp counts as newest', () => {
    const claims = [
      c('a/new:p/ipv4', 'ExternalIP', 2_000),
      c('z/old:p/ipv4', 'ExternalIP', 1_000),
      c('0/none:p/ipv4', 'ExternalIP'),
      c('b/same:p/ipv4', 'ExternalIP', 2_000),
    ];
    expect([...claims].sort(compareClaims).map((x) => x.key)).toEqual([
      'z/old:p/ipv4',
      'a/new:p/ipv4',
      'b/same:p/ipv4',
      '0/none:p/ipv4',
    ]);
  });

  it('claimOf reads creationTimestamp; an unreadable one counts as newest', () => {
    expect(claimOf('ns/svc:p/ipv4', sp({ creationTimestamp: '2024-01-01T00:00:00Z' }), 'ClusterIP')).toEqual({
      key: 'ns/svc:p/ipv4',
      kind: 'ClusterIP',
      createdAt: Date.UTC(2024, 0, 1),
    });
    expect(claimOf('ns/svc:p/ipv4', sp({ creationTimestamp: 'yesterday' }), 'ClusterIP').createdAt).toBe(Infinity);
  });

  it('whyWins says which rule decided', () => {
    expect(whyWins(c('kube-system/kube-dns:dns/ipv4', 'ClusterIP', 1), c('aaa/grab:dns/ipv4', 'ExternalIP', 2))).toBe(
      'a ClusterIP outranks an ExternalIP',
    );
    expect(whyWins(c('b/old:p/ipv4', 'ExternalIP', 1), c('a/new:p/ipv4', 'ExternalIP', 2))).toBe(
      'both are ExternalIPs and b/old is the older Service',
    );
    expect(whyWins(c('a/x:p/ipv4', 'ExternalIP', 1), c('b/x:p/ipv4', 'ExternalIP', 1))).toBe(
      'both are ExternalIPs of the same age and a/x:p/ipv4 comes first by name',
    );
  });
});
