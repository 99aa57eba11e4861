/**
 * Which kube-proxy set names a virtual server (what kube-proxy or kube-ipvs programmed, as the
 * kernel remembers it): the proxier's ownership rule and `kube-ipvs service list`'s Service
 * type when only the kernel is there to ask. Pure.
 */
import { isIPv4 } from 'node:net';
import { IpFamily } from './ip-family';
import { ipsetAddress } from './ipset';
import { PROTOCOL_NAMES, VirtualServerId } from './ipvs';
import { SetName, ipsetName } from './names';
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
  const has = (base: (typeof SetName)[keyof typeof SetName], m: string) => sets.get(ipsetName(base, family))?.members.has(m) ?? false;
  if (has(SetName.CLUSTER_IP, member)) return 'ClusterIP';
  if (has(SetName.LOAD_BALANCER, member)) return 'LoadBalancer';
  if (has(SetName.EXTERNAL_IP, member) || has(SetName.EXTERNAL_IP_LOCAL, member)) return 'ExternalIP';
  const port = String(vs.port);
  if (proto === 'tcp' && has(SetName.NODE_PORT_TCP, port)) return 'NodePort';
  if (proto === 'udp' && has(SetName.NODE_PORT_UDP, port)) return 'NodePort';
  if (proto === 'sctp' && has(SetName.NODE_PORT_SCTP, member)) return 'NodePort';
  return null;
}
