/**
 * Kubernetes objects as the lab's VM tests write them to the real kube-apiserver (with kubectl,
 * testkit/lab-client.ts): selectorless Services the API server allocates and defaults, and the
 * EndpointSlices an EndpointSlice controller would write for them (no controller manager runs
 * in the lab). Every object carries `labels`, by which a file deletes what an earlier run of it
 * left (a deleted namespace never goes away without the namespace controller).
 */
type Obj = Record<string, unknown>;

export interface LabEndpoint {
  readonly ip: string;
  /** nodeName */
  readonly node: string;
  readonly ready?: boolean;
  /** default: ready */
  readonly serving?: boolean;
  readonly terminating?: boolean;
  /** the endpoint's zone and its one zone hint */
  readonly zone?: string;
}

/** A selectorless Service `namespace/name`: one TCP port 80 -> 8080 unless `spec` names its ports. */
export function labService(
  namespace: string,
  name: string,
  spec: Obj,
  o: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      namespace,
      name,
      ...(o.labels ? { labels: o.labels } : {}),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: { ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }], ...spec },
  };
}

/**
 * An EndpointSlice `name` of Service `service`: one port (default http 8080/TCP), the endpoints,
 * and endpoints.kubernetes.io/last-change-trigger-time (`triggered`, default now, in RFC 3339
 * seconds as the controller writes it).
 */
export function labSlice(
  namespace: string,
  service: string,
  name: string,
  endpoints: readonly LabEndpoint[],
  o: {
    port?: number;
    portName?: string;
    protocol?: string;
    addressType?: string;
    triggered?: Date;
    labels?: Record<string, string>;
  } = {},
): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      namespace,
      name,
      labels: {
        'kubernetes.io/service-name': service,
        'endpointslice.kubernetes.io/managed-by': 'e2e.kube-ipvs.io',
        ...o.labels,
      },
      annotations: {
        'endpoints.kubernetes.io/last-change-trigger-time': (o.triggered ?? new Date())
          .toISOString()
          .replace(/\.\d+Z$/, 'Z'),
      },
    },
    addressType: o.addressType ?? 'IPv4',
    ports: [{ name: o.portName ?? 'http', port: o.port ?? 8080, protocol: o.protocol ?? 'TCP' }],
    endpoints: endpoints.map((e) => ({
      addresses: [e.ip],
      conditions: {
        ready: e.ready ?? true,
        serving: e.serving ?? e.ready ?? true,
        terminating: e.terminating ?? false,
      },
      nodeName: e.node,
      ...(e.zone ? { zone: e.zone, hints: { forZones: [{ name: e.zone }] } } : {}),
    })),
  };
}

/** A Node as the kubelet registers it (create keeps status): its addresses and labels. */
export function labNode(name: string, addresses: readonly string[], labels: Record<string, string> = {}): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name, ...labels } },
    spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
    status: {
      addresses: [
        ...addresses.map((address) => ({ type: 'InternalIP', address })),
        { type: 'Hostname', address: name },
      ],
    },
  };
}
