/**
 * The vocabulary of kube-proxy's 17 ipsets (K8S pkg/proxy/ipvs/ipset.go, proxier.go `ipsetInfo`,
 * pkg/proxy/ipvs/ipset/ipset.go `Entry.String()`): set types, the set table, members and the
 * desired-set shape the kernel layer syncs. Pure: no I/O.
 *
 * The entry* helpers live here, not in plan/: they are the only constructors of IpsetMember
 * (validate, then spell the member as `ipset save` prints it), so they belong with the type
 * the way parseAddress belongs with ParsedAddress. They decide nothing about which members a
 * set should hold; that choice (planIpsets, plan-service-port) is planning and stays in plan/.
 */
import { InvalidIpsetEntryError, quoteIfOdd } from '../errors';
import { ParsedAddress, parseAddress, parseCidr } from './address';
import { PROTOCOL_NAMES, VirtualServerId, canonicalAddress } from './ipvs';
import { IpFamily, familyOfValidAddress } from './ip-family';
import { SetBaseName, SetKey, SetName } from './names';

/** Set types kube-proxy uses. */
export const IpsetType = {
  HASH_IP: 'hash:ip',
  HASH_IP_PORT: 'hash:ip,port',
  HASH_IP_PORT_IP: 'hash:ip,port,ip',
  HASH_IP_PORT_NET: 'hash:ip,port,net',
  BITMAP_PORT: 'bitmap:port',
} as const;
/** One ipset type kube-proxy uses ("hash:ip,port", "bitmap:port", ...). */
export type IpsetType = (typeof IpsetType)[keyof typeof IpsetType];

/** Lower-case, as kube-proxy writes them into entries. */
export type IpsetProto = 'tcp' | 'udp' | 'sctp';

/** One of the sets (kube-proxy's, and KUBE-IPVS-OWNED): its key, IPv4 name, type and comment. */
export interface IpsetInfo {
  readonly key: SetKey;
  readonly name: SetBaseName;
  readonly type: IpsetType;
  /** used only as the iptables `-m comment` text of the rule matching the set */
  readonly comment: string;
}

/** In kube-proxy's `ipsetInfo` order, then kube-ipvs's own record (KUBE-IPVS-OWNED). */
export const IPSET_INFO: readonly IpsetInfo[] = [
  {
    key: 'LOOP_BACK',
    name: SetName.LOOP_BACK,
    type: IpsetType.HASH_IP_PORT_IP,
    comment: 'Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose',
  },
  {
    key: 'CLUSTER_IP',
    name: SetName.CLUSTER_IP,
    type: IpsetType.HASH_IP_PORT,
    comment: 'Kubernetes service cluster ip + port for masquerade purpose',
  },
  {
    key: 'EXTERNAL_IP',
    name: SetName.EXTERNAL_IP,
    type: IpsetType.HASH_IP_PORT,
    comment: 'Kubernetes service external ip + port for masquerade and filter purpose',
  },
  {
    key: 'EXTERNAL_IP_LOCAL',
    name: SetName.EXTERNAL_IP_LOCAL,
    type: IpsetType.HASH_IP_PORT,
    comment: 'Kubernetes service external ip + port with externalTrafficPolicy=local',
  },
  {
    key: 'LOAD_BALANCER',
    name: SetName.LOAD_BALANCER,
    type: IpsetType.HASH_IP_PORT,
    comment: 'Kubernetes service lb portal',
  },
  {
    key: 'LOAD_BALANCER_LOCAL',
    name: SetName.LOAD_BALANCER_LOCAL,
    type: IpsetType.HASH_IP_PORT,
    comment: 'Kubernetes service load balancer ip + port with externalTrafficPolicy=local',
  },
  {
    key: 'LOAD_BALANCER_FW',
    name: SetName.LOAD_BALANCER_FW,
    type: IpsetType.HASH_IP_PORT,
    comment: 'Kubernetes service load balancer ip + port for load balancer with sourceRange',
  },
  {
    key: 'LOAD_BALANCER_SOURCE_IP',
    name: SetName.LOAD_BALANCER_SOURCE_IP,
    type: IpsetType.HASH_IP_PORT_IP,
    comment: 'Kubernetes service load balancer ip + port + source IP for packet filter purpose',
  },
  {
    key: 'LOAD_BALANCER_SOURCE_CIDR',
    name: SetName.LOAD_BALANCER_SOURCE_CIDR,
    type: IpsetType.HASH_IP_PORT_NET,
    comment: 'Kubernetes service load balancer ip + port + source cidr for packet filter purpose',
  },
  {
    key: 'NODE_PORT_TCP',
    name: SetName.NODE_PORT_TCP,
    type: IpsetType.BITMAP_PORT,
    comment: 'Kubernetes nodeport TCP port for masquerade purpose',
  },
  {
    key: 'NODE_PORT_LOCAL_TCP',
    name: SetName.NODE_PORT_LOCAL_TCP,
    type: IpsetType.BITMAP_PORT,
    comment: 'Kubernetes nodeport TCP port with externalTrafficPolicy=local',
  },
  {
    key: 'NODE_PORT_UDP',
    name: SetName.NODE_PORT_UDP,
    type: IpsetType.BITMAP_PORT,
    comment: 'Kubernetes nodeport UDP port for masquerade purpose',
  },
  {
    key: 'NODE_PORT_LOCAL_UDP',
    name: SetName.NODE_PORT_LOCAL_UDP,
    type: IpsetType.BITMAP_PORT,
    comment: 'Kubernetes nodeport UDP port with externalTrafficPolicy=local',
  },
  {
    key: 'NODE_PORT_SCTP',
    name: SetName.NODE_PORT_SCTP,
    type: IpsetType.HASH_IP_PORT,
    comment: "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'",
  },
  {
    key: 'NODE_PORT_LOCAL_SCTP',
    name: SetName.NODE_PORT_LOCAL_SCTP,
    type: IpsetType.HASH_IP_PORT,
    comment: "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'",
  },
  {
    key: 'HEALTH_CHECK_NODE_PORT',
    name: SetName.HEALTH_CHECK_NODE_PORT,
    type: IpsetType.BITMAP_PORT,
    comment: 'Kubernetes health check node port',
  },
  { key: 'IPVS_IPS', name: SetName.IPVS_IPS, type: IpsetType.HASH_IP, comment: 'Addresses on the ipvs interface' },
  // kube-ipvs's own (not kube-proxy's): no iptables rule names it
  {
    key: 'IPVS_OWNED',
    name: SetName.IPVS_OWNED,
    type: IpsetType.HASH_IP_PORT,
    comment: 'kube-ipvs: every frontend it programmed, for ownership across restarts',
  },
];

/**
 * The sets a sync's netfilter half writes: kube-proxy's 17. kube-ipvs's record is written apart,
 * in order with the IPVS changes it records (proxier/ownership-record.ts).
 */
export const SYNCED_IPSET_INFO: readonly IpsetInfo[] = IPSET_INFO.filter((i) => i.key !== 'IPVS_OWNED');

const INFO_BY_KEY: ReadonlyMap<SetKey, IpsetInfo> = new Map(IPSET_INFO.map((i) => [i.key, i]));

/** The IpsetInfo of a set key; throws TypeError for an unknown key. */
export function ipsetInfo(key: SetKey): IpsetInfo {
  const info = INFO_BY_KEY.get(key);
  if (!info) throw new TypeError(`unknown ipset key ${key}`);
  return info;
}

/**
 * One member of an ipset, in the spelling `ipset save` prints (lower-case protocol, inet_ntop
 * addresses, networks with host bits cleared and no prefix for a host route). Only the entry*
 * helpers below make one, after validation, so two spellings of one member cannot exist and
 * nothing ipset would refuse for syntax reaches restore text. A plain string at run time.
 */
export type IpsetMember = string & { readonly [ipsetMemberBrand]: true };
declare const ipsetMemberBrand: unique symbol;

/** One set as it should be in the kernel. */
export interface DesiredSet {
  readonly type: IpsetType;
  readonly family: IpFamily;
  readonly members: ReadonlySet<IpsetMember>;
}

/** Set name -> desired set. */
export type DesiredIpsets = ReadonlyMap<string, DesiredSet>;

const IPV4_PLAIN = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** An address the way ipset prints it (inet_ntop): IPv6 lower-case and compressed. */
export function ipsetAddress(ip: string): string {
  return IPV4_PLAIN.test(ip) ? ip : canonicalAddress(ip);
}

const PROTOS: readonly string[] = ['tcp', 'udp', 'sctp'] satisfies IpsetProto[];

/** The member as it was asked for, for error messages. */
const asked = (...parts: unknown[]): string => parts.map(String).join(',');

function addr(value: unknown, what: string, entry: () => string): ParsedAddress {
  const a = parseAddress(value);
  if (!a) throw new InvalidIpsetEntryError(entry(), `${what} ${quoteIfOdd(String(value))} is not an IP address`);
  return a;
}

function port(value: unknown, entry: () => string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
    throw new InvalidIpsetEntryError(entry(), `port ${quoteIfOdd(String(value))} is not in 1-65535`);
  }
  return value;
}

function protoPort(proto: unknown, p: unknown, entry: () => string): string {
  const lower = typeof proto === 'string' ? proto.toLowerCase() : '';
  if (!PROTOS.includes(lower))
    throw new InvalidIpsetEntryError(entry(), `protocol ${quoteIfOdd(String(proto))} is not tcp, udp or sctp`);
  return `${lower}:${port(p, entry)}`;
}

function sameFamily(a: ParsedAddress, b: { family: IpFamily }, what: string, entry: () => string): void {
  if (a.family !== b.family)
    throw new InvalidIpsetEntryError(entry(), `${what} is ${b.family}, the address ${a.family}`);
}

/** hash:ip entry: `10.96.0.10`. Throws InvalidIpsetEntryError. */
export function entryIp(ip: string): IpsetMember {
  return addr(ip, 'address', () => asked(ip)).text as IpsetMember;
}
/** hash:ip,port entry: `10.96.0.10,udp:53` (protocol in any case). Throws InvalidIpsetEntryError. */
export function entryIpPort(ip: string, proto: IpsetProto, port: number): IpsetMember {
  const entry = () => asked(ip, `${proto}:${port}`);
  return `${addr(ip, 'address', entry).text},${protoPort(proto, port, entry)}` as IpsetMember;
}
/** hash:ip,port,ip entry: `10.0.0.5,tcp:80,10.0.0.5`; both addresses of one family. Throws InvalidIpsetEntryError. */
export function entryIpPortIp(ip: string, proto: IpsetProto, port: number, ip2: string): IpsetMember {
  const entry = () => asked(ip, `${proto}:${port}`, ip2);
  const a = addr(ip, 'address', entry);
  const pp = protoPort(proto, port, entry);
  const b = addr(ip2, 'second address', entry);
  sameFamily(a, b, 'the second address', entry);
  return `${a.text},${pp},${b.text}` as IpsetMember;
}
/**
 * hash:ip,port,net entry: `1.2.3.4,tcp:80,10.0.1.0/24`. ipset stores the network with host bits
 * cleared and a host route (/32, /128) without prefix; it is spelled that way here too. A /0
 * network is no single member (ipset refuses a zero prefix): it throws, use entriesIpPortNet.
 * Throws InvalidIpsetEntryError.
 */
export function entryIpPortNet(ip: string, proto: IpsetProto, port: number, net: string): IpsetMember {
  const members = entriesIpPortNet(ip, proto, port, net);
  if (members.length !== 1) {
    throw new InvalidIpsetEntryError(
      asked(ip, `${proto}:${port}`, net),
      'a /0 network is two ipset members: use entriesIpPortNet',
    );
  }
  return members[0]!;
}
/**
 * The hash:ip,port,net members that together match `net`: one, or two half ranges for a /0
 * (0.0.0.0/1 + 128.0.0.0/1, ::/1 + 8000::/1), which ipset cannot hold as one net.
 * Throws InvalidIpsetEntryError.
 */
export function entriesIpPortNet(ip: string, proto: IpsetProto, port: number, net: string): IpsetMember[] {
  const entry = () => asked(ip, `${proto}:${port}`, net);
  const a = addr(ip, 'address', entry);
  const pp = protoPort(proto, port, entry);
  const n = parseCidr(net);
  if (!n) throw new InvalidIpsetEntryError(entry(), `network ${quoteIfOdd(String(net))} is not a CIDR`);
  sameFamily(a, n, 'the network', entry);
  const head = `${a.text},${pp},`;
  if (n.prefix === 0) {
    const halves = n.family === 'ipv4' ? ['0.0.0.0/1', '128.0.0.0/1'] : ['::/1', '8000::/1'];
    return halves.map((h) => (head + h) as IpsetMember);
  }
  return [(head + (n.prefix === n.bits ? n.address : `${n.address}/${n.prefix}`)) as IpsetMember];
}
/**
 * KUBE-IPVS-OWNED's member for a virtual server (not fwmark): `10.96.0.10,tcp:80`. Throws
 * InvalidIpsetEntryError (a protocol ipset cannot hold).
 */
export function entryFrontend(vs: Pick<VirtualServerId, 'address' | 'protocol' | 'port'>): IpsetMember {
  return entryIpPort(
    vs.address,
    (PROTOCOL_NAMES[vs.protocol] ?? String(vs.protocol)).toLowerCase() as IpsetProto,
    vs.port,
  );
}

/** bitmap:port entry: `30080`. Throws InvalidIpsetEntryError. */
export function entryPort(p: number): IpsetMember {
  return String(port(p, () => asked(p))) as IpsetMember;
}

/**
 * Why `member` cannot go into a set of this type and family (wrong shape, other family), or
 * undefined. Cheap: the helpers already checked the syntax; this catches a member planned
 * into the wrong set.
 */
export function ipsetMemberMismatch(type: IpsetType, family: IpFamily, member: string): string | undefined {
  if (type === IpsetType.BITMAP_PORT) return /^\d{1,5}$/.test(member) ? undefined : `not a port, in a ${type} set`;
  const parts = member.split(',');
  const want = type === IpsetType.HASH_IP ? 1 : type === IpsetType.HASH_IP_PORT ? 2 : 3;
  if (parts.length !== want) return `${parts.length} part(s), a ${type} member has ${want}`;
  if (want > 1 && !parts[1]!.includes(':')) return `no protocol:port, in a ${type} set`;
  const fam = familyOfValidAddress;
  if (fam(parts[0]!) !== family || (want === 3 && fam(parts[2]!) !== family))
    return `not ${family}, in a ${family} set`;
  if (type === IpsetType.HASH_IP_PORT_IP && parts[2]!.includes('/')) return `a network, in a ${type} set`;
  return undefined;
}
