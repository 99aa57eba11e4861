// Pure: an IPVS table + a list format -> the exact text ipvsadm 1.31 prints
// (list_all / list_service / print_title / print_service_entry / print_largenum, and libipvs'
// ipvs_cmp_services / ipvs_cmp_dests sorted with glibc 2.36's qsort, a merge sort).

import { VirtualServerEntry } from '../../kernel/ipvs/ipvs';
import {
  AddressFamily, IpvsInfo, IpvsTimeouts, RealServer, RealServerSpec, Stats, VirtualServer, VirtualServerId, VirtualServerSpec, ZERO_STATS, addressToBytes, formatIPv4, parseIPv4,
} from '../../model/ipvs';
import { TableChange } from '../../model/views';
import {
  AF_INET,
  AF_INET6,
  IPPROTO_SCTP,
  IPPROTO_TCP,
  IPPROTO_UDP,
} from '../../uapi/inet';
import {
  IP_VS_CONN_F,
  IP_VS_CONN_F_FWD_MASK,
  IP_VS_CONN_F_TUNNEL_TYPE,
  IP_VS_SVC_F,
  IP_VS_TUNNEL_ENCAP_FLAG,
} from '../../uapi/ip_vs';
import { DEFAULT_FORMAT, ListFormat } from './parse-args';
import { Names } from './resolve-names';

const NUMERIC_NAMES: Names = { host: () => undefined, service: () => undefined };

// ---- printf helpers ----
const left = (s: string, w: number): string => s.padEnd(w);
const right = (s: string, w: number): string => s.padStart(w);
/** C's (int) view of an unsigned 32-bit value, as "%d" prints it */
const asInt = (v: number): number => v | 0;
/** "%u" of a 32-bit value */
const asUint = (v: number): number => v >>> 0;

/** print_largenum(): 9 columns, K/M/G/T beyond 100 million unless --exact */
export function formatLargeNum(i: bigint, exact: boolean): string {
  if (exact) {
    const s = i.toString();
    return right(s, s.length <= 8 ? 9 : s.length + 1);
  }
  if (i < 100000000n) return right(i.toString(), 9);
  if (i < 1000000000n) return `${right((i / 1000n).toString(), 8)}K`;
  if (i < 100000000000n) return `${right((i / 1000000n).toString(), 8)}M`;
  if (i < 100000000000000n) return `${right((i / 1000000000n).toString(), 8)}G`;
  return `${right((i / 1000000000000n).toString(), 8)}T`;
}

// ---- sorting ----

/** The 32-bit big-endian words of an address as libipvs sees them in union nf_inet_addr. */
function words(af: AddressFamily, address: string): readonly number[] {
  if (!address) return [0, 0, 0, 0];
  if (af === AF_INET) {
    const v = parseIPv4(address);
    if (v >= 0) return [v, 0, 0, 0];
  }
  const b = addressToBytes(af, address);
  const w = [0, 0, 0, 0];
  for (let i = 0; i < b.length / 4; i++) w[i] = b.readUInt32BE(i * 4);
  return w;
}

/** `int r = a - b` with a, b unsigned 32-bit: wraps, so values 2^31 or more apart compare "wrong". */
const diff32 = (a: number, b: number): number => (a - b) | 0;

/** libipvs compares addresses as the first one's family: 4 words for IPv6, 1 for IPv4. */
function cmpWords(af1: AddressFamily, w1: readonly number[], w2: readonly number[]): number {
  if (af1 === AF_INET6) {
    let r = 0;
    for (let i = 0; r === 0 && i < 4; i++) r = diff32(w1[i]!, w2[i]!);
    return r;
  }
  return diff32(w1[0]!, w2[0]!);
}

/** A service or real server with its address words computed once, not once per comparison. */
interface Keyed<T> {
  readonly item: T;
  readonly words: readonly number[];
}

function cmpServicesKeyed(a: Keyed<VirtualServer>, b: Keyed<VirtualServer>): number {
  const s1 = a.item;
  const s2 = b.item;
  let r = diff32(s1.fwmark, s2.fwmark);
  if (r !== 0) return r;
  r = s1.af - s2.af;
  if (r !== 0) return r;
  r = s1.protocol - s2.protocol;
  if (r !== 0) return r;
  r = cmpWords(s1.af, a.words, b.words);
  if (r !== 0) return r;
  return s1.port - s2.port;
}

function cmpDestsKeyed(a: Keyed<RealServer>, b: Keyed<RealServer>): number {
  const r = cmpWords(a.item.af, a.words, b.words);
  if (r !== 0) return r;
  return a.item.port - b.item.port;
}

const keyed = <T extends { readonly af: AddressFamily; readonly address: string }>(item: T): Keyed<T> => ({
  item,
  words: words(item.af, item.address),
});

/** ipvs_cmp_services(): fwmark, af, protocol, address, port (each a wrapping int difference). */
export function cmpServices(s1: VirtualServer, s2: VirtualServer): number {
  return cmpServicesKeyed(keyed(s1), keyed(s2));
}

/** ipvs_cmp_dests(): address (as the first one's family), then port. */
export function cmpDests(d1: RealServer, d2: RealServer): number {
  return cmpDestsKeyed(keyed(d1), keyed(d2));
}

/**
 * glibc 2.36 qsort() for arrays that fit in memory: top-down merge sort (msort_with_tmp),
 * left half n/2, ties and "<= 0" taken from the left. Replicated step by step because the
 * comparators above are not transitive, so another algorithm would order differently.
 */
export function glibcQsort<T>(items: readonly T[], cmp: (a: T, b: T) => number): T[] {
  const a = [...items];
  if (a.length > 1) msort(a, new Array<T>(a.length), 0, a.length, cmp);
  return a;
}

/** msort_with_tmp on a[lo, hi), in place, through tmp */
function msort<T>(a: T[], tmp: T[], lo: number, hi: number, cmp: (a: T, b: T) => number): void {
  const n = hi - lo;
  if (n <= 1) return;
  const mid = lo + Math.floor(n / 2);
  msort(a, tmp, lo, mid, cmp);
  msort(a, tmp, mid, hi, cmp);
  let i = lo;
  let j = mid;
  let k = lo;
  while (i < mid && j < hi) {
    if (cmp(a[i]!, a[j]!) <= 0) tmp[k++] = a[i++]!;
    else tmp[k++] = a[j++]!;
  }
  while (i < mid) tmp[k++] = a[i++]!;
  // what is left of the right half is already in place
  for (let x = lo; x < k; x++) a[x] = tmp[x]!;
}

/**
 * The services in ipvs_cmp_services order, as glibcQsort sorts them. When every service is
 * IPv4 and the fwmarks and the addresses each span less than 2^31, the comparator's wrapping
 * differences are exact, so it is a total order on (fwmark, protocol, address, port), and
 * any stable sort gives glibc's merge sort's result: the engine's sort on precomputed keys
 * then (a listing of 10,000 services compared objects with address words ~140,000 times).
 */
function sortServices(entries: readonly VirtualServerEntry[]): readonly VirtualServerEntry[] {
  const n = entries.length;
  if (n <= 1) return entries;
  const hi = new Array<number>(n);
  const lo = new Array<number>(n);
  let minMark = Infinity;
  let maxMark = -Infinity;
  let minAddr = Infinity;
  let maxAddr = -Infinity;
  for (let i = 0; i < n; i++) {
    const vs = entries[i]!.vs;
    if (vs.af !== AF_INET) return sortServicesGlibc(entries);
    const a = vs.address ? parseIPv4(vs.address) : 0;
    if (a < 0) return sortServicesGlibc(entries);
    const mark = vs.fwmark >>> 0;
    if (mark < minMark) minMark = mark;
    if (mark > maxMark) maxMark = mark;
    if (a < minAddr) minAddr = a;
    if (a > maxAddr) maxAddr = a;
    hi[i] = mark * 256 + vs.protocol;
    lo[i] = a * 65536 + vs.port;
  }
  if (maxMark - minMark >= 2 ** 31 || maxAddr - minAddr >= 2 ** 31) return sortServicesGlibc(entries);
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((x, y) => hi[x]! - hi[y]! || lo[x]! - lo[y]!);
  return order.map((i) => entries[i]!);
}

const sortServicesGlibc = (entries: readonly VirtualServerEntry[]): VirtualServerEntry[] =>
  glibcQsort(entries.map((e) => ({ item: e.vs, words: words(e.vs.af, e.vs.address), entry: e })), cmpServicesKeyed).map((k) => k.entry);

/**
 * A service's real servers in ipvs_cmp_dests order, as glibcQsort sorts them; for IPv4 real
 * servers whose addresses span less than 2^31 the order is total (see sortServices), and the
 * kernel's list (newest first) is often already in order or in reverse.
 */
function sortDests(dests: readonly RealServer[]): readonly RealServer[] {
  const n = dests.length;
  if (n <= 1) return dests;
  const keys = new Array<number>(n);
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const d = dests[i]!;
    const a = d.af === AF_INET ? parseIPv4(d.address) : -1;
    if (a < 0) return sortDestsGlibc(dests);
    if (a < min) min = a;
    if (a > max) max = a;
    keys[i] = a * 65536 + d.port;
  }
  if (max - min >= 2 ** 31) return sortDestsGlibc(dests);
  let ascending = true;
  let descending = true;
  for (let i = 1; i < n; i++) {
    if (keys[i - 1]! > keys[i]!) ascending = false;
    if (keys[i - 1]! <= keys[i]!) descending = false;
  }
  if (ascending) return dests;
  // strictly descending: no ties whose order a reversal would swap
  if (descending) return [...dests].reverse();
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((x, y) => keys[x]! - keys[y]!);
  return order.map((i) => dests[i]!);
}

const sortDestsGlibc = (dests: readonly RealServer[]): RealServer[] => glibcQsort(dests.map(keyed), cmpDestsKeyed).map((k) => k.item);

// ---- names ----

function protocolName(p: number): string {
  return p === IPPROTO_TCP ? 'TCP' : p === IPPROTO_UDP ? 'UDP' : p === IPPROTO_SCTP ? 'SCTP' : '?';
}

function optionFromProtocol(p: number): string | undefined {
  return p === IPPROTO_TCP ? '-t' : p === IPPROTO_UDP ? '-u' : p === IPPROTO_SCTP ? '--sctp-service' : undefined;
}

/** addrport_to_anyname(): "[v6]" in brackets; a 60-byte buffer, so at most 59 characters. */
function addrPortName(af: AddressFamily, address: string, port: number, protocol: number, fmt: ListFormat, names: Names): string {
  const host = fmt.numeric ? address : (names.host(af, address) ?? address);
  const svc = fmt.numeric ? String(port) : (names.service(port, protocol) ?? String(port));
  const s = af === AF_INET ? `${host}:${svc}` : `[${host}]:${svc}`;
  return s.slice(0, 59);
}

function serviceName(vs: VirtualServer, fmt: ListFormat, names: Names): string {
  const v6 = vs.af === AF_INET6;
  if (vs.fwmark) {
    const mark = asInt(vs.fwmark);
    if (fmt.rule) return v6 ? `-f ${mark} -6` : `-f ${mark}`;
    return v6 ? `FWM  ${mark} IPv6` : `FWM  ${mark}`;
  }
  const vname = addrPortName(vs.af, vs.address, vs.port, vs.protocol, fmt, names);
  if (fmt.rule) return `${optionFromProtocol(vs.protocol) ?? '--xxx-service'} ${vname}`;
  const s = `${left(protocolName(vs.protocol), 4)} ${vname}`;
  return v6 ? s : s.slice(0, 33);
}

function schedFlags(vs: VirtualServer): string {
  const f: string[] = [];
  // 1.31 names sh's and mh's two flags and prints nothing for their SCHED3 (seen in the VM)
  if (vs.scheduler === 'sh' || vs.scheduler === 'mh') {
    if (vs.flags & IP_VS_SVC_F.SCHED1) f.push(`${vs.scheduler}-fallback`);
    if (vs.flags & IP_VS_SVC_F.SCHED2) f.push(`${vs.scheduler}-port`);
  } else {
    if (vs.flags & IP_VS_SVC_F.SCHED1) f.push('flag-1');
    if (vs.flags & IP_VS_SVC_F.SCHED2) f.push('flag-2');
    if (vs.flags & IP_VS_SVC_F.SCHED3) f.push('flag-3');
  }
  return f.join(',');
}

const SCHED_FLAGS = IP_VS_SVC_F.SCHED1 | IP_VS_SVC_F.SCHED2 | IP_VS_SVC_F.SCHED3;

function maskText(vs: VirtualServer): string | undefined {
  if (vs.af === AF_INET) return asUint(vs.netmask) !== 0xffffffff ? formatIPv4(asUint(vs.netmask)) : undefined;
  if (vs.af === AF_INET6) return vs.netmask !== 128 ? String(asInt(vs.netmask)) : undefined;
  return undefined;
}

function fwdName(fwd: number): string {
  switch (fwd & IP_VS_CONN_F_FWD_MASK) {
    case IP_VS_CONN_F.MASQ: return 'Masq';
    case IP_VS_CONN_F.LOCALNODE: return 'Local';
    case IP_VS_CONN_F.TUNNEL: return 'Tunnel';
    case IP_VS_CONN_F.DROUTE: return 'Route';
    default: return '(null)'; // printf("%s", NULL) in glibc
  }
}

function fwdSwitch(fwd: number): string {
  switch (fwd & IP_VS_CONN_F_FWD_MASK) {
    case IP_VS_CONN_F.MASQ: return '-m';
    case IP_VS_CONN_F.TUNNEL: return '-i';
    case IP_VS_CONN_F.LOCALNODE:
    case IP_VS_CONN_F.DROUTE: return '-g';
    default: return '(null)';
  }
}

function csumShort(flags: number): string {
  if (flags & IP_VS_TUNNEL_ENCAP_FLAG.REMCSUM) return 'r+c';
  if (flags & IP_VS_TUNNEL_ENCAP_FLAG.CSUM) return '+c';
  return '-c';
}

function csumSwitch(flags: number): string {
  if (flags & IP_VS_TUNNEL_ENCAP_FLAG.REMCSUM) return '--tun-remcsum';
  if (flags & IP_VS_TUNNEL_ENCAP_FLAG.CSUM) return '--tun-csum';
  return '--tun-nocsum';
}

const isTunnel = (rs: RealServer): boolean => (rs.fwdMethod & IP_VS_CONN_F_FWD_MASK) === IP_VS_CONN_F.TUNNEL;

function tunnelInfo(rs: RealServer): string {
  if (!isTunnel(rs)) return 'n/a';
  switch (rs.tunType) {
    case IP_VS_CONN_F_TUNNEL_TYPE.IPIP: return 'ipip';
    case IP_VS_CONN_F_TUNNEL_TYPE.GUE: return `gue:${rs.tunPort}:${csumShort(rs.tunFlags)}`;
    case IP_VS_CONN_F_TUNNEL_TYPE.GRE: return `gre:${csumShort(rs.tunFlags)}`;
    default: return 'n/a';
  }
}

function tunnelSaveArgs(rs: RealServer): string {
  if (!isTunnel(rs)) return '';
  switch (rs.tunType) {
    case IP_VS_CONN_F_TUNNEL_TYPE.IPIP: return ' --tun-type ipip';
    case IP_VS_CONN_F_TUNNEL_TYPE.GUE: return ` --tun-type gue --tun-port ${rs.tunPort} ${csumSwitch(rs.tunFlags)}`;
    case IP_VS_CONN_F_TUNNEL_TYPE.GRE: return ` --tun-type gre ${csumSwitch(rs.tunFlags)}`;
    default: return '';
  }
}

// ---- lines ----

/** print_title() */
export function formatTitle(fmt: ListFormat): string {
  const second = '  -> RemoteAddress:Port\n';
  const first = left('Prot LocalAddress:Port', 33);
  const cols8 = (c: string[]): string => c.map((x) => ` ${right(x, 8)}`).join('');
  if (fmt.stats) return `${first}${cols8(['Conns', 'InPkts', 'OutPkts', 'InBytes', 'OutBytes'])}\n${second}`;
  if (fmt.rate) return `${first}${cols8(['CPS', 'InPPS', 'OutPPS', 'InBPS', 'OutBPS'])}\n${second}`;
  if (fmt.thresholds) {
    return `${first} ${left('Uthreshold', 10)} ${left('Lthreshold', 10)} ${left('ActiveConn', 10)} ${left('InActConn', 10)}\n${second}`;
  }
  if (fmt.persistentConn) {
    return `${first} ${left('Weight', 9)} ${left('PersistConn', 11)} ${left('ActiveConn', 10)} ${left('InActConn', 10)}\n${second}`;
  }
  if (fmt.tunInfo) {
    return 'Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward TunnelInfo    Weight ActiveConn InActConn\n';
  }
  if (!fmt.rule) {
    return 'Prot LocalAddress:Port Scheduler Flags\n  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn\n';
  }
  return '';
}

function statsOf(x: { readonly stats?: Stats }): Stats {
  return x.stats ?? ZERO_STATS;
}

function serviceLine(vs: VirtualServer, svcName: string, fmt: ListFormat): string {
  const flags = vs.flags;
  if (fmt.rule) {
    let s = `-A ${svcName} -s ${vs.scheduler}`;
    if (flags & IP_VS_SVC_F.PERSISTENT) {
      s += ` -p ${asUint(vs.timeout)}`;
      const m = maskText(vs);
      if (m !== undefined) s += ` -M ${m}`;
    }
    if (vs.peName) s += ` --pe ${vs.peName}`;
    if (flags & IP_VS_SVC_F.ONEPACKET) s += ' -o';
    if (flags & SCHED_FLAGS) s += ` -b ${schedFlags(vs)}`;
    return `${s}\n`;
  }
  if (fmt.stats || fmt.rate) {
    const st = statsOf(vs);
    const v = fmt.stats ? [st.conns, st.inpkts, st.outpkts, st.inbytes, st.outbytes] : [st.cps, st.inpps, st.outpps, st.inbps, st.outbps];
    return `${left(svcName, 33)}${v.map((x) => formatLargeNum(x, fmt.exact)).join('')}\n`;
  }
  let s = `${svcName} ${vs.scheduler}`;
  if (flags & SCHED_FLAGS) s += ` (${schedFlags(vs)})`;
  if (flags & IP_VS_SVC_F.PERSISTENT) {
    s += ` persistent ${asUint(vs.timeout)}`;
    const m = maskText(vs);
    if (m !== undefined) s += ` mask ${m}`;
    if (vs.peName) s += ` pe ${vs.peName}`;
  }
  if (flags & IP_VS_SVC_F.ONEPACKET) s += ' ops';
  return `${s}\n`;
}

function destLine(vs: VirtualServer, svcName: string, rs: RealServer, fmt: ListFormat, names: Names): string {
  let dname = addrPortName(rs.af, rs.address, rs.port, vs.protocol, fmt, names);
  if (fmt.rule) return `-a ${svcName} -r ${dname} ${fwdSwitch(rs.fwdMethod)} -w ${asInt(rs.weight)}${tunnelSaveArgs(rs)}\n`;
  if (rs.af !== AF_INET6) dname = dname.slice(0, 28);
  const d = left(dname, 28);
  if (fmt.stats) {
    const st = statsOf(rs);
    return `  -> ${d}${[st.conns, st.inpkts, st.outpkts, st.inbytes, st.outbytes].map((x) => formatLargeNum(x, fmt.exact)).join('')}\n`;
  }
  if (fmt.rate) {
    const st = statsOf(rs);
    return `  -> ${d} ${right(st.cps.toString(), 8)} ${right(st.inpps.toString(), 8)} ${right(st.outpps.toString(), 8)}` +
      `${formatLargeNum(st.inbps, fmt.exact)}${formatLargeNum(st.outbps, fmt.exact)}\n`;
  }
  const u = (n: number, w: number): string => left(String(asUint(n)), w);
  if (fmt.thresholds) return `  -> ${d} ${u(rs.uThreshold, 10)} ${u(rs.lThreshold, 10)} ${u(rs.activeConns, 10)} ${u(rs.inactConns, 10)}\n`;
  if (fmt.persistentConn) return `  -> ${d} ${u(rs.weight, 9)} ${u(rs.persistConns, 11)} ${u(rs.activeConns, 10)} ${u(rs.inactConns, 10)}\n`;
  const w = left(String(asInt(rs.weight)), 6);
  if (fmt.tunInfo) {
    return `  -> ${d} ${left(fwdName(rs.fwdMethod), 7)} ${left(tunnelInfo(rs), 13)} ${w} ${u(rs.activeConns, 10)} ${u(rs.inactConns, 10)}\n`;
  }
  return `  -> ${d} ${left(fwdName(rs.fwdMethod), 7)} ${w} ${u(rs.activeConns, 10)} ${u(rs.inactConns, 10)}\n`;
}

/** print_service_entry(): the service line and its real servers (sorted unless --nosort). */
export function formatServiceEntry(entry: VirtualServerEntry, fmt: ListFormat, names: Names = NUMERIC_NAMES): string {
  const svcName = serviceName(entry.vs, fmt, names);
  const dests = fmt.nosort ? entry.dests : sortDests(entry.dests);
  let out = serviceLine(entry.vs, svcName, fmt);
  for (const rs of dests) out += destLine(entry.vs, svcName, rs, fmt, names);
  return out;
}

/** list_all(): banner (not with -S), title, every service (sorted unless --nosort). */
export function formatListAll(info: IpvsInfo, entries: readonly VirtualServerEntry[], fmt: ListFormat, names: Names = NUMERIC_NAMES): string {
  let out = '';
  if (!fmt.rule) {
    const v = info.version;
    out += `IP Virtual Server version ${(v >> 16) & 0xff}.${(v >> 8) & 0xff}.${v & 0xff} (size=${asInt(info.connTabSize)})\n`;
  }
  const sorted = fmt.nosort ? entries : sortServices(entries);
  out += formatTitle(fmt);
  for (const e of sorted) out += formatServiceEntry(e, fmt, names);
  return out;
}

/** list_service(): no banner, title and the one service. */
export function formatListService(entry: VirtualServerEntry, fmt: ListFormat, names: Names = NUMERIC_NAMES): string {
  return formatTitle(fmt) + formatServiceEntry(entry, fmt, names);
}

/** list_timeout() */
export function formatTimeouts(t: IpvsTimeouts): string {
  return `Timeout (tcp tcpfin udp): ${asInt(t.tcp)} ${asInt(t.tcpFin)} ${asInt(t.udp)}\n`;
}

// ---- one change as an ipvsadm command line ----

const RULE_FORMAT: ListFormat = Object.freeze({ ...DEFAULT_FORMAT, rule: true, numeric: true });

function fullService(vs: VirtualServerId & Partial<VirtualServerSpec>): VirtualServer {
  return {
    af: vs.af, protocol: vs.protocol, address: vs.address, port: vs.port, fwmark: vs.fwmark,
    scheduler: vs.scheduler ?? '', flags: vs.flags ?? 0, timeout: vs.timeout ?? 0,
    netmask: vs.netmask ?? (vs.af === AF_INET6 ? 128 : 0xffffffff), peName: vs.peName ?? '',
  };
}

function fullRealServer(rs: RealServerSpec): RealServer {
  return {
    af: rs.af, address: rs.address, port: rs.port, fwdMethod: rs.fwdMethod, weight: rs.weight,
    uThreshold: rs.uThreshold ?? 0, lThreshold: rs.lThreshold ?? 0, activeConns: 0, inactConns: 0, persistConns: 0,
    tunType: rs.tunType ?? 0, tunPort: rs.tunPort ?? 0, tunFlags: rs.tunFlags ?? 0,
  };
}

/**
 * One table change as the ipvsadm command that makes it, numeric, in ipvsadm-save's spelling
 * (`-A -t 10.96.0.1:443 -s rr`, `-E ...`, `-D -t ...`, `-a -t ... -r ... -m -w 1`, `-e ...`,
 * `-d -t ... -r ...`); no newline. `kube-ipvs ipvsadm` (and ipvsadm) parse it back to the change.
 */
export function formatChangeLine(change: TableChange): string {
  const vs = fullService(change.vs);
  const svcName = serviceName(vs, RULE_FORMAT, NUMERIC_NAMES);
  switch (change.kind) {
    case 'newService':
      return serviceLine(vs, svcName, RULE_FORMAT).trimEnd();
    case 'setService':
      return `-E${serviceLine(vs, svcName, RULE_FORMAT).trimEnd().slice(2)}`;
    case 'delService':
      return `-D ${svcName}`;
    case 'newDest':
      return destLine(vs, svcName, fullRealServer(change.rs), RULE_FORMAT, NUMERIC_NAMES).trimEnd();
    case 'setDest':
      return `-e${destLine(vs, svcName, fullRealServer(change.rs), RULE_FORMAT, NUMERIC_NAMES).trimEnd().slice(2)}`;
    case 'delDest':
      return `-d ${svcName} -r ${addrPortName(change.rs.af, change.rs.address, change.rs.port, vs.protocol, RULE_FORMAT, NUMERIC_NAMES)}`;
  }
}
