import { isIPv4, isIPv6, SocketAddress } from 'node:net';
// The model's one import outside lib/model: lib/uapi, the ground floor, is a table of the
// kernel's numeric constants (no code, no I/O), and the kernel's numbers are the model's values.
import { AddressFamily, addressFamilyOf } from './ip-family';
import { AF_INET, AF_INET6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../uapi/inet';
import {
  IP_VS_SVC_F_SCHED_MH_FALLBACK,
  IP_VS_SVC_F_SCHED_MH_PORT,
  IP_VS_SVC_F_SCHED_SH_FALLBACK,
  IP_VS_SVC_F_SCHED_SH_PORT,
} from '../uapi/ip_vs';

/** AF_INET (2) or AF_INET6 (10), as the kernel numbers them. */
export type { AddressFamily } from './ip-family';

/**
 * What identifies a virtual server to the kernel: a fwmark (fwmark > 0; protocol, address
 * and port are then 0 / '' ) or protocol + address + port.
 */
export interface VirtualServerId {
  /**
   * The kernel's own field (IPVS_SVC_ATTR_AF), kept as the AF_INET / AF_INET6 number it is on
   * the wire; everywhere else the family is the model's IpFamily (model/ip-family.ts:
   * toAddressFamily / fromAddressFamily convert).
   */
  readonly af: AddressFamily;
  /** IPPROTO_TCP / UDP / SCTP; 0 for a fwmark service */
  readonly protocol: number;
  /** textual address as inet_ntop prints it; '' for a fwmark service */
  readonly address: string;
  readonly port: number;
  readonly fwmark: number;
}

/** 64-bit counters; rates are per second. */
export interface Stats {
  readonly conns: bigint;
  readonly inpkts: bigint;
  readonly outpkts: bigint;
  readonly inbytes: bigint;
  readonly outbytes: bigint;
  readonly cps: bigint;
  readonly inpps: bigint;
  readonly outpps: bigint;
  readonly inbps: bigint;
  readonly outbps: bigint;
}

/** A virtual server (IPVS service) with its scheduler, flags, persistence and stats. */
export interface VirtualServer extends VirtualServerId {
  readonly scheduler: string;
  /** IP_VS_SVC_F_* without the kernel-internal HASHED bit */
  readonly flags: number;
  /** persistence timeout, seconds */
  readonly timeout: number;
  /** IPv4: the mask as a number (0xffffff00 = 255.255.255.0); IPv6: prefix length */
  readonly netmask: number;
  /** persistence engine, '' for none */
  readonly peName: string;
  readonly stats?: Stats;
}

/** What names a real server (IPVS destination) within its virtual server: family, address, port. */
export interface RealServerId {
  /** family of the real server's address; may differ from the service's for tunnel dests */
  readonly af: AddressFamily;
  readonly address: string;
  readonly port: number;
}

/** A real server (IPVS destination) with its forwarding method, weight, thresholds and counters. */
export interface RealServer extends RealServerId {
  /** IP_VS_CONN_F_MASQ / LOCALNODE / TUNNEL / DROUTE */
  readonly fwdMethod: number;
  readonly weight: number;
  readonly uThreshold: number;
  readonly lThreshold: number;
  readonly activeConns: number;
  readonly inactConns: number;
  readonly persistConns: number;
  /** IP_VS_CONN_F_TUNNEL_TYPE_*; meaningful with fwdMethod TUNNEL */
  readonly tunType: number;
  readonly tunPort: number;
  readonly tunFlags: number;
  readonly stats?: Stats;
}

/** What NEW_SERVICE / SET_SERVICE need: the id plus the "full entry" fields. */
export interface VirtualServerSpec extends VirtualServerId {
  readonly scheduler: string;
  readonly flags?: number;
  readonly timeout?: number;
  /** default: 0xffffffff for IPv4, 128 for IPv6 (what ipvsadm and kube-proxy send) */
  readonly netmask?: number;
  readonly peName?: string;
}

/** What NEW_DEST / SET_DEST need. */
export interface RealServerSpec extends RealServerId {
  readonly fwdMethod: number;
  readonly weight: number;
  readonly uThreshold?: number;
  readonly lThreshold?: number;
  readonly tunType?: number;
  readonly tunPort?: number;
  readonly tunFlags?: number;
}

/** GET_INFO */
export interface IpvsInfo {
  readonly version: number;
  readonly connTabSize: number;
}

/** GET_CONFIG / SET_CONFIG, seconds; 0 in SET_CONFIG leaves a value unchanged */
export interface IpvsTimeouts {
  readonly tcp: number;
  readonly tcpFin: number;
  readonly udp: number;
}

/** The name of each IP protocol an IPVS service can have, as ipvsadm prints it. */
export const PROTOCOL_NAMES: Readonly<Record<number, string>> = {
  [IPPROTO_TCP]: 'TCP',
  [IPPROTO_UDP]: 'UDP',
  [IPPROTO_SCTP]: 'SCTP',
};

/**
 * A dotted-quad IPv4 address as a number (big-endian value), or -1 when it is not one.
 * Strict like inet_pton: four decimal octets 0-255, no leading zeros, nothing else.
 * (Hand-written because it runs once per encoded request: 100,000+ per sync.)
 */
export function parseIPv4(address: string): number {
  let value = 0;
  let octet = -1;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i);
    if (c === 46 /* . */) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + octet;
      dots++;
      octet = -1;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return -1; // leading zero
      octet = digits === 0 ? c - 48 : octet * 10 + (c - 48);
      if (octet > 255) return -1;
      digits++;
    } else {
      return -1;
    }
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + octet;
}

/** "0".."255": a dotted quad is spelled from these (a /proc listing spells 100,000 of them) */
const OCTET: readonly string[] = Array.from({ length: 256 }, (_, i) => String(i));

/** Dotted quad of a host-order u32, as inet_ntoa prints it. */
export function formatIPv4(v: number): string {
  return OCTET[v >>> 24]! + '.' + OCTET[(v >>> 16) & 255]! + '.' + OCTET[(v >>> 8) & 255]! + '.' + OCTET[v & 255]!;
}

/** Address bytes: 4 for IPv4, 16 for IPv6. */
export function addressToBytes(af: AddressFamily, address: string): Buffer {
  if (af === AF_INET) {
    if (!isIPv4(address)) throw new TypeError(`not an IPv4 address: '${address}'`);
    return Buffer.from(address.split('.').map(Number));
  }
  if (!isIPv6(address)) throw new TypeError(`not an IPv6 address: '${address}'`);
  return ipv6Bytes(address);
}

/**
 * The 16 bytes of a valid IPv6 address (isIPv6 checked it): "::" compression and a dotted
 * IPv4 tail. Hand-written: no big-integer library, and none loaded by the CLI at start-up.
 */
function ipv6Bytes(text: string): Buffer {
  const zone = text.indexOf('%');
  const address = zone >= 0 ? text.slice(0, zone) : text;
  const out = Buffer.alloc(16);
  const groups = (text: string): number[] => {
    if (text === '') return [];
    const g: number[] = [];
    for (const part of text.split(':')) {
      if (part.includes('.')) {
        const v = parseIPv4(part);
        g.push(Math.floor(v / 65536), v % 65536);
      } else g.push(parseInt(part, 16));
    }
    return g;
  };
  const gap = address.indexOf('::');
  const head = groups(gap >= 0 ? address.slice(0, gap) : address);
  const tail = gap >= 0 ? groups(address.slice(gap + 2)) : [];
  head.forEach((v, i) => out.writeUInt16BE(v, i * 2));
  tail.forEach((v, i) => out.writeUInt16BE(v, (8 - tail.length + i) * 2));
  return out;
}

/** Textual address exactly as glibc's inet_ntop prints it (libuv shares its algorithm). */
export function bytesToAddress(af: AddressFamily, bytes: Buffer): string {
  if (af === AF_INET) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i).toString(16));
  return new SocketAddress({ address: groups.join(':'), family: 'ipv6' }).address;
}

/** Canonical form of a textual address (so keys compare equal whatever the spelling). */
export function canonicalAddress(address: string): string {
  // node's isIPv4 accepts only plain dotted decimal without leading zeros: already canonical
  // (the hot path: every endpoint of every slice and plan; no bytes round trip)
  if (isIPv4(address)) return address;
  const af = addressFamilyOf(address);
  return bytesToAddress(af, addressToBytes(af, address));
}

/** One key per virtual server, used everywhere: "TCP/10.96.0.1:80", "UDP/[fd00::a]:53", "FWM/6/7". */
export function virtualServerKey(id: VirtualServerId): string {
  if (id.fwmark > 0) return `FWM/${id.af === AF_INET6 ? 6 : 4}/${id.fwmark}`;
  const proto = PROTOCOL_NAMES[id.protocol] ?? String(id.protocol);
  return `${proto}/${hostPort(id.af, id.address, id.port)}`;
}

/** A real server's key within its virtual server: "10.0.0.5:80", "[fd00::5]:80". */
export function realServerKey(id: RealServerId): string {
  return hostPort(id.af, id.address, id.port);
}

/** "address:port", the address bracketed for IPv6. */
export function hostPort(af: AddressFamily, address: string, port: number): string {
  return af === AF_INET6 ? `[${address}]:${port}` : `${address}:${port}`;
}

/** How logs and errors name a virtual server: "TCP 10.96.0.10:80", "FWM 7". */
export function describeVirtualServer(id: VirtualServerId): string {
  if (id.fwmark > 0) return `FWM ${id.fwmark}${id.af === AF_INET6 ? ' IPv6' : ''}`;
  return `${PROTOCOL_NAMES[id.protocol] ?? `proto ${id.protocol}`} ${hostPort(id.af, id.address, id.port)}`;
}

/** The kernel's IPVS schedulers, its ip_vs_<name> modules (Debian's 6.1 kernel ships them all). */
export const IPVS_SCHEDULERS: readonly string[] = [
  'rr',
  'wrr',
  'lc',
  'wlc',
  'lblc',
  'lblcr',
  'dh',
  'sh',
  'sed',
  'nq',
  'mh',
  'fo',
  'ovf',
  'twos',
];

/**
 * A virtual server's scheduler flag as ipvsadm names it (`-b`): sh's and mh's two each. Each is
 * a flag of its scheduler only: the kernel has three bits for all schedulers (sh-fallback and
 * mh-fallback are one bit, SCHED1; sh-port and mh-port another, SCHED2), so a flag set on a
 * virtual server of another scheduler would mean something else, or nothing.
 */
export type SchedulerFlag = 'sh-fallback' | 'sh-port' | 'mh-fallback' | 'mh-port';

/** Each scheduler flag: its scheduler and its bit (IP_VS_SVC_F_SCHED_*, ip_vs.h). */
export const SCHEDULER_FLAGS: Readonly<Record<SchedulerFlag, { readonly scheduler: string; readonly bit: number }>> = {
  'sh-fallback': { scheduler: 'sh', bit: IP_VS_SVC_F_SCHED_SH_FALLBACK },
  'sh-port': { scheduler: 'sh', bit: IP_VS_SVC_F_SCHED_SH_PORT },
  'mh-fallback': { scheduler: 'mh', bit: IP_VS_SVC_F_SCHED_MH_FALLBACK },
  'mh-port': { scheduler: 'mh', bit: IP_VS_SVC_F_SCHED_MH_PORT },
};

/** The scheduler flags' names, in SCHEDULER_FLAGS's order. */
export const SCHEDULER_FLAG_NAMES = Object.keys(SCHEDULER_FLAGS) as readonly SchedulerFlag[];

/** Is `s` one of the scheduler flag names? */
export function isSchedulerFlag(s: unknown): s is SchedulerFlag {
  return typeof s === 'string' && Object.hasOwn(SCHEDULER_FLAGS, s);
}

/** Scheduler flags in SCHEDULER_FLAGS's order, each once. */
export function sortSchedulerFlags(flags: Iterable<SchedulerFlag>): SchedulerFlag[] {
  const set = new Set(flags);
  return SCHEDULER_FLAG_NAMES.filter((f) => set.has(f));
}

/**
 * A RealServer as `rs` programs it, before any traffic: the spec's optional fields at the
 * kernel's defaults, the connection counts as given (0 when none).
 */
export function realServerOf(
  rs: RealServerSpec,
  conns: { readonly activeConns: number; readonly inactConns: number } = NO_CONNS,
): RealServer {
  return {
    af: rs.af,
    address: rs.address,
    port: rs.port,
    fwdMethod: rs.fwdMethod,
    weight: rs.weight,
    uThreshold: rs.uThreshold ?? 0,
    lThreshold: rs.lThreshold ?? 0,
    activeConns: conns.activeConns,
    inactConns: conns.inactConns,
    persistConns: 0,
    tunType: rs.tunType ?? 0,
    tunPort: rs.tunPort ?? 0,
    tunFlags: rs.tunFlags ?? 0,
  };
}
const NO_CONNS = { activeConns: 0, inactConns: 0 } as const;

/** Stats with every counter and rate 0. */
export const ZERO_STATS: Stats = Object.freeze({
  conns: 0n,
  inpkts: 0n,
  outpkts: 0n,
  inbytes: 0n,
  outbytes: 0n,
  cps: 0n,
  inpps: 0n,
  outpps: 0n,
  inbps: 0n,
  outbps: 0n,
});
