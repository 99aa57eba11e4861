/**
 * The desired kernel state of ONE service port in one IP family, and the union of many.
 * Pure: no I/O, no clock. The proxier re-plans only the service ports the trackers report as
 * changed and diffs their old plan against the new one, so an endpoint change costs
 * O(that service's real servers).
 *
 * A plan's unit is the frontend (DesiredFrontend): one VIP:port/protocol with its virtual
 * server, its kube-ipvs0 address, its set members and its LB out-filter entry. The planner
 * plans every frontend a Service asks for; whether the node gets it (another Service's claim,
 * a foreign virtual server, ipvs.excludeCIDRs) is settled over the frontends, in one place
 * (lib/proxier/desired-index.ts with plan/frontend-guard.ts and plan/claim-rank.ts).
 *
 * Implemented in plan-service-port.ts / plan-desired-state.ts.
 */
import { RealServerSpec, SchedulerFlag, VirtualServerSpec } from '../model/ipvs';
import { Endpoint, Refusal, ServicePort, ServicePortKey } from '../model/service';
import { LbOutFilterEntry, LocalDetector } from './iptables';
import { IpFamily } from '../model/ip-family';
import { SetKey } from '../model/names';
import { DesiredIpsets, IpsetMember } from '../model/ipset';
import { IptablesPlan } from '../model/iptables';
import type { FrontendType } from '../model/views';

/** A virtual server with the real servers it should have (weight 1, masquerade). */
export interface DesiredVirtualServer {
  /**
   * scheduler resolved (annotation, else config); flags: persistent 0x1 with affinity, the
   * scheduler flags that fit the scheduler (plan-service-port.ts schedulerFlagBits: mh-port 0x10
   * for mh unless a flags list says otherwise)
   */
  readonly vs: VirtualServerSpec;
  /** sorted by realServerKey */
  readonly realServers: readonly RealServerSpec[];
  /** the service port it comes from */
  readonly owner: ServicePortKey;
  /** the frontend of that port that made it (ranks two claims on one key, plan/claim-rank.ts) */
  readonly kind: FrontendType;
}

/** One ipset member, in ipset's spelling (only the entry* helpers of model/ipset.ts make one). */
export interface IpsetEntry {
  readonly set: SetKey;
  readonly member: IpsetMember;
}

/** What the planner knows about the node and the configuration, per family. */
export interface PlanContext {
  readonly family: IpFamily;
  /** ipvs.scheduler, '' meaning rr */
  readonly scheduler: string;
  /**
   * ipvs.schedulerFlags (kube-ipvs extension); absent when unset: kube-proxy's default (mh-port
   * for mh). A Service's annotation replaces it.
   */
  readonly schedulerFlags?: readonly SchedulerFlag[];
  readonly nodeName: string;
  /** the node's topology.kubernetes.io/zone label, '' when none */
  readonly nodeZone: string;
  /** addresses NodePorts are served on (selectNodePortAddresses result), this family */
  readonly nodePortAddresses: readonly string[];
  /** addresses on links other than kube-ipvs0 (an external/LB IP already local is not bound) */
  readonly localAddresses: ReadonlySet<string>;
  /** the node's own IPs (a source range containing one keeps node access to the LB open) */
  readonly nodeIPs: readonly string[];
  /** multi-CNI: endpoints inside these CIDRs are ignored (this family, canonical) */
  readonly excludeClusterCIDRs: readonly string[];
}

/**
 * One VIP:port/protocol of a service port: its virtual server and everything that names it.
 * Withheld (plan/frontend-guard.ts), all of it is left out together.
 */
export interface DesiredFrontend {
  /** virtualServerKey(virtualServer.vs) */
  readonly key: string;
  readonly virtualServer: DesiredVirtualServer;
  /** the Service field it comes from (a refusal names it) */
  readonly field: string;
  /** its address on kube-ipvs0; absent for a NodePort, or an address already on another link */
  readonly boundAddress?: string;
  /** the set members that name this ip:port, sorted by set, then member */
  readonly ipsetEntries: readonly IpsetEntry[];
  /** a load-balancer VIP with source ranges and no node IP in them (KUBE-IPVS-OUT-FILTER) */
  readonly lbOutFilter?: LbOutFilterEntry;
}

/** The desired state contributed by one service port in one family. */
export interface ServicePortPlan {
  readonly key: ServicePortKey;
  readonly family: IpFamily;
  /** one per virtual server key, sorted by it */
  readonly frontends: readonly DesiredFrontend[];
  /** the members no single frontend owns (LOOP_BACK, HEALTH_CHECK_NODE_PORT, the NodePort
   * bitmaps), sorted by set, then member */
  readonly portEntries: readonly IpsetEntry[];
  /** ready local endpoints (HealthCheckNodePort answer) */
  readonly localEndpoints: number;
  /** policy Local with no local endpoint (kubeproxy_sync_proxy_rules_no_local_endpoints_total) */
  readonly noLocalEndpoints: { readonly internal: boolean; readonly external: boolean };
  /** parts of the objects the planner refused (a withheld frontend's refusal is the guard's) */
  readonly refusals: readonly Refusal[];
}

/** What a plan puts on the node, every frontend or only those `live` says are given. */
export interface PlanContents {
  /** sorted by virtualServerKey */
  readonly virtualServers: readonly DesiredVirtualServer[];
  /** addresses to bind on kube-ipvs0, sorted, unique */
  readonly boundAddresses: readonly string[];
  /** sorted by set, then member, unique */
  readonly ipsetEntries: readonly IpsetEntry[];
  /** in frontend (virtual server key) order */
  readonly lbOutFilter: readonly LbOutFilterEntry[];
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** A plan's frontends flattened: what it puts on the node when `live` gives it those frontends. */
export function planContents(p: ServicePortPlan, live: (f: DesiredFrontend) => boolean = () => true): PlanContents {
  const frontends = p.frontends.filter(live);
  const entries = new Map<string, IpsetEntry>();
  for (const e of p.portEntries) entries.set(`${e.set} ${e.member}`, e);
  for (const f of frontends) for (const e of f.ipsetEntries) entries.set(`${e.set} ${e.member}`, e);
  const bound = new Set<string>();
  for (const f of frontends) if (f.boundAddress !== undefined) bound.add(f.boundAddress);
  return {
    virtualServers: frontends.map((f) => f.virtualServer),
    boundAddresses: [...bound].sort(byString),
    ipsetEntries: [...entries.keys()].sort(byString).map((k) => entries.get(k)!),
    lbOutFilter: frontends.flatMap((f) => (f.lbOutFilter ? [f.lbOutFilter] : [])),
  };
}

/** The per-port planner's signature (planServicePort's). */
export type PlanServicePort = (sp: ServicePort, endpoints: readonly Endpoint[], ctx: PlanContext) => ServicePortPlan;

/** Options of the per-family iptables plan that do not come from services. */
export interface IptablesOptions {
  readonly masqueradeBit: number;
  readonly masqueradeAll: boolean;
  readonly localDetector?: LocalDetector;
  readonly randomFully: boolean;
}

/**
 * Two service ports planned the same virtual server (e.g. two Services given the same external
 * IP and port): the best claim keeps it (claim-rank.ts: ClusterIP, NodePort, load-balancer IP,
 * externalIP; then the older Service; then ServicePortKey order), the other (`loser`, named by
 * the Refusal fields) does not get it. Reported like a Refusal of the loser.
 */
export interface VirtualServerConflict extends Refusal {
  /** virtualServerKey */
  readonly virtualServer: string;
  readonly winner: ServicePortKey;
  readonly loser: ServicePortKey;
}

/** The whole family: what the proxier hands to the ipset, iptables and link surfaces. */
export interface FamilyDesiredState {
  readonly family: IpFamily;
  /** by virtualServerKey */
  readonly virtualServers: ReadonlyMap<string, DesiredVirtualServer>;
  /** addresses on kube-ipvs0 (also the KUBE-IPVS-IPS members) */
  readonly boundAddresses: ReadonlySet<string>;
  readonly ipsets: DesiredIpsets;
  readonly iptables: IptablesPlan;
  /** virtual servers claimed by more than one service port, in ServicePortKey order of the loser */
  readonly conflicts: readonly VirtualServerConflict[];
}
