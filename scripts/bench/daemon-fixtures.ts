// The daemon benchmark's cluster, as API objects: N ClusterIP Services (TCP 80 -> 8080) with
// one EndpointSlice of E ready endpoints each, on another node (node-b), and this node
// (node-a, 192.0.2.1). Address ranges: ClusterIPs 10.96.0.0/16; endpoints 10.100.0.0/14
// (endpoint n = service i * E + j); endpoints replaced by changes 10.200.0.0/16; the rolling
// update's pods 10.250.0.0/16. Same table as scripts/bench/peer/moby-ipvs-load.go.
import { FakeObject } from '../../testkit/fake-apiserver';

export const NAMESPACE = 'bench';
export const NODE_NAME = 'node-a';
export const NODE_IP = '192.0.2.1';

export const clusterIP = (i: number): string => `10.96.${(i >> 8) & 0xff}.${i & 0xff}`;

export function endpointIP(i: number, j: number, endpoints: number): string {
  const n = i * endpoints + j;
  return `10.${100 + (n >> 16)}.${(n >> 8) & 0xff}.${n & 0xff}`;
}

/** The address a change numbered `gen` (1..65535) gives to the endpoint it replaces. */
export const replacementIP = (gen: number): string => `10.200.${(gen >> 8) & 0xff}.${gen & 0xff}`;

export function service(name: string, ip: string): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: NAMESPACE, name, uid: `uid-svc-${name}` },
    spec: {
      type: 'ClusterIP',
      clusterIP: ip,
      clusterIPs: [ip],
      ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
    },
  };
}

export interface SliceEndpoint {
  readonly address: string;
  /** default ready; terminating: ready false, serving true, terminating true */
  readonly state?: 'ready' | 'terminating';
}

/** The one EndpointSlice of Service `name`; `triggerTime` sets endpoints.kubernetes.io/last-change-trigger-time. */
export function endpointSlice(name: string, endpoints: readonly SliceEndpoint[], triggerTime?: Date): FakeObject {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      namespace: NAMESPACE,
      name: `${name}-1`,
      uid: `uid-slice-${name}`,
      labels: { 'kubernetes.io/service-name': name },
      ...(triggerTime
        ? { annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': triggerTime.toISOString() } }
        : {}),
    },
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: endpoints.map((e) => ({
      addresses: [e.address],
      conditions: e.state === 'terminating' ? { ready: false, serving: true, terminating: true } : { ready: true },
      nodeName: 'node-b',
    })),
  };
}

export const benchServiceName = (i: number): string => `svc-${i}`;

/** Service i's slice; generation `gen` > 0 replaces endpoint 0 with replacementIP(gen) (a pod replaced). */
export function benchSlice(i: number, endpoints: number, gen = 0, triggerTime?: Date): FakeObject {
  return endpointSlice(
    benchServiceName(i),
    Array.from({ length: endpoints }, (_, j) => ({
      address: j === 0 && gen > 0 ? replacementIP(gen) : endpointIP(i, j, endpoints),
    })),
    triggerTime,
  );
}

/** Every object of the cluster: the node, then each Service with its slice. */
export function benchObjects(services: number, endpoints: number, extra: readonly FakeObject[] = []): FakeObject[] {
  const objects: FakeObject[] = [
    {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: NODE_NAME, uid: `uid-${NODE_NAME}` },
      status: { addresses: [{ type: 'InternalIP', address: NODE_IP }] },
    },
  ];
  for (let i = 0; i < services; i++) objects.push(service(benchServiceName(i), clusterIP(i)), benchSlice(i, endpoints));
  objects.push(...extra);
  return objects;
}
