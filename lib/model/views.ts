/**
 * The operator views' JSON contract (`kube-ipvs service list`, `status`, `diff`): what the
 * daemon serves under /kube-ipvs/ on metricsBindAddress (lib/daemon/views-server.ts) and what
 * the CLI reads and prints (lib/cli/views). One definition for both sides; every field is
 * plain JSON (no bigint, no Map).
 */
import { AF_INET6 } from '../uapi/inet';
import { IP_VS_SVC_F } from '../uapi/ip_vs';
import {
  PROTOCOL_NAMES,
  RealServerId,
  RealServerSpec,
  VirtualServerId,
  VirtualServerSpec,
  addressToBytes,
  hostPort,
} from './ipvs';

/** The daemon's paths (on the metrics server). */
export const VIEW_PATHS = {
  services: '/kube-ipvs/services',
  status: '/kube-ipvs/status',
  diff: '/kube-ipvs/diff',
} as const;

/** Where the CLI looks for the daemon by default: kube-proxy's default metricsBindAddress. */
export const DEFAULT_VIEWS_SERVER = 'http://127.0.0.1:10249';

/** Which address of a Service a frontend serves (cilium's "Service Type"). */
export type FrontendType = 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalIP';

/**
 * A backend's state:
 * - active: desired and in the kernel with its weight;
 * - terminating: a serving-but-terminating endpoint used because the Service has no ready one;
 * - draining: no longer desired, weight 0 in the kernel until its connections end (TCP);
 * - pending: desired, not (yet) in the kernel (the kernel refused it, or a sync is due);
 * - stale: in the kernel, not desired, weight not 0 (a failed removal; the next sync retries).
 */
export type BackendState = 'active' | 'terminating' | 'draining' | 'pending' | 'stale';

/** One backend of a frontend in the service list: address, state, weight, connections. */
export interface Backend {
  /** "10.244.1.2:8080", "[fd00::2]:8080" */
  readonly address: string;
  readonly state: BackendState;
  readonly weight: number;
  /** as the kernel last showed them (the daemon's last full sync, or the kernel read now) */
  readonly activeConns: number;
  readonly inactConns: number;
}

/** Session affinity of a frontend: IPVS persistence. */
export type Affinity = { readonly kind: 'None' } | { readonly kind: 'ClientIP'; readonly timeoutSeconds: number };

/** One row of `kube-ipvs service list`: a virtual server and its real servers. */
export interface FrontendRow {
  /** stable for the daemon's lifetime (the kernel fallback numbers rows in order) */
  readonly id: number;
  /** "10.96.0.10:53/UDP", "[fd00::a]:80/TCP" */
  readonly frontend: string;
  /** null: unknown (kernel fallback: no kube-proxy set names it) */
  readonly type: FrontendType | null;
  /** "namespace/name:port" (the port's name, its number when unnamed); null when unknown */
  readonly service: string | null;
  readonly scheduler: string;
  readonly affinity: Affinity;
  /** sorted by address */
  readonly backends: readonly Backend[];
}

/**
 * A frontend of a Service that kube-ipvs does not program, now: a foreign virtual server at its
 * ip:port (ForeignVirtualServer), a VIP inside ipvs.excludeCIDRs (VIPInExcludedCIDR), or a
 * virtual server another Service keeps (VirtualServerConflict). Each is also a Warning Event, a
 * log line and kube_ipvs_refused_frontends{reason}.
 */
export interface RefusedFrontend {
  /** "namespace/name" */
  readonly service: string;
  /** "spec.externalIPs", "spec.ports[].nodePort", "spec.ports[p]" */
  readonly field: string;
  /** the address, or the virtual server ("TCP/192.0.2.1:30443") */
  readonly value: string;
  /** the Event's reason */
  readonly reason: string;
  /** why, in words (the Event's message) */
  readonly message: string;
}

/** GET /kube-ipvs/services: every frontend with its backends, and the frontends refused. */
export interface ServiceListResponse {
  /** daemon: names and states from the running daemon; kernel: the IPVS table and ipsets alone */
  readonly source: 'daemon' | 'kernel';
  /** sorted by family, protocol, address, port */
  readonly frontends: readonly FrontendRow[];
  /** daemon only: the frontends Services asked for that are not programmed, sorted by service */
  readonly refused?: readonly RefusedFrontend[];
}

/** What one sync did, when (status). */
export interface SyncSummary {
  /** ISO time the sync ended */
  readonly at: string;
  readonly durationMs: number;
  readonly ipvsWrites: number;
  readonly ipvsFailures: number;
  readonly execs: number;
}

/** `kube-ipvs status`: cilium status --verbose's "KubeProxyReplacement Details", for IPVS. */
export interface StatusResponse {
  readonly mode: 'ipvs';
  readonly node: {
    readonly name: string;
    readonly ips: readonly string[];
    readonly zone: string;
    readonly podCIDRs: readonly string[];
  };
  readonly families: readonly string[];
  /** kube-ipvs0 and the links that carry NodePort addresses */
  readonly devices: readonly {
    readonly name: string;
    readonly addresses: readonly string[];
    readonly role: 'kube-ipvs0' | 'NodePort';
  }[];
  readonly scheduler: { readonly default: string; readonly overriddenBy: number };
  readonly sessionAffinity: { readonly enabled: true; readonly frontends: number };
  readonly gracefulTermination: {
    readonly enabled: true;
    readonly protocols: readonly string[];
    readonly drainTimeoutSeconds: number;
    readonly checkIntervalSeconds: number;
    readonly draining: number;
  };
  /** every Service type kube-proxy serves is enabled; the NodePort range is the API server's */
  readonly services: {
    readonly clusterIP: boolean;
    readonly nodePort: {
      readonly enabled: boolean;
      readonly addresses: readonly string[];
      readonly portsInUse: readonly number[];
    };
    readonly loadBalancer: boolean;
    readonly externalIPs: boolean;
  };
  readonly initialized: boolean;
  readonly lastFullSync: SyncSummary | null;
  readonly lastPartialSync: SyncSummary | null;
  readonly driftRepairs: number;
  /** frontends Services asked for that kube-ipvs does not program, sorted by service */
  readonly refusedFrontends: readonly RefusedFrontend[];
  readonly counts: {
    readonly services: number;
    readonly servicePorts: number;
    readonly virtualServers: number;
    readonly realServers: number;
    readonly draining: number;
    readonly boundAddresses: number;
  };
  readonly totals: {
    readonly syncs: number;
    readonly fullSyncs: number;
    readonly ipvsWrites: number;
    readonly ipvsFailures: number;
    readonly execs: number;
  };
  /** --verbose: the effective settings */
  readonly config: {
    readonly syncPeriod: string;
    readonly minSyncPeriod: string;
    readonly excludeCIDRs: readonly string[];
    readonly excludeClusterCIDRs: readonly string[];
    readonly clusterCIDRs: readonly string[];
    readonly nodePortAddresses: readonly string[];
    readonly masqueradeAll: boolean;
    readonly masqueradeBit: number;
    readonly strictARP: boolean;
    readonly detectLocalMode: string;
    readonly ipvsTimeouts: { readonly tcp: number; readonly tcpFin: number; readonly udp: number };
    readonly healthzBindAddress: string;
    readonly metricsBindAddress: string;
  };
}

/** One change a full sync would make to the IPVS table (the table-changing ops only). */
export type TableChange =
  | { readonly kind: 'newService' | 'setService'; readonly vs: VirtualServerSpec }
  | { readonly kind: 'delService'; readonly vs: VirtualServerId }
  | { readonly kind: 'newDest' | 'setDest'; readonly vs: VirtualServerId; readonly rs: RealServerSpec }
  | { readonly kind: 'delDest'; readonly vs: VirtualServerId; readonly rs: RealServerId };

/** `kube-ipvs diff`: what a full sync would change in the kernel now, in order. */
export interface DiffResponse {
  readonly changes: readonly TableChange[];
}

/** The body of a view the daemon cannot serve yet (503) or at all (500). */
export interface ViewError {
  readonly error: string;
}

// ---- shared by both sides: names and order of rows ----

/** "10.96.0.10:53/UDP", "[fd00::a]:80/TCP" (cilium's Frontend column). */
export function frontendName(vs: VirtualServerId): string {
  if (vs.fwmark > 0) return `FWM ${vs.fwmark}${vs.af === AF_INET6 ? '/IPv6' : ''}`;
  return `${hostPort(vs.af, vs.address, vs.port)}/${PROTOCOL_NAMES[vs.protocol] ?? String(vs.protocol)}`;
}

/** A virtual server's affinity: IPVS persistence is ClientIP affinity. */
export function affinityOf(vs: { readonly flags?: number; readonly timeout?: number }): Affinity {
  return ((vs.flags ?? 0) & IP_VS_SVC_F.PERSISTENT) !== 0
    ? { kind: 'ClientIP', timeoutSeconds: vs.timeout ?? 0 }
    : { kind: 'None' };
}

function compareBytes(a: Buffer, b: Buffer): number {
  return a.length - b.length || Buffer.compare(a, b);
}

/** Row order: fwmark services last; IPv4 before IPv6, then protocol, address (numeric), port. */
export function compareFrontends(a: VirtualServerId, b: VirtualServerId): number {
  if (a.fwmark > 0 !== b.fwmark > 0) return a.fwmark > 0 ? 1 : -1;
  if (a.fwmark > 0) return a.af - b.af || a.fwmark - b.fwmark;
  return (
    a.af - b.af ||
    a.protocol - b.protocol ||
    compareBytes(addressToBytes(a.af, a.address), addressToBytes(b.af, b.address)) ||
    a.port - b.port
  );
}

/** Backend order: by address (numeric), then port. */
export function compareBackends(a: RealServerId, b: RealServerId): number {
  return (
    a.af - b.af || compareBytes(addressToBytes(a.af, a.address), addressToBytes(b.af, b.address)) || a.port - b.port
  );
}
