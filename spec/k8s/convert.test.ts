// Expected values written by hand from the Kubernetes API (core/v1 Service, discovery/v1
// EndpointSlice, Node) and kube-proxy's serviceport.go / endpointslicecache.go rules.
// Addresses: see testkit/builders.ts.
import type { V1Service } from '@kubernetes/client-node';
import { convertService, nodeInfo } from '../../lib/k8s/convert';
import { Refusal, ServicePort } from '../../lib/model/service';
import { makeNode, makeService, svcPort } from '../../testkit/builders';

const BASE: ServicePort = {
  namespace: 'ns1',
  name: 'svc1',
  portName: 'p80',
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
};

function svc1(fn: (s: V1Service) => void = () => {}): V1Service {
  return makeService('ns1', 'svc1', (s) => {
    s.spec = { type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [svcPort('p80', 80)] };
    fn(s);
  });
}

const refusal = (field: string, value: string, reason: string): Refusal => ({
  kind: 'Service',
  namespace: 'ns1',
  name: 'svc1',
  field,
  value,
  reason,
});

const CLOSED = 'the load balancer admits no client until the ranges are fixed';

interface Row {
  name: string;
  svc: V1Service;
  ports: ServicePort[];
  refusals?: Refusal[];
}

const rows: Row[] = [
  {
    name: 'plain ClusterIP, protocol defaults to TCP',
    svc: svc1((s) => delete s.spec!.ports![0]!.protocol),
    ports: [BASE],
  },
  {
    name: 'clusterIP only (no clusterIPs), IPv6 spelled canonically',
    svc: svc1((s) => {
      delete s.spec!.clusterIPs;
      s.spec!.clusterIP = '2001:DB8:96:0:0:0:0:10';
    }),
    ports: [{ ...BASE, family: 'ipv6', clusterIP: '2001:db8:96::10' }],
  },
  {
    name: 'dual-stack: one ServicePort per family, lists split by family, sorted and unique',
    svc: svc1((s) => {
      s.spec!.clusterIPs = ['2001:db8:96::10', '10.96.0.10'];
      s.spec!.externalIPs = ['203.0.113.11', '2001:db8:203::10', '203.0.113.10', '203.0.113.11'];
      s.spec!.loadBalancerSourceRanges = [' 198.51.100.7/24 ', '2001:db8:198::/48'];
      s.status = { loadBalancer: { ingress: [{ ip: '2001:db8:203::20' }, { ip: '203.0.113.20' }] } };
    }),
    ports: [
      {
        ...BASE,
        externalIPs: ['203.0.113.10', '203.0.113.11'],
        loadBalancerIPs: ['203.0.113.20'],
        loadBalancerSourceRanges: ['198.51.100.0/24'],
      },
      {
        ...BASE,
        family: 'ipv6',
        clusterIP: '2001:db8:96::10',
        externalIPs: ['2001:db8:203::10'],
        loadBalancerIPs: ['2001:db8:203::20'],
        loadBalancerSourceRanges: ['2001:db8:198::/48'],
      },
    ],
  },
  {
    name: 'source range 0.0.0.0/0 stays /0; ipMode Proxy and hostname-only ingress skipped',
    svc: svc1((s) => {
      s.spec!.type = 'LoadBalancer';
      s.spec!.loadBalancerSourceRanges = ['0.0.0.0/0'];
      s.status = {
        loadBalancer: {
          ingress: [{ ip: '203.0.113.20', ipMode: 'Proxy' }, { hostname: 'x.example' }, { ip: '203.0.113.21' }],
        },
      };
    }),
    ports: [{ ...BASE, loadBalancerIPs: ['203.0.113.21'], loadBalancerSourceRanges: ['0.0.0.0/0'] }],
  },
  {
    name: 'LoadBalancer eTP Local: nodePort, health check port, affinity, policies, distribution, annotation',
    svc: svc1((s) => {
      s.metadata!.annotations = { 'kube-ipvs.io/scheduler': 'mh' };
      s.spec!.type = 'LoadBalancer';
      s.spec!.ports = [svcPort('p80', 80, 'UDP', 30080)];
      s.spec!.externalTrafficPolicy = 'Local';
      s.spec!.internalTrafficPolicy = 'Local';
      s.spec!.healthCheckNodePort = 32000;
      s.spec!.sessionAffinity = 'ClientIP';
      s.spec!.sessionAffinityConfig = { clientIP: { timeoutSeconds: 60 } };
      s.spec!.trafficDistribution = 'PreferClose';
    }),
    ports: [
      {
        ...BASE,
        protocol: 'UDP',
        nodePort: 30080,
        healthCheckNodePort: 32000,
        externalPolicyLocal: true,
        internalPolicyLocal: true,
        stickyMaxAgeSeconds: 60,
        trafficDistribution: 'PreferClose',
        scheduler: 'mh',
      },
    ],
  },
  {
    name: 'eTP Local on a ClusterIP Service without external IPs means nothing (kube-proxy ExternallyAccessible)',
    svc: svc1((s) => (s.spec!.externalTrafficPolicy = 'Local')),
    ports: [BASE],
  },
  {
    name: 'ClientIP affinity without config: 10800 s',
    svc: svc1((s) => (s.spec!.sessionAffinity = 'ClientIP')),
    ports: [{ ...BASE, stickyMaxAgeSeconds: 10800 }],
  },
  {
    name: 'headless (None)',
    svc: svc1((s) => ((s.spec!.clusterIP = 'None'), (s.spec!.clusterIPs = ['None']))),
    ports: [],
  },
  {
    name: 'headless (no cluster IP at all)',
    svc: svc1((s) => ((s.spec!.clusterIP = ''), delete s.spec!.clusterIPs)),
    ports: [],
  },
  { name: 'ExternalName', svc: svc1((s) => (s.spec!.type = 'ExternalName')), ports: [] },
  {
    name: 'labelled service-proxy-name: another proxy serves it',
    svc: svc1((s) => (s.metadata!.labels = { 'service.kubernetes.io/service-proxy-name': 'other' })),
    ports: [],
  },
  {
    name: 'bad cluster IP of one family: that family only is unplanned',
    svc: svc1((s) => (s.spec!.clusterIPs = ['10.96.0.10', '2001:db8:96::zz'])),
    ports: [BASE],
    refusals: [
      refusal('spec.clusterIPs[1]', '2001:db8:96::zz', 'not an IP address; no virtual server for this family'),
    ],
  },
  {
    name: 'cluster IP with leading zeros or a zone is refused',
    svc: svc1((s) => (s.spec!.clusterIPs = ['010.96.0.10', 'fe80::1%eth0'])),
    ports: [],
    refusals: [
      refusal('spec.clusterIPs[0]', '010.96.0.10', 'not an IP address; no virtual server for this family'),
      refusal('spec.clusterIPs[1]', 'fe80::1%eth0', 'an IPv6 zone is not allowed; no virtual server for this family'),
    ],
  },
  {
    name: 'ports: bad number, bad protocol, duplicate name refused; bad nodePort dropped; the good port kept',
    svc: svc1((s) => {
      s.spec!.type = 'NodePort';
      s.spec!.ports = [
        svcPort('p80', 80, 'TCP', 70000),
        svcPort('zero', 0),
        svcPort('icmp', 1, 'ICMP'),
        svcPort('p80', 81),
        svcPort('Bad_Name', 82),
      ];
    }),
    ports: [BASE],
    refusals: [
      refusal('spec.ports[0].nodePort', '70000', 'not a port 0..65535; no NodePort'),
      refusal('spec.ports[1].port', '0', 'not a port 1..65535; port ignored'),
      refusal('spec.ports[2].protocol', 'ICMP', 'not TCP, UDP or SCTP; port ignored'),
      refusal('spec.ports[3].name', 'p80', 'duplicate port name; port ignored'),
      refusal('spec.ports[4].name', 'Bad_Name', 'not a DNS label; port ignored'),
    ],
  },
  {
    name: 'bad list elements refused one by one, the rest kept; an unreadable source range closes the load balancer',
    svc: svc1((s) => {
      s.spec!.externalIPs = ['203.0.113.10', 'example.com'];
      s.spec!.loadBalancerSourceRanges = ['198.51.100.0', '198.51.100.0/24'];
      s.status = {
        loadBalancer: {
          ingress: [{ ip: '203.0.113.x' }, { ip: '203.0.113.20', ipMode: 'Tunnel' }, { ip: '203.0.113.21' }],
        },
      };
    }),
    ports: [
      {
        ...BASE,
        externalIPs: ['203.0.113.10'],
        loadBalancerIPs: ['203.0.113.21'],
        loadBalancerSourceRanges: [],
        loadBalancerSourceRangesUnreadable: true,
      },
    ],
    refusals: [
      refusal('spec.externalIPs[1]', 'example.com', 'not an IP address; ignored'),
      refusal('status.loadBalancer.ingress[0].ip', '203.0.113.x', 'not an IP address; ingress ignored'),
      refusal('status.loadBalancer.ingress[1].ipMode', 'Tunnel', 'unknown ipMode (VIP or Proxy); ingress ignored'),
      refusal('spec.loadBalancerSourceRanges[0]', '198.51.100.0', `not a CIDR (no /prefix); ${CLOSED}`),
    ],
  },
  {
    name: 'source ranges read as kube-proxy reads them (ParseCIDRSloppy): leading zeros decimal, blanks trimmed',
    svc: svc1((s) => {
      s.spec!.clusterIPs = ['10.96.0.10', '2001:db8:96::10'];
      s.spec!.loadBalancerSourceRanges = ['010.0.0.0/8', ' 198.051.100.007/024\t', '::ffff:192.000.002.000/120'];
      s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.21' }] } };
    }),
    ports: [
      { ...BASE, loadBalancerIPs: ['203.0.113.21'], loadBalancerSourceRanges: ['10.0.0.0/8', '198.51.100.0/24'] },
      { ...BASE, family: 'ipv6', clusterIP: '2001:db8:96::10', loadBalancerSourceRanges: ['::ffff:192.0.2.0/120'] },
    ],
  },
  {
    name: 'only unreadable source ranges: the load balancer admits nobody, in every family',
    svc: svc1((s) => {
      s.spec!.clusterIPs = ['10.96.0.10', '2001:db8:96::10'];
      s.spec!.loadBalancerSourceRanges = ['10.0.0.0/33', '2001:db8::/64', 'internet'];
      s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.21' }] } };
    }),
    ports: [
      { ...BASE, loadBalancerIPs: ['203.0.113.21'], loadBalancerSourceRangesUnreadable: true },
      { ...BASE, family: 'ipv6', clusterIP: '2001:db8:96::10', loadBalancerSourceRangesUnreadable: true },
    ],
    refusals: [
      refusal('spec.loadBalancerSourceRanges[0]', '10.0.0.0/33', `not a CIDR; ${CLOSED}`),
      refusal('spec.loadBalancerSourceRanges[2]', 'internet', `not a CIDR (no /prefix); ${CLOSED}`),
    ],
  },
  {
    name: 'type-confused lists (a string, an object, a number) are refused, never read as characters or crash',
    svc: svc1((s) => {
      const spec = s.spec as unknown as Record<string, unknown>;
      spec.loadBalancerSourceRanges = '10.0.0.0/8';
      spec.externalIPs = { ip: '203.0.113.10' };
      s.status = { loadBalancer: { ingress: 5 as never } };
      spec.ports = [null, 'p80', { name: 'p80', port: 80 }, { name: 7, port: 81 }];
    }),
    ports: [{ ...BASE, loadBalancerSourceRangesUnreadable: true }],
    refusals: [
      refusal('spec.externalIPs', '{"ip":"203.0.113.10"}', 'not a list; no externalIP'),
      refusal('status.loadBalancer.ingress', '5', 'not a list; no load-balancer IP'),
      refusal('spec.loadBalancerSourceRanges', '10.0.0.0/8', `not a list; ${CLOSED}`),
      refusal('spec.ports[0]', 'null', 'not an object; port ignored'),
      refusal('spec.ports[1]', 'p80', 'not an object; port ignored'),
      refusal('spec.ports[3].name', '7', 'not a string; port ignored'),
    ],
  },
  {
    name: 'special addresses are never externalIPs or load-balancer IPs',
    svc: svc1((s) => {
      s.spec!.clusterIPs = ['10.96.0.10', '2001:db8:96::10'];
      s.spec!.externalIPs = [
        '0.0.0.0',
        '255.255.255.255',
        '127.0.0.1',
        '169.254.169.254',
        '224.0.0.1',
        '239.255.255.250',
        '203.0.113.10',
        '::',
        '::1',
        'fe80::1',
        'febf::1',
        'ff02::1',
        '::ffff:10.96.0.10',
        '2001:db8::10',
      ];
      s.status = {
        loadBalancer: { ingress: [{ ip: '0.0.0.0' }, { ip: '::ffff:203.0.113.21' }, { ip: '203.0.113.21' }] },
      };
    }),
    ports: [
      { ...BASE, externalIPs: ['203.0.113.10'], loadBalancerIPs: ['203.0.113.21'] },
      { ...BASE, family: 'ipv6', clusterIP: '2001:db8:96::10', externalIPs: ['2001:db8::10'] },
    ],
    refusals: [
      refusal('spec.externalIPs[0]', '0.0.0.0', 'the unspecified address is never a Service address; ignored'),
      refusal('spec.externalIPs[1]', '255.255.255.255', 'the broadcast address is never a Service address; ignored'),
      refusal(
        'spec.externalIPs[2]',
        '127.0.0.1',
        'a loopback address (127.0.0.0/8) is never a Service address; ignored',
      ),
      refusal(
        'spec.externalIPs[3]',
        '169.254.169.254',
        'a link-local address (169.254.0.0/16) is never a Service address; ignored',
      ),
      refusal(
        'spec.externalIPs[4]',
        '224.0.0.1',
        'a multicast address (224.0.0.0/4) is never a Service address; ignored',
      ),
      refusal(
        'spec.externalIPs[5]',
        '239.255.255.250',
        'a multicast address (224.0.0.0/4) is never a Service address; ignored',
      ),
      refusal('spec.externalIPs[7]', '::', 'the unspecified address is never a Service address; ignored'),
      refusal('spec.externalIPs[8]', '::1', 'the loopback address is never a Service address; ignored'),
      refusal('spec.externalIPs[9]', 'fe80::1', 'a link-local address (fe80::/10) is never a Service address; ignored'),
      refusal(
        'spec.externalIPs[10]',
        'febf::1',
        'a link-local address (fe80::/10) is never a Service address; ignored',
      ),
      refusal('spec.externalIPs[11]', 'ff02::1', 'a multicast address (ff00::/8) is never a Service address; ignored'),
      refusal(
        'spec.externalIPs[12]',
        '::ffff:10.96.0.10',
        'an IPv4-mapped IPv6 address (::ffff:0:0/96) is never a Service address; ignored',
      ),
      refusal(
        'status.loadBalancer.ingress[0].ip',
        '0.0.0.0',
        'the unspecified address is never a Service address; ingress ignored',
      ),
      refusal(
        'status.loadBalancer.ingress[1].ip',
        '::ffff:203.0.113.21',
        'an IPv4-mapped IPv6 address (::ffff:0:0/96) is never a Service address; ingress ignored',
      ),
    ],
  },
  {
    name: 'bad affinity timeout, policies, distribution, type: defaults used',
    svc: svc1((s) => {
      s.spec!.type = 'Weird';
      s.spec!.sessionAffinity = 'ClientIP';
      s.spec!.sessionAffinityConfig = { clientIP: { timeoutSeconds: 86401 } };
      s.spec!.externalTrafficPolicy = 'Global';
      s.spec!.internalTrafficPolicy = 'local';
      s.spec!.trafficDistribution = 'PreferFar';
    }),
    ports: [{ ...BASE, stickyMaxAgeSeconds: 10800 }],
    refusals: [
      refusal(
        'spec.type',
        'Weird',
        'unknown type (ClusterIP, NodePort, LoadBalancer, ExternalName); treated as ClusterIP',
      ),
      refusal('spec.sessionAffinityConfig.clientIP.timeoutSeconds', '86401', 'not an integer 1..86400; 10800 used'),
      refusal('spec.externalTrafficPolicy', 'Global', 'unknown traffic policy (Cluster or Local); Cluster used'),
      refusal('spec.internalTrafficPolicy', 'local', 'unknown traffic policy (Cluster or Local); Cluster used'),
      refusal(
        'spec.trafficDistribution',
        'PreferFar',
        'unknown traffic distribution (PreferClose, PreferSameZone, PreferSameNode); ignored',
      ),
    ],
  },
  {
    name: 'kube-router scheduler annotation used; a bad one refused',
    svc: svc1((s) => (s.metadata!.annotations = { 'kube-router.io/service.scheduler': 'sixteen-chars-xx' })),
    ports: [BASE],
    refusals: [
      refusal(
        'metadata.annotations[kube-router.io/service.scheduler]',
        'sixteen-chars-xx',
        'not a scheduler name ([a-z0-9]{1,15}); the configured scheduler is used',
      ),
    ],
  },
  {
    name: 'scheduler flags annotation: known names kept in one order, blanks and repeats dropped',
    svc: svc1((s) => (s.metadata!.annotations = { 'kube-ipvs.io/scheduler-flags': ' mh-port, mh-fallback,,mh-port ' })),
    ports: [{ ...BASE, schedulerFlags: ['mh-fallback', 'mh-port'] }],
  },
  {
    name: 'scheduler flags annotation empty: no flag at all (not the default)',
    svc: svc1((s) => (s.metadata!.annotations = { 'kube-ipvs.io/scheduler-flags': '' })),
    ports: [{ ...BASE, schedulerFlags: [] }],
  },
  {
    name: 'scheduler flags annotation: an unknown name is refused alone, the rest kept',
    svc: svc1((s) => (s.metadata!.annotations = { 'kube-ipvs.io/scheduler-flags': 'mh-fallback,flag-3' })),
    ports: [{ ...BASE, schedulerFlags: ['mh-fallback'] }],
    refusals: [
      refusal(
        'metadata.annotations[kube-ipvs.io/scheduler-flags]',
        'flag-3',
        'not a scheduler flag (sh-fallback, sh-port, mh-fallback, mh-port); ignored',
      ),
    ],
  },
  {
    name: 'scheduler flags annotation naming no known flag: as if absent (the default stays)',
    svc: svc1((s) => (s.metadata!.annotations = { 'kube-ipvs.io/scheduler-flags': 'MH-PORT' })),
    ports: [BASE],
    refusals: [
      refusal(
        'metadata.annotations[kube-ipvs.io/scheduler-flags]',
        'MH-PORT',
        'not a scheduler flag (sh-fallback, sh-port, mh-fallback, mh-port); ignored',
      ),
    ],
  },
  {
    name: 'bad metadata.name: the whole Service is refused',
    svc: makeService('ns1', 'Svc/1', (s) => (s.spec = { clusterIP: '10.96.0.10', ports: [svcPort('p80', 80)] })),
    ports: [],
    refusals: [
      {
        kind: 'Service',
        namespace: 'ns1',
        name: 'Svc/1',
        field: 'metadata.name',
        value: 'Svc/1',
        reason: 'not a DNS label; Service ignored',
      },
    ],
  },
];

describe('convertService', () => {
  it.each(rows)('$name', (row) => {
    const out = convertService(row.svc);
    expect(out.ports).toEqual(row.ports);
    expect(out.refusals).toEqual(row.refusals ?? []);
  });

  it('a refused value is quoted as a bounded prefix that says how long it was (issue 25: a 100 KB annotation per update)', () => {
    const huge = `abc${'\u00e9'.repeat(50_000)}`;
    const out = convertService(svc1((s) => (s.metadata!.annotations = { 'kube-ipvs.io/scheduler': huge })));
    const [r] = out.refusals;
    expect(r!.field).toBe('metadata.annotations[kube-ipvs.io/scheduler]');
    expect(r!.value.length).toBeLessThanOrEqual(300);
    expect(r!.value).toMatch(/^abc\u00e9+\.\.\. \(100003 bytes\)$/);
    // short values stay as they are
    expect(
      convertService(svc1((s) => (s.metadata!.annotations = { 'kube-ipvs.io/scheduler': 'Bad' }))).refusals[0]!.value,
    ).toBe('Bad');
  });
});

describe('nodeInfo', () => {
  it('zone, node IPs (Internal then External, canonical), pod CIDRs, eligibility', () => {
    const node = makeNode('node-a', (n) => {
      n.metadata!.labels = { 'topology.kubernetes.io/zone': 'zone-a' };
      n.spec = { podCIDRs: ['10.244.1.0/24', '2001:db8:244:1::/64'] };
      n.status = {
        addresses: [
          { type: 'Hostname', address: 'node-a' },
          { type: 'ExternalIP', address: '198.51.100.1' },
          { type: 'InternalIP', address: '192.0.2.1' },
          { type: 'InternalIP', address: '2001:DB8:1::1' },
          { type: 'InternalIP', address: 'bogus' },
        ],
      };
    });
    expect(nodeInfo(node)).toEqual({
      name: 'node-a',
      zone: 'zone-a',
      nodeIPs: ['192.0.2.1', '2001:db8:1::1', '198.51.100.1'],
      podCIDRs: ['10.244.1.0/24', '2001:db8:244:1::/64'],
      eligible: true,
      refusals: [
        {
          kind: 'Node',
          namespace: '',
          name: 'node-a',
          field: 'status.addresses[4].address',
          value: 'bogus',
          reason: 'not an IP address; ignored',
        },
      ],
    });
  });

  it.each([
    {
      name: 'being deleted',
      fn: (n: import('@kubernetes/client-node').V1Node) => (n.metadata!.deletionTimestamp = new Date(0)),
    },
    {
      name: 'tainted ToBeDeletedByClusterAutoscaler',
      fn: (n: import('@kubernetes/client-node').V1Node) =>
        (n.spec = { taints: [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'NoSchedule' }] }),
    },
  ])('not eligible when $name', ({ fn }) => {
    expect(nodeInfo(makeNode('node-a', fn)).eligible).toBe(false);
  });

  it('type-confused lists are refused, never read as characters or crash', () => {
    const n = makeNode('node-a', (x) => {
      (x.status as Record<string, unknown>) = { addresses: [null, { type: 'InternalIP', address: '192.0.2.1' }] };
      (x.spec as Record<string, unknown>) = {
        podCIDRs: '10.244.0.0/24',
        podCIDR: '10.244.1.0/24',
        taints: 'ToBeDeletedByClusterAutoscaler',
      };
    });
    const info = nodeInfo(n);
    expect(info).toMatchObject({ nodeIPs: ['192.0.2.1'], podCIDRs: ['10.244.1.0/24'], eligible: true });
    expect(info.refusals.map((r) => `${r.field}: ${r.reason}`)).toEqual([
      'status.addresses[0]: not an object; ignored',
      'spec.podCIDRs: not a list; spec.podCIDR used',
    ]);
  });

  it('podCIDR alone, no zone', () => {
    const info = nodeInfo(makeNode('node-b', (n) => (n.spec = { podCIDR: '10.244.2.7/24' })));
    expect(info).toMatchObject({ zone: '', podCIDRs: ['10.244.2.0/24'], nodeIPs: [], eligible: true });
  });
});
