// The kube-proxy bench's cluster in the lab's real kube-apiserver (scripts/bench/kube-proxy-peer.ts):
// the daemon bench's objects (daemon-fixtures.ts: Service svc-i, TCP 80 -> 8080, with one
// EndpointSlice svc-i-1 of E ready endpoints on node-b), as the real API server takes them: in
// namespace NAMESPACE, no uid (the server sets it; an update naming another is refused), each
// ClusterIP asked for explicitly (clusterIP(i + CLUSTER_IP_OFFSET): 10.96.1.0 on, clear of
// 10.96.0.1, the `kubernetes` Service's), selectorless (no controller manager runs in the lab).
import { benchServiceName, benchSlice, clusterIP, service } from './daemon-fixtures';

export const NAMESPACE = 'kube-ipvs-bench';
export const NODE_NAME = 'bench-node';
export const NODE_IP = '192.0.2.1';
export const CLUSTER_IP_OFFSET = 256;
/** Every object carries it: what an earlier run left is found by it. */
export const BENCH_LABEL = { 'e2e.kube-ipvs.io/bench': 'kube-proxy' };

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> };

function forLab(o: Record<string, unknown>): Obj {
  const meta = { ...(o.metadata as Record<string, unknown>) };
  delete meta.uid;
  meta.namespace = NAMESPACE;
  meta.labels = { ...(meta.labels as Record<string, string> | undefined), ...BENCH_LABEL };
  return { ...o, metadata: meta };
}

export const labClusterIP = (i: number): string => clusterIP(i + CLUSTER_IP_OFFSET);

export function labBenchService(i: number): Obj {
  const o = forLab(service(benchServiceName(i), labClusterIP(i)));
  return {
    ...o,
    spec: { ...(o.spec as Record<string, unknown>), ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv4'] },
  };
}

/** Service i's slice; `gen` > 0 replaces endpoint 0 with replacementIP(gen); `at` sets its trigger time (ms precision, RFC 3339). */
export function labBenchSlice(i: number, endpoints: number, gen = 0, at?: Date): Obj {
  return forLab(benchSlice(i, endpoints, gen, at));
}

export const labBenchSliceName = (i: number): string => `${benchServiceName(i)}-1`;

/** The Node both proxies run as (kube-proxy waits for its Node object to read its addresses). */
export function labBenchNode(): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: NODE_NAME, labels: { 'kubernetes.io/hostname': NODE_NAME, ...BENCH_LABEL } },
    spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
    status: {
      addresses: [
        { type: 'InternalIP', address: NODE_IP },
        { type: 'Hostname', address: NODE_NAME },
      ],
    },
  };
}
