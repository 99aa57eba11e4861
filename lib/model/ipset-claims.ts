/**
 * Which kube-proxy set names a virtual server (what kube-proxy or kube-ipvs programmed, as the
 * kernel remembers it): the proxier's ownership rule and `kube-ipvs service list`'s Service
 * type when only the kernel is there to ask. Pure.
 */
import { familyOfValidAddress } from './ip-family';
import { ipsetAddress } from './ipset';
import { PROTOCOL_NAMES, VirtualServerId, VirtualServerSpec } from './ipvs';
import { checkRecord, formatRecordedStates, recordedStateOf } from './ownership-record';
import { KUBE_SET_NAMES, SetName, ipsetName } from './names';
import type { FrontendType } from './views';

/** Sets by kernel name with their members in ipset's spelling (kernel/ipset IpsetState fits). */
export type SetMembers = ReadonlyMap<
  string,
  { readonly members: ReadonlySet<string>; readonly comments?: ReadonlyMap<string, string> }
>;

/**
 * The Service type the sets give a virtual server: its ip,proto:port in KUBE-CLUSTER-IP,
 * KUBE-LOAD-BALANCER, KUBE-EXTERNAL-IP(-LOCAL), or its port in a KUBE-NODE-PORT-* set
 * (SCTP: ip,sctp:port); null when no set names it (or for a fwmark service).
 */
export function frontendTypeFromIpsets(sets: SetMembers, vs: VirtualServerId): FrontendType | null {
  if (vs.fwmark > 0) return null;
  const family = familyOfValidAddress(vs.address);
  const proto = (PROTOCOL_NAMES[vs.protocol] ?? '').toLowerCase();
  const member = `${ipsetAddress(vs.address)},${proto}:${vs.port}`;
  const has = (base: (typeof SetName)[keyof typeof SetName], m: string) =>
    sets.get(ipsetName(base, family))?.members.has(m) ?? false;
  if (has(SetName.CLUSTER_IP, member)) return 'ClusterIP';
  if (has(SetName.LOAD_BALANCER, member)) return 'LoadBalancer';
  if (has(SetName.EXTERNAL_IP, member) || has(SetName.EXTERNAL_IP_LOCAL, member)) return 'ExternalIP';
  const port = String(vs.port);
  if (proto === 'tcp' && has(SetName.NODE_PORT_TCP, port)) return 'NodePort';
  if (proto === 'udp' && has(SetName.NODE_PORT_UDP, port)) return 'NodePort';
  if (proto === 'sctp' && has(SetName.NODE_PORT_SCTP, member)) return 'NodePort';
  return null;
}

/** Whether any KUBE-* set (kube-proxy's 17 or kube-ipvs's record, either family) exists. */
export function hasKubeSets(sets: SetMembers): boolean {
  for (const name of sets.keys()) if (KUBE_SET_NAMES.has(name)) return true;
  return false;
}

/**
 * What a Service wants at a virtual server's ip,proto:port, for the adoption read's
 * corroboration when there is no record: its frontend type, the real servers and scheduler
 * state it programs there.
 */
export interface AdoptionClaim {
  readonly kind: FrontendType;
  readonly vs: Pick<VirtualServerSpec, 'scheduler' | 'flags' | 'timeout'>;
  readonly realServers: readonly { readonly address: string }[];
}

/** A kernel virtual server as the adoption read sees it: its spec and its real servers' addresses. */
export interface AdoptionCandidate {
  readonly vs: VirtualServerSpec;
  readonly realServerAddresses: readonly string[];
}

/** What the kube-proxy sets (as first read) say of a virtual server: why they vouch, or null. */
function kubeProxySetsVouch(
  sets: SetMembers,
  vs: VirtualServerId,
  nodePortAddresses: ReadonlySet<string>,
): { readonly exact: boolean } | string {
  const family = familyOfValidAddress(vs.address);
  const proto = (PROTOCOL_NAMES[vs.protocol] ?? '').toLowerCase();
  const member = `${ipsetAddress(vs.address)},${proto}:${vs.port}`;
  const has = (base: (typeof SetName)[keyof typeof SetName], m: string) =>
    sets.get(ipsetName(base, family))?.members.has(m) ?? false;
  const exact = [
    SetName.CLUSTER_IP,
    SetName.LOAD_BALANCER,
    SetName.EXTERNAL_IP,
    SetName.EXTERNAL_IP_LOCAL,
    SetName.NODE_PORT_SCTP,
  ] as const;
  if (exact.some((b) => has(b, member))) return { exact: true };
  const port = String(vs.port);
  const portOnly =
    (proto === 'tcp' && has(SetName.NODE_PORT_TCP, port)) || (proto === 'udp' && has(SetName.NODE_PORT_UDP, port));
  if (portOnly && nodePortAddresses.has(vs.address)) return { exact: false };
  if (portOnly)
    return `a KUBE-NODE-PORT set holds port ${port}, but ${vs.address} is not one of this node's NodePort addresses`;
  return 'in no kube-proxy ipset';
}

/**
 * What a tenant cannot forge, for a virtual server kube-proxy's traces name when kube-ipvs has
 * no record (its first start after kube-proxy, or after the record was destroyed): null when it
 * is there, else why not. A ClusterIP is allocated by the API server from the Service ranges
 * (a tenant cannot place one on keepalived's VIP). Any other frontend (a NodePort port, an
 * externalIP: tenants choose both) must also look like what kube-proxy programmed for the
 * Service claiming it: one of its real servers is one of that Service's endpoints (tenants
 * cannot write EndpointSlices under Kubernetes' default RBAC), or it has no real server or only
 * pods (inside clusterCIDR) and the scheduler, flags and timeout the claim programs.
 */
function corroboration(
  c: AdoptionCandidate,
  claim: AdoptionClaim | undefined,
  inClusterCidr: (address: string) => boolean,
): string | null {
  if (claim?.kind === 'ClusterIP') return null;
  if (!claim) return 'no Service claims it';
  const endpoints = new Set(claim.realServers.map((r) => r.address));
  if (c.realServerAddresses.some((a) => endpoints.has(a))) return null;
  const want = recordedStateOf(claim.vs);
  const have = recordedStateOf(c.vs);
  const sameState = want.scheduler === have.scheduler && want.flags === have.flags && want.timeout === have.timeout;
  if (sameState && c.realServerAddresses.every(inClusterCidr)) return null;
  return c.realServerAddresses.length === 0
    ? `it has no real server and its scheduler state ${formatRecordedStates([have])} is not the ${formatRecordedStates([want])} ${claim.kind} ${c.vs.address} would get`
    : `none of its real servers (${c.realServerAddresses.slice(0, 3).join(', ')}${c.realServerAddresses.length > 3 ? ', ...' : ''}) is an endpoint of the Service claiming it`;
}

/**
 * At the adoption read (kube-ipvs's first full sync: after a restart, or after kube-proxy), why
 * the sets as first read do not make a virtual server kube-ipvs's; null when they do:
 *  - the family has a record (KUBE-IPVS-OWNED): it alone decides. Its member for the exact
 *    ip,proto:port must be there, and its comment true of the kernel's scheduler, flags and
 *    timeout (model/ownership-record.ts checkRecord): a virtual server another program made at
 *    an ip:port kube-ipvs once had is not taken over (a record without comments, an earlier
 *    kube-ipvs's, is taken at its word);
 *  - no record, and `claims` given (the daemon): kube-proxy's traces (a set naming the exact
 *    ip,proto:port; the port-only KUBE-NODE-PORT-TCP/UDP for one of this node's NodePort
 *    addresses) AND what a tenant cannot forge (corroboration above); a ClusterIP frontend or a
 *    KUBE-CLUSTER-IP member is enough alone;
 *  - no record and no `claims` (`kube-ipvs cleanup`, which only deletes, as kube-proxy's own
 *    cleanup would): kube-proxy's traces alone.
 */
function adoptionReason(
  e: OwnershipEvidence,
  sets: SetMembers,
  c: AdoptionCandidate,
  claim: AdoptionClaim | undefined,
): string | null {
  const vs = c.vs;
  if (vs.fwmark > 0) return 'a fwmark service';
  const family = familyOfValidAddress(vs.address);
  const proto = (PROTOCOL_NAMES[vs.protocol] ?? '').toLowerCase();
  const member = `${ipsetAddress(vs.address)},${proto}:${vs.port}`;
  const recordName = ipsetName(SetName.IPVS_OWNED, family);
  const record = sets.get(recordName);
  if (record) {
    if (!record.members.has(member)) return `not in kube-ipvs's record of the frontends it programmed (${recordName})`;
    const check = checkRecord(record.comments?.get(member), { flags: 0, timeout: 0, ...vs });
    if (check === 'match' || check === 'legacy') return null;
    return `kube-ipvs's record (${recordName}) says it programmed ${check.recorded} there, and the kernel holds ${formatRecordedStates([recordedStateOf(vs)])}: another program made it since`;
  }
  // a ClusterIP comes from the API server's Service ranges: no kube-proxy trace is needed
  if (e.claims && claim?.kind === 'ClusterIP') return null;
  const vouch = kubeProxySetsVouch(sets, vs, e.nodePortAddresses);
  if (typeof vouch === 'string') return vouch;
  if (!e.claims) return null;
  if (sets.get(ipsetName(SetName.CLUSTER_IP, family))?.members.has(member)) return null;
  const why = corroboration(c, claim, e.inClusterCidr ?? (() => false));
  return why === null ? null : `no ownership record (${recordName}), and ${why}`;
}

/** What the kernel says of who programmed a virtual server, as read before anything changes it. */
export interface OwnershipEvidence {
  /** the KUBE-* sets (undefined: they could not be read) */
  readonly ipsets: SetMembers | undefined;
  /** the addresses bound on kube-ipvs0 */
  readonly bound: ReadonlySet<string>;
  /** this node's NodePort addresses, both families */
  readonly nodePortAddresses: ReadonlySet<string>;
  /** the daemon: what the Services want at a virtual server key (absent: `kube-ipvs cleanup`) */
  readonly claims?: (vsKey: string) => AdoptionClaim | undefined;
  /** inside the cluster's pod CIDRs (clusterCIDR) */
  readonly inClusterCidr?: (address: string) => boolean;
}

/**
 * Why the evidence does not make a kernel virtual server kube-proxy's or kube-ipvs's, in words;
 * null when it does: the sets (adoptionReason), or, only when no KUBE-* set exists at all (or
 * they could not be read), an address bound on kube-ipvs0 (kube-proxy's own rule: it binds
 * every ClusterIP, external and LB VIP there) with, for the daemon, the corroboration a tenant
 * cannot forge. kube-proxy and kube-ipvs create every set on every sync, so with one present,
 * kube-ipvs0 vouches for nothing: a tenant's externalIP on a foreign VIP would have put that
 * address there. The daemon's adoption read (proxier/ownership.ts) and `kube-ipvs cleanup`
 * decide by this one rule.
 */
export function unownedReason(e: OwnershipEvidence, vsKey: string, c: AdoptionCandidate): string | null {
  const claim = e.claims?.(vsKey);
  if (e.ipsets === undefined || !hasKubeSets(e.ipsets)) {
    const why = !e.bound.has(c.vs.address)
      ? e.ipsets === undefined
        ? 'its address not bound on kube-ipvs0 (the ipsets could not be read)'
        : 'no KUBE-* ipset in the kernel and its address not bound on kube-ipvs0'
      : null;
    if (why !== null || !e.claims) return why;
    const more = corroboration(c, claim, e.inClusterCidr ?? (() => false));
    return more === null ? null : `no ownership record, and ${more}`;
  }
  return adoptionReason(e, e.ipsets, c, claim);
}
