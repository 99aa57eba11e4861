/**
 * The desired kernel state of one service port in one family: kube-proxy IPVS mode's
 * syncProxyRules body for that port (K8S pkg/proxy/ipvs/proxier.go, recent; reference §1.5
 * steps 7, §1.7). Pure.
 *
 *  - ClusterIP: a virtual server, bound on kube-ipvs0, KUBE-CLUSTER-IP entry; real servers per
 *    internalTrafficPolicy.
 *  - externalIPs: a virtual server each, bound unless the address is already on another link,
 *    KUBE-EXTERNAL-IP (KUBE-EXTERNAL-IP-LOCAL with eTP Local).
 *  - load-balancer VIPs: a virtual server each, bound unless local, KUBE-LOAD-BALANCER
 *    (+ -LOCAL with eTP Local); with source ranges KUBE-LOAD-BALANCER-FW, one SOURCE-CIDR entry
 *    per range, and SOURCE-IP (lb,proto:port,lb) when a range holds a node IP, else an
 *    KUBE-IPVS-OUT-FILTER entry (node-originated traffic would bypass the ranges, #119656).
 *  - NodePort: a virtual server per NodePort address (never bound), KUBE-NODE-PORT-TCP/UDP
 *    bitmap entries or per-address SCTP hash entries (+ -LOCAL with eTP Local).
 *  - healthCheckNodePort: KUBE-HEALTH-CHECK-NODE-PORT.
 *  - every local endpoint: KUBE-LOOP-BACK ep,proto:port,ep (hairpin masquerade).
 *
 * Multi-CNI (kube-ipvs extension): endpoints inside ctx.excludeClusterCIDRs are dropped; a
 * service port that had endpoints, all excluded, gets an empty plan (another CNI's proxy
 * serves it). A service port without any endpoint is planned as usual.
 *
 * Every frontend the Service asks for is planned: whether the node gives it (ipvs.excludeCIDRs,
 * a foreign virtual server, another Service's claim) is not the planner's to know
 * (plan/frontend-guard.ts, lib/proxier/desired-index.ts).
 */
import {
  AddressFamily,
  RealServerSpec,
  SCHEDULER_FLAGS,
  SchedulerFlag,
  VirtualServerSpec,
  realServerKey,
  virtualServerKey,
} from '../model/ipvs';
import {
  Endpoint,
  Refusal,
  SCHEDULER_FLAGS_ANNOTATION,
  ServicePort,
  ServicePortKey,
  servicePortKey,
} from '../model/service';
import { familyOfValidAddress, toAddressFamily } from '../model/ip-family';
import { cachedCidrMatcher, cidrMatcher } from '../model/address';
import { AF_INET, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../uapi/inet';
import { IP_VS_CONN_F, IP_VS_SVC_F, IP_VS_SVC_F_SCHED_MH_PORT } from '../uapi/ip_vs';
import { LbOutFilterEntry } from './iptables';
import { CategorizedEndpoints, categorizeEndpoints } from './categorize-endpoints';
import { IpsetEntry, PlanContext, DesiredFrontend, ServicePortPlan } from './service-plan';
import { SetKey } from '../model/names';
import { entriesIpPortNet, entryIpPort, entryIpPortIp, entryPort, IpsetMember, IpsetProto } from '../model/ipset';
import type { FrontendType } from '../model/views';

/** kube-proxy's defaultScheduler. */
export const DEFAULT_SCHEDULER = 'rr';

const IPPROTO = { TCP: IPPROTO_TCP, UDP: IPPROTO_UDP, SCTP: IPPROTO_SCTP } as const;

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Plans the desired kernel state of one service port in one family (see the file comment). */
export function planServicePort(sp: ServicePort, endpoints: readonly Endpoint[], ctx: PlanContext): ServicePortPlan {
  if (sp.family !== ctx.family) {
    throw new TypeError(
      `service port ${sp.namespace}/${sp.name}:${sp.portName} is ${sp.family}, context is ${ctx.family}`,
    );
  }
  const key = servicePortKey(sp.namespace, sp.name, sp.portName, sp.family);
  const excluded = cachedCidrMatcher(ctx.excludeClusterCIDRs);
  const eps = ctx.excludeClusterCIDRs.length === 0 ? endpoints : endpoints.filter((e) => !excluded(e.ip));
  if (endpoints.length > 0 && eps.length === 0) return emptyPlan(sp, key);

  const sel = selectRealServers(eps, sp, ctx);
  const draft = new PlanDraft(sp, ctx, key);
  // the frontends in kube-proxy's order: the refusals come out in this order too
  planLoopBack(draft, eps);
  planClusterIP(draft, sel.internalRs);
  planExternalIPs(draft, sel.externalRs);
  planLoadBalancerIPs(draft, sel.externalRs);
  planNodePort(draft, sel.externalRs);
  if (sp.healthCheckNodePort !== 0) draft.add('HEALTH_CHECK_NODE_PORT', entryPort(sp.healthCheckNodePort));
  return finishPlan(draft, eps, sel);
}

/**
 * A virtual server's scheduler flag bits: the Service's list (its annotation) if it has one,
 * else the node's (ipvs.schedulerFlags), else kube-proxy's default (mh-port for mh, none for
 * the others). A list replaces the default: `mh-fallback` alone is mh-fallback without
 * mh-port. Only the flags of `scheduler` are set; `unfit` names the Service's own flags that
 * are another scheduler's (to be refused: the kernel's bits are shared, sh-fallback on an mh
 * virtual server would be mh-fallback). The node's list is one for every scheduler: its other
 * schedulers' flags are left out silently.
 */
export function schedulerFlagBits(
  scheduler: string,
  service: readonly SchedulerFlag[] | undefined,
  node: readonly SchedulerFlag[] | undefined,
): { bits: number; unfit: SchedulerFlag[] } {
  const list = service ?? node;
  if (list === undefined) return { bits: scheduler === 'mh' ? IP_VS_SVC_F_SCHED_MH_PORT : 0, unfit: [] };
  let bits = 0;
  const unfit: SchedulerFlag[] = [];
  for (const flag of list) {
    const f = SCHEDULER_FLAGS[flag];
    if (f.scheduler === scheduler) bits |= f.bit;
    else if (service !== undefined) unfit.push(flag);
  }
  return { bits, unfit };
}

/** Multi-CNI: every endpoint was inside excludeClusterCIDRs, another CNI's proxy serves the port. */
function emptyPlan(sp: ServicePort, key: ServicePortKey): ServicePortPlan {
  return {
    key,
    family: sp.family,
    frontends: [],
    portEntries: [],
    localEndpoints: 0,
    noLocalEndpoints: { internal: false, external: false },
    refusals: [],
  };
}

/** The endpoints each kind of frontend sends to (kube-proxy syncEndpoint + CategorizeEndpoints). */
interface RealServerSelection {
  readonly cat: CategorizedEndpoints;
  readonly noLocal: boolean;
  /** ClusterIP */
  readonly internalRs: readonly RealServerSpec[];
  /** externalIPs, load-balancer VIPs, NodePorts */
  readonly externalRs: readonly RealServerSpec[];
}

function selectRealServers(eps: readonly Endpoint[], sp: ServicePort, ctx: PlanContext): RealServerSelection {
  const cat = categorizeEndpoints(eps, sp, ctx.nodeName, ctx.nodeZone);
  const noLocal = cat.local.length === 0;
  // iTP Local: local endpoints; with none, kube-proxy falls back to the cluster set too (which
  // is empty unless the port also takes external traffic, see usesClusterEndpoints)
  const internalEps = sp.internalPolicyLocal && !noLocal ? cat.local : cat.cluster;
  // eTP Local without a local endpoint falls back to cluster endpoints (PR #97081: pods on
  // this node can still reach the service; external clients' replies are dropped)
  const externalEps = sp.externalPolicyLocal && !noLocal ? cat.local : cat.cluster;
  return { cat, noLocal, internalRs: realServers(internalEps), externalRs: realServers(externalEps) };
}

/** One frontend while it is built: its set members keyed by "set member". */
interface FrontendDraft {
  readonly key: string;
  readonly virtualServer: DesiredFrontend['virtualServer'];
  readonly field: string;
  boundAddress?: string;
  readonly entries: Map<string, IpsetEntry>;
  lbOutFilter?: LbOutFilterEntry;
}

/** One service port's plan while it is built: the frontend helpers add to it, and refuse through it. */
class PlanDraft {
  /** by virtual server key, in the order planned */
  readonly frontends = new Map<string, FrontendDraft>();
  readonly refusals: Refusal[] = [];
  /** the members no single frontend owns */
  readonly portEntries = new Map<string, IpsetEntry>();
  readonly proto: IpsetProto;
  private readonly af: AddressFamily;
  private readonly scheduler: string;
  private readonly flags: number;

  constructor(
    readonly sp: ServicePort,
    readonly ctx: PlanContext,
    readonly key: ServicePortKey,
  ) {
    this.af = toAddressFamily(sp.family);
    this.proto = sp.protocol.toLowerCase() as IpsetProto;
    this.scheduler = sp.scheduler || ctx.scheduler || DEFAULT_SCHEDULER;
    let flags = 0;
    if (sp.stickyMaxAgeSeconds > 0) flags |= IP_VS_SVC_F.PERSISTENT;
    const sched = schedulerFlagBits(this.scheduler, sp.schedulerFlags, ctx.schedulerFlags);
    for (const flag of sched.unfit) {
      this.refuse(
        `metadata.annotations[${SCHEDULER_FLAGS_ANNOTATION}]`,
        flag,
        `a flag of the ${SCHEDULER_FLAGS[flag].scheduler} scheduler, and this Service's scheduler is ${this.scheduler}; programmed without it`,
      );
    }
    this.flags = flags | sched.bits;
  }

  vsSpec(address: string, port: number): VirtualServerSpec {
    return {
      af: this.af,
      protocol: IPPROTO[this.sp.protocol],
      address,
      port,
      fwmark: 0,
      scheduler: this.scheduler,
      flags: this.flags,
      timeout: this.sp.stickyMaxAgeSeconds,
      netmask: this.af === AF_INET ? 0xffffffff : 128,
    };
  }

  /** a member of the port as a whole */
  add(set: SetKey, member: IpsetMember): void {
    this.portEntries.set(`${set} ${member}`, { set, member });
  }

  /** The one refusal collector: every part of the Service this port does not program. */
  refuse(field: string, value: string, reason: string): void {
    const { namespace, name } = this.sp;
    this.refusals.push({ kind: 'Service', namespace, name, field, value, reason });
  }

  /**
   * The frontend at address:port, new; or the one this port already planned there (refused:
   * its members join that frontend, `isNew` is false).
   */
  frontend(
    address: string,
    port: number,
    rs: readonly RealServerSpec[],
    field: string,
    kind: FrontendType,
  ): { f: FrontendDraft; isNew: boolean } {
    const vs = this.vsSpec(address, port);
    const key = virtualServerKey(vs);
    const had = this.frontends.get(key);
    if (had) {
      this.refuse(field, address, `virtual server ${key} is already planned for this port; ignored`);
      return { f: had, isNew: false };
    }
    const f: FrontendDraft = {
      key,
      virtualServer: { vs, realServers: rs, owner: this.key, kind },
      field,
      entries: new Map(),
    };
    this.frontends.set(key, f);
    return { f, isNew: true };
  }
}

function addEntry(f: FrontendDraft, set: SetKey, member: IpsetMember): void {
  f.entries.set(`${set} ${member}`, { set, member });
}

/** hairpin: every local endpoint, whatever its state */
function planLoopBack(d: PlanDraft, eps: readonly Endpoint[]): void {
  for (const e of eps) if (e.isLocal) d.add('LOOP_BACK', entryIpPortIp(e.ip, d.proto, e.port, e.ip));
}

function planClusterIP(d: PlanDraft, rs: readonly RealServerSpec[]): void {
  const { clusterIP, port } = d.sp;
  const { f } = d.frontend(clusterIP, port, rs, 'spec.clusterIPs', 'ClusterIP');
  addEntry(f, 'CLUSTER_IP', entryIpPort(clusterIP, d.proto, port));
  f.boundAddress = clusterIP;
}

function planExternalIPs(d: PlanDraft, rs: readonly RealServerSpec[]): void {
  const { sp, ctx } = d;
  for (const ip of sp.externalIPs) {
    const { f, isNew } = d.frontend(ip, sp.port, rs, 'spec.externalIPs', 'ExternalIP');
    addEntry(f, sp.externalPolicyLocal ? 'EXTERNAL_IP_LOCAL' : 'EXTERNAL_IP', entryIpPort(ip, d.proto, sp.port));
    if (isNew && !ctx.localAddresses.has(ip)) f.boundAddress = ip;
  }
}

function planLoadBalancerIPs(d: PlanDraft, rs: readonly RealServerSpec[]): void {
  const { sp, ctx, proto } = d;
  // unreadable ranges: the firewall set holds the VIP and no range admits anybody
  const firewalled = sp.loadBalancerSourceRanges.length > 0 || sp.loadBalancerSourceRangesUnreadable;
  const nodeInRanges =
    sp.loadBalancerSourceRanges.length > 0 && ctx.nodeIPs.some(cidrMatcher(sp.loadBalancerSourceRanges));
  for (const ip of sp.loadBalancerIPs) {
    const { f, isNew } = d.frontend(ip, sp.port, rs, 'status.loadBalancer.ingress', 'LoadBalancer');
    const entry = entryIpPort(ip, proto, sp.port);
    addEntry(f, 'LOAD_BALANCER', entry);
    if (sp.externalPolicyLocal) addEntry(f, 'LOAD_BALANCER_LOCAL', entry);
    if (firewalled) {
      addEntry(f, 'LOAD_BALANCER_FW', entry);
      // 0.0.0.0/0 and ::/0 are held as two half ranges (ipset refuses a /0 net)
      for (const cidr of sp.loadBalancerSourceRanges)
        for (const m of entriesIpPortNet(ip, proto, sp.port, cidr)) addEntry(f, 'LOAD_BALANCER_SOURCE_CIDR', m);
      if (nodeInRanges) addEntry(f, 'LOAD_BALANCER_SOURCE_IP', entryIpPortIp(ip, proto, sp.port, ip));
      else f.lbOutFilter = { lbIP: ip, proto, port: sp.port };
    }
    if (isNew && !ctx.localAddresses.has(ip)) f.boundAddress = ip;
  }
}

function planNodePort(d: PlanDraft, rs: readonly RealServerSpec[]): void {
  const { sp, ctx, proto } = d;
  if (sp.nodePort === 0) return;
  const local = sp.externalPolicyLocal;
  if (sp.protocol !== 'SCTP') {
    const tcp = sp.protocol === 'TCP';
    d.add(tcp ? 'NODE_PORT_TCP' : 'NODE_PORT_UDP', entryPort(sp.nodePort));
    if (local) d.add(tcp ? 'NODE_PORT_LOCAL_TCP' : 'NODE_PORT_LOCAL_UDP', entryPort(sp.nodePort));
  }
  for (const ip of ctx.nodePortAddresses) {
    const { f } = d.frontend(ip, sp.nodePort, rs, 'spec.ports[].nodePort', 'NodePort');
    if (sp.protocol === 'SCTP') {
      addEntry(f, 'NODE_PORT_SCTP', entryIpPort(ip, proto, sp.nodePort));
      if (local) addEntry(f, 'NODE_PORT_LOCAL_SCTP', entryIpPort(ip, proto, sp.nodePort));
    }
  }
}

const sortedEntries = (m: ReadonlyMap<string, IpsetEntry>): IpsetEntry[] =>
  [...m.keys()].sort(byString).map((k) => m.get(k)!);

/** The draft as the plan the index expects. */
function finishPlan(d: PlanDraft, eps: readonly Endpoint[], sel: RealServerSelection): ServicePortPlan {
  const { sp } = d;
  const { cat, noLocal } = sel;
  const hasExternal = sp.externalIPs.length > 0 || sp.loadBalancerIPs.length > 0 || sp.nodePort !== 0;
  return {
    key: d.key,
    family: sp.family,
    frontends: [...d.frontends.keys()]
      .sort(byString)
      .map((k) => d.frontends.get(k)!)
      .map((f): DesiredFrontend => ({
        key: f.key,
        virtualServer: f.virtualServer,
        field: f.field,
        ...(f.boundAddress !== undefined ? { boundAddress: f.boundAddress } : {}),
        ipsetEntries: sortedEntries(f.entries),
        ...(f.lbOutFilter ? { lbOutFilter: f.lbOutFilter } : {}),
      })),
    portEntries: sortedEntries(d.portEntries),
    localEndpoints: new Set(eps.filter((e) => e.isLocal && e.ready).map((e) => e.ip)).size,
    noLocalEndpoints: {
      internal: sp.internalPolicyLocal && cat.hasAny && noLocal,
      external: sp.externalPolicyLocal && hasExternal && cat.hasAny && noLocal,
    },
    refusals: d.refusals,
  };
}

/** Weight 1, masquerade, one per ip:port, sorted by realServerKey (kube-proxy newDest). */
function realServers(endpoints: readonly Endpoint[]): RealServerSpec[] {
  const specs = endpoints.map((e): RealServerSpec => ({
    af: toAddressFamily(familyOfValidAddress(e.ip)),
    address: e.ip,
    port: e.port,
    fwdMethod: IP_VS_CONN_F.MASQ,
    weight: 1,
  }));
  const keys = specs.map(realServerKey);
  // the trackers hand endpoints over sorted by this key, one per key: then there is nothing to do
  let ordered = true;
  for (let i = 1; i < keys.length && ordered; i++) ordered = keys[i - 1]! < keys[i]!;
  if (ordered) return specs;
  const out = new Map<string, RealServerSpec>();
  specs.forEach((rs, i) => out.set(keys[i]!, rs));
  return [...out.keys()].sort(byString).map((k) => out.get(k)!);
}
