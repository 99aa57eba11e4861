// The expected union, sets and restore text are written by hand from
// shared/reference/kube-proxy-ipvs.md §1.2-§1.3 (writeIptablesRules order), not generated.
// Addresses: see testkit/builders.ts.
import type { V1Service } from '@kubernetes/client-node';
import { convertService } from '../../lib/k8s/convert';
import { Endpoint } from '../../lib/model/service';
import { planFamilyState } from '../../lib/plan/plan-desired-state';
import { planServicePort } from '../../lib/plan/plan-service-port';
import { IptablesOptions, PlanContext, ServicePortPlan } from '../../lib/plan/service-plan';
import { makeService, svcPort } from '../../testkit/builders';
import { formatIptablesRestore } from '../../lib/kernel/iptables/format-restore';
import { FILTER_CHAINS, NAT_CHAINS, filterTail, natTail } from './iptables-golden';

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

const RESTORE = `${NAT_CHAINS}-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN
-A KUBE-POSTROUTING -m comment --comment "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose" -m set --match-set KUBE-LOOP-BACK dst,dst,src -j MASQUERADE
-A KUBE-SERVICES -m comment --comment "Kubernetes service lb portal" -m set --match-set KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER
-A KUBE-SERVICES -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT
-A KUBE-SERVICES -m comment --comment "Kubernetes service external ip + port for masquerade and filter purpose" -m set --match-set KUBE-EXTERNAL-IP dst,dst -m addrtype --dst-type LOCAL -j ACCEPT
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT
-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ
-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT
-A KUBE-SERVICES -m set --match-set KUBE-LOAD-BALANCER dst,dst -j ACCEPT
${natTail(true)}${FILTER_CHAINS}-A KUBE-PROXY-FIREWALL -m comment --comment "Kubernetes service load balancer ip + port for load balancer with sourceRange" -m set --match-set KUBE-LOAD-BALANCER-FW dst,dst -j KUBE-SOURCE-RANGES-FIREWALL
-A KUBE-SOURCE-RANGES-FIREWALL -m comment --comment "Kubernetes service load balancer ip + port + source cidr for packet filter purpose" -m set --match-set KUBE-LOAD-BALANCER-SOURCE-CIDR dst,dst,src -j RETURN
-A KUBE-SOURCE-RANGES-FIREWALL -j DROP
-A KUBE-IPVS-OUT-FILTER -s 203.0.113.20 -m ipvs --vaddr 203.0.113.20 --vproto tcp --vport 80 -j DROP
${filterTail('KUBE-')}`;

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

  it("bound addresses, and KUBE-IPVS-IPS holding exactly them; kube-proxy's 17 sets present (the record is not planned)", () => {
    expect([...state.boundAddresses]).toEqual(['10.96.0.10', '10.96.0.11', '203.0.113.10', '203.0.113.20']);
    expect(state.ipsets.size).toBe(17);
    expect(state.ipsets.has('KUBE-IPVS-OWNED')).toBe(false);
    const nonEmpty = Object.fromEntries(
      [...state.ipsets].filter(([, s]) => s.members.size > 0).map(([name, s]) => [name, [...s.members].sort()]),
    );
    expect(nonEmpty).toEqual({
      'KUBE-LOOP-BACK': ['10.244.1.1,tcp:8080,10.244.1.1'],
      'KUBE-CLUSTER-IP': ['10.96.0.10,tcp:80', '10.96.0.11,tcp:80'],
      'KUBE-EXTERNAL-IP': ['203.0.113.10,tcp:80'],
      'KUBE-LOAD-BALANCER': ['203.0.113.20,tcp:80'],
      'KUBE-LOAD-BALANCER-FW': ['203.0.113.20,tcp:80'],
      'KUBE-LOAD-BALANCER-SOURCE-CIDR': ['203.0.113.20,tcp:80,198.51.100.0/24'],
      'KUBE-IPVS-IPS': ['10.96.0.10', '10.96.0.11', '203.0.113.10', '203.0.113.20'],
    });
  });

  it('iptables: rules for the non-empty sets and the LB out-filter entry', () => {
    expect(formatIptablesRestore(state.iptables)).toBe(RESTORE);
  });

  it('does not depend on the order of the plans', () => {
    const other = planFamilyState([alpha, beta], 'ipv4', OPTS);
    expect([...other.virtualServers]).toEqual([...state.virtualServers]);
    expect(other.conflicts).toEqual(state.conflicts);
    expect(formatIptablesRestore(other.iptables)).toBe(RESTORE);
  });

  it('refuses a plan of another family (a caller bug)', () => {
    expect(() => planFamilyState([alpha], 'ipv6', OPTS)).toThrow(/ns1\/alpha:p80\/ipv4 is ipv4, not ipv6/);
  });
});
