/**
 * The 17 ipsets of kube-proxy's IPVS mode and their entry formats (K8S pkg/proxy/ipvs/ipset.go,
 * proxier.go `ipsetInfo`, pkg/proxy/ipvs/ipset/ipset.go `Entry.String()`). Pure: no I/O.
 */
import { addressToBytes, bytesToAddress, canonicalAddress, familyOf } from '../model/ipvs';
import { IpFamily, SetBaseName, SetKey, SetName, ipsetName } from './names';

/** Set types kube-proxy uses. */
export const IpsetType = {
  HASH_IP: 'hash:ip',
  HASH_IP_PORT: 'hash:ip,port',
  HASH_IP_PORT_IP: 'hash:ip,port,ip',
  HASH_IP_PORT_NET: 'hash:ip,port,net',
  BITMAP_PORT: 'bitmap:port',
} as const;
export type IpsetType = (typeof IpsetType)[keyof typeof IpsetType];

/** Lower-case, as kube-proxy writes them into entries. */
export type IpsetProto = 'tcp' | 'udp' | 'sctp';

export interface IpsetInfo {
  readonly key: SetKey;
  readonly name: SetBaseName;
  readonly type: IpsetType;
  /** used only as the iptables `-m comment` text of the rule matching the set */
  readonly comment: string;
}

/** In kube-proxy's `ipsetInfo` order. */
export const IPSET_INFO: readonly IpsetInfo[] = [
  { key: 'LOOP_BACK', name: SetName.LOOP_BACK, type: IpsetType.HASH_IP_PORT_IP, comment: 'Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose' },
  { key: 'CLUSTER_IP', name: SetName.CLUSTER_IP, type: IpsetType.HASH_IP_PORT, comment: 'Kubernetes service cluster ip + port for masquerade purpose' },
  { key: 'EXTERNAL_IP', name: SetName.EXTERNAL_IP, type: IpsetType.HASH_IP_PORT, comment: 'Kubernetes service external ip + port for masquerade and filter purpose' },
  { key: 'EXTERNAL_IP_LOCAL', name: SetName.EXTERNAL_IP_LOCAL, type: IpsetType.HASH_IP_PORT, comment: 'Kubernetes service external ip + port with externalTrafficPolicy=local' },
  { key: 'LOAD_BALANCER', name: SetName.LOAD_BALANCER, type: IpsetType.HASH_IP_PORT, comment: 'Kubernetes service lb portal' },
  { key: 'LOAD_BALANCER_LOCAL', name: SetName.LOAD_BALANCER_LOCAL, type: IpsetType.HASH_IP_PORT, comment: 'Kubernetes service load balancer ip + port with externalTrafficPolicy=local' },
  { key: 'LOAD_BALANCER_FW', name: SetName.LOAD_BALANCER_FW, type: IpsetType.HASH_IP_PORT, comment: 'Kubernetes service load balancer ip + port for load balancer with sourceRange' },
  { key: 'LOAD_BALANCER_SOURCE_IP', name: SetName.LOAD_BALANCER_SOURCE_IP, type: IpsetType.HASH_IP_PORT_IP, comment: 'Kubernetes service load balancer ip + port + source IP for packet filter purpose' },
  { key: 'LOAD_BALANCER_SOURCE_CIDR', name: SetName.LOAD_BALANCER_SOURCE_CIDR, type: IpsetType.HASH_IP_PORT_NET, comment: 'Kubernetes service load balancer ip + port + source cidr for packet filter purpose' },
  { key: 'NODE_PORT_TCP', name: SetName.NODE_PORT_TCP, type: IpsetType.BITMAP_PORT, comment: 'Kubernetes nodeport TCP port for masquerade purpose' },
  { key: 'NODE_PORT_LOCAL_TCP', name: SetName.NODE_PORT_LOCAL_TCP, type: IpsetType.BITMAP_PORT, comment: 'Kubernetes nodeport TCP port with externalTrafficPolicy=local' },
  { key: 'NODE_PORT_UDP', name: SetName.NODE_PORT_UDP, type: IpsetType.BITMAP_PORT, comment: 'Kubernetes nodeport UDP port for masquerade purpose' },
  { key: 'NODE_PORT_LOCAL_UDP', name: SetName.NODE_PORT_LOCAL_UDP, type: IpsetType.BITMAP_PORT, comment: 'Kubernetes nodeport UDP port with externalTrafficPolicy=local' },
  { key: 'NODE_PORT_SCTP', name: SetName.NODE_PORT_SCTP, type: IpsetType.HASH_IP_PORT, comment: "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'" },
  { key: 'NODE_PORT_LOCAL_SCTP', name: SetName.NODE_PORT_LOCAL_SCTP, type: IpsetType.HASH_IP_PORT, comment: "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'" },
  { key: 'HEALTH_CHECK_NODE_PORT', name: SetName.HEALTH_CHECK_NODE_PORT, type: IpsetType.BITMAP_PORT, comment: 'Kubernetes health check node port' },
  { key: 'IPVS_IPS', name: SetName.IPVS_IPS, type: IpsetType.HASH_IP, comment: 'Addresses on the ipvs interface' },
];

const INFO_BY_KEY: ReadonlyMap<SetKey, IpsetInfo> = new Map(IPSET_INFO.map((i) => [i.key, i]));

export function ipsetInfo(key: SetKey): IpsetInfo {
  const info = INFO_BY_KEY.get(key);
  if (!info) throw new TypeError(`unknown ipset key ${key}`);
  return info;
}

/** One set as it should be in the kernel. Members are in `ipset save` spelling (see entry*). */
export interface DesiredSet {
  readonly type: IpsetType;
  readonly family: IpFamily;
  readonly members: ReadonlySet<string>;
}

/** Set name -> desired set. */
export type DesiredIpsets = ReadonlyMap<string, DesiredSet>;

const IPV4_PLAIN = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** An address the way ipset prints it (inet_ntop): IPv6 lower-case and compressed. */
export function ipsetAddress(ip: string): string {
  return IPV4_PLAIN.test(ip) ? ip : canonicalAddress(ip);
}

/** A network as ipset stores it: host bits cleared, and no prefix for a host route. */
function network(net: string): string {
  const slash = net.indexOf('/');
  if (slash < 0) return ipsetAddress(net);
  const addr = net.slice(0, slash);
  const prefix = Number(net.slice(slash + 1));
  const af = familyOf(addr);
  const bytes = addressToBytes(af, addr);
  const bits = bytes.length * 8;
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits) throw new TypeError(`bad prefix in '${net}'`);
  if (prefix === bits) return bytesToAddress(af, bytes);
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    bytes[i]! &= (0xff << (8 - keep)) & 0xff;
  }
  return `${bytesToAddress(af, bytes)}/${prefix}`;
}

/** hash:ip entry: `10.96.0.10` */
export function entryIp(ip: string): string {
  return ipsetAddress(ip);
}
/** hash:ip,port entry: `10.96.0.10,udp:53` */
export function entryIpPort(ip: string, proto: IpsetProto, port: number): string {
  return `${ipsetAddress(ip)},${proto}:${port}`;
}
/** hash:ip,port,ip entry: `10.0.0.5,tcp:80,10.0.0.5` */
export function entryIpPortIp(ip: string, proto: IpsetProto, port: number, ip2: string): string {
  return `${ipsetAddress(ip)},${proto}:${port},${ipsetAddress(ip2)}`;
}
/**
 * hash:ip,port,net entry: `1.2.3.4,tcp:80,10.0.1.0/24`. ipset stores the network with host bits
 * cleared and a host route (/32, /128) without prefix; it is spelled that way here too.
 */
export function entryIpPortNet(ip: string, proto: IpsetProto, port: number, net: string): string {
  return `${ipsetAddress(ip)},${proto}:${port},${network(net)}`;
}
/** bitmap:port entry: `30080` */
export function entryPort(port: number): string {
  return String(port);
}

/**
 * Desired state of all 17 sets for one family. Every set is present even when empty: kube-proxy
 * creates all of them on every sync (ensureIPSet), and iptables rules name some of them
 * unconditionally (KUBE-IPVS-FILTER).
 */
export function planIpsets(
  family: IpFamily,
  members: Partial<Record<SetKey, Iterable<string>>> = {},
): Map<string, DesiredSet> {
  const out = new Map<string, DesiredSet>();
  for (const info of IPSET_INFO) {
    out.set(ipsetName(info.name, family), { type: info.type, family, members: new Set(members[info.key] ?? []) });
  }
  return out;
}

/** Keys of the sets that have members (the iptables generator writes rules only for those). */
export function nonEmptySetKeys(family: IpFamily, sets: DesiredIpsets): Set<SetKey> {
  const out = new Set<SetKey>();
  for (const info of IPSET_INFO) {
    const s = sets.get(ipsetName(info.name, family));
    if (s && s.members.size > 0) out.add(info.key);
  }
  return out;
}
