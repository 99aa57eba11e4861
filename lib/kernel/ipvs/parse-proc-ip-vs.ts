// Pure: the text of /proc/net/ip_vs -> the table as far as it shows it.
//
// The kernel prints it in ip_vs_info_seq_show() (net/netfilter/ipvs/ip_vs_ctl.c, 6.1):
//
//   IP Virtual Server version 1.2.1 (size=4096)
//   Prot LocalAddress:Port Scheduler Flags
//     -> RemoteAddress:Port Forward Weight ActiveConn InActConn
//   TCP  0A000001:0050 rr                              "%s  %08X:%04X %s %s " (ops flag or "")
//   UDP  0A000004:0035 mh ops                          then "persistent %d %08X" or nothing
//   TCP  [2001:0db8:...:0001]:01BB wlc persistent 90000 30000000     IPv6: no "ops" printed
//   FWM  00000005 wlc persistent 2500 40000000          a fwmark service: no family shown
//     -> C0A80101:1F90      Masq    3      0          0
//     -> [fd00:0000:...:0004]:0063      Masq    1      0          0
//
// One read lists the whole table (the netlink API needs one dump per service for the real
// servers). What it does NOT show, so a listing needing it must ask netlink: the scheduler
// flags (-b), the persistence engine (--pe), the family of a fwmark service, one-packet
// scheduling of an IPv6 service, thresholds, persistent-connection counts, tunnel type/port/
// checksum, counters and rates. The persistence timeout is in jiffies (CONFIG_HZ, unknown
// here) and the IPv6 persistence mask is a prefix length shown through ntohl(): both are kept
// raw. A real server's forwarding method is shown as Masq for every value the kernel does not
// name (4-7, which only a raw netlink client can set): it is read as Masq.

import { KubeIpvsError } from '../../errors';
import { AddressFamily, IpvsInfo, RealServer, bytesToAddress, formatIPv4, realServerOf } from '../../model/ipvs';
import { AF_INET, AF_INET6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../../uapi/inet';
import { IP_VS_CONN_F } from '../../uapi/ip_vs';

/** /proc/net/ip_vs text that is not what the kernel prints. */
export class ProcIpVsParseError extends KubeIpvsError {
  readonly code = 'KIPVS_PROC_IP_VS_PARSE' as const;
  constructor(
    message: string,
    /** 1-based line of the text */
    readonly line: number,
  ) {
    super(`/proc/net/ip_vs line ${line}: ${message}`);
  }
}

/**
 * A real server as /proc shows it, in the shape of a netlink one (a listing hands it on as it
 * is): thresholds, persistent connections and tunnel fields, which /proc does not show, are 0.
 */
export type ProcRealServer = RealServer;

/** One virtual server as /proc/net/ip_vs shows it, with its real servers. */
export interface ProcVirtualServer {
  /** the service's family; undefined for a fwmark service (/proc does not show it) */
  readonly af: AddressFamily | undefined;
  /** IPPROTO_TCP / UDP / SCTP; 0 for a fwmark service */
  readonly protocol: number;
  /** '' for a fwmark service */
  readonly address: string;
  readonly port: number;
  readonly fwmark: number;
  readonly scheduler: string;
  /** "ops" shown (IPv4 and fwmark services only: the IPv6 line never shows it) */
  readonly onePacket: boolean;
  /** persistence timeout in jiffies and the netmask word as shown; undefined when not persistent */
  readonly persistent: { readonly timeoutJiffies: number; readonly netmaskWord: number } | undefined;
  /** in the kernel's list order (newest first) */
  readonly dests: readonly ProcRealServer[];
}

/** /proc/net/ip_vs parsed: the version line and every virtual server. */
export interface ProcIpVsTable {
  readonly info: IpvsInfo;
  /** in the kernel's hash-table order, which is also the netlink dump's */
  readonly services: readonly ProcVirtualServer[];
}

const PROTOCOLS: Readonly<Record<string, number>> = { TCP: IPPROTO_TCP, UDP: IPPROTO_UDP, SCTP: IPPROTO_SCTP };
const FORWARD: Readonly<Record<string, number>> = {
  Masq: IP_VS_CONN_F.MASQ,
  Local: IP_VS_CONN_F.LOCALNODE,
  Tunnel: IP_VS_CONN_F.TUNNEL,
  Route: IP_VS_CONN_F.DROUTE,
};

const FORWARD_ENTRIES: readonly (readonly [string, number])[] = Object.entries(FORWARD);

const BANNER = /^IP Virtual Server version (\d+)\.(\d+)\.(\d+) \(size=(-?\d+)\)$/;
const TITLE1 = 'Prot LocalAddress:Port Scheduler Flags';
const TITLE2 = '  -> RemoteAddress:Port Forward Weight ActiveConn InActConn';

/** fixed-width upper-case hex, as %08X / %04X print it; -1 when not */
function hex(s: string, width: number): number {
  return s.length === width ? hexAt(s, 0, width) : -1;
}

/** `width` upper-case hex digits of s from `from` */
function hexAt(s: string, from: number, width: number): number {
  let v = 0;
  for (let i = from; i < from + width; i++) {
    const c = s.charCodeAt(i);
    const d = c >= 48 && c <= 57 ? c - 48 : c >= 65 && c <= 70 ? c - 55 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

/** "%d" of an int; NaN when not */
function int(s: string | undefined): number {
  if (s === undefined || s.length === 0 || s.length > 11) return NaN;
  let i = s.charCodeAt(0) === 45 /* - */ ? 1 : 0;
  if (i === s.length) return NaN;
  let n = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return NaN;
    n = n * 10 + (c - 48);
  }
  if (s.charCodeAt(0) === 45) n = -n;
  return n >= -2147483648 && n <= 2147483647 ? n : NaN;
}

/** the words of a line, split on blanks (the kernel pads with spaces) */
function wordsOf(line: string): string[] {
  const w: string[] = [];
  let start = -1;
  for (let i = 0; i < line.length; i++) {
    if (line.charCodeAt(i) === 32) {
      if (start >= 0) {
        w.push(line.slice(start, i));
        start = -1;
      }
    } else if (start < 0) start = i;
  }
  if (start >= 0) w.push(line.slice(start));
  return w;
}

/**
 * "0A000001:0050" (IPv4, %08X:%04X) or "[2001:0db8:...:0001]:0050" (IPv6, %pI6 with every
 * group written out); undefined when neither.
 */
function addrPort(s: string): { af: AddressFamily; address: string; port: number } | undefined {
  if (s.startsWith('[')) {
    const close = s.indexOf(']:');
    if (close !== 40) return undefined; // 8 groups of 4 digits and 7 colons
    const port = hex(s.slice(close + 2), 4);
    const bytes = Buffer.alloc(16);
    for (let g = 0; g < 8; g++) {
      const v = parseInt(s.slice(1 + g * 5, 5 + g * 5), 16);
      if (!/^[0-9a-f]{4}$/.test(s.slice(1 + g * 5, 5 + g * 5)) || (g < 7 && s[5 + g * 5] !== ':')) return undefined;
      bytes.writeUInt16BE(v, g * 2);
    }
    if (port < 0) return undefined;
    return { af: AF_INET6, address: bytesToAddress(AF_INET6, bytes), port };
  }
  if (s.length !== 13 || s.charCodeAt(8) !== 58 /* : */) return undefined;
  const a = hexAt(s, 0, 8);
  const port = hexAt(s, 9, 4);
  if (a < 0 || port < 0) return undefined;
  return { af: AF_INET, address: formatIPv4(a), port };
}

/**
 * The usual real server line, IPv4 ("  -> 0A000001:0050      Masq    1      0          0"),
 * scanned in place in s[start, end) (a listing reads 100,000 of them; no string is made for
 * the line): undefined for anything else, which then goes through the general path and its
 * errors.
 */
function scanIPv4Dest(s: string, start: number, end: number): ProcRealServer | undefined {
  if (end - start < 19 || s.charCodeAt(start + 13) !== 58 /* : */ || s.charCodeAt(start + 18) !== 32) return undefined;
  const a = hexAt(s, start + 5, 8);
  const port = hexAt(s, start + 14, 4);
  if (a < 0 || port < 0) return undefined;
  let p = skipBlanks(s, start + 18, end);
  const fwdEnd = wordEnd(s, p, end);
  const fwdMethod = forwardAt(s, p, fwdEnd);
  if (fwdMethod < 0) return undefined;
  p = skipBlanks(s, fwdEnd, end);
  let e = wordEnd(s, p, end);
  const weight = intAt(s, p, e);
  p = skipBlanks(s, e, end);
  e = wordEnd(s, p, end);
  const activeConns = intAt(s, p, e);
  p = skipBlanks(s, e, end);
  e = wordEnd(s, p, end);
  const inactConns = intAt(s, p, e);
  if (Number.isNaN(weight) || Number.isNaN(activeConns) || Number.isNaN(inactConns) || skipBlanks(s, e, end) !== end)
    return undefined;
  return realServerOf({ af: AF_INET, address: formatIPv4(a), port, fwdMethod, weight }, { activeConns, inactConns });
}

/** The forwarding method named by s[from, to), as FORWARD has it; -1 for any other word. */
function forwardAt(s: string, from: number, to: number): number {
  for (const [name, method] of FORWARD_ENTRIES)
    if (to - from === name.length && s.startsWith(name, from)) return method;
  return -1;
}

function skipBlanks(s: string, i: number, end: number = s.length): number {
  while (i < end && s.charCodeAt(i) === 32) i++;
  return i;
}

function wordEnd(s: string, i: number, end: number = s.length): number {
  while (i < end && s.charCodeAt(i) !== 32) i++;
  return i;
}

/** int() of s[from, to) without the substring */
function intAt(s: string, from: number, to: number): number {
  if (to - from < 1 || to - from > 10) return to - from > 10 ? int(s.slice(from, to)) : NaN;
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return int(s.slice(from, to));
    n = n * 10 + (c - 48);
  }
  return n <= 2147483647 ? n : NaN;
}

type MutableService = { -readonly [K in keyof ProcVirtualServer]: ProcVirtualServer[K] } & { dests: ProcRealServer[] };

interface ParsedBlock {
  /** the block's text, a string of its own (see blockKey) */
  readonly key: string;
  readonly service: ProcVirtualServer;
  readonly lines: number;
}

/**
 * A block's text as a string of its own. A slice of the whole text would keep all of it alive
 * (V8 slices point into their parent) for as long as the block stays unchanged: one whole
 * /proc text per generation a kept block came from, 6 MB each at 10,000 x 10.
 */
function blockKey(slice: string): string {
  return Buffer.from(slice, 'latin1').toString('latin1');
}

/**
 * The service blocks (a service line and the real server lines under it) of the last parse,
 * by their text: a full sync reads the table every syncPeriod, and a block whose text did not
 * change (no real server, weight or connection count of that service moved) parses to the
 * same service, so it is not parsed again. Its services are shared between parses: immutable.
 */
export class ProcIpVsBlocks {
  /** @internal parseProcIpVs's: the blocks of the last parse that succeeded */
  last = new Map<string, ParsedBlock>();
}

/** The end of the block whose service line starts at `start` (before its last newline), and its line count. */
function blockEnd(text: string, start: number): { end: number; lines: number } {
  let end = text.indexOf('\n', start);
  let lines = 1;
  // a real server line starts with "  -> "; the next service line with its protocol
  while (end >= 0 && text.charCodeAt(end + 1) === 32) {
    end = text.indexOf('\n', end + 1);
    lines++;
  }
  return { end: end < 0 ? text.length : end, lines };
}

/**
 * Parses the whole text of /proc/net/ip_vs; throws ProcIpVsParseError naming the first bad
 * line. With `blocks`, an unchanged service block of the last parse is taken as it was.
 */
export function parseProcIpVs(text: string, blocks?: ProcIpVsBlocks): ProcIpVsTable {
  // lines are found in place: only a line off the real server fast path becomes a string
  const len = text.length;
  let pos = 0;
  const header: string[] = [];
  while (header.length < 3 && pos < len) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = len;
    header.push(text.slice(pos, nl));
    pos = nl + 1;
  }
  const banner = BANNER.exec(header[0] ?? '');
  if (!banner) throw new ProcIpVsParseError(`not the IPVS banner: '${header[0] ?? ''}'`, 1);
  if (header[1] !== TITLE1) throw new ProcIpVsParseError(`not the title line '${TITLE1}'`, 2);
  if (header[2] !== TITLE2) throw new ProcIpVsParseError(`not the title line '${TITLE2.trim()}'`, 3);
  const info: IpvsInfo = {
    version: (Number(banner[1]) << 16) | (Number(banner[2]) << 8) | Number(banner[3]),
    connTabSize: Number(banner[4]),
  };
  const services: ProcVirtualServer[] = [];
  let current: MutableService | undefined;
  const seen = blocks ? new Map<string, ParsedBlock>() : undefined;
  let block: { text: string; lines: number } | undefined;
  // i: the 0-based line number (a final newline ends the last line, as split-and-pop read it)
  for (let i = 3; pos < len; i++) {
    const start = pos;
    if (seen && text.charCodeAt(start) !== 32) {
      const b = blockEnd(text, start);
      block = { text: text.slice(start, b.end), lines: b.lines };
      const hit = blocks!.last.get(block.text) ?? seen.get(block.text);
      if (hit) {
        services.push(hit.service);
        // the kept key, not this parse's slice: an unchanged block holds no part of this text
        seen.set(hit.key, hit);
        current = undefined;
        pos = b.end + 1;
        i += hit.lines - 1;
        continue;
      }
    }
    let end = text.indexOf('\n', pos);
    if (end < 0) end = len;
    pos = end + 1;
    if (current && end - start >= 5 && text.startsWith('  -> ', start)) {
      const d = scanIPv4Dest(text, start, end);
      if (d) {
        current.dests.push(d);
        continue;
      }
    }
    const line = text.slice(start, end);
    const bad = (what: string): never => {
      throw new ProcIpVsParseError(`${what}: '${line}'`, i + 1);
    };
    const w = wordsOf(line);
    if (line.startsWith('  -> ')) {
      if (!current) bad('a real server before any service');
      // -> ADDR:PORT FORWARD WEIGHT ACTIVE INACT
      if (w.length !== 6) bad('not a real server line');
      const a = addrPort(w[1]!) ?? bad('bad real server address');
      const fwdMethod = FORWARD[w[2]!] ?? bad(`unknown forwarding method '${w[2]}'`);
      const [weight, activeConns, inactConns] = [int(w[3]), int(w[4]), int(w[5])];
      if (Number.isNaN(weight) || Number.isNaN(activeConns) || Number.isNaN(inactConns))
        bad('bad weight or connection counts');
      current!.dests.push(
        realServerOf({ af: a.af, address: a.address, port: a.port, fwdMethod, weight }, { activeConns, inactConns }),
      );
      continue;
    }
    // a service: PROT ADDR:PORT SCHED [ops] [persistent TIMEOUT MASK] | FWM MARK SCHED [ops] [persistent ...]
    let svc: MutableService;
    let rest: string[];
    if (w[0] === 'FWM') {
      const mark = hex(w[1] ?? '', 8);
      if (mark < 0 || !w[2]) bad('not a fwmark service line');
      svc = {
        af: undefined,
        protocol: 0,
        address: '',
        port: 0,
        fwmark: mark,
        scheduler: w[2]!,
        onePacket: false,
        persistent: undefined,
        dests: [],
      };
      rest = w.slice(3);
    } else {
      const protocol = PROTOCOLS[w[0] ?? ''] ?? bad('not a service line');
      const a = addrPort(w[1] ?? '') ?? bad('bad service address');
      if (!w[2]) bad('no scheduler');
      svc = {
        af: a.af,
        protocol,
        address: a.address,
        port: a.port,
        fwmark: 0,
        scheduler: w[2]!,
        onePacket: false,
        persistent: undefined,
        dests: [],
      };
      rest = w.slice(3);
    }
    if (rest[0] === 'ops') {
      svc.onePacket = true;
      rest = rest.slice(1);
    }
    if (rest.length > 0) {
      const timeoutJiffies = int(rest[1]);
      const netmaskWord = hex(rest[2] ?? '', 8);
      if (rest[0] !== 'persistent' || rest.length !== 3 || Number.isNaN(timeoutJiffies) || netmaskWord < 0)
        bad('bad service flags');
      svc.persistent = { timeoutJiffies, netmaskWord };
    }
    services.push(svc);
    current = svc;
    // its real servers are pushed as the lines under it are parsed
    if (seen && block) {
      const key = blockKey(block.text);
      seen.set(key, { key, service: svc, lines: block.lines });
    }
  }
  if (blocks && seen) blocks.last = seen;
  return { info, services };
}
