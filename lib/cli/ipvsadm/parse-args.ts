// argv -> typed command, the way ipvsadm 1.31 parses it (parse_options + process_options):
// same option table, same order of checks, same messages, same exit codes
// (fail() exits 2; popt errors and "Try `ipvsadm -h'" exit 255, i.e. ipvsadm's -1).

import { isIPv6 } from 'node:net';
import { IpvsOp } from '../../kernel/ipvs/ipvs';
import { AddressFamily, IpvsTimeouts, RealServerSpec, VirtualServerId, VirtualServerSpec, canonicalAddress, formatIPv4 } from '../../model/ipvs';
import {
  AF_INET,
  AF_INET6,
  IPPROTO_SCTP,
  IPPROTO_TCP,
  IPPROTO_UDP,
} from '../../uapi/inet';
import {
  IP_VS_CONN_F,
  IP_VS_CONN_F_TUNNEL_TYPE,
  IP_VS_SVC_F,
  IP_VS_TUNNEL_ENCAP_FLAG,
} from '../../uapi/ip_vs';
import { inetAton, stringToNumber, strtolWhole, atoi } from './inet';
import { OptionDef, PoptContext } from './popt';
import { Resolver } from './resolve-names';

export const PROGRAM = 'ipvsadm';
export const DEF_SCHED = 'wlc';
/** IPVS_SVC_PERSISTENT_TIMEOUT (libipvs.h): 6 minutes */
export const DEF_PERSISTENT_TIMEOUT = 360;
const MAX_TIMEOUT = 86400 * 31;
const INT_MAX = 2147483647;
const IP_VS_SCHEDNAME_MAXLEN = 16;
const IP_VS_PENAME_MAXLEN = 16;

/** Which listing, as ipvsadm's FMT_* bits. */
export interface ListFormat {
  readonly numeric: boolean;
  readonly stats: boolean;
  readonly rate: boolean;
  readonly thresholds: boolean;
  readonly persistentConn: boolean;
  readonly nosort: boolean;
  readonly exact: boolean;
  readonly tunInfo: boolean;
  /** -S/--save (FMT_RULE) */
  readonly rule: boolean;
}

export const DEFAULT_FORMAT: ListFormat = Object.freeze({
  numeric: false, stats: false, rate: false, thresholds: false, persistentConn: false,
  nosort: false, exact: false, tunInfo: false, rule: false,
});

/** ipvsadm's command names (cmdnames[]), also used to choose kernel error messages */
export type CommandName =
  | 'add-service' | 'edit-service' | 'delete-service' | 'flush' | 'list' | 'add-server'
  | 'delete-server' | 'edit-server' | 'set' | 'start-daemon' | 'stop-daemon' | 'restore'
  | 'save' | 'zero';

export type IpvsadmCommand =
  | { readonly kind: 'list-all'; readonly format: ListFormat }
  | { readonly kind: 'list-service'; readonly format: ListFormat; readonly vs: VirtualServerId }
  | { readonly kind: 'list-timeout' }
  | { readonly kind: 'list-daemon' }
  | { readonly kind: 'list-connections'; readonly format: ListFormat }
  | { readonly kind: 'save'; readonly format: ListFormat }
  | { readonly kind: 'restore' }
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'daemon'; readonly command: 'start-daemon' | 'stop-daemon' }
  /** one change of the table: -A -E -D -a -e -d -C -Z --set */
  | { readonly kind: 'op'; readonly command: CommandName; readonly op: IpvsOp };

/** A refusal, with what ipvsadm prints and its exit status. */
export interface ParseError {
  readonly stderr: string;
  readonly stdout?: string;
  readonly exitCode: number;
}

export type ParseResult = { readonly ok: true; readonly command: IpvsadmCommand } | ({ readonly ok: false } & ParseError);

class Fail extends Error {
  constructor(readonly result: ParseError) {
    super(result.stderr);
  }
}

/** ipvsadm's fail(2, ...) */
function fail(message: string): never {
  throw new Fail({ stderr: `${message}\n`, exitCode: 2 });
}

function tryhelp(): never {
  throw new Fail({ stderr: `Try \`${PROGRAM} -h' or '${PROGRAM} --help' for more information.\n`, exitCode: 255 });
}

// ---- the option table (parse_options' poptOption table, 1.31) ----
const T = {
  SET: 'TAG_SET', START_DAEMON: 'TAG_START_DAEMON', STOP_DAEMON: 'TAG_STOP_DAEMON',
  MCAST_INTERFACE: 'TAG_MCAST_INTERFACE', TIMEOUT: 'TAG_TIMEOUT', DAEMON: 'TAG_DAEMON', STATS: 'TAG_STATS',
  RATE: 'TAG_RATE', THRESHOLDS: 'TAG_THRESHOLDS', PERSISTENTCONN: 'TAG_PERSISTENTCONN', SORT: 'TAG_SORT',
  NO_SORT: 'TAG_NO_SORT', PE: 'TAG_PERSISTENCE_ENGINE', SCTP_SERVICE: 'TAG_SCTP_SERVICE',
  MCAST_GROUP: 'TAG_MCAST_GROUP', MCAST_PORT: 'TAG_MCAST_PORT', MCAST_TTL: 'TAG_MCAST_TTL',
  SYNC_MAXLEN: 'TAG_SYNC_MAXLEN', TUN_INFO: 'TAG_TUN_INFO', TUN_TYPE: 'TAG_TUN_TYPE', TUN_PORT: 'TAG_TUN_PORT',
  TUN_NOCSUM: 'TAG_TUN_NOCSUM', TUN_CSUM: 'TAG_TUN_CSUM', TUN_REMCSUM: 'TAG_TUN_REMCSUM',
} as const;

const o = (long: string, short: string | undefined, arg: OptionDef['arg'], key?: string): OptionDef =>
  short ? { long, short, arg, key: key ?? short } : { long, arg, key: key! };

export const OPTIONS: readonly OptionDef[] = [
  o('add-service', 'A', 'none'), o('edit-service', 'E', 'none'), o('delete-service', 'D', 'none'),
  o('clear', 'C', 'none'), o('list', 'L', 'none'), o('list', 'l', 'none'), o('zero', 'Z', 'none'),
  o('add-server', 'a', 'none'), o('edit-server', 'e', 'none'), o('delete-server', 'd', 'none'),
  o('set', undefined, 'none', T.SET), o('help', 'h', 'none'), o('version', 'v', 'none'),
  o('restore', 'R', 'none'), o('save', 'S', 'none'),
  o('start-daemon', undefined, 'required', T.START_DAEMON), o('stop-daemon', undefined, 'required', T.STOP_DAEMON),
  o('tcp-service', 't', 'required'), o('udp-service', 'u', 'required'),
  o('sctp-service', undefined, 'required', T.SCTP_SERVICE), o('fwmark-service', 'f', 'required'),
  o('scheduler', 's', 'required'), o('persistent', 'p', 'optional'), o('netmask', 'M', 'required'),
  o('real-server', 'r', 'required'), o('masquerading', 'm', 'none'), o('ipip', 'i', 'none'),
  o('gatewaying', 'g', 'none'), o('weight', 'w', 'required'), o('u-threshold', 'x', 'required'),
  o('l-threshold', 'y', 'required'), o('numeric', 'n', 'none'), o('connection', 'c', 'none'),
  o('mcast-interface', undefined, 'required', T.MCAST_INTERFACE), o('syncid', undefined, 'required', 'I'),
  o('timeout', undefined, 'none', T.TIMEOUT), o('daemon', undefined, 'none', T.DAEMON),
  o('stats', undefined, 'none', T.STATS), o('rate', undefined, 'none', T.RATE),
  o('thresholds', undefined, 'none', T.THRESHOLDS), o('persistent-conn', undefined, 'none', T.PERSISTENTCONN),
  o('tun-info', undefined, 'none', T.TUN_INFO), o('nosort', undefined, 'none', T.NO_SORT),
  o('sort', undefined, 'none', T.SORT), o('exact', 'X', 'none'), o('ipv6', '6', 'none'), o('ops', 'o', 'none'),
  o('pe', undefined, 'required', T.PE), o('sched-flags', 'b', 'required'),
  o('mcast-group', undefined, 'required', T.MCAST_GROUP), o('mcast-port', undefined, 'required', T.MCAST_PORT),
  o('mcast-ttl', undefined, 'required', T.MCAST_TTL), o('sync-maxlen', undefined, 'required', T.SYNC_MAXLEN),
  o('tun-type', undefined, 'required', T.TUN_TYPE), o('tun-port', undefined, 'required', T.TUN_PORT),
  o('tun-nocsum', undefined, 'none', T.TUN_NOCSUM), o('tun-csum', undefined, 'none', T.TUN_CSUM),
  o('tun-remcsum', undefined, 'none', T.TUN_REMCSUM),
];

// ---- OPT_* bits, in ipvsadm's order (optnames[]) ----
const OPT_NAMES = [
  'numeric', 'connection', 'service-address', 'scheduler', 'persistent', 'netmask', 'real-server',
  'forwarding-method', 'weight', 'u-threshold', 'l-threshold', 'mcast-interface', 'timeout', 'daemon',
  'stats', 'rate', 'thresholds', 'persistent-conn', 'nosort', 'syncid', 'exact', 'ops', 'pe',
  'sched-flags', 'mcast-group', 'mcast-port', 'mcast-ttl', 'sync-maxlen', 'tun-info', 'tun-type',
  'tun-port', 'tun-nocsum', 'tun-csum', 'tun-remcsum',
] as const;
type OptName = (typeof OPT_NAMES)[number];

/**
 * Legal combinations of commands (rows, CMD_NAMES order) and options (columns, OPT_NAMES
 * order), ipvsadm 1.31's commands_v_options: '+' compulsory, 'x' illegal, '1' at most one
 * of the '1' options, ' ' optional.
 */
const COMMANDS_V_OPTIONS: Readonly<Record<CommandName, string>> = {
  'add-service':    'xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx',
  'edit-service':   'xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx',
  'delete-service': 'xx+xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'flush':          'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'list':           ' 11xxxxxxxxx11       xxxxxxx xxxxx',
  'add-server':     'xx+xxx+    xxxxxxxxxxxxxxxxxx     ',
  'delete-server':  'xx+xxx+xxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'edit-server':    'xx+xxx+    xxxxxxxxxxxxxxxxxx     ',
  'set':            'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'start-daemon':   'xxxxxxxxxxx xxxxxxx xxxx    xxxxxx',
  'stop-daemon':    'xxxxxxxxxxxxxxxxxxx xxxxxxxxxxxxxx',
  'restore':        'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'save':           ' xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'zero':           'xx xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
};

/** Tunnel types (rows) vs tunnel options tun-port, tun-nocsum, tun-csum, tun-remcsum. */
const TUNNEL_TYPES = ['ipip', 'gue', 'gre'] as const;
const TUNNEL_V_OPTIONS: Readonly<Record<(typeof TUNNEL_TYPES)[number], string>> = {
  ipip: 'xxxx',
  gue: '+111',
  gre: 'x11x',
};
const TUNNEL_OPTS: readonly OptName[] = ['tun-port', 'tun-nocsum', 'tun-csum', 'tun-remcsum'];

const FIRST_COMMANDS: Readonly<Record<string, CommandName>> = {
  A: 'add-service', E: 'edit-service', D: 'delete-service', a: 'add-server', e: 'edit-server',
  d: 'delete-server', C: 'flush', L: 'list', l: 'list', Z: 'zero', [T.SET]: 'set', R: 'restore', S: 'save',
};

interface SvcState {
  af: number; // 0 until a service (or -f) sets it
  protocol: number;
  address: string; // '' for none/fwmark
  port: number;
  fwmark: number;
  scheduler: string;
  flags: number;
  timeout: number;
  netmask: number;
  peName: string;
}

interface DestState {
  af: number;
  address: string;
  port: number;
  fwd: number;
  weight: number;
  uThreshold: number;
  lThreshold: number;
  tunType: number;
  tunPort: number;
  tunFlags: number;
}

type ParsedAddr = { addr: boolean; port: boolean; af: AddressFamily; address: string; portValue: number };

/** ipvsadm's parse_service(): host[:port], [v6]:port, with IPv4 in any inet_aton form or a name. */
function parseService(buf: string, protocol: number, resolver: Resolver, hosts: HostLookups): ParsedAddr | undefined {
  if (/^[0-9]*$/.test(buf)) return undefined; // str_is_digit, also true for ""
  let host = buf;
  let portText: string | undefined;
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    if (close < 0) return undefined;
    if (host[close + 1] !== ':') return undefined;
    portText = host.slice(close + 2);
    host = host.slice(1, close);
  }
  let af: AddressFamily;
  let address: string;
  // an IPv6 address has two colons at least: "10.0.0.1:80" skips the IPv6 test
  if (host.indexOf(':') !== host.lastIndexOf(':') && isIPv6(host) && !host.includes('%')) {
    af = AF_INET6;
    address = canonicalAddress(host);
  } else {
    // not IPv6: the port is looked for again (strrchr) in what is left, so "[1.2.3.4]:80"
    // loses its port, as in ipvsadm
    const colon = host.lastIndexOf(':');
    portText = colon >= 0 ? host.slice(colon + 1) : undefined;
    const h = colon >= 0 ? host.slice(0, colon) : host;
    const v = inetAton(h);
    if (v !== undefined) address = formatIPv4(v);
    else {
      const r = lookupHost(hosts, h);
      if (r === undefined) return undefined;
      address = r;
    }
    af = AF_INET;
  }
  let portValue = 0;
  if (portText !== undefined) {
    const n = stringToNumber(portText, 0, 65535);
    if (n !== undefined) portValue = n;
    else {
      const s = resolver.serviceToPort(portText, protocol);
      if (s === undefined) return undefined;
      portValue = s;
    }
  }
  return { addr: true, port: portText !== undefined, af, address, portValue };
}

function parseTimeout(buf: string | undefined, min: number, max: number): number {
  if (buf === undefined) return DEF_PERSISTENT_TIMEOUT;
  const n = stringToNumber(buf, min, max);
  if (n === undefined) fail(`invalid timeout value \`${buf}' specified`);
  return n;
}

function parseFwmark(buf: string): number {
  const n = strtolWhole(buf);
  if (n === undefined || n <= 0 || n > 0xffffffff) fail(`invalid fwmark value \`${buf}' specified`);
  return n;
}

function parseSchedFlags(sched: string, arg: string): number {
  const s = sched || DEF_SCHED;
  let flags = 0;
  const tokens = arg.split(',').filter((t) => t !== ''); // strtok skips empty fields
  for (const flag of tokens) {
    switch (flag) {
      case 'flag-1': flags |= IP_VS_SVC_F.SCHED1; break;
      case 'flag-2': flags |= IP_VS_SVC_F.SCHED2; break;
      case 'flag-3': flags |= IP_VS_SVC_F.SCHED3; break;
      case 'sh-fallback':
      case 'sh-port':
        flags |= flag === 'sh-port' ? IP_VS_SVC_F.SCHED2 : IP_VS_SVC_F.SCHED1;
        if (s !== 'sh') fail(`incompatible scheduler flag \`${flag}'`);
        break;
      case 'mh-fallback':
      case 'mh-port':
        flags |= flag === 'mh-port' ? IP_VS_SVC_F.SCHED2 : IP_VS_SVC_F.SCHED1;
        if (s !== 'mh') fail(`incompatible scheduler flag \`${flag}'`);
        break;
      default:
        fail(`invalid scheduler flag \`${flag}'`);
    }
  }
  return flags;
}

function genericOptCheck(command: CommandName, options: ReadonlySet<OptName>): void {
  const row = COMMANDS_V_OPTIONS[command];
  let last: OptName | undefined;
  OPT_NAMES.forEach((name, j) => {
    const rule = row[j];
    if (!options.has(name)) {
      if (rule === '+') fail(`You need to supply the '${name}' option for the '${command}' command`);
      return;
    }
    if (rule === 'x') fail(`Illegal '${name}' option with the '${command}' command`);
    if (rule === '1') {
      if (last === undefined) last = name;
      else fail(`The option '${name}' conflicts with the '${last}' option in the '${command}' command`);
    }
  });
}

function tunnelOptCheck(type: (typeof TUNNEL_TYPES)[number], options: ReadonlySet<OptName>): void {
  const row = TUNNEL_V_OPTIONS[type];
  let last: OptName | undefined;
  TUNNEL_OPTS.forEach((name, j) => {
    const rule = row[j];
    if (!options.has(name)) {
      if (rule === '+') fail(`You need to supply the '${name}' option for the '${type}' tunnel type`);
      return;
    }
    if (rule === 'x') fail(`Illegal '${name}' option with the '${type}' tunnel type`);
    if (rule === '1') {
      if (last === undefined) last = name;
      else fail(`The option '${name}' conflicts with the '${last}' option in the '${type}' tunnel type`);
    }
  });
}

export interface ParseOptions {
  /** as ipvsadm's reading_stdin: lines of -R may not be -R again */
  readonly readingStdin?: boolean;
}

/**
 * Parses ipvsadm arguments (without the program name). Never throws for bad input: returns
 * the message and exit status ipvsadm would give. No arguments means "-L" without -n.
 */
export async function parseArgs(argv: readonly string[], resolver: Resolver, opts: ParseOptions = {}): Promise<ParseResult> {
  return parseArgsCached(argv, resolver, opts, new Map());
}

/**
 * Host names looked up so far (gethostbyname, IPv4): name -> address, undefined when unknown.
 * The parse itself is synchronous; when it meets a name not looked up yet it stops with
 * NeedHost, the name is looked up, and the parse runs again from the start (it is
 * deterministic, so the result is the one a parse waiting for each look-up would give).
 */
export type HostLookups = Map<string, string | undefined>;

class NeedHost {
  constructor(readonly name: string) {}
}

function lookupHost(hosts: HostLookups, name: string): string | undefined {
  if (!hosts.has(name)) throw new NeedHost(name);
  return hosts.get(name);
}

function parseOnce(argv: readonly string[], resolver: Resolver, opts: ParseOptions, hosts: HostLookups): ParseResult {
  try {
    return { ok: true, command: parse(argv, resolver, opts, hosts) };
  } catch (e) {
    if (e instanceof Fail) return { ok: false, ...e.result };
    throw e;
  }
}

/**
 * parseArgs with a look-up cache shared by many calls (the lines of a restore). Synchronous
 * (no promise) when every host name it needs is in `hosts` already, as with numeric addresses.
 */
export function parseArgsCached(
  argv: readonly string[],
  resolver: Resolver,
  opts: ParseOptions,
  hosts: HostLookups,
): ParseResult | Promise<ParseResult> {
  try {
    return parseOnce(argv, resolver, opts, hosts);
  } catch (e) {
    if (!(e instanceof NeedHost)) throw e;
    return (async () => {
      for (let need = e; ; ) {
        hosts.set(need.name, await resolver.hostToIPv4(need.name));
        try {
          return parseOnce(argv, resolver, opts, hosts);
        } catch (again) {
          if (!(again instanceof NeedHost)) throw again;
          need = again;
        }
      }
    })();
  }
}

function parse(argv: readonly string[], resolver: Resolver, opts: ParseOptions, hosts: HostLookups): IpvsadmCommand {
  if (argv.length === 0) return { kind: 'list-all', format: DEFAULT_FORMAT };
  const ctx = new PoptContext(argv, OPTIONS);
  const options = new Set<OptName>();
  const format = { ...DEFAULT_FORMAT };
  const svc: SvcState = {
    af: 0, protocol: 0, address: '', port: 0, fwmark: 0, scheduler: '', flags: 0, timeout: 0,
    netmask: 0xffffffff, peName: '',
  };
  const dest: DestState = {
    af: 0, address: '', port: 0, fwd: IP_VS_CONN_F.DROUTE, weight: 1, uThreshold: 0, lThreshold: 0,
    tunType: IP_VS_CONN_F_TUNNEL_TYPE.IPIP, tunPort: 0, tunFlags: IP_VS_TUNNEL_ENCAP_FLAG.NOCSUM,
  };
  let schedFlagsArg = '';
  let tunTypeName: (typeof TUNNEL_TYPES)[number] = 'ipip';

  const setOption = (name: OptName): void => {
    if (options.has(name)) fail(`multiple '${name}' options specified`);
    options.add(name);
  };

  // the first option must be a command
  const first = ctx.nextOpt();
  if (!first || first.type === 'error') tryhelp();
  let command: CommandName;
  if (first.key === 'h') return { kind: 'help' };
  if (first.key === 'v') return { kind: 'version' };
  if (first.key === T.START_DAEMON || first.key === T.STOP_DAEMON) {
    command = first.key === T.START_DAEMON ? 'start-daemon' : 'stop-daemon';
    if (first.arg !== 'master' && first.arg !== 'backup') {
      fail(command === 'start-daemon' ? 'illegal start-daemon parameter specified' : 'illegal start_daemon specified');
    }
  } else {
    const c = FIRST_COMMANDS[first.key];
    if (!c) tryhelp();
    command = c;
  }

  for (let ev = ctx.nextOpt(); ev; ev = ctx.nextOpt()) {
    if (ev.type === 'error') throw new Fail({ stderr: `${ev.word}: ${ev.message}\n`, exitCode: 255 });
    const arg = ev.arg ?? '';
    switch (ev.key) {
      case 't':
      case 'u':
      case T.SCTP_SERVICE: {
        setOption('service-address');
        svc.protocol = ev.key === 't' ? IPPROTO_TCP : ev.key === 'u' ? IPPROTO_UDP : IPPROTO_SCTP;
        const p = parseService(arg, svc.protocol, resolver, hosts);
        if (!p) fail('illegal virtual server address[:port] specified');
        svc.af = p.af;
        svc.address = p.address;
        if (p.af === AF_INET6) svc.netmask = 128;
        if (p.port) svc.port = p.portValue;
        break;
      }
      case 'f':
        setOption('service-address');
        svc.af = AF_INET;
        svc.protocol = IPPROTO_TCP;
        svc.fwmark = parseFwmark(arg);
        break;
      case 's':
        setOption('scheduler');
        svc.scheduler = arg.slice(0, IP_VS_SCHEDNAME_MAXLEN);
        break;
      case 'p':
        setOption('persistent');
        svc.flags |= IP_VS_SVC_F.PERSISTENT;
        svc.timeout = parseTimeout(ev.arg, 1, MAX_TIMEOUT);
        break;
      case 'M':
        setOption('netmask');
        if (svc.af !== AF_INET6) {
          let v = inetAton(arg);
          if (v === undefined) {
            const a = lookupHost(hosts, arg);
            v = a ? inetAton(a) : undefined;
          }
          if (v === undefined) fail('illegal virtual server persistent mask specified');
          svc.netmask = v;
        } else {
          svc.netmask = atoi(arg);
          if (svc.netmask < 1 || svc.netmask > 128) fail('illegal ipv6 netmask specified');
        }
        break;
      case 'r': {
        setOption('real-server');
        const p = parseService(arg, svc.protocol, resolver, hosts);
        if (!p) fail('illegal real server address[:port] specified');
        dest.af = p.af;
        dest.address = p.address;
        // the port is taken from the service (so far) unless one is given
        dest.port = p.port ? p.portValue : svc.port;
        break;
      }
      case 'i':
        setOption('forwarding-method');
        dest.fwd = IP_VS_CONN_F.TUNNEL;
        break;
      case 'g':
        setOption('forwarding-method');
        dest.fwd = IP_VS_CONN_F.DROUTE;
        break;
      case 'm':
        setOption('forwarding-method');
        dest.fwd = IP_VS_CONN_F.MASQ;
        break;
      case 'w': {
        setOption('weight');
        const n = stringToNumber(arg, 0, INT_MAX);
        if (n === undefined) fail('illegal weight specified');
        dest.weight = n;
        break;
      }
      case 'x': {
        setOption('u-threshold');
        const n = stringToNumber(arg, 0, INT_MAX);
        if (n === undefined) fail('illegal u_threshold specified');
        dest.uThreshold = n;
        break;
      }
      case 'y': {
        setOption('l-threshold');
        const n = stringToNumber(arg, 0, INT_MAX);
        if (n === undefined) fail('illegal l_threshold specified');
        dest.lThreshold = n;
        break;
      }
      case 'c': setOption('connection'); break;
      case 'n': setOption('numeric'); format.numeric = true; break;
      case T.MCAST_INTERFACE: setOption('mcast-interface'); break;
      case 'I':
        setOption('syncid');
        if (stringToNumber(arg, 0, 255) === undefined) fail('illegal syncid specified');
        break;
      case T.TIMEOUT: setOption('timeout'); break;
      case T.DAEMON: setOption('daemon'); break;
      case T.STATS: setOption('stats'); format.stats = true; break;
      case T.RATE: setOption('rate'); format.rate = true; break;
      case T.THRESHOLDS: setOption('thresholds'); format.thresholds = true; break;
      case T.PERSISTENTCONN: setOption('persistent-conn'); format.persistentConn = true; break;
      case T.NO_SORT: setOption('nosort'); format.nosort = true; break;
      case T.SORT: break; // the default; a no-op kept for compatibility
      case 'X': setOption('exact'); format.exact = true; break;
      case '6':
        if (svc.fwmark) {
          svc.af = AF_INET6;
          svc.netmask = 128;
        } else fail('-6 used before -f\n');
        break;
      case 'o':
        setOption('ops');
        svc.flags |= IP_VS_SVC_F.ONEPACKET;
        break;
      case T.PE:
        setOption('pe');
        svc.peName = arg.slice(0, IP_VS_PENAME_MAXLEN);
        break;
      case 'b':
        setOption('sched-flags');
        schedFlagsArg = arg.slice(0, 127);
        break;
      case T.MCAST_GROUP:
        setOption('mcast-group');
        if (arg.includes(':')) {
          if (!isIPv6(arg) || !/^ff/i.test(canonicalAddress(arg))) fail(`invalid IPv6 mcast-group \`${arg}'`);
        } else {
          const v = inetAton(arg);
          if (v === undefined || v >>> 28 !== 0xe) fail(`invalid IPv4 mcast-group \`${arg}'`);
        }
        break;
      case T.MCAST_PORT:
        setOption('mcast-port');
        if (stringToNumber(arg, 1, 65535) === undefined) fail('illegal mcast-port specified');
        break;
      case T.MCAST_TTL:
        setOption('mcast-ttl');
        if (stringToNumber(arg, 1, 255) === undefined) fail('illegal mcast-ttl specified');
        break;
      case T.SYNC_MAXLEN:
        setOption('sync-maxlen');
        if (stringToNumber(arg, 1, 65535 - 20 - 8) === undefined) fail('illegal sync-maxlen specified');
        break;
      case T.TUN_INFO: setOption('tun-info'); format.tunInfo = true; break;
      case T.TUN_TYPE: {
        setOption('tun-type');
        const i = (TUNNEL_TYPES as readonly string[]).indexOf(arg);
        if (i < 0) fail('illegal tunnel type specified');
        tunTypeName = TUNNEL_TYPES[i]!;
        dest.tunType = i; // IP_VS_CONN_F_TUNNEL_TYPE_IPIP/GUE/GRE are 0/1/2
        break;
      }
      case T.TUN_PORT: {
        setOption('tun-port');
        const n = stringToNumber(arg, 1, 65535);
        if (n === undefined) fail('illegal tunnel port specified');
        dest.tunPort = n;
        break;
      }
      case T.TUN_NOCSUM: setOption('tun-nocsum'); dest.tunFlags = IP_VS_TUNNEL_ENCAP_FLAG.NOCSUM; break;
      case T.TUN_CSUM: setOption('tun-csum'); dest.tunFlags = IP_VS_TUNNEL_ENCAP_FLAG.CSUM; break;
      case T.TUN_REMCSUM: setOption('tun-remcsum'); dest.tunFlags = IP_VS_TUNNEL_ENCAP_FLAG.REMCSUM; break;
      default:
        fail(`invalid option \`${ev.word}'`);
    }
  }

  const rest = ctx.args();
  let timeouts: IpvsTimeouts | undefined;
  if (command === 'set') {
    if (rest.length < 3) fail('--set option requires 3 timeout values');
    const [a, b, c] = rest.splice(0, 3) as [string, string, string];
    timeouts = { tcp: parseTimeout(a, 0, MAX_TIMEOUT), tcpFin: parseTimeout(b, 0, MAX_TIMEOUT), udp: parseTimeout(c, 0, MAX_TIMEOUT) };
  }
  if (rest.length > 0) fail(`unexpected argument ${rest[0]}`);

  if (schedFlagsArg) {
    svc.flags &= ~(IP_VS_SVC_F.SCHED1 | IP_VS_SVC_F.SCHED2 | IP_VS_SVC_F.SCHED3);
    svc.flags |= parseSchedFlags(svc.scheduler, schedFlagsArg);
  }

  genericOptCheck(command, options);

  if (command === 'add-service' || command === 'edit-service') {
    if (!svc.fwmark && !svc.port && !(svc.flags & IP_VS_SVC_F.PERSISTENT)) fail('Zero port specified for non-persistent service');
    if (svc.flags & IP_VS_SVC_F.ONEPACKET && !svc.fwmark && svc.protocol !== IPPROTO_UDP) {
      fail('One-Packet Scheduling is only for UDP virtual services');
    }
    if (!svc.scheduler) svc.scheduler = DEF_SCHED;
  }

  if (command === 'add-server' || command === 'edit-server') {
    // direct routing and tunnelling cannot change the port
    if (!svc.fwmark && (dest.fwd === IP_VS_CONN_F.TUNNEL || dest.fwd === IP_VS_CONN_F.DROUTE)) dest.port = svc.port;
    if (dest.af !== svc.af && dest.fwd !== IP_VS_CONN_F.TUNNEL) fail('Different address family is allowed only for tunneling servers');
    const tunOpts = (['tun-type', ...TUNNEL_OPTS] as OptName[]).some((n) => options.has(n));
    if (dest.fwd !== IP_VS_CONN_F.TUNNEL) {
      if (tunOpts) fail('Tunnel options conflict with forward method');
    } else tunnelOptCheck(tunTypeName, options);
  }

  if (command === 'restore' && opts.readingStdin) tryhelp();

  const svcAf = (svc.af || AF_INET) as AddressFamily;
  const vsId: VirtualServerId = svc.fwmark
    ? { af: svcAf, protocol: 0, address: '', port: 0, fwmark: svc.fwmark }
    : { af: svcAf, protocol: svc.protocol, address: svc.address || (svcAf === AF_INET6 ? '::' : '0.0.0.0'), port: svc.port, fwmark: 0 };

  switch (command) {
    case 'list':
      if (
        ((options.has('connection') || options.has('timeout') || options.has('daemon')) &&
          (options.has('stats') || options.has('rate') || options.has('thresholds'))) ||
        ((options.has('timeout') || options.has('daemon')) && options.has('persistent-conn'))
      ) {
        fail('options conflicts in the list command');
      }
      if (options.has('connection')) return { kind: 'list-connections', format };
      if (options.has('service-address')) return { kind: 'list-service', format, vs: vsId };
      if (options.has('timeout')) return { kind: 'list-timeout' };
      if (options.has('daemon')) return { kind: 'list-daemon' };
      return { kind: 'list-all', format };
    case 'save':
      return { kind: 'save', format: { ...format, rule: true } };
    case 'restore':
      return { kind: 'restore' };
    case 'start-daemon':
    case 'stop-daemon':
      return { kind: 'daemon', command };
    case 'flush':
      return { kind: 'op', command, op: { kind: 'flush' } };
    case 'set':
      return { kind: 'op', command, op: { kind: 'setConfig', timeouts: timeouts! } };
    case 'zero': {
      // libipvs zeroes everything unless a fwmark, an address or a port identifies a service
      const any = !svc.fwmark && !svc.port && (svc.address === '' || /^(0\.0\.0\.0|::)$/.test(svc.address));
      return { kind: 'op', command, op: any ? { kind: 'zero' } : { kind: 'zero', vs: vsId } };
    }
    case 'add-service':
    case 'edit-service': {
      const spec: VirtualServerSpec = {
        ...vsId, scheduler: svc.scheduler, flags: svc.flags, timeout: svc.timeout, netmask: svc.netmask, peName: svc.peName,
      };
      return { kind: 'op', command, op: { kind: command === 'add-service' ? 'newService' : 'setService', vs: spec } };
    }
    case 'delete-service':
      return { kind: 'op', command, op: { kind: 'delService', vs: vsId } };
    case 'add-server':
    case 'edit-server': {
      const rs: RealServerSpec = {
        af: dest.af as AddressFamily, address: dest.address, port: dest.port, fwdMethod: dest.fwd, weight: dest.weight,
        uThreshold: dest.uThreshold, lThreshold: dest.lThreshold,
        ...(dest.fwd === IP_VS_CONN_F.TUNNEL ? { tunType: dest.tunType, tunPort: dest.tunPort, tunFlags: dest.tunFlags } : {}),
      };
      return { kind: 'op', command, op: { kind: command === 'add-server' ? 'newDest' : 'setDest', vs: vsId, rs } };
    }
    case 'delete-server':
      return {
        kind: 'op', command,
        op: { kind: 'delDest', vs: vsId, rs: { af: dest.af as AddressFamily, address: dest.address, port: dest.port } },
      };
  }
}
