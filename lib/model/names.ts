/**
 * Names kube-proxy's IPVS proxier uses in the kernel (K8S pkg/proxy/ipvs/proxier.go and
 * ipset.go, recent). kube-ipvs must use exactly these: a node switched between kube-proxy and
 * kube-ipvs must find its own chains and sets, and cleanup tools look for them by name.
 */

import { IpFamily } from './ip-family';

/** KUBE-* chains (nat and filter). KUBE-NODE-PORT exists in both tables. */
export const Chain = {
  SERVICES: 'KUBE-SERVICES',
  PROXY_FIREWALL: 'KUBE-PROXY-FIREWALL',
  SOURCE_RANGES_FIREWALL: 'KUBE-SOURCE-RANGES-FIREWALL',
  POSTROUTING: 'KUBE-POSTROUTING',
  MARK_MASQ: 'KUBE-MARK-MASQ',
  NODE_PORT: 'KUBE-NODE-PORT',
  FORWARD: 'KUBE-FORWARD',
  LOAD_BALANCER: 'KUBE-LOAD-BALANCER',
  IPVS_FILTER: 'KUBE-IPVS-FILTER',
  IPVS_OUT_FILTER: 'KUBE-IPVS-OUT-FILTER',
} as const;
/** The name of one of kube-proxy's KUBE-* chains. */
export type ChainName = (typeof Chain)[keyof typeof Chain];

/** Built-in chains the jump rules hang off. */
export const BuiltinChain = {
  PREROUTING: 'PREROUTING',
  INPUT: 'INPUT',
  FORWARD: 'FORWARD',
  OUTPUT: 'OUTPUT',
  POSTROUTING: 'POSTROUTING',
} as const;
/** The name of a built-in chain. */
export type BuiltinChainName = (typeof BuiltinChain)[keyof typeof BuiltinChain];

/** The iptables tables kube-proxy (IPVS mode) writes. */
export type Table = 'nat' | 'filter';

/**
 * The 17 sets' IPv4 names (kube-proxy ipset.go constants), and kube-ipvs's own record
 * KUBE-IPVS-OWNED (hash:ip,port): every frontend (ip,proto:port) kube-ipvs programmed, kept in
 * step with each sync, so that ownership survives a restart (lib/proxier/ownership.ts).
 * kube-proxy ignores a set it does not know; `kube-ipvs cleanup` destroys it with the 17.
 */
export const SetName = {
  LOOP_BACK: 'KUBE-LOOP-BACK',
  CLUSTER_IP: 'KUBE-CLUSTER-IP',
  EXTERNAL_IP: 'KUBE-EXTERNAL-IP',
  EXTERNAL_IP_LOCAL: 'KUBE-EXTERNAL-IP-LOCAL',
  LOAD_BALANCER: 'KUBE-LOAD-BALANCER',
  LOAD_BALANCER_LOCAL: 'KUBE-LOAD-BALANCER-LOCAL',
  LOAD_BALANCER_FW: 'KUBE-LOAD-BALANCER-FW',
  LOAD_BALANCER_SOURCE_IP: 'KUBE-LOAD-BALANCER-SOURCE-IP',
  LOAD_BALANCER_SOURCE_CIDR: 'KUBE-LOAD-BALANCER-SOURCE-CIDR',
  NODE_PORT_TCP: 'KUBE-NODE-PORT-TCP',
  NODE_PORT_LOCAL_TCP: 'KUBE-NODE-PORT-LOCAL-TCP',
  NODE_PORT_UDP: 'KUBE-NODE-PORT-UDP',
  NODE_PORT_LOCAL_UDP: 'KUBE-NODE-PORT-LOCAL-UDP',
  NODE_PORT_SCTP: 'KUBE-NODE-PORT-SCTP-HASH',
  NODE_PORT_LOCAL_SCTP: 'KUBE-NODE-PORT-LOCAL-SCTP-HASH',
  HEALTH_CHECK_NODE_PORT: 'KUBE-HEALTH-CHECK-NODE-PORT',
  IPVS_IPS: 'KUBE-IPVS-IPS',
  IPVS_OWNED: 'KUBE-IPVS-OWNED',
} as const;
/** The key of one of the sets (LOOP_BACK, CLUSTER_IP, ..., IPVS_OWNED). */
export type SetKey = keyof typeof SetName;
/** A set's IPv4 name ("KUBE-LOOP-BACK", ...). */
export type SetBaseName = (typeof SetName)[SetKey];

/** ipset's IPSET_MAXNAMELEN is 32 including the NUL. */
export const IPSET_MAX_NAME_LENGTH = 31;

/**
 * The kernel name of a set for a family: IPv6 replaces the "KUBE-" prefix with "KUBE-6-" and
 * truncates to 31 characters (kube-proxy NewIPSet), e.g. KUBE-6-LOAD-BALANCER-SOURCE-CID.
 * The truncated IPv6 names are still unique among the 17.
 */
export function ipsetName(base: SetBaseName, family: IpFamily): string {
  if (family === 'ipv4') return base;
  return ('KUBE-6-' + base.slice('KUBE-'.length)).slice(0, IPSET_MAX_NAME_LENGTH);
}

/** Every kernel name of a KUBE-* set kube-proxy or kube-ipvs makes, both families. */
export const KUBE_SET_NAMES: ReadonlySet<string> = new Set(
  (['ipv4', 'ipv6'] as const).flatMap((f) => Object.values(SetName).map((base) => ipsetName(base, f))),
);
