// Expected plans are written by hand from shared/reference/kube-proxy-ipvs.md §1.2, §1.5 step 7
// and §1.7 (kube-proxy proxier.go syncProxyRules / syncEndpoint, topology.go), not produced by
// the planner. Protocol numbers, flags and forwarding methods are literals on purpose
// (TCP 6, UDP 17, SCTP 132; persistent 0x1, mh-port 0x10; masquerade 0).
// What is only objects in and kernel text out (virtual servers, real servers, set members,
// kube-ipvs0 addresses) is a step file in spec/golden/cases/; the rows here pin what the kernel
// text cannot show: refusals, withheld frontends, the local-endpoint counts.
// Addresses: see testkit/builders.ts (10.96.0.0/12 ClusterIPs, 10.244.0.0/16 pods,
// 10.245.0.0/16 a second CNI's pods, 192.0.2.0/24 nodes, 198.51.100.0/24 source ranges,
// 203.0.113.0/24 external/LB IPs, 2001:db8::/32 IPv6). This node: node-a in zone-a.
import type { V1Endpoint, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { convertService } from '../../lib/k8s/convert';
import { RealServerSpec } from '../../lib/model/ipvs';
import { planServicePort } from '../../lib/plan/plan-service-port';
import {
  DesiredVirtualServer,
  IpsetEntry,
  PlanContents,
  PlanContext,
  DesiredFrontend,
  ServicePortPlan,
  planContents,
} from '../../lib/plan/service-plan';
import { FrontendFacts, withheldRefusal, withholding } from '../../lib/plan/frontend-guard';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { EndpointSliceTracker } from '../../lib/tracker/endpoint-slice-tracker';
import { Refusal } from '../../lib/model/service';
import { LbOutFilterEntry } from '../../lib/plan/iptables';
import type { IpsetMember } from '../../lib/model/ipset';

const CTX4: PlanContext = {
  family: 'ipv4',
  scheduler: '',
  nodeName: 'node-a',
  nodeZone: 'zone-a',
  nodePortAddresses: ['192.0.2.1', '192.0.2.2'],
  localAddresses: new Set(['192.0.2.1', '192.0.2.2', '203.0.113.99']),
  nodeIPs: ['192.0.2.1'],
  excludeClusterCIDRs: [],
};
const CTX6: PlanContext = {
  ...CTX4,
  family: 'ipv6',
  nodePortAddresses: ['2001:db8:1::1'],
  localAddresses: new Set(['2001:db8:1::1']),
  nodeIPs: ['2001:db8:1::1'],
};

// ---- hand-written golden pieces ----

const PROTO = { TCP: 6, UDP: 17, SCTP: 132 } as const;

function rs(address: string, port: number): RealServerSpec {
  return { af: address.includes(':') ? 10 : 2, address, port, fwdMethod: 0, weight: 1 };
}

function vs(
  owner: string,
  proto: keyof typeof PROTO,
  address: string,
  port: number,
  realServers: RealServerSpec[],
  o: { scheduler?: string; flags?: number; timeout?: number } = {},
): DesiredVirtualServer {
  const v6 = address.includes(':');
  return {
    vs: {
      af: v6 ? 10 : 2,
      protocol: PROTO[proto],
      address,
      port,
      fwmark: 0,
      scheduler: o.scheduler ?? 'rr',
      flags: o.flags ?? 0,
      timeout: o.timeout ?? 0,
      netmask: v6 ? 128 : 0xffffffff,
    },
    realServers,
    owner,
    // which frontend made it: pinned by spec/plan/claim-rank.test.ts, not by every golden here
    kind: expect.any(String) as DesiredVirtualServer['kind'],
  };
}

// golden members are hand-written text, cast to the brand only here
const e = (set: IpsetEntry['set'], member: string): IpsetEntry => ({ set, member: member as IpsetMember });

/** A plan as the node gets it: its given frontends flattened, the withheld ones' refusals after the planner's. */
interface GivenPlan extends PlanContents {
  key: string;
  family: ServicePortPlan['family'];
  localEndpoints: number;
  noLocalEndpoints: ServicePortPlan['noLocalEndpoints'];
  refusals: readonly Refusal[];
}

const NO_FACTS: FrontendFacts = { excludeCIDRs: [], foreign: () => undefined };

function given(p: ServicePortPlan, facts: FrontendFacts = NO_FACTS): GivenPlan {
  const withheld = (f: DesiredFrontend) => withholding(f.key, f.virtualServer.vs.address, facts);
  return {
    key: p.key,
    family: p.family,
    ...planContents(p, (f) => withheld(f) === undefined),
    localEndpoints: p.localEndpoints,
    noLocalEndpoints: p.noLocalEndpoints,
    refusals: [
      ...p.refusals,
      ...p.frontends.flatMap((f) => {
        const w = withheld(f);
        const r = w && withheldRefusal(p.key, f, w);
        return r ? [r] : [];
      }),
    ],
  };
}

function plan(
  key: string,
  p: {
    virtualServers?: DesiredVirtualServer[];
    boundAddresses?: string[];
    ipsetEntries?: IpsetEntry[];
    lbOutFilter?: LbOutFilterEntry[];
    localEndpoints?: number;
    noLocalEndpoints?: { internal: boolean; external: boolean };
    refusals?: Refusal[];
  },
): GivenPlan {
  return {
    key,
    family: key.endsWith('/ipv6') ? 'ipv6' : 'ipv4',
    virtualServers: p.virtualServers ?? [],
    boundAddresses: p.boundAddresses ?? [],
    ipsetEntries: p.ipsetEntries ?? [],
    lbOutFilter: p.lbOutFilter ?? [],
    localEndpoints: p.localEndpoints ?? 0,
    noLocalEndpoints: p.noLocalEndpoints ?? { internal: false, external: false },
    refusals: p.refusals ?? [],
  };
}

const foreignOf = (entries: [string, string][]) => {
  const m = new Map(entries);
  return (k: string) => m.get(k);
};

// ---- fixtures ----

function ep(ip: string, nodeName?: string, extra: Partial<V1Endpoint> = {}): V1Endpoint {
  const out: V1Endpoint = { addresses: [ip], ...extra };
  if (nodeName) out.nodeName = nodeName;
  return out;
}
const TERMINATING = { conditions: { ready: false, serving: true, terminating: true } };

function slice(
  svc: string,
  name: string,
  ports: [string, number, string][],
  endpoints: V1Endpoint[],
  addressType = 'IPv4',
): V1EndpointSlice {
  return makeEndpointSlice('ns1', svc, name, (s) => {
    s.addressType = addressType;
    s.ports = ports.map(([n, port, protocol]) => ({ name: n, port, protocol }));
    s.endpoints = endpoints;
  });
}

/** ns1/svc1, ClusterIP 10.96.0.10, port p80 80/TCP; `fn` adds to it. */
function svc1(fn: (s: V1Service) => void = () => {}): V1Service {
  return makeService('ns1', 'svc1', (s) => {
    s.spec = { type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [svcPort('p80', 80)] };
    fn(s);
  });
}

/** endpoints 10.244.1.1 on this node and 10.244.2.1 on node-b, port p80 8080/TCP */
const TWO_EPS = [
  slice('svc1', 'svc1-a', [['p80', 8080, 'TCP']], [ep('10.244.1.1', 'node-a'), ep('10.244.2.1', 'node-b')]),
];
const LOCAL_RS = rs('10.244.1.1', 8080);
const REMOTE_RS = rs('10.244.2.1', 8080);
const K = 'ns1/svc1:p80/ipv4';
const LOOP = e('LOOP_BACK', '10.244.1.1,tcp:8080,10.244.1.1');

interface Row {
  name: string;
  svc: V1Service;
  slices: V1EndpointSlice[];
  ctx?: Partial<PlanContext>;
  /** what withholds frontends (plan/frontend-guard.ts) */
  facts?: Partial<FrontendFacts>;
  want: GivenPlan[];
  refusals?: Refusal[];
}

const rows: Row[] = [
  {
    name: 'eTP Local LoadBalancer with a local endpoint: external VSes local only, -LOCAL sets, health check port',
    svc: svc1((s) => {
      s.spec!.type = 'LoadBalancer';
      s.spec!.externalTrafficPolicy = 'Local';
      s.spec!.healthCheckNodePort = 32000;
      s.spec!.ports = [svcPort('p80', 80, 'TCP', 30080)];
      s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.20' }] } };
    }),
    slices: TWO_EPS,
    ctx: { nodePortAddresses: ['192.0.2.1'] },
    want: [
      plan(K, {
        virtualServers: [
          vs(K, 'TCP', '10.96.0.10', 80, [LOCAL_RS, REMOTE_RS]),
          vs(K, 'TCP', '192.0.2.1', 30080, [LOCAL_RS]),
          vs(K, 'TCP', '203.0.113.20', 80, [LOCAL_RS]),
        ],
        boundAddresses: ['10.96.0.10', '203.0.113.20'],
        ipsetEntries: [
          e('CLUSTER_IP', '10.96.0.10,tcp:80'),
          e('HEALTH_CHECK_NODE_PORT', '32000'),
          e('LOAD_BALANCER', '203.0.113.20,tcp:80'),
          e('LOAD_BALANCER_LOCAL', '203.0.113.20,tcp:80'),
          LOOP,
          e('NODE_PORT_LOCAL_TCP', '30080'),
          e('NODE_PORT_TCP', '30080'),
        ],
        localEndpoints: 1,
      }),
    ],
  },
  {
    name: 'eTP Local LoadBalancer without a local endpoint: external VSes fall back to cluster endpoints (PR #97081)',
    svc: svc1((s) => {
      s.spec!.type = 'LoadBalancer';
      s.spec!.externalTrafficPolicy = 'Local';
      s.spec!.ports = [svcPort('p80', 80, 'TCP', 30080)];
      s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.20' }] } };
    }),
    slices: [slice('svc1', 'svc1-a', [['p80', 8080, 'TCP']], [ep('10.244.2.1', 'node-b')])],
    ctx: { nodePortAddresses: ['192.0.2.1'] },
    want: [
      plan(K, {
        virtualServers: [
          vs(K, 'TCP', '10.96.0.10', 80, [REMOTE_RS]),
          vs(K, 'TCP', '192.0.2.1', 30080, [REMOTE_RS]),
          vs(K, 'TCP', '203.0.113.20', 80, [REMOTE_RS]),
        ],
        boundAddresses: ['10.96.0.10', '203.0.113.20'],
        ipsetEntries: [
          e('CLUSTER_IP', '10.96.0.10,tcp:80'),
          e('LOAD_BALANCER', '203.0.113.20,tcp:80'),
          e('LOAD_BALANCER_LOCAL', '203.0.113.20,tcp:80'),
          e('NODE_PORT_LOCAL_TCP', '30080'),
          e('NODE_PORT_TCP', '30080'),
        ],
        noLocalEndpoints: { internal: false, external: true },
      }),
    ],
  },
  {
    name: 'iTP Local without a local endpoint: no real server, counted as no-local-endpoints (internal)',
    svc: svc1((s) => (s.spec!.internalTrafficPolicy = 'Local')),
    slices: [slice('svc1', 'svc1-a', [['p80', 8080, 'TCP']], [ep('10.244.2.1', 'node-b')])],
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '10.96.0.10', 80, [])],
        boundAddresses: ['10.96.0.10'],
        ipsetEntries: [e('CLUSTER_IP', '10.96.0.10,tcp:80')],
        noLocalEndpoints: { internal: true, external: false },
      }),
    ],
  },
  {
    name: 'iTP Local on a NodePort Service without a local endpoint: ClusterIP VS falls back to cluster endpoints (kube-proxy)',
    svc: svc1((s) => {
      s.spec!.type = 'NodePort';
      s.spec!.internalTrafficPolicy = 'Local';
      s.spec!.ports = [svcPort('p80', 80, 'TCP', 30080)];
    }),
    slices: [slice('svc1', 'svc1-a', [['p80', 8080, 'TCP']], [ep('10.244.2.1', 'node-b')])],
    ctx: { nodePortAddresses: ['192.0.2.1'] },
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '10.96.0.10', 80, [REMOTE_RS]), vs(K, 'TCP', '192.0.2.1', 30080, [REMOTE_RS])],
        boundAddresses: ['10.96.0.10'],
        ipsetEntries: [e('CLUSTER_IP', '10.96.0.10,tcp:80'), e('NODE_PORT_TCP', '30080')],
        noLocalEndpoints: { internal: true, external: false },
      }),
    ],
  },
  {
    name: 'a ready endpoint exists: terminating ones are left out',
    svc: svc1(),
    slices: [
      slice(
        'svc1',
        'svc1-a',
        [['p80', 8080, 'TCP']],
        [ep('10.244.1.1', 'node-a', TERMINATING), ep('10.244.2.1', 'node-b')],
      ),
    ],
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '10.96.0.10', 80, [REMOTE_RS])],
        boundAddresses: ['10.96.0.10'],
        // hairpin covers every local endpoint, terminating or not (kube-proxy endpointsMap)
        ipsetEntries: [e('CLUSTER_IP', '10.96.0.10,tcp:80'), LOOP],
      }),
    ],
  },
  {
    name: 'ipvs.excludeCIDRs: an externalIP and an LB IP inside are not planned (no VS, address, set or out-filter entry), each refused',
    svc: svc1((s) => {
      s.spec!.type = 'LoadBalancer';
      s.spec!.externalIPs = ['203.0.113.200', '203.0.113.10'];
      s.spec!.loadBalancerSourceRanges = ['198.51.100.0/24'];
      s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.210' }] } };
    }),
    slices: [],
    facts: { excludeCIDRs: ['203.0.113.128/25', '2001:db8:ff::/48'] },
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '10.96.0.10', 80, []), vs(K, 'TCP', '203.0.113.10', 80, [])],
        boundAddresses: ['10.96.0.10', '203.0.113.10'],
        ipsetEntries: [e('CLUSTER_IP', '10.96.0.10,tcp:80'), e('EXTERNAL_IP', '203.0.113.10,tcp:80')],
        refusals: [
          {
            kind: 'Service',
            namespace: 'ns1',
            name: 'svc1',
            field: 'spec.externalIPs',
            value: '203.0.113.200',
            reason:
              'inside ipvs.excludeCIDRs 203.0.113.128/25: kube-ipvs never creates, changes or deletes a virtual server there (port TCP/80 not programmed on it)',
            eventReason: 'VIPInExcludedCIDR',
          },
          {
            kind: 'Service',
            namespace: 'ns1',
            name: 'svc1',
            field: 'status.loadBalancer.ingress',
            value: '203.0.113.210',
            reason:
              'inside ipvs.excludeCIDRs 203.0.113.128/25: kube-ipvs never creates, changes or deletes a virtual server there (port TCP/80 not programmed on it)',
            eventReason: 'VIPInExcludedCIDR',
          },
        ],
      }),
    ],
  },
  {
    name: 'ipvs.excludeCIDRs: a ClusterIP inside is refused too; NodePort virtual servers on node addresses inside are not planned',
    svc: svc1((s) => {
      s.spec!.type = 'NodePort';
      s.spec!.ports = [svcPort('p80', 80, 'TCP', 30080)];
    }),
    slices: [],
    facts: { excludeCIDRs: ['10.96.0.10/32', '192.0.2.2/32'] },
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '192.0.2.1', 30080, [])],
        ipsetEntries: [e('NODE_PORT_TCP', '30080')],
        refusals: [
          {
            kind: 'Service',
            namespace: 'ns1',
            name: 'svc1',
            field: 'spec.clusterIPs',
            value: '10.96.0.10',
            reason:
              'inside ipvs.excludeCIDRs 10.96.0.10/32: kube-ipvs never creates, changes or deletes a virtual server there (port TCP/80 not programmed on it)',
            eventReason: 'VIPInExcludedCIDR',
          },
        ],
      }),
    ],
  },
  {
    name: 'a foreign virtual server at an externalIP:port and an LB IP:port: not planned (no VS, address, set or out-filter entry), each refused; the same IPs at another port are',
    svc: svc1((s) => {
      s.spec!.type = 'LoadBalancer';
      s.spec!.externalIPs = ['203.0.113.10'];
      s.spec!.loadBalancerSourceRanges = ['198.51.100.0/24'];
      s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.20' }] } };
    }),
    slices: [],
    facts: {
      foreign: foreignOf([
        ['TCP/203.0.113.10:80', 'keepalived'],
        ['TCP/203.0.113.20:80', 'found'],
        ['TCP/203.0.113.10:443', 'another port'],
      ]),
    },
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '10.96.0.10', 80, [])],
        boundAddresses: ['10.96.0.10'],
        ipsetEntries: [e('CLUSTER_IP', '10.96.0.10,tcp:80')],
        refusals: [
          {
            kind: 'Service',
            namespace: 'ns1',
            name: 'svc1',
            field: 'spec.externalIPs',
            value: '203.0.113.10',
            reason:
              "virtual server TCP/203.0.113.10:80 exists in the kernel and is not kube-ipvs's (keepalived): kube-ipvs never changes or deletes it, and programs nothing for it (port TCP/80 not programmed on 203.0.113.10)",
            eventReason: 'ForeignVirtualServer',
          },
          {
            kind: 'Service',
            namespace: 'ns1',
            name: 'svc1',
            field: 'status.loadBalancer.ingress',
            value: '203.0.113.20',
            reason:
              "virtual server TCP/203.0.113.20:80 exists in the kernel and is not kube-ipvs's (found): kube-ipvs never changes or deletes it, and programs nothing for it (port TCP/80 not programmed on 203.0.113.20)",
            eventReason: 'ForeignVirtualServer',
          },
        ],
      }),
    ],
  },
  {
    name: 'a foreign virtual server at the ClusterIP:port or a node address:NodePort: not planned, refused',
    svc: svc1((s) => {
      s.spec!.type = 'NodePort';
      s.spec!.ports = [svcPort('p80', 80, 'TCP', 30080)];
    }),
    slices: [],
    facts: {
      foreign: foreignOf([
        ['TCP/10.96.0.10:80', 'why'],
        ['TCP/192.0.2.2:30080', 'why'],
      ]),
    },
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '192.0.2.1', 30080, [])],
        ipsetEntries: [e('NODE_PORT_TCP', '30080')],
        refusals: [
          {
            kind: 'Service',
            namespace: 'ns1',
            name: 'svc1',
            field: 'spec.clusterIPs',
            value: '10.96.0.10',
            reason:
              "virtual server TCP/10.96.0.10:80 exists in the kernel and is not kube-ipvs's (why): kube-ipvs never changes or deletes it, and programs nothing for it (port TCP/80 not programmed on 10.96.0.10)",
            eventReason: 'ForeignVirtualServer',
          },
          {
            kind: 'Service',
            namespace: 'ns1',
            name: 'svc1',
            field: 'spec.ports[].nodePort',
            value: '192.0.2.2',
            reason:
              "virtual server TCP/192.0.2.2:30080 exists in the kernel and is not kube-ipvs's (why): kube-ipvs never changes or deletes it, and programs nothing for it (port TCP/30080 not programmed on 192.0.2.2)",
            eventReason: 'ForeignVirtualServer',
          },
        ],
      }),
    ],
  },
  {
    name: 'refused fields (external IP, a port, the scheduler annotation) leave the rest planned; an unreadable source range closes the load balancer',
    svc: svc1((s) => {
      s.metadata!.annotations = { 'kube-ipvs.io/scheduler': 'Round Robin' };
      s.spec!.type = 'LoadBalancer';
      s.spec!.ports = [svcPort('p80', 80), svcPort('big', 70000)];
      s.spec!.externalIPs = ['203.0.113.10', '203.0.113.300'];
      s.spec!.loadBalancerSourceRanges = ['198.51.100.0/24', '198.51.100.0/33'];
      s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.20' }] } };
    }),
    slices: TWO_EPS,
    ctx: { scheduler: 'sed' },
    refusals: [
      {
        kind: 'Service',
        namespace: 'ns1',
        name: 'svc1',
        field: 'spec.externalIPs[1]',
        value: '203.0.113.300',
        reason: 'not an IP address; ignored',
      },
      {
        kind: 'Service',
        namespace: 'ns1',
        name: 'svc1',
        field: 'spec.loadBalancerSourceRanges[1]',
        value: '198.51.100.0/33',
        reason: 'not a CIDR; the load balancer admits no client until the ranges are fixed',
      },
      {
        kind: 'Service',
        namespace: 'ns1',
        name: 'svc1',
        field: 'metadata.annotations[kube-ipvs.io/scheduler]',
        value: 'Round Robin',
        reason: 'not a scheduler name ([a-z0-9]{1,15}); the configured scheduler is used',
      },
      {
        kind: 'Service',
        namespace: 'ns1',
        name: 'svc1',
        field: 'spec.ports[1].port',
        value: '70000',
        reason: 'not a port 1..65535; port ignored',
      },
    ],
    want: [
      plan(K, {
        virtualServers: [
          vs(K, 'TCP', '10.96.0.10', 80, [LOCAL_RS, REMOTE_RS], { scheduler: 'sed' }),
          vs(K, 'TCP', '203.0.113.10', 80, [LOCAL_RS, REMOTE_RS], { scheduler: 'sed' }),
          vs(K, 'TCP', '203.0.113.20', 80, [LOCAL_RS, REMOTE_RS], { scheduler: 'sed' }),
        ],
        boundAddresses: ['10.96.0.10', '203.0.113.10', '203.0.113.20'],
        ipsetEntries: [
          e('CLUSTER_IP', '10.96.0.10,tcp:80'),
          e('EXTERNAL_IP', '203.0.113.10,tcp:80'),
          e('LOAD_BALANCER', '203.0.113.20,tcp:80'),
          e('LOAD_BALANCER_FW', '203.0.113.20,tcp:80'),
          LOOP,
        ],
        lbOutFilter: [{ lbIP: '203.0.113.20', proto: 'tcp', port: 80 }],
        localEndpoints: 1,
      }),
    ],
  },
  {
    name: 'LoadBalancer whose only source range is unreadable: in the firewall set with no range, so it admits nobody (the node either)',
    svc: svc1((s) => {
      s.spec!.type = 'LoadBalancer';
      s.spec!.loadBalancerSourceRanges = ['192.0.2.0/24x'];
      s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.20' }] } };
    }),
    slices: TWO_EPS,
    refusals: [
      {
        kind: 'Service',
        namespace: 'ns1',
        name: 'svc1',
        field: 'spec.loadBalancerSourceRanges[0]',
        value: '192.0.2.0/24x',
        reason: 'not a CIDR; the load balancer admits no client until the ranges are fixed',
      },
    ],
    want: [
      plan(K, {
        virtualServers: [
          vs(K, 'TCP', '10.96.0.10', 80, [LOCAL_RS, REMOTE_RS]),
          vs(K, 'TCP', '203.0.113.20', 80, [LOCAL_RS, REMOTE_RS]),
        ],
        boundAddresses: ['10.96.0.10', '203.0.113.20'],
        ipsetEntries: [
          e('CLUSTER_IP', '10.96.0.10,tcp:80'),
          e('LOAD_BALANCER', '203.0.113.20,tcp:80'),
          e('LOAD_BALANCER_FW', '203.0.113.20,tcp:80'),
          LOOP,
        ],
        lbOutFilter: [{ lbIP: '203.0.113.20', proto: 'tcp', port: 80 }],
        localEndpoints: 1,
      }),
    ],
  },
  {
    name: "a Service's flag its scheduler lacks is refused and left out; the rest of the Service is planned",
    svc: svc1((s) => (s.metadata!.annotations = { 'kube-ipvs.io/scheduler-flags': 'sh-fallback,mh-fallback,mh-port' })),
    slices: TWO_EPS,
    ctx: { scheduler: 'mh' },
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '10.96.0.10', 80, [LOCAL_RS, REMOTE_RS], { scheduler: 'mh', flags: 0x18 })],
        boundAddresses: ['10.96.0.10'],
        ipsetEntries: [e('CLUSTER_IP', '10.96.0.10,tcp:80'), LOOP],
        localEndpoints: 1,
        refusals: [
          {
            kind: 'Service',
            namespace: 'ns1',
            name: 'svc1',
            field: 'metadata.annotations[kube-ipvs.io/scheduler-flags]',
            value: 'sh-fallback',
            reason: "a flag of the sh scheduler, and this Service's scheduler is mh; programmed without it",
          },
        ],
      }),
    ],
  },
  {
    name: 'mh flags on rr (the default scheduler): refused, rr programmed without flags',
    svc: svc1((s) => (s.metadata!.annotations = { 'kube-ipvs.io/scheduler-flags': 'mh-fallback' })),
    slices: [],
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '10.96.0.10', 80, [])],
        boundAddresses: ['10.96.0.10'],
        ipsetEntries: [e('CLUSTER_IP', '10.96.0.10,tcp:80')],
        refusals: [
          {
            kind: 'Service',
            namespace: 'ns1',
            name: 'svc1',
            field: 'metadata.annotations[kube-ipvs.io/scheduler-flags]',
            value: 'mh-fallback',
            reason: "a flag of the mh scheduler, and this Service's scheduler is rr; programmed without it",
          },
        ],
      }),
    ],
  },
  {
    name: "the node's flags (ipvs.schedulerFlags) apply per scheduler, silently: mh gets its own, not sh's",
    svc: svc1((s) => (s.metadata!.annotations = { 'kube-ipvs.io/scheduler': 'mh' })),
    slices: [],
    ctx: { scheduler: 'sh', schedulerFlags: ['sh-port', 'mh-fallback', 'mh-port'] },
    want: [
      plan(K, {
        virtualServers: [vs(K, 'TCP', '10.96.0.10', 80, [], { scheduler: 'mh', flags: 0x18 })],
        boundAddresses: ['10.96.0.10'],
        ipsetEntries: [e('CLUSTER_IP', '10.96.0.10,tcp:80')],
      }),
    ],
  },
];

describe('planServicePort (kube-proxy IPVS mode per service port)', () => {
  it.each(rows)('$name', (row) => {
    const { ports, refusals } = convertService(row.svc);
    expect(refusals).toEqual(row.refusals ?? []);
    const slices = new EndpointSliceTracker('node-a');
    for (const s of row.slices) slices.onAdd(s);
    const plans = ports.map((sp) =>
      planServicePort(sp, slices.endpoints(sp), { ...(sp.family === 'ipv4' ? CTX4 : CTX6), ...row.ctx }),
    );
    expect(plans.map((p) => given(p, { ...NO_FACTS, ...row.facts }))).toEqual(row.want);
  });

  it('ignores the order of its endpoints (real servers sorted by ip:port)', () => {
    const [sp] = convertService(svc1()).ports;
    const a = { ip: '10.244.2.1', port: 8080, ready: true, serving: true, terminating: false, isLocal: false };
    const b = { ...a, ip: '10.244.1.1', isLocal: true };
    expect(planServicePort(sp!, [a, b], CTX4)).toEqual(planServicePort(sp!, [b, a], CTX4));
    expect(planContents(planServicePort(sp!, [a, b], CTX4)).virtualServers[0]!.realServers).toEqual([
      LOCAL_RS,
      REMOTE_RS,
    ]);
    // already in order (as the trackers give them), and an ip:port given twice: one real server
    expect(planContents(planServicePort(sp!, [b, a, a], CTX4)).virtualServers[0]!.realServers).toEqual([
      LOCAL_RS,
      REMOTE_RS,
    ]);
    expect(planContents(planServicePort(sp!, [b, b, a], CTX4)).virtualServers[0]!.realServers).toEqual([
      LOCAL_RS,
      REMOTE_RS,
    ]);
  });

  it('refuses a context of the other family (a caller bug)', () => {
    const [sp] = convertService(svc1()).ports;
    expect(() => planServicePort(sp!, [], CTX6)).toThrow(/ipv4, context is ipv6/);
  });

  it('an external IP equal to the cluster IP: one VS, the duplicate refused', () => {
    const [sp] = convertService(svc1((s) => (s.spec!.externalIPs = ['10.96.0.10']))).ports;
    const p = planServicePort(sp!, [], CTX4);
    expect(planContents(p).virtualServers).toEqual([vs(K, 'TCP', '10.96.0.10', 80, [])]);
    expect(p.refusals).toEqual([
      {
        kind: 'Service',
        namespace: 'ns1',
        name: 'svc1',
        field: 'spec.externalIPs',
        value: '10.96.0.10',
        reason: 'virtual server TCP/10.96.0.10:80 is already planned for this port; ignored',
      },
    ]);
  });
});
