/**
 * Which kernel virtual servers are kube-ipvs's to change or delete, and which of their
 * weight-0 real servers it may drain. Pure: the proxier hands in what it observed.
 *
 * Never ours: fwmark services and anything inside ipvs.excludeCIDRs, whatever else says so.
 * Otherwise a virtual server is classified once, when a full sync first finds it in the kernel
 * (firstSightReason), and remembered for as long as it exists there:
 *  - ours when kube-ipvs created it (its own op went through, or its result was lost);
 *  - at the adoption read (kube-ipvs's first, after a restart or after kube-proxy), ours when
 *    the sets as first read vouch for its exact ip,proto:port (model/ipset-claims.ts
 *    adoptionReason): kube-ipvs's own record KUBE-IPVS-OWNED of every frontend it programmed,
 *    or a kube-proxy set naming an ip:port; a port-only KUBE-NODE-PORT-TCP/UDP only on a node
 *    with no record (kube-proxy's), and only for this node's NodePort addresses. Only when no
 *    KUBE-* set exists at all (or the sets could not be read), a VIP bound on kube-ipvs0
 *    (kube-proxy's own rule: it binds every ClusterIP, external and LB VIP there);
 *  - foreign otherwise — keepalived's services on node IPs, an admin's — even when a Service
 *    wants its ip:port: "a Service wants it" never makes it ours (a tenant's externalIP would
 *    take it over). kube-ipvs writes the sets and kube-ipvs0 itself, so only the adoption read's
 *    copy counts: after it, a virtual server kube-ipvs did not create is foreign.
 * Foreign: never created, changed, drained or deleted; a Service claiming its ip:port is
 * refused that frontend (plan-service-port.ts, ForeignVirtualServer).
 */
import { VirtualServerId, realServerKey } from '../model/ipvs';
import { AdoptionCandidate, OwnershipEvidence, unownedReason } from '../model/ipset-claims';
import { needsGracefulTermination } from '../reconcile/diff-ipvs';
import type { IpvsTable, TableEntry } from '../reconcile/ipvs-table';
import type { DesiredVirtualServer } from '../plan/service-plan';

/** What decides whether a virtual server is kube-ipvs's: excludeCIDRs and the foreign ones seen. */
export interface OwnershipFacts {
  /** inside ipvs.excludeCIDRs */
  readonly excluded: (address: string) => boolean;
  /** why a virtual server was classified foreign when first seen; undefined when it is ours */
  readonly foreign: (vsKey: string) => string | undefined;
}

/** Why a virtual server is not kube-ipvs's, in words for a log line; null when it is. */
export function foreignReason(vsKey: string, vs: VirtualServerId, facts: OwnershipFacts): string | null {
  if (vs.fwmark > 0) return 'a fwmark service';
  if (facts.excluded(vs.address)) return 'inside ipvs.excludeCIDRs';
  return facts.foreign(vsKey) ?? null;
}

/** Is the virtual server kube-ipvs's (see foreignReason)? */
export function ownsVirtualServer(vsKey: string, vs: VirtualServerId, facts: OwnershipFacts): boolean {
  return foreignReason(vsKey, vs, facts) === null;
}

/** What kube-ipvs knows when a full sync finds a virtual server it had not seen before. */
export interface FirstSightFacts {
  /** kube-ipvs created it (its newService went through, or the socket failed before the answer) */
  readonly created: (vsKey: string) => boolean;
  /**
   * at the adoption read only: the KUBE-* sets (undefined: not read), kube-ipvs0's addresses
   * and this node's NodePort addresses (both families), as first read
   */
  readonly adoption?: OwnershipEvidence;
}

/** Why a virtual server seen for the first time is foreign, in words; null when it is kube-ipvs's. */
export function firstSightReason(vsKey: string, entry: TableEntry, facts: FirstSightFacts): string | null {
  if (facts.created(vsKey)) return null;
  const a = facts.adoption;
  if (!a) return 'it appeared in the kernel after kube-ipvs adopted the table, and kube-ipvs did not create it';
  const why = unownedReason(a, vsKey, adoptionCandidate(entry));
  return why === null ? null : `found when kube-ipvs started: ${why}`;
}

/** A kernel virtual server as the adoption rule reads it. */
export function adoptionCandidate(entry: TableEntry): AdoptionCandidate {
  const realServerAddresses: string[] = [];
  for (const rs of entry.values()) realServerAddresses.push(rs.address);
  return { vs: entry.vs, realServerAddresses };
}

/** The weight-0 real servers a full sync adopts as drains, and those it leaves alone. */
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
  // forEach, not for-of: no [key, value] array per entry (a full sync runs this over the whole table)
  table.forEach((entry, vsKey) => {
    if (!needsGracefulTermination(entry.vs.protocol)) return;
    const want = desired(vsKey);
    let found: string[] | undefined;
    for (const rs of entry.values()) {
      if (rs.weight !== 0) continue;
      const rsKey = realServerKey(rs);
      if (want?.realServers.some((r) => realServerKey(r) === rsKey)) continue;
      (found ??= []).push(rsKey);
    }
    if (!found) return;
    const reason = foreignReason(vsKey, entry.vs, facts);
    if (reason === null) for (const rsKey of found) drains.push([vsKey, rsKey]);
    else foreign.push({ vsKey, rsKeys: found, reason });
  });
  return { drains, foreign };
}
