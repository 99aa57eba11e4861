// Pure: an IPVS table + a list format -> the exact text ipvsadm 1.31 prints
// (list_all / list_service / print_title / print_service_entry / print_largenum), in the order
// libipvs sorts (sort-list.ts).

import { VirtualServerEntry } from '../../kernel/ipvs/ipvs';
import {
  AddressFamily,
  IpvsInfo,
  IpvsTimeouts,
  RealServer,
  Stats,
  VirtualServer,
  VirtualServerId,
  VirtualServerSpec,
  ZERO_STATS,
  formatIPv4,
  realServerOf,
} from '../../model/ipvs';
import { TableChange } from '../../model/views';
import { AF_INET, AF_INET6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../../uapi/inet';
import {
  IP_VS_CONN_F,
  IP_VS_CONN_F_FWD_MASK,
  IP_VS_CONN_F_TUNNEL_TYPE,
  IP_VS_SVC_F,
  IP_VS_TUNNEL_ENCAP_FLAG,
} from '../../uapi/ip_vs';
import { DEFAULT_FORMAT, ListFormat } from './parse-args';
import { Names } from './resolve-names';
import { sortDests, sortServices } from './sort-list';

export { cmpDests, cmpServices, glibcQsort } from './sort-list';

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

// ---- names ----

function protocolName(p: number): string {
  return p === IPPROTO_TCP ? 'TCP' : p === IPPROTO_UDP ? 'UDP' : p === IPPROTO_SCTP ? 'SCTP' : '?';
}

function optionFromProtocol(p: number): string | undefined {
  return p === IPPROTO_TCP ? '-t' : p === IPPROTO_UDP ? '-u' : p === IPPROTO_SCTP ? '--sctp-service' : undefined;
}

/** addrport_to_anyname(): "[v6]" in brackets; a 60-byte buffer, so at most 59 characters. */
function addrPortName(
  af: AddressFamily,
  address: string,
  port: number,
  protocol: number,
  fmt: ListFormat,
  names: Names,
): string {
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
    case IP_VS_CONN_F.MASQ:
      return 'Masq';
    case IP_VS_CONN_F.LOCALNODE:
      return 'Local';
    case IP_VS_CONN_F.TUNNEL:
      return 'Tunnel';
    case IP_VS_CONN_F.DROUTE:
      return 'Route';
    default:
      return '(null)'; // printf("%s", NULL) in glibc
  }
}

function fwdSwitch(fwd: number): string {
  switch (fwd & IP_VS_CONN_F_FWD_MASK) {
    case IP_VS_CONN_F.MASQ:
      return '-m';
    case IP_VS_CONN_F.TUNNEL:
      return '-i';
    case IP_VS_CONN_F.LOCALNODE:
    case IP_VS_CONN_F.DROUTE:
      return '-g';
    default:
      return '(null)';
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
    case IP_VS_CONN_F_TUNNEL_TYPE.IPIP:
      return 'ipip';
    case IP_VS_CONN_F_TUNNEL_TYPE.GUE:
      return `gue:${rs.tunPort}:${csumShort(rs.tunFlags)}`;
    case IP_VS_CONN_F_TUNNEL_TYPE.GRE:
      return `gre:${csumShort(rs.tunFlags)}`;
    default:
      return 'n/a';
  }
}

function tunnelSaveArgs(rs: RealServer): string {
  if (!isTunnel(rs)) return '';
  switch (rs.tunType) {
    case IP_VS_CONN_F_TUNNEL_TYPE.IPIP:
      return ' --tun-type ipip';
    case IP_VS_CONN_F_TUNNEL_TYPE.GUE:
      return ` --tun-type gue --tun-port ${rs.tunPort} ${csumSwitch(rs.tunFlags)}`;
    case IP_VS_CONN_F_TUNNEL_TYPE.GRE:
      return ` --tun-type gre ${csumSwitch(rs.tunFlags)}`;
    default:
      return '';
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
    const v = fmt.stats
      ? [st.conns, st.inpkts, st.outpkts, st.inbytes, st.outbytes]
      : [st.cps, st.inpps, st.outpps, st.inbps, st.outbps];
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
  if (fmt.rule)
    return `-a ${svcName} -r ${dname} ${fwdSwitch(rs.fwdMethod)} -w ${asInt(rs.weight)}${tunnelSaveArgs(rs)}\n`;
  if (rs.af !== AF_INET6) dname = dname.slice(0, 28);
  const d = left(dname, 28);
  if (fmt.stats) {
    const st = statsOf(rs);
    return `  -> ${d}${[st.conns, st.inpkts, st.outpkts, st.inbytes, st.outbytes].map((x) => formatLargeNum(x, fmt.exact)).join('')}\n`;
  }
  if (fmt.rate) {
    const st = statsOf(rs);
    return (
      `  -> ${d} ${right(st.cps.toString(), 8)} ${right(st.inpps.toString(), 8)} ${right(st.outpps.toString(), 8)}` +
      `${formatLargeNum(st.inbps, fmt.exact)}${formatLargeNum(st.outbps, fmt.exact)}\n`
    );
  }
  const u = (n: number, w: number): string => left(String(asUint(n)), w);
  if (fmt.thresholds)
    return `  -> ${d} ${u(rs.uThreshold, 10)} ${u(rs.lThreshold, 10)} ${u(rs.activeConns, 10)} ${u(rs.inactConns, 10)}\n`;
  if (fmt.persistentConn)
    return `  -> ${d} ${u(rs.weight, 9)} ${u(rs.persistConns, 11)} ${u(rs.activeConns, 10)} ${u(rs.inactConns, 10)}\n`;
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
export function formatListAll(
  info: IpvsInfo,
  entries: readonly VirtualServerEntry[],
  fmt: ListFormat,
  names: Names = NUMERIC_NAMES,
): string {
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
    af: vs.af,
    protocol: vs.protocol,
    address: vs.address,
    port: vs.port,
    fwmark: vs.fwmark,
    scheduler: vs.scheduler ?? '',
    flags: vs.flags ?? 0,
    timeout: vs.timeout ?? 0,
    netmask: vs.netmask ?? (vs.af === AF_INET6 ? 128 : 0xffffffff),
    peName: vs.peName ?? '',
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
      return destLine(vs, svcName, realServerOf(change.rs), RULE_FORMAT, NUMERIC_NAMES).trimEnd();
    case 'setDest':
      return `-e${destLine(vs, svcName, realServerOf(change.rs), RULE_FORMAT, NUMERIC_NAMES).trimEnd().slice(2)}`;
    case 'delDest':
      return `-d ${svcName} -r ${addrPortName(change.rs.af, change.rs.address, change.rs.port, vs.protocol, RULE_FORMAT, NUMERIC_NAMES)}`;
  }
}
