import { familyOfValidAddress } from '../../model/ip-family';
import { cidrMatcher } from '../../model/address';
import { canonicalAddress } from '../../model/ipvs';
import { LinkAddress } from '../../model/link';

/** The special `nodePortAddresses` value meaning "the node's primary IPs" (K8S v1.29+). */
export const NODE_PORT_ADDRESSES_PRIMARY = 'primary' as const;

const isV4 = (a: string): boolean => familyOfValidAddress(a) === 'ipv4';
const isLoopback = (a: string): boolean => (isV4(a) ? a.startsWith('127.') : a === '::1');
const isLinkLocal6 = (a: string): boolean => !isV4(a) && /^fe[89ab]/i.test(a);

/**
 * The node's addresses NodePorts are served on (kube-proxy's NodePortAddresses.GetNodeIPs,
 * K8S pkg/proxy/util/nodeport_addresses.go), from the local addresses of every link but
 * kube-ipvs0 (listLocalAddresses):
 *  - empty `nodePortAddresses`: every local address (kube-proxy's "match all") but loopback
 *    and IPv6 link-local ones (K8S pkg/proxy/ipvs/util/netlink_linux.go isValidForSet);
 *  - CIDRs: the local addresses inside any of them, without loopback addresses;
 *  - "primary": the node's primary IPs given by the caller (from the Node object), as long as
 *    they are local.
 * Unique, sorted (IPv4 first).
 */
export function selectNodePortAddresses(
  local: readonly LinkAddress[],
  nodePortAddresses: readonly string[],
  primaryIPs: readonly string[] = [],
): string[] {
  const addrs = [...new Set(local.map((a) => a.address))];
  let out: string[];
  if (nodePortAddresses.length === 0) {
    out = addrs.filter((a) => !isLoopback(a) && !isLinkLocal6(a));
  } else {
    const primary = new Set(primaryIPs.map(canonicalAddress));
    const cidrs = nodePortAddresses.filter((c) => c !== NODE_PORT_ADDRESSES_PRIMARY);
    const wantPrimary = cidrs.length !== nodePortAddresses.length;
    const inCidrs = cidrMatcher(cidrs);
    out = addrs.filter((a) => (wantPrimary && primary.has(a)) || (!isLoopback(a) && inCidrs(a)));
  }
  return out.sort((a, b) => Number(!isV4(a)) - Number(!isV4(b)) || (a < b ? -1 : a > b ? 1 : 0));
}
