/**
 * The proxy's view of Services and their endpoints, after validation (lib/k8s/convert.ts):
 * every address is canonical (inet_ntop spelling), every CIDR has its host bits cleared,
 * every port is in range. Nothing here is a Kubernetes API type; the planner sees only these.
 * (kube-proxy: pkg/proxy/serviceport.go BaseServicePortInfo, endpoint.go BaseEndpointInfo.)
 */
import { IpFamily } from './ip-family';
import type { SchedulerFlag } from './ipvs';

/**
 * Service annotation listing IPVS scheduler flags for that Service (kube-ipvs's own):
 * comma-separated ipvsadm names (sh-fallback, sh-port, mh-fallback, mh-port); replaces
 * ipvs.schedulerFlags and kube-proxy's default (mh-port for mh) for the Service.
 */
export const SCHEDULER_FLAGS_ANNOTATION = 'kube-ipvs.io/scheduler-flags';

/** A Service port's protocol. */
export type Protocol = 'TCP' | 'UDP' | 'SCTP';

/** "namespace/name" of a Service. */
export type ServiceName = string;

/**
 * One port of one Service, for one IP family: kube-proxy's ServicePortName
 * "namespace/name:portName" plus the family ("ns/svc:http/ipv4"; portName may be '').
 */
export type ServicePortKey = string;

/** The ServicePortKey of a Service port for one family: "ns/svc:http/ipv4". */
export function servicePortKey(namespace: string, name: string, portName: string, family: IpFamily): ServicePortKey {
  return `${namespace}/${name}:${portName}/${family}`;
}

/**
 * The parts of a ServicePortKey. Namespaces, Service names and port names are DNS labels
 * (lib/k8s/convert.ts refuses others), so '/' and ':' separate them unambiguously.
 */
export function parseServicePortKey(key: ServicePortKey): {
  namespace: string;
  name: string;
  portName: string;
  family: IpFamily;
} {
  const m = /^([^/]*)\/([^:]*):([^/]*)\/(ipv4|ipv6)$/.exec(key);
  if (!m) throw new TypeError(`not a service port key: '${key}'`);
  return { namespace: m[1]!, name: m[2]!, portName: m[3]!, family: m[4] as IpFamily };
}

/** How logs and events name a service port: "ns/svc:http" (kube-proxy's ServicePortName.String()). */
export function servicePortDisplayName(sp: Pick<ServicePort, 'namespace' | 'name' | 'portName'>): string {
  return `${sp.namespace}/${sp.name}:${sp.portName}`;
}

/** One port of a Service in one IP family: everything the planner needs, validated. */
export interface ServicePort {
  readonly namespace: string;
  readonly name: string;
  /** spec.ports[].name ('' for a single unnamed port) */
  readonly portName: string;
  readonly family: IpFamily;
  readonly protocol: Protocol;
  /** spec.ports[].port */
  readonly port: number;
  /** spec.ports[].nodePort; 0 when none */
  readonly nodePort: number;
  /** spec.clusterIPs of this family (one address in practice) */
  readonly clusterIP: string;
  /** spec.externalIPs of this family, canonical, sorted, unique */
  readonly externalIPs: readonly string[];
  /** status.loadBalancer.ingress[].ip of this family whose ipMode is not Proxy; sorted, unique */
  readonly loadBalancerIPs: readonly string[];
  /** spec.loadBalancerSourceRanges of this family as canonical CIDRs ("10.0.0.0/8"); sorted, unique */
  readonly loadBalancerSourceRanges: readonly string[];
  /**
   * a source range could not be read: the load balancer admits nobody (a firewall with no
   * range; loadBalancerSourceRanges is then empty), never everybody
   */
  readonly loadBalancerSourceRangesUnreadable: boolean;
  /** sessionAffinity ClientIP: timeoutSeconds (10800 default); 0 when affinity is None */
  readonly stickyMaxAgeSeconds: number;
  /** externalTrafficPolicy: Local (only for NodePort/LoadBalancer/externalIPs) */
  readonly externalPolicyLocal: boolean;
  /** internalTrafficPolicy: Local */
  readonly internalPolicyLocal: boolean;
  /** spec.healthCheckNodePort; 0 when none */
  readonly healthCheckNodePort: number;
  /** spec.trafficDistribution ('PreferClose', ...); '' when unset */
  readonly trafficDistribution: string;
  /** per-Service scheduler from the annotation; '' means the configured ipvs.scheduler */
  readonly scheduler: string;
  /**
   * per-Service scheduler flags from the annotation kube-ipvs.io/scheduler-flags (known names
   * only, in SCHEDULER_FLAGS's order; [] when it lists none); absent without the annotation:
   * then ipvs.schedulerFlags, else kube-proxy's default (mh-port for mh)
   */
  readonly schedulerFlags?: readonly SchedulerFlag[];
  /** metadata.creationTimestamp (RFC 3339), when the object has one: ranks claims on one ip:port */
  readonly creationTimestamp?: string;
}

/** One endpoint of one service port (EndpointSlice endpoint x port), validated. */
export interface Endpoint {
  /** canonical address */
  readonly ip: string;
  readonly port: number;
  /** conditions.ready (unset = true) */
  readonly ready: boolean;
  /** conditions.serving (unset = ready) */
  readonly serving: boolean;
  /** conditions.terminating (unset = false) */
  readonly terminating: boolean;
  /** endpoint.nodeName equals this node's name */
  readonly isLocal: boolean;
  /** hints.forZones[].name; undefined when the endpoint has no zone hints */
  readonly zoneHints?: readonly string[];
  /** hints.forNodes[].name; undefined when none */
  readonly nodeHints?: readonly string[];
}

/**
 * One Service as the trackers hold it now, what a sync plans it from: its ports (every
 * family), each with its endpoints, and what was refused in its Service and EndpointSlices.
 */
export interface TrackedService {
  readonly ports: readonly { readonly port: ServicePort; readonly endpoints: readonly Endpoint[] }[];
  readonly refusals: readonly Refusal[];
}

/** An object field the proxy refused (and what it did instead), for a log line and an Event. */
export interface Refusal {
  /** "Service" | "EndpointSlice" */
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  /** JSON-path-like field: "spec.externalIPs[1]", "metadata.annotations[kube-ipvs.io/scheduler]" */
  readonly field: string;
  /** the offending value as text */
  readonly value: string;
  /** why, in words: "not an IP address", "scheduler 'foo' not available (ENOENT)" */
  readonly reason: string;
  /** the Event's reason when not InvalidField (the field is valid, but kube-ipvs will not program it) */
  readonly eventReason?: string;
}
