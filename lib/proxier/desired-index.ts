/**
 * The union of every service port's plan, kept up to date one Service at a time, so a partial
 * sync costs O(the changed Services) instead of re-planning the node (planFamilyState computes
 * the same union from scratch; a unit test pins the two together).
 *
 * Every claim on a frontend (one VIP:port/protocol) is settled here:
 * - a frontend ipvs.excludeCIDRs or a foreign virtual server withholds (plan/frontend-guard.ts)
 *   is given to no claimant: nothing of it is counted, and each claimant's Service is told;
 *   when the facts change (reguard) the frontend is given or taken back without re-planning;
 * - of the rest, every claimant per key is kept and the best claim wins the virtual server
 *   (plan/claim-rank.ts: a ClusterIP over a NodePort over a load-balancer IP over an
 *   externalIP, then the older Service, then ServicePortKey order); two Services claiming one
 *   VIP:port is a conflict the loser is told about;
 * - kube-ipvs0 addresses and ipset members: reference counts, since several service ports
 *   share a cluster IP, a NodePort set member or a source range;
 * - iptables: re-planned from the non-empty sets and the LB out-filter entries (cheap).
 */
import { LbOutFilterEntry, planIptables } from '../plan/iptables';
import { DesiredVirtualServer, IptablesOptions, DesiredFrontend, ServicePortPlan } from '../plan/service-plan';
import { FrontendFacts, Withholding, sameWithholding, withheldRefusal, withholding } from '../plan/frontend-guard';
import { IpFamily, fromAddressFamily } from '../model/ip-family';
import { SetKey, ipsetName } from '../model/names';
import { DesiredIpsets, DesiredSet, SYNCED_IPSET_INFO } from '../model/ipset';
import type { IpsetEntry } from '../plan/service-plan';
import { IptablesPlan } from '../model/iptables';
import { Refusal, ServiceName, ServicePort, ServicePortKey, parseServicePortKey } from '../model/service';
import { Claim, claimOf, compareClaims } from '../plan/claim-rank';

/** A virtual server claimed by more than one service port: the winner and the others, best first. */
export interface ClaimConflict {
  readonly key: string;
  readonly winner: Claim;
  readonly losers: readonly Claim[];
}

type Member = DesiredSet['members'] extends ReadonlySet<infer M> ? M : never;

class Counted<T> {
  readonly counts = new Map<T, number>();
  add(v: T): boolean {
    const n = this.counts.get(v) ?? 0;
    this.counts.set(v, n + 1);
    return n === 0;
  }
  remove(v: T): boolean {
    const n = this.counts.get(v) ?? 0;
    if (n <= 1) {
      this.counts.delete(v);
      return n === 1;
    }
    this.counts.set(v, n - 1);
    return false;
  }
}

interface FamilyIndex {
  /** set name -> the desired set whose `members` is kept live */
  readonly sets: Map<string, { type: DesiredSet['type']; family: IpFamily; members: Set<Member> }>;
  readonly memberCounts: Map<string, Counted<Member>>;
  readonly nameOf: Map<SetKey, string>;
  readonly ipvsIps: string;
  readonly lbOutFilter: Counted<string>;
}

/** The service ports that claim one frontend key, and whether the key is withheld from them all. */
interface FrontendClaims {
  /** why no claimant gets it (frontend-guard.ts); undefined: given to the best claim */
  withheld: Withholding | undefined;
  readonly claims: Map<ServicePortKey, DesiredFrontend>;
}

/** Nothing withheld. */
const NO_FACTS: FrontendFacts = { excludeCIDRs: [], foreign: () => undefined };

/** The union of every service port's plan, updated one Service at a time (see the file comment). */
export class DesiredIndex {
  /** frontend (virtual server) key -> its claims */
  private readonly frontends = new Map<string, FrontendClaims>();
  /** the service port each plan came from (a reference to the tracker's; ranks conflicting claims) */
  private readonly ports = new Map<ServicePortKey, ServicePort>();
  private readonly addresses = new Counted<string>();
  private readonly families = new Map<IpFamily, FamilyIndex>();
  /** families whose set members changed since takeIpsetsChanged */
  private readonly ipsetsChanged = new Set<IpFamily>();
  /** whether some address became wanted or unwanted on kube-ipvs0 since takeAddressesChanged */
  private addressesChanged = false;
  /** boundAddresses() until an address is wanted or unwanted: every full sync asks */
  private bound: Set<string> | undefined;
  /** virtualServers() until a claim changes: a full sync with nothing changed asks three times */
  private winners: Map<string, DesiredVirtualServer> | undefined;

  constructor(
    families: readonly IpFamily[],
    private readonly facts: FrontendFacts = NO_FACTS,
  ) {
    for (const family of families) {
      const sets = new Map<string, { type: DesiredSet['type']; family: IpFamily; members: Set<Member> }>();
      const memberCounts = new Map<string, Counted<Member>>();
      const nameOf = new Map<SetKey, string>();
      for (const info of SYNCED_IPSET_INFO) {
        const name = ipsetName(info.name, family);
        sets.set(name, { type: info.type, family, members: new Set() });
        memberCounts.set(name, new Counted());
        nameOf.set(info.key, name);
      }
      this.families.set(family, {
        sets,
        memberCounts,
        nameOf,
        ipvsIps: nameOf.get('IPVS_IPS')!,
        lbOutFilter: new Counted(),
      });
    }
  }

  /**
   * Replaces one Service's plans. Returns the virtual server keys whose desired state may
   * have changed (to diff against what was applied).
   */
  replace(
    before: readonly ServicePortPlan[],
    after: readonly ServicePortPlan[],
    ports: readonly ServicePort[] = [],
  ): Set<string> {
    const touched = new Set<string>();
    this.winners = undefined;
    // `ports[i]` is the service port `after[i]` was planned from
    for (const p of before) this.ports.delete(p.key);
    after.forEach((p, i) => {
      const sp = ports[i];
      if (sp) this.ports.set(p.key, sp);
    });
    // a withheld key is not touched: its virtual server is not kube-ipvs's to diff
    for (const p of before)
      for (const f of p.frontends) {
        const c = this.frontends.get(f.key);
        if (c && !c.withheld) touched.add(f.key);
        c?.claims.delete(p.key);
      }
    for (const p of after)
      for (const f of p.frontends) {
        let c = this.frontends.get(f.key);
        // a key claimed already keeps its withholding until reguard: every claimant shares it
        if (!c) this.frontends.set(f.key, (c = { withheld: this.guard(f), claims: new Map() }));
        c.claims.set(p.key, f);
        if (!c.withheld) touched.add(f.key);
      }
    // counts: the new plan's references first, so an address or member both plans hold never
    // drops to zero on the way (which would mark the sets and addresses changed and make a
    // one-endpoint sync diff every set and address of the node)
    for (const p of after) this.count(p, +1);
    for (const p of before) this.count(p, -1);
    for (const p of before)
      for (const f of p.frontends) if (this.frontends.get(f.key)?.claims.size === 0) this.frontends.delete(f.key);
    return touched;
  }

  /**
   * The facts that withhold frontends changed for `keys` (every key when undefined): each is
   * given or taken back from all its claimants, without re-planning. Adds the keys that
   * changed to `touched`; returns the Services (namespace/name) whose withheld frontends
   * changed, and the virtual servers of the claims just given.
   */
  reguard(
    keys: Iterable<string> | undefined,
    touched: Set<string>,
  ): { services: Set<ServiceName>; given: DesiredVirtualServer[] } {
    const services = new Set<ServiceName>();
    const given: DesiredVirtualServer[] = [];
    for (const key of keys ?? [...this.frontends.keys()]) {
      const c = this.frontends.get(key);
      const first = c?.claims.values().next().value;
      if (!c || !first) continue;
      const now = this.guard(first);
      if (sameWithholding(now, c.withheld)) continue;
      this.winners = undefined;
      if (!c.withheld) for (const f of c.claims.values()) this.countFrontend(f, -1);
      c.withheld = now;
      if (!now)
        for (const f of c.claims.values()) {
          this.countFrontend(f, +1);
          given.push(f.virtualServer);
        }
      touched.add(key);
      for (const k of c.claims.keys()) {
        const { namespace, name } = parseServicePortKey(k);
        services.add(`${namespace}/${name}`);
      }
    }
    return { services, given };
  }

  /** The virtual servers of the plans' frontends that are given (not withheld). */
  givenVirtualServers(plans: readonly ServicePortPlan[]): DesiredVirtualServer[] {
    return plans.flatMap((p) =>
      p.frontends.filter((f) => !this.frontends.get(f.key)?.withheld).map((f) => f.virtualServer),
    );
  }

  /** Whether some service port claims the frontend key (withheld or not). */
  claimed(key: string): boolean {
    return this.frontends.has(key);
  }

  /** The refusals of the plan's withheld frontends (frontend-guard.ts), in its frontend order. */
  withheldRefusals(p: ServicePortPlan): Refusal[] {
    const out: Refusal[] = [];
    for (const f of p.frontends) {
      const w = this.frontends.get(f.key)?.withheld;
      const r = w && withheldRefusal(p.key, f, w);
      if (r) out.push(r);
    }
    return out;
  }

  private guard(f: DesiredFrontend): Withholding | undefined {
    return withholding(f.key, f.virtualServer.vs.address, this.facts);
  }

  /** The service port's references to set members; its given frontends' too. */
  private count(p: ServicePortPlan, sign: 1 | -1): void {
    const fam = this.families.get(p.family);
    if (!fam) return;
    for (const e of p.portEntries) this.entry(fam, e, sign);
    for (const f of p.frontends) if (!this.frontends.get(f.key)?.withheld) this.countFrontend(f, sign);
  }

  /** One given frontend's kube-ipvs0 address, set members and LB out-filter entry. */
  private countFrontend(f: DesiredFrontend, sign: 1 | -1): void {
    const fam = this.families.get(fromAddressFamily(f.virtualServer.vs.af));
    if (!fam) return;
    const a = f.boundAddress;
    if (a !== undefined && (sign > 0 ? this.addresses.add(a) : this.addresses.remove(a))) {
      this.addressesChanged = true;
      this.bound = undefined;
      this.member(fam, fam.ipvsIps, a as unknown as Member, sign);
    }
    for (const e of f.ipsetEntries) this.entry(fam, e, sign);
    const o = f.lbOutFilter;
    if (o) {
      const k = JSON.stringify([o.lbIP, o.proto, o.port]);
      if (sign > 0) fam.lbOutFilter.add(k);
      else fam.lbOutFilter.remove(k);
    }
  }

  private entry(fam: FamilyIndex, e: IpsetEntry, sign: 1 | -1): void {
    const name = fam.nameOf.get(e.set);
    if (name) this.member(fam, name, e.member as unknown as Member, sign);
  }

  private member(fam: FamilyIndex, set: string, m: Member, sign: 1 | -1): void {
    const counted = fam.memberCounts.get(set)!;
    const members = fam.sets.get(set)!.members;
    if (sign > 0) {
      if (counted.add(m)) {
        members.add(m);
        this.ipsetsChanged.add(fam.sets.get(set)!.family);
      }
    } else if (counted.remove(m)) {
      members.delete(m);
      this.ipsetsChanged.add(fam.sets.get(set)!.family);
    }
  }

  /** The winning claim of a virtual server key (plan/claim-rank.ts). */
  virtualServer(key: string): DesiredVirtualServer | undefined {
    const c = this.frontends.get(key);
    if (!c || c.withheld) return undefined;
    if (c.claims.size === 1) return c.claims.values().next().value?.virtualServer;
    return c.claims.get(this.ranked(c)[0]!.key)?.virtualServer;
  }

  /** Every desired virtual server (withheld ones are not), by key; the same map until a claim changes. */
  virtualServers(): ReadonlyMap<string, DesiredVirtualServer> {
    if (this.winners) return this.winners;
    const out = new Map<string, DesiredVirtualServer>();
    for (const key of this.frontends.keys()) {
      const v = this.virtualServer(key);
      if (v) out.set(key, v);
    }
    return (this.winners = out);
  }

  /** The claims on one given virtual server key when more than one service port makes one. */
  conflict(key: string): ClaimConflict | undefined {
    const c = this.frontends.get(key);
    if (!c || c.withheld || c.claims.size < 2) return undefined;
    const [winner, ...losers] = this.ranked(c);
    return { key, winner: winner!, losers };
  }

  /** Every given virtual server claimed by more than one service port. */
  conflicts(): ClaimConflict[] {
    const out: ClaimConflict[] = [];
    for (const key of this.frontends.keys()) {
      const c = this.conflict(key);
      if (c) out.push(c);
    }
    return out;
  }

  private ranked(c: FrontendClaims): Claim[] {
    return [...c.claims].map(([k, f]) => claimOf(k, this.ports.get(k), f.virtualServer.kind)).sort(compareClaims);
  }

  /** Did the set of wanted kube-ipvs0 addresses change since the last call? (Then clears the mark.) */
  takeAddressesChanged(): boolean {
    const changed = this.addressesChanged;
    this.addressesChanged = false;
    return changed;
  }

  /** Every wanted kube-ipvs0 address; the same set until one is wanted or unwanted. */
  boundAddresses(): ReadonlySet<string> {
    return (this.bound ??= new Set(this.addresses.counts.keys()));
  }

  /** Did the family's set members change since the last call? (Then clears the mark.) */
  takeIpsetsChanged(family: IpFamily): boolean {
    return this.ipsetsChanged.delete(family);
  }

  /** The family's 17 sets; the member sets are live (copy them before keeping them). */
  ipsets(family: IpFamily): DesiredIpsets {
    return this.families.get(family)?.sets ?? new Map();
  }

  iptables(family: IpFamily, opts: IptablesOptions): IptablesPlan {
    const fam = this.families.get(family)!;
    const nonEmptySets = new Set<SetKey>();
    for (const [key, name] of fam.nameOf) if (fam.sets.get(name)!.members.size > 0) nonEmptySets.add(key);
    const lbOutFilter: LbOutFilterEntry[] = [...fam.lbOutFilter.counts.keys()]
      .sort()
      .map((k) => JSON.parse(k) as [string, LbOutFilterEntry['proto'], number])
      .map(([lbIP, proto, port]) => ({ lbIP, proto, port }));
    return planIptables({
      family,
      masqueradeBit: opts.masqueradeBit,
      masqueradeAll: opts.masqueradeAll,
      ...(opts.localDetector ? { localDetector: opts.localDetector } : {}),
      nonEmptySets,
      lbOutFilter,
      randomFully: opts.randomFully,
    });
  }
}
