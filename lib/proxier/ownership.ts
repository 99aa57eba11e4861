/**
 * Which kernel virtual servers are kube-ipvs's to change or delete, and which of their
 * weight-0 real servers it may drain. Pure: the proxier hands in what it observed.
 *
 * Never ours: fwmark services and anything inside ipvs.excludeCIDRs, whatever else says so.
 * Ours: what is desired now; an ip:port in KUBE-CLUSTER-IP / EXTERNAL-IP / LOAD-BALANCER, or a
 * port in a KUBE-NODE-PORT-* set (what kube-proxy or an earlier kube-ipvs programmed, as the
 * kernel remembers it across a restart); only when the sets could not be read, a VIP bound on
 * kube-ipvs0 (kube-proxy binds every ClusterIP, external and LB VIP there). The address alone
 * is not enough when the sets say more: a tenant's externalIP on a foreign VIP, another port,
 * binds that address too. Everything else — keepalived's services on node IPs,
 * an admin's — is foreign: never created, changed, drained or deleted.
 */
import { VirtualServerId, realServerKey } from '../model/ipvs';
import { SetMembers, frontendTypeFromIpsets } from '../model/ipset-claims';
import { needsGracefulTermination } from '../reconcile/diff-ipvs';
import type { IpvsTable } from '../reconcile/ipvs-table';
import type { DesiredVirtualServer } from '../plan/service-plan';

export interface OwnershipFacts {
  /** inside ipvs.excludeCIDRs */
  readonly excluded: (address: string) => boolean;
  /** a Service wants this virtual server key now */
  readonly desired: (vsKey: string) => boolean;
  /** the addresses on kube-ipvs0 */
  readonly bound: ReadonlySet<string>;
  /** the kube-proxy sets as last read (undefined: not read) */
  readonly ipsets: SetMembers | undefined;
}

/** Why a virtual server is not kube-ipvs's, in words for a log line; null when it is. */
export function foreignReason(vsKey: string, vs: VirtualServerId, facts: OwnershipFacts): string | null {
  if (vs.fwmark > 0) return 'a fwmark service';
  if (facts.excluded(vs.address)) return 'inside ipvs.excludeCIDRs';
  if (facts.desired(vsKey)) return null;
  // the sets name ip,proto:port; kube-ipvs0 only the address, which a tenant's externalIP on a
  // foreign VIP (another port) would put there: bound counts only when no sets were read
  if (facts.ipsets === undefined) return facts.bound.has(vs.address) ? null : 'neither wanted by a Service nor bound on kube-ipvs0';
  if (frontendTypeFromIpsets(facts.ipsets, vs) !== null) return null;
  return 'neither wanted by a Service nor in a kube-proxy ipset';
}

export function ownsVirtualServer(vsKey: string, vs: VirtualServerId, facts: OwnershipFacts): boolean {
  return foreignReason(vsKey, vs, facts) === null;
}

export interface AdoptedDrains {
  /** [vsKey, rsKey] of every real server to drain */
  readonly drains: [string, string][];
  /** weight-0 real servers left alone, with why (one entry per virtual server) */
  readonly foreign: { readonly vsKey: string; readonly rsKeys: string[]; readonly reason: string }[];
}

/**
 * After a kernel read: the real servers kube-ipvs drains are the weight-0 TCP ones no Service
 * wants, of virtual servers it owns (a restarted kube-ipvs adopts the drains its predecessor
 * started). A weight-0 real server of a foreign virtual server (keepalived's
 * inhibit_on_failure backup, a backend an admin set to weight 0) is not a drain.
 */
export function adoptDrains(
  table: IpvsTable,
  desired: (vsKey: string) => DesiredVirtualServer | undefined,
  facts: OwnershipFacts,
): AdoptedDrains {
  const drains: [string, string][] = [];
  const foreign: { vsKey: string; rsKeys: string[]; reason: string }[] = [];
  for (const [vsKey, entry] of table) {
    if (!needsGracefulTermination(entry.vs.protocol)) continue;
    const want = desired(vsKey);
    let found: string[] | undefined;
    for (const rs of entry.values()) {
      if (rs.weight !== 0) continue;
      const rsKey = realServerKey(rs);
      if (want?.realServers.some((r) => realServerKey(r) === rsKey)) continue;
      (found ??= []).push(rsKey);
    }
    if (!found) continue;
    const reason = foreignReason(vsKey, entry.vs, facts);
    if (reason === null) for (const rsKey of found) drains.push([vsKey, rsKey]);
    else foreign.push({ vsKey, rsKeys: found, reason });
  }
  return { drains, foreign };
}
