/**
 * Which kube-proxy set names a virtual server (what kube-proxy or kube-ipvs programmed, as the
 * kernel remembers it): the proxier's ownership rule and `kube-ipvs service list`'s Service
 * type when only the kernel is there to ask. Pure.
 */
import { isIPv4 } from 'node:net';
import { IpFamily } from './ip-family';
import { ipsetAddress } from './ipset';
import { PROTOCOL_NAMES, VirtualServerId } from './ipvs';
import { KUBE_SET_NAMES, SetName, ipsetName } from './names';
import type { FrontendType } from './views';

/** Sets by kernel name with their members in ipset's spelling (kernel/ipset IpsetState fits). */
export type SetMembers = ReadonlyMap<string, { readonly members: ReadonlySet<string> }>;

/**
 * The Service type the sets give a virtual server: its ip,proto:port in KUBE-CLUSTER-IP,
 * KUBE-LOAD-BALANCER, KUBE-EXTERNAL-IP(-LOCAL), or its port in a KUBE-NODE-PORT-* set
 * (SCTP: ip,sctp:port); null when no set names it (or for a fwmark service).
 */
export function frontendTypeFromIpsets(sets: SetMembers, vs: VirtualServerId): FrontendType | null {
  if (vs.fwmark > 0) return null;
  const family: IpFamily = isIPv4(vs.address) ? 'ipv4' : 'ipv6';
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
 * At the adoption read (kube-ipvs's first full sync: after a restart, or after kube-proxy), why
 * the sets as first read do not make a virtual server kube-ipvs's; null when they do:
 *  - kube-ipvs's record KUBE-IPVS-OWNED names its exact ip,proto:port (kube-ipvs programmed it);
 *  - a kube-proxy set naming an exact ip,proto:port names it (CLUSTER-IP, LOAD-BALANCER,
 *    EXTERNAL-IP(-LOCAL), NODE-PORT-SCTP-HASH): kube-proxy (or kube-ipvs) programmed it;
 *  - only when the family has no record (kube-proxy ran here, or a kube-ipvs without one): the
 *    port-only KUBE-NODE-PORT-TCP/UDP hold its port AND its address is one of this node's
 *    NodePort addresses (`nodePortAddresses`), where kube-proxy makes its NodePorts. With a
 *    record, a port-only set vouches for nothing: a NodePort frontend kube-ipvs refused as
 *    foreign (keepalived on a node IP) is absent from the record, its port in the set.
 */
function adoptionReason(sets: SetMembers, vs: VirtualServerId, nodePortAddresses: ReadonlySet<string>): string | null {
  if (vs.fwmark > 0) return 'a fwmark service';
  const family: IpFamily = isIPv4(vs.address) ? 'ipv4' : 'ipv6';
  const proto = (PROTOCOL_NAMES[vs.protocol] ?? '').toLowerCase();
  const member = `${ipsetAddress(vs.address)},${proto}:${vs.port}`;
  const set = (base: (typeof SetName)[keyof typeof SetName]) => sets.get(ipsetName(base, family));
  const has = (base: (typeof SetName)[keyof typeof SetName], m: string) => set(base)?.members.has(m) ?? false;
  const record = set(SetName.IPVS_OWNED);
  if (record?.members.has(member)) return null;
  const exact = [
    SetName.CLUSTER_IP,
    SetName.LOAD_BALANCER,
    SetName.EXTERNAL_IP,
    SetName.EXTERNAL_IP_LOCAL,
    SetName.NODE_PORT_SCTP,
  ] as const;
  if (exact.some((b) => has(b, member))) return null;
  const port = String(vs.port);
  const portOnly =
    (proto === 'tcp' && has(SetName.NODE_PORT_TCP, port)) || (proto === 'udp' && has(SetName.NODE_PORT_UDP, port));
  if (record) {
    return `not in kube-ipvs's record of the frontends it programmed (${ipsetName(SetName.IPVS_OWNED, family)})${portOnly ? `, though a KUBE-NODE-PORT set holds port ${port}` : ''}`;
  }
  if (portOnly && nodePortAddresses.has(vs.address)) return null;
  if (portOnly)
    return `a KUBE-NODE-PORT set holds port ${port}, but ${vs.address} is not one of this node's NodePort addresses`;
  return 'in no kube-proxy ipset';
}

/** What the kernel says of who programmed a virtual server, as read before anything changes it. */
export interface OwnershipEvidence {
  /** the KUBE-* sets (undefined: they could not be read) */
  readonly ipsets: SetMembers | undefined;
  /** the addresses bound on kube-ipvs0 */
  readonly bound: ReadonlySet<string>;
  /** this node's NodePort addresses, both families */
  readonly nodePortAddresses: ReadonlySet<string>;
}

/**
 * Why the evidence does not make `vs` kube-proxy's or kube-ipvs's, in words; null when it does:
 * the sets (adoptionReason), or, only when no KUBE-* set exists at all (or they could not be
 * read), an address bound on kube-ipvs0 (kube-proxy's own rule: it binds every ClusterIP,
 * external and LB VIP there). kube-proxy and kube-ipvs create every set on every sync, so with
 * one present, kube-ipvs0 vouches for nothing: a tenant's externalIP on a foreign VIP would
 * have put that address there. The daemon's adoption read (proxier/ownership.ts) and
 * `kube-ipvs cleanup` decide by this one rule.
 */
export function unownedReason(e: OwnershipEvidence, vs: VirtualServerId): string | null {
  if (e.ipsets === undefined || !hasKubeSets(e.ipsets)) {
    if (e.bound.has(vs.address)) return null;
    return e.ipsets === undefined
      ? 'its address not bound on kube-ipvs0 (the ipsets could not be read)'
      : 'no KUBE-* ipset in the kernel and its address not bound on kube-ipvs0';
  }
  return adoptionReason(e.ipsets, vs, e.nodePortAddresses);
}
