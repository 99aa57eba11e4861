/**
 * What the proxier knows of the node it runs on: the settings and the Node object, the
 * addresses a full sync observes (kube-ipvs0's, the other links', the ipsets as read), the
 * per-family plan contexts made from them, and which kernel virtual servers are not
 * kube-ipvs's (the ownership rule is pure, in ownership.ts; the memory of what was classified
 * foreign, and the adoption read's facts, live here).
 */
import { IpsetState } from '../kernel/ipset/ipset';
import { KUBE_IPVS0, Link, isNoDevice } from '../kernel/link/link';
import { LinkAddress } from '../model/link';
import { ensureDummyDevice } from '../kernel/link/dummy-device';
import { selectNodePortAddresses } from '../kernel/link/node-addresses';
import { VirtualServerId, describeVirtualServer } from '../model/ipvs';
import { cidrMatcher } from '../model/address';
import { IpFamily, familyOfValidAddress } from '../model/ip-family';
import { ServicePort, TrackedService } from '../model/service';
import { LocalDetector } from '../plan/iptables';
import { IptablesOptions, PlanContext, ServicePortPlan } from '../plan/service-plan';
import { FrontendFacts } from '../plan/frontend-guard';
import { IpvsTable } from '../reconcile/ipvs-table';
import { FirstSightFacts, OwnershipFacts, firstSightReason } from './ownership';
import type { AdoptionClaim } from '../model/ipset-claims';
import { NodeState, PartDeps, ProxierSettings } from './types';

/** kube-ipvs0's addresses and every other link's, as one read of the node finds them. */
export interface NodeAddresses {
  readonly bound: Set<string>;
  readonly local: LinkAddress[];
}

/**
 * Reads the node's addresses, both families (one rtnetlink dump each): those on the link
 * `dummyIndex` (kube-ipvs0) are bound, the rest local. The full sync and the dry run share it.
 */
export async function readNodeAddresses(
  link: Link,
  dummyIndex: number | undefined,
  counts?: { linkOps: number },
): Promise<NodeAddresses> {
  const bound = new Set<string>();
  const local: LinkAddress[] = [];
  for (const f of ['ipv4', 'ipv6'] as const) {
    if (counts) counts.linkOps++;
    for (const a of await link.listAddresses(f)) a.ifindex === dummyIndex ? bound.add(a.address) : local.push(a);
  }
  return { bound, local };
}

/** kube-ipvs0's index without creating it (undefined when it does not exist). */
export async function findKubeIpvs0(link: Link): Promise<number | undefined> {
  try {
    return (await link.getLink(KUBE_IPVS0)).index;
  } catch (e) {
    if (!isNoDevice(e)) throw e;
    return undefined;
  }
}

type NodeDeps = Pick<PartDeps, 'link' | 'ipsets' | 'source' | 'planner' | 'log' | 'serviceHealth' | 'randomFully'>;

/** What the proxier knows of its node (see the file comment). */
export class NodeContext {
  private settingsNow: ProxierSettings;
  private nodeNow: NodeState;
  /** inside ipvs.excludeCIDRs: never touched */
  private excludedNow: (address: string) => boolean;
  private localAddressesNow: LinkAddress[] = [];
  /** the node's addresses have been read once (before that, no address is known, not none) */
  private addressesRead = false;
  private contextsNow = new Map<IpFamily, PlanContext>();
  /** the plan contexts as text: a full sync re-plans every Service only when they changed */
  private contextsText = '';
  private observedIpsets_: IpsetState | undefined;
  /**
   * virtual servers a full sync found in the kernel that were not kube-ipvs's when first seen
   * (vsKey -> why), for as long as they exist there (ownership.ts); the frontend facts: no
   * Service gets one
   */
  private readonly foreign = new Map<string, string>();
  /** what withholds frontends (plan/frontend-guard.ts), read live by the desired index */
  readonly frontendFacts: FrontendFacts;
  /** whether a full sync has classified the kernel's table once (the adoption read) */
  private adopted = false;
  /** the kube-proxy sets and kube-ipvs0's addresses as first read, until the adoption read */
  private adoptionFacts: FirstSightFacts['adoption'];

  constructor(
    private readonly deps: NodeDeps,
    settings: ProxierSettings,
    node: NodeState,
  ) {
    this.settingsNow = settings;
    this.nodeNow = node;
    this.excludedNow = cidrMatcher(settings.excludeCIDRs);
    const self = this;
    this.frontendFacts = {
      get excludeCIDRs() {
        return self.settingsNow.excludeCIDRs;
      },
      foreign: (k) => this.foreign.get(k),
    };
  }

  get settings(): ProxierSettings {
    return this.settingsNow;
  }

  get node(): NodeState {
    return this.nodeNow;
  }

  /** the sets as the last full sync read them (undefined: not read) */
  get observedIpsets(): IpsetState | undefined {
    return this.observedIpsets_;
  }

  get localAddresses(): readonly LinkAddress[] {
    return this.localAddressesNow;
  }

  get excluded(): (address: string) => boolean {
    return this.excludedNow;
  }

  /** New settings; the caller's full sync rebuilds the plan contexts from them. */
  setSettings(settings: ProxierSettings): void {
    this.settingsNow = settings;
    this.excludedNow = cidrMatcher(settings.excludeCIDRs);
  }

  /** A new Node object; rebuildContexts() makes the plan contexts from it. */
  setNode(node: NodeState): void {
    this.nodeNow = node;
  }

  /**
   * A full sync's read of the node: kube-ipvs0 (created if missing), bound and local addresses,
   * the first family's ipsets. Returns kube-ipvs0's index and addresses, and whether the plan
   * contexts changed.
   */
  async observe(counts: {
    linkOps: number;
    execs: number;
  }): Promise<{ dummyIndex: number; bound: Set<string>; contextsChanged: boolean }> {
    const { link, ipsets, log } = this.deps;
    const dummy = await ensureDummyDevice(link, KUBE_IPVS0);
    counts.linkOps += dummy.created ? 3 : 1;
    if (dummy.created) log.info(`created dummy link ${KUBE_IPVS0}`);
    const { bound, local } = await readNodeAddresses(link, dummy.link.index, counts);
    this.localAddressesNow = local;
    this.addressesRead = true;
    const contextsChanged = this.rebuildContexts();
    const families = this.settingsNow.families;
    const nodePortAddresses = this.nodePortAddresses();
    if (!this.adopted && !this.adoptionFacts && !ipsets[families[0] ?? 'ipv4'])
      this.adoptionFacts = { ipsets: undefined, bound, nodePortAddresses };
    // the ipset state that says which NodePorts / external VIPs kube-proxy or kube-ipvs programmed
    const fam = families[0];
    const ipset = fam ? ipsets[fam] : undefined;
    if (ipset) {
      const observed = await ipset.observeCounted();
      this.observedIpsets_ = observed.state;
      counts.execs += observed.execs;
      // the adoption read classifies by the sets as first read: later, kube-ipvs wrote them
      if (!this.adopted && !this.adoptionFacts)
        this.adoptionFacts = { ipsets: observed.state, bound, nodePortAddresses };
      // another family's instance (if it is another one) must not sync against an old baseline
      for (const f of families.slice(1)) if (ipsets[f] !== ipset) ipsets[f]?.invalidate();
    }
    return { dummyIndex: dummy.link.index, bound, contextsChanged };
  }

  /**
   * The plan contexts over the current local addresses; tells the health check servers where
   * to listen. Returns whether they changed (then every Service must be re-planned).
   */
  rebuildContexts(): boolean {
    const s = this.settingsNow;
    const npAll = selectNodePortAddresses(this.localAddressesNow, s.nodePortAddresses, this.nodeNow.nodeIPs);
    // kube-proxy's health check servers listen on every address unless nodePortAddresses
    // narrows them (NodePortAddresses.MatchAll: unset, or a 0.0.0.0/0 or ::/0 entry)
    const matchAll = s.nodePortAddresses.length === 0 || s.nodePortAddresses.some((c) => /\/0$/.test(c));
    const proxied = (a: string) => s.families.includes(familyOfValidAddress(a));
    // (a Node object that arrives before the first read of the addresses would else announce
    // that no address matches)
    if (this.addressesRead)
      this.deps.serviceHealth?.setNodePortAddresses?.(matchAll ? undefined : npAll.filter(proxied));
    this.contextsNow = this.planContexts(this.localAddressesNow);
    // with excludeCIDRs: a change of them re-guards every frontend (Proxier.planPhase)
    const text = JSON.stringify([
      s.excludeCIDRs,
      ...[...this.contextsNow.values()].map((c) => ({ ...c, localAddresses: [...c.localAddresses].sort() })),
    ]);
    const changed = text !== this.contextsText;
    this.contextsText = text;
    return changed;
  }

  /** The per-family planning context over these local addresses (those of links but kube-ipvs0). */
  planContexts(localAddresses: readonly LinkAddress[]): Map<IpFamily, PlanContext> {
    const s = this.settingsNow;
    const local = new Set(localAddresses.map((a) => a.address));
    const npAll = selectNodePortAddresses(localAddresses, s.nodePortAddresses, this.nodeNow.nodeIPs);
    const contexts = new Map<IpFamily, PlanContext>();
    for (const family of s.families) {
      const ofFamily = (a: string) => familyOfValidAddress(a) === family;
      contexts.set(family, {
        family,
        scheduler: s.scheduler,
        ...(s.schedulerFlags ? { schedulerFlags: s.schedulerFlags } : {}),
        nodeName: this.nodeNow.name,
        nodeZone: this.nodeNow.zone,
        nodePortAddresses: npAll.filter(ofFamily),
        localAddresses: local,
        nodeIPs: this.nodeNow.nodeIPs.filter(ofFamily),
        excludeClusterCIDRs: s.excludeClusterCIDRs.filter(ofFamily),
      });
    }
    return contexts;
  }

  /** Plans one Service's ports in the families this node runs (and returns those ports). */
  planService(
    service: TrackedService,
    contexts: ReadonlyMap<IpFamily, PlanContext> = this.contextsNow,
  ): { ports: ServicePort[]; plans: ServicePortPlan[] } {
    const ports: ServicePort[] = [];
    const plans: ServicePortPlan[] = [];
    for (const { port, endpoints } of service.ports) {
      const ctx = contexts.get(port.family);
      if (!ctx) continue; // a family this node does not run
      ports.push(port);
      plans.push(this.deps.planner.planServicePort(port, endpoints, ctx));
    }
    return { ports, plans };
  }

  iptablesOptions(family: IpFamily): IptablesOptions {
    const s = this.settingsNow;
    const ofFamily = (c: string) => familyOfValidAddress(c) === family;
    let localDetector: LocalDetector | undefined;
    switch (s.detectLocalMode) {
      case 'ClusterCIDR': {
        const cidr = s.clusterCIDRs.find(ofFamily);
        if (cidr) localDetector = { kind: 'ClusterCIDR', cidr };
        break;
      }
      case 'NodeCIDR': {
        const cidr = this.nodeNow.podCIDRs.find(ofFamily);
        if (cidr) localDetector = { kind: 'NodeCIDR', cidr };
        break;
      }
      case 'BridgeInterface':
        if (s.bridgeInterface) localDetector = { kind: 'BridgeInterface', iface: s.bridgeInterface };
        break;
      case 'InterfaceNamePrefix':
        if (s.interfaceNamePrefix) localDetector = { kind: 'InterfaceNamePrefix', prefix: s.interfaceNamePrefix };
        break;
    }
    return {
      masqueradeBit: s.masqueradeBit,
      masqueradeAll: s.masqueradeAll,
      randomFully: this.deps.randomFully?.[family] ?? false,
      ...(localDetector ? { localDetector } : {}),
    };
  }

  // ---- ownership (the rule is ownership.ts; what was classified is remembered here) ----

  /** What decides ownership now (lib/proxier/ownership.ts). */
  ownershipFacts(): OwnershipFacts {
    return { excluded: this.excludedNow, foreign: (k) => this.foreign.get(k) };
  }

  isForeign(vsKey: string): boolean {
    return this.foreign.has(vsKey);
  }

  /**
   * What classifies a virtual server seen for the first time: `created` by kube-ipvs, or, before
   * the adoption read, named by the sets (or kube-ipvs0's addresses) as first read. `bound`
   * replaces those addresses (the dry run's own read).
   */
  firstSightFacts(
    created: (vsKey: string) => boolean,
    claims: (vsKey: string) => AdoptionClaim | undefined,
    bound?: Set<string>,
  ): FirstSightFacts {
    if (this.adopted) return { created };
    const inClusterCidr = cidrMatcher(this.settingsNow.clusterCIDRs);
    const first =
      bound === undefined
        ? this.adoptionFacts
        : { ipsets: this.observedIpsets_, bound, nodePortAddresses: this.nodePortAddresses() };
    return { created, ...(first ? { adoption: { ...first, claims, inClusterCidr } } : {}) };
  }

  /** This node's NodePort addresses now, every family it runs (from the plan contexts). */
  private nodePortAddresses(): Set<string> {
    return new Set([...this.contextsNow.values()].flatMap((c) => c.nodePortAddresses));
  }

  /**
   * Whether `wanted` holds a virtual server whose ownership the kernel has yet to tell: one not
   * `known` (in the table kube-ipvs knows), which at the adoption read no kube-proxy set (or
   * kube-ipvs0 address) already vouches for.
   */
  wantsUnknown(
    wanted: ReadonlyMap<string, { readonly vs: VirtualServerId }>,
    known: (vsKey: string) => boolean,
  ): boolean {
    let unknown = false;
    // forEach, not for-of: no [key, value] array per entry (every full sync, all known)
    // (at the adoption read nothing is known: the rule needs the kernel's own entry)
    wanted.forEach((_d, k) => {
      if (unknown || known(k)) return;
      unknown = true;
    });
    return unknown;
  }

  /**
   * Classifies what a full sync read (ownership.ts): every virtual server not `seen` before is
   * kube-ipvs's or foreign from now on, as long as it exists; a foreign one that is gone is
   * forgotten. Returns the newly foreign ones `wanted` by a Service (`claimed`) and the
   * forgotten ones (`gone`). Logs each newly foreign virtual server once.
   */
  classifyTable(
    observed: IpvsTable,
    seen: (vsKey: string) => boolean,
    created: (vsKey: string) => boolean,
    wanted: (vsKey: string) => AdoptionClaim | undefined,
  ): { claimed: string[]; gone: string[] } {
    const facts = this.firstSightFacts(created, wanted);
    const claimed: string[] = [];
    const gone: string[] = [];
    observed.forEach((e, k) => {
      // seen before: classified then (kube-ipvs's unless remembered foreign)
      if (this.foreign.has(k) || seen(k)) return;
      const why = firstSightReason(k, e, facts);
      if (why === null) return;
      this.markForeign(k, e.vs, why);
      if (wanted(k) !== undefined) claimed.push(k);
    });
    for (const k of [...this.foreign.keys()]) {
      if (observed.has(k)) continue;
      this.foreign.delete(k);
      gone.push(k);
      this.deps.log.info(`foreign virtual server ${k} is gone from the kernel: a Service may program it now`, {
        virtualServer: k,
      });
    }
    this.adopted = true;
    this.adoptionFacts = undefined;
    return { claimed, gone };
  }

  /** Remembers a virtual server as not kube-ipvs's, with one log line. */
  markForeign(vsKey: string, vs: VirtualServerId, why: string): void {
    this.foreign.set(vsKey, why);
    this.deps.log.info(
      `virtual server ${describeVirtualServer(vs)} is not kube-ipvs's (${why}): it is never changed or deleted, and no Service gets it while it exists`,
      { virtualServer: vsKey },
    );
  }
}
