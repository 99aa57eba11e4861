// The expected union and conflicts are written by hand from shared/reference/kube-proxy-ipvs.md
// §1.2, not generated. The same two Services' set members, kube-ipvs0 addresses and
// iptables rules are the step file spec/golden/cases/externalip-contested.yaml.
// Addresses: see testkit/builders.ts.
import type { V1Service } from '@kubernetes/client-node';
import { convertService } from '../../lib/k8s/convert';
import { Endpoint } from '../../lib/model/service';
import { planFamilyState } from '../../lib/plan/plan-desired-state';
import { planServicePort } from '../../lib/plan/plan-service-port';
import { IptablesOptions, PlanContext, ServicePortPlan } from '../../lib/plan/service-plan';
import { makeService, svcPort } from '../../testkit/builders';

const CTX4: PlanContext = {
  family: 'ipv4',
  scheduler: '',
  nodeName: 'node-a',
  nodeZone: 'zone-a',
  nodePortAddresses: ['192.0.2.1'],
  localAddresses: new Set(['192.0.2.1']),
  nodeIPs: ['192.0.2.1'],
  excludeClusterCIDRs: [],
};
const OPTS: IptablesOptions = {
  masqueradeBit: 14,
  masqueradeAll: false,
  localDetector: { kind: 'ClusterCIDR', cidr: '10.244.0.0/16' },
  randomFully: true,
};

function planOf(svc: V1Service, endpoints: Endpoint[] = []): ServicePortPlan {
  const [sp] = convertService(svc).ports;
  return planServicePort(sp!, endpoints, CTX4);
}

/** ns1/alpha: 10.96.0.10, external IP 203.0.113.10, one local endpoint */
const alpha = planOf(
  makeService('ns1', 'alpha', (s) => {
    s.spec = { clusterIP: '10.96.0.10', ports: [svcPort('p80', 80)], externalIPs: ['203.0.113.10'] };
  }),
  [{ ip: '10.244.1.1', port: 8080, ready: true, serving: true, terminating: false, isLocal: true }],
);
/** ns1/beta: 10.96.0.11, the SAME external IP:port, and an LB VIP with a source range */
const beta = planOf(
  makeService('ns1', 'beta', (s) => {
    s.spec = {
      type: 'LoadBalancer',
      clusterIP: '10.96.0.11',
      ports: [svcPort('p80', 80)],
      externalIPs: ['203.0.113.10'],
      loadBalancerSourceRanges: ['198.51.100.0/24'],
    };
    s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.20' }] } };
  }),
);

const SERVICE_FLAGS = { fwmark: 0, scheduler: 'rr', flags: 0, timeout: 0, netmask: 0xffffffff };

describe('planFamilyState', () => {
  const state = planFamilyState([beta, alpha], 'ipv4', OPTS);

  it('unions virtual servers by key; a contested VS goes to the first service port by name', () => {
    expect([...state.virtualServers.entries()]).toEqual([
      [
        'TCP/10.96.0.10:80',
        {
          vs: { af: 2, protocol: 6, address: '10.96.0.10', port: 80, ...SERVICE_FLAGS },
          realServers: [{ af: 2, address: '10.244.1.1', port: 8080, fwdMethod: 0, weight: 1 }],
          owner: 'ns1/alpha:p80/ipv4',
          kind: 'ClusterIP',
        },
      ],
      [
        'TCP/10.96.0.11:80',
        {
          vs: { af: 2, protocol: 6, address: '10.96.0.11', port: 80, ...SERVICE_FLAGS },
          realServers: [],
          owner: 'ns1/beta:p80/ipv4',
          kind: 'ClusterIP',
        },
      ],
      [
        'TCP/203.0.113.10:80',
        {
          vs: { af: 2, protocol: 6, address: '203.0.113.10', port: 80, ...SERVICE_FLAGS },
          realServers: [{ af: 2, address: '10.244.1.1', port: 8080, fwdMethod: 0, weight: 1 }],
          owner: 'ns1/alpha:p80/ipv4',
          kind: 'ExternalIP',
        },
      ],
      [
        'TCP/203.0.113.20:80',
        {
          vs: { af: 2, protocol: 6, address: '203.0.113.20', port: 80, ...SERVICE_FLAGS },
          realServers: [],
          owner: 'ns1/beta:p80/ipv4',
          kind: 'LoadBalancer',
        },
      ],
    ]);
    expect(state.conflicts).toEqual([
      {
        kind: 'Service',
        namespace: 'ns1',
        name: 'beta',
        field: 'spec.ports[p80]',
        value: 'TCP/203.0.113.10:80',
        reason:
          "virtual server TCP/203.0.113.10:80 is ns1/alpha:p80/ipv4's: both are ExternalIPs of the same age and ns1/alpha:p80/ipv4 comes first by name",
        virtualServer: 'TCP/203.0.113.10:80',
        winner: 'ns1/alpha:p80/ipv4',
        loser: 'ns1/beta:p80/ipv4',
      },
    ]);
  });

  it("kube-proxy's 17 sets are planned, the record is not (it is written apart)", () => {
    expect(state.ipsets.size).toBe(17);
    expect(state.ipsets.has('KUBE-IPVS-OWNED')).toBe(false);
  });

  it('does not depend on the order of the plans', () => {
    const other = planFamilyState([alpha, beta], 'ipv4', OPTS);
    expect([...other.virtualServers]).toEqual([...state.virtualServers]);
    expect(other.conflicts).toEqual(state.conflicts);
    expect([...other.boundAddresses]).toEqual([...state.boundAddresses]);
    expect(other.ipsets).toEqual(state.ipsets);
    expect(other.iptables).toEqual(state.iptables);
  });

  it('refuses a plan of another family (a caller bug)', () => {
    expect(() => planFamilyState([alpha], 'ipv6', OPTS)).toThrow(/ns1\/alpha:p80\/ipv4 is ipv4, not ipv6/);
  });
});
