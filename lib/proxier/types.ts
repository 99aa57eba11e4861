/**
 * The proxier's interfaces: what it reads (the trackers, the planner), what it writes to (the
 * kernel surfaces, Events, the health check servers), its settings, and what one sync reports.
 */
import type winston from 'winston';
import type { Ipvs } from '../kernel/ipvs/ipvs';
import type { Ipset } from '../kernel/ipset/ipset';
import type { Iptables } from '../kernel/iptables/iptables';
import type { Link } from '../kernel/link/link';
import type { Conntrack } from '../kernel/conntrack/conntrack';
import type { NftTables } from '../kernel/nftables/nftables';
import type { Endpoint, ServiceName, ServicePort, TrackedService } from '../model/service';
import type { IpFamily } from '../model/ip-family';
import type { SchedulerFlag } from '../model/ipvs';
import type { LocalDetector } from '../plan/iptables';
import type { PlanServicePort } from '../plan/service-plan';
import type { Clock } from './clock';
import type { ServiceHealthSink } from './service-health';

/** Where the proxier reads Services and endpoints from (the trackers). */
export interface ProxySource {
  /**
   * A sync's one read: the Services changed since the last take and those in `also` (every
   * Service and those in `also` when `everything`), each as it is now
   */
  take(also: Iterable<ServiceName>, everything: boolean): Map<ServiceName, TrackedService>;
  /** one Service as it is now (the dry run plans every Service from it) */
  service(name: ServiceName): TrackedService;
  /** every Service name ("ns/name") that currently has ports */
  serviceNames(): Iterable<ServiceName>;
  /** the current ports of one Service, every family; empty when it is gone */
  servicePorts(service: ServiceName): readonly ServicePort[];
  /** the endpoints of one service port (its family), sorted */
  endpoints(sp: ServicePort): readonly Endpoint[];
}

/** What plans a service port (plan/plan-service-port.ts in production). */
export interface Planner {
  readonly planServicePort: PlanServicePort;
}

/** A Kubernetes Event about an object (the daemon posts it; tests record it). */
export interface EventSink {
  warn(ref: { kind: string; namespace: string; name: string }, reason: string, message: string): void;
}

/** The Node object as the proxier uses it: name, zone, IPs, pod CIDRs. */
export interface NodeState {
  readonly name: string;
  readonly zone: string;
  readonly nodeIPs: readonly string[];
  readonly podCIDRs: readonly string[];
}

/** The part of the configuration the proxier applies; every field may change live. */
export interface ProxierSettings {
  readonly families: readonly IpFamily[];
  readonly scheduler: string;
  readonly syncPeriodMs: number;
  readonly minSyncPeriodMs: number;
  readonly excludeCIDRs: readonly string[];
  readonly excludeClusterCIDRs: readonly string[];
  /** ipvs.schedulerFlags; null or absent: unset (kube-proxy's default) */
  readonly schedulerFlags?: readonly SchedulerFlag[] | null;
  readonly nodePortAddresses: readonly string[];
  readonly masqueradeAll: boolean;
  readonly masqueradeBit: number;
  readonly clusterCIDRs: readonly string[];
  readonly detectLocalMode: LocalDetector['kind'];
  readonly bridgeInterface: string;
  readonly interfaceNamePrefix: string;
}

/** What the proxier runs against: the kernel interfaces, the planner, clock and log (it owns the trackers). */
export interface ProxierDeps {
  readonly ipvs: Ipvs;
  readonly link: Link;
  readonly ipsets: Readonly<Partial<Record<IpFamily, Ipset>>>;
  readonly iptables: Readonly<Partial<Record<IpFamily, Iptables>>>;
  readonly planner: Planner;
  readonly clock: Clock;
  readonly log: winston.Logger;
  readonly events?: EventSink;
  /** iptables supports MASQUERADE --random-fully, per family */
  readonly randomFully?: Readonly<Partial<Record<IpFamily, boolean>>>;
  /** a draining real server with connections left is deleted after this long (default 10 min) */
  readonly drainTimeoutMs?: number;
  /** how often draining real servers' connection counts are read (default 15 s) */
  readonly drainCheckIntervalMs?: number;
  /** [0, 1): the retry backoff's jitter (default Math.random) */
  readonly random?: () => number;
  /**
   * Reads /proc/net/ip_vs (the daemon: this network namespace's). When given, a full sync reads
   * the table as one service dump plus this file for every real server (listAllViaProc)
   * instead of one dest dump per virtual server: 2 reads instead of 1 + N.
   */
  readonly readProcIpVs?: () => Promise<string>;
  /** the HealthCheckNodePort servers, fed after every successful sync */
  readonly serviceHealth?: ServiceHealthSink;
  /**
   * the conntrack table: after a sync in which a UDP/SCTP virtual server lost a real server
   * (or got its first one), its stale entries are deleted. None: no conntrack cleanup.
   */
  readonly conntrack?: Conntrack;
  /**
   * nf_tables: kube-proxy's nftables-mode tables (ip and ip6 kube-proxy) are deleted once,
   * after the first full sync that succeeded (nftables-leftovers.ts). None: left alone.
   */
  readonly nftables?: NftTables;
  /**
   * called after every sync (metrics), with the trigger times of the EndpointSlice changes it
   * took in (their endpoints.kubernetes.io/last-change-trigger-time) and each slice's family
   */
  readonly onSync?: (result: SyncResult, driftRepaired: boolean, triggered: readonly EndpointTrigger[]) => void;
  /** an informer event changed `count` Services' state (kube-proxy's *_changes_total) */
  readonly onChanges?: (kind: 'service' | 'endpoints', count: number) => void;
  /**
   * called once a sync is over with all that follows it (onSync comes before the nftables
   * leftovers' removal after a full sync): no sync is running then
   */
  readonly syncEnded?: () => void;
  /** held for each sync: the informers' watches take no event in meanwhile (intake-gate.ts) */
  readonly intakeGate?: { hold(): void; release(): void };
}

/** What the proxier's parts run against: its deps and the trackers it owns, read as a ProxySource. */
export interface PartDeps extends ProxierDeps {
  readonly source: ProxySource;
}

/** What one sync did: the figures tests assert exactly and operators read in the log. */
export interface SyncResult {
  readonly full: boolean;
  /** service names re-planned */
  readonly replanned: number;
  /** IPVS requests that change the table */
  readonly ipvsWrites: number;
  /** IPVS requests that read (a dump of N services with their dests counts 1 + N) */
  readonly ipvsReads: number;
  readonly ipvsFailures: number;
  /** rtnetlink requests (address dumps, binds, unbinds, link lookups) */
  readonly linkOps: number;
  /** ipset + iptables processes started */
  readonly execs: number;
  /** ctnetlink requests: conntrack dumps (one per family and cleaned protocol) + entry deletes */
  readonly conntrackOps: number;
  /** conntrack entries deleted (kubeproxy_conntrack_reconciler_deleted_entries_total) */
  readonly conntrackDeleted: number;
  /** how long the conntrack cleanup took; absent when none ran */
  readonly conntrackDurationMs?: number;
  readonly durationMs: number;
  /** where the time went, by phase (ms; phases that did not run are absent) */
  readonly phasesMs: SyncPhases;
}

/** The phases of one sync, in order (kube-proxy logs no such split; it is the profile an operator needs at scale). */
export type SyncPhase =
  'node' | 'plan' | 'ipvsRead' | 'ipvsWrite' | 'addresses' | 'netfilterWait' | 'healthCheck' | 'draining' | 'conntrack';
/**
 * Every SyncPhase is a lap of the sync: those add up to its duration. `ipsets` and `iptables`
 * are the netfilter syncs' own times (the ipsets, then iptables), which run beside ipvsRead,
 * ipvsWrite and addresses; `netfilterWait` is what the sync waited for them after those.
 */
export type SyncPhases = Partial<Record<SyncPhase | 'ipsets' | 'iptables', number>>;

/** The figures one sync counts as it goes (SyncResult's counters). */
export interface SyncCounts {
  ipvsWrites: number;
  ipvsReads: number;
  ipvsFailures: number;
  linkOps: number;
  execs: number;
  conntrackOps: number;
  conntrackDeleted: number;
}

/** An EndpointSlice change a sync took in: its trigger time (ms since the epoch) and its family. */
export interface EndpointTrigger {
  readonly atMs: number;
  /** the slice's addressType; undefined for FQDN (no family) */
  readonly family: IpFamily | undefined;
}
