/**
 * The union of every service port's plan, kept up to date one Service at a time, so a partial
 * sync costs O(the changed Services) instead of re-planning the node (planFamilyState computes
 * the same union from scratch; a unit test pins the two together).
 *
 * - virtual servers: every claimant per key; the best claim wins (plan/claim-rank.ts: a ClusterIP
 *   over a NodePort over a load-balancer IP over an externalIP, then the older Service, then
 *   ServicePortKey order); two Services claiming one VIP:port is a conflict the loser is told
 *   about;
 * - kube-ipvs0 addresses and ipset members: reference counts, since several service ports
 *   share a cluster IP, a NodePort set member or a source range;
 * - iptables: re-planned from the non-empty sets and the LB out-filter entries (cheap).
 */
import { virtualServerKey } from '../model/ipvs';
import { LbOutFilterEntry, planIptables } from '../plan/iptables';
import { DesiredVirtualServer, IptablesOptions, ServicePortPlan } from '../plan/service-plan';
import { IpFamily } from '../model/ip-family';
import { SetKey, ipsetName } from '../model/names';
import { DesiredIpsets, DesiredSet, IPSET_INFO, entryFrontend } from '../model/ipset';
import { IptablesPlan } from '../model/iptables';
import { ServicePort, ServicePortKey } from '../model/service';
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
  /** KUBE-IPVS-OWNED: one member per claimed virtual server key */
  readonly owned: string;
  readonly lbOutFilter: Counted<string>;
}

/** The union of every service port's plan, updated one Service at a time (see the file comment). */
export class DesiredIndex {
  private readonly claims = new Map<string, Map<string, DesiredVirtualServer>>();
  /** the service port each plan came from (a reference to the tracker's; ranks conflicting claims) */
  private readonly ports = new Map<ServicePortKey, ServicePort>();
  private readonly addresses = new Counted<string>();
  private readonly families = new Map<IpFamily, FamilyIndex>();
  /** families whose set members changed since takeIpsetsChanged */
  private readonly ipsetsChanged = new Set<IpFamily>();
  /** whether some address became wanted or unwanted on kube-ipvs0 since takeAddressesChanged */
  private addressesChanged = false;

  constructor(families: readonly IpFamily[]) {
    for (const family of families) {
      const sets = new Map<string, { type: DesiredSet['type']; family: IpFamily; members: Set<Member> }>();
      const memberCounts = new Map<string, Counted<Member>>();
      const nameOf = new Map<SetKey, string>();
      for (const info of IPSET_INFO) {
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
        owned: nameOf.get('IPVS_OWNED')!,
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
    // `ports[i]` is the service port `after[i]` was planned from
    for (const p of before) this.ports.delete(p.key);
    after.forEach((p, i) => {
      const sp = ports[i];
      if (sp) this.ports.set(p.key, sp);
    });
    for (const p of before) this.claim(p, -1, touched);
    for (const p of after) this.claim(p, +1, touched);
    // counts: the new plan's references first, so an address or member both plans hold never
    // drops to zero on the way (which would mark the sets and addresses changed and make a
    // one-endpoint sync diff every set and address of the node)
    for (const p of after) this.count(p, +1);
    for (const p of before) this.count(p, -1);
    return touched;
  }

  /** The service port's claims on its virtual servers (keyed by service port: remove before add). */
  private claim(p: ServicePortPlan, sign: 1 | -1, touched: Set<string>): void {
    for (const v of p.virtualServers) {
      const key = virtualServerKey(v.vs);
      touched.add(key);
      let c = this.claims.get(key);
      if (sign > 0) {
        if (!c) this.claims.set(key, (c = new Map()));
        c.set(p.key, v);
      } else if (c) {
        c.delete(p.key);
        if (c.size === 0) this.claims.delete(key);
      }
    }
  }

  /** The service port's references to kube-ipvs0 addresses, set members and LB out-filter entries. */
  private count(p: ServicePortPlan, sign: 1 | -1): void {
    const fam = this.families.get(p.family);
    if (!fam) return;
    for (const a of p.boundAddresses) {
      const changed = sign > 0 ? this.addresses.add(a) : this.addresses.remove(a);
      if (changed) {
        this.addressesChanged = true;
        this.member(fam, fam.ipvsIps, a as unknown as Member, sign);
      }
    }
    for (const e of p.ipsetEntries) {
      const name = fam.nameOf.get(e.set);
      if (name) this.member(fam, name, e.member as unknown as Member, sign);
    }
    // KUBE-IPVS-OWNED: every virtual server some plan claims (counted: claimants share a key)
    for (const v of p.virtualServers)
      if (v.vs.fwmark === 0) this.member(fam, fam.owned, entryFrontend(v.vs) as unknown as Member, sign);
    for (const e of p.lbOutFilter) {
      const k = JSON.stringify([e.lbIP, e.proto, e.port]);
      if (sign > 0) fam.lbOutFilter.add(k);
      else fam.lbOutFilter.remove(k);
    }
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
    const c = this.claims.get(key);
    if (!c) return undefined;
    if (c.size === 1) return c.values().next().value;
    return c.get(this.ranked(c)[0]!.key);
  }

  /** Every desired virtual server, by key. */
  virtualServers(): Map<string, DesiredVirtualServer> {
    const out = new Map<string, DesiredVirtualServer>();
    for (const key of this.claims.keys()) out.set(key, this.virtualServer(key)!);
    return out;
  }

  /** The claims on one virtual server key when more than one service port makes one. */
  conflict(key: string): ClaimConflict | undefined {
    const c = this.claims.get(key);
    if (!c || c.size < 2) return undefined;
    const [winner, ...losers] = this.ranked(c);
    return { key, winner: winner!, losers };
  }

  /** Every virtual server claimed by more than one service port. */
  conflicts(): ClaimConflict[] {
    const out: ClaimConflict[] = [];
    for (const key of this.claims.keys()) {
      const c = this.conflict(key);
      if (c) out.push(c);
    }
    return out;
  }

  private ranked(c: ReadonlyMap<string, DesiredVirtualServer>): Claim[] {
    return [...c].map(([k, v]) => claimOf(k, this.ports.get(k), v.kind)).sort(compareClaims);
  }

  /** Did the set of wanted kube-ipvs0 addresses change since the last call? (Then clears the mark.) */
  takeAddressesChanged(): boolean {
    const changed = this.addressesChanged;
    this.addressesChanged = false;
    return changed;
  }

  boundAddresses(): ReadonlySet<string> {
    return new Set(this.addresses.counts.keys());
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
