/**
 * The desired kernel state of ONE service port in one IP family, and the union of many.
 * Pure: no I/O, no clock. The proxier re-plans only the service ports the trackers report as
 * changed and diffs their old plan against the new one, so an endpoint change costs
 * O(that service's real servers).
 *
 * Implemented in plan-service-port.ts / plan-desired-state.ts.
 */
import { RealServerSpec, VirtualServerSpec } from '../model/ipvs';
import { Endpoint, Refusal, ServicePort, ServicePortKey } from '../model/service';
import { LbOutFilterEntry, LocalDetector } from './iptables';
import { IpFamily } from '../model/ip-family';
import { SetKey } from '../model/names';
import { DesiredIpsets, IpsetMember } from '../model/ipset';
import { IptablesPlan } from '../model/iptables';
import type { FrontendType } from '../model/views';

/** A virtual server with the real servers it should have (weight 1, masquerade). */
export interface DesiredVirtualServer {
  /** scheduler resolved (annotation, else config); flags: persistent 0x1 with affinity, 0x10 for mh */
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
  /** ipvs.excludeCIDRs (this family): no VIP inside them is planned */
  readonly excludeCIDRs: readonly string[];
  /**
   * virtual servers found in the kernel that are not kube-ipvs's (virtualServerKey -> why, in
   * words): none is planned, nor an ipset entry or kube-ipvs0 address for it (the proxier's
   * memory, lib/proxier/ownership.ts; absent or empty: none)
   */
  readonly foreignVirtualServers?: ReadonlyMap<string, string>;
}

/** The desired state contributed by one service port in one family. */
export interface ServicePortPlan {
  readonly key: ServicePortKey;
  readonly family: IpFamily;
  /** sorted by virtualServerKey */
  readonly virtualServers: readonly DesiredVirtualServer[];
  /** addresses to bind on kube-ipvs0, sorted, unique */
  readonly boundAddresses: readonly string[];
  /** sorted by set, then member */
  readonly ipsetEntries: readonly IpsetEntry[];
  readonly lbOutFilter: readonly LbOutFilterEntry[];
  /** ready local endpoints (HealthCheckNodePort answer) */
  readonly localEndpoints: number;
  /** policy Local with no local endpoint (kubeproxy_sync_proxy_rules_no_local_endpoints_total) */
  readonly noLocalEndpoints: { readonly internal: boolean; readonly external: boolean };
  /** parts of the objects that were refused (the rest is planned) */
  readonly refusals: readonly Refusal[];
  /** virtual server keys this port wanted that are foreign (ctx.foreignVirtualServers), sorted; absent: none */
  readonly foreignVirtualServers?: readonly string[];
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
