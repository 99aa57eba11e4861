// ipvsadm 1.31's option table: the popt definitions (parse_options' poptOption table), what
// each option does to the parse state (process_options' switch, one handler per option), the
// OPT_* bits and the commands_v_options / tunnel_types_v_options legality matrices.

import { isIPv6 } from 'node:net';
import { canonicalAddress } from '../../model/ipvs';
import { AF_INET, AF_INET6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../../uapi/inet';
import {
  IP_VS_CONN_F,
  IP_VS_CONN_F_TUNNEL_TYPE,
  IP_VS_PENAME_MAXLEN,
  IP_VS_SCHEDNAME_MAXLEN,
  IP_VS_SVC_F,
  IP_VS_TUNNEL_ENCAP_FLAG,
} from '../../uapi/ip_vs';
import { CommandName, DEFAULT_FORMAT, ListFormat, fail } from './command';
import { atoi, inetAton, stringToNumber } from './inet';
import { HostLookups, INT_MAX, MAX_TIMEOUT, lookupHost, parseFwmark, parseService, parseTimeout } from './parse-values';
import { OptionDef } from './popt';
import { Resolver } from './resolve-names';

// ---- the popt table ----
export const T = {
  SET: 'TAG_SET',
  START_DAEMON: 'TAG_START_DAEMON',
  STOP_DAEMON: 'TAG_STOP_DAEMON',
  MCAST_INTERFACE: 'TAG_MCAST_INTERFACE',
  TIMEOUT: 'TAG_TIMEOUT',
  DAEMON: 'TAG_DAEMON',
  STATS: 'TAG_STATS',
  RATE: 'TAG_RATE',
  THRESHOLDS: 'TAG_THRESHOLDS',
  PERSISTENTCONN: 'TAG_PERSISTENTCONN',
  SORT: 'TAG_SORT',
  NO_SORT: 'TAG_NO_SORT',
  PE: 'TAG_PERSISTENCE_ENGINE',
  SCTP_SERVICE: 'TAG_SCTP_SERVICE',
  MCAST_GROUP: 'TAG_MCAST_GROUP',
  MCAST_PORT: 'TAG_MCAST_PORT',
  MCAST_TTL: 'TAG_MCAST_TTL',
  SYNC_MAXLEN: 'TAG_SYNC_MAXLEN',
  TUN_INFO: 'TAG_TUN_INFO',
  TUN_TYPE: 'TAG_TUN_TYPE',
  TUN_PORT: 'TAG_TUN_PORT',
  TUN_NOCSUM: 'TAG_TUN_NOCSUM',
  TUN_CSUM: 'TAG_TUN_CSUM',
  TUN_REMCSUM: 'TAG_TUN_REMCSUM',
} as const;

const o = (long: string, short: string | undefined, arg: OptionDef['arg'], key?: string): OptionDef =>
  short ? { long, short, arg, key: key ?? short } : { long, arg, key: key! };

/** ipvsadm 1.31's popt option table (options_table in ipvsadm.c). */
export const OPTIONS: readonly OptionDef[] = [
  o('add-service', 'A', 'none'),
  o('edit-service', 'E', 'none'),
  o('delete-service', 'D', 'none'),
  o('clear', 'C', 'none'),
  o('list', 'L', 'none'),
  o('list', 'l', 'none'),
  o('zero', 'Z', 'none'),
  o('add-server', 'a', 'none'),
  o('edit-server', 'e', 'none'),
  o('delete-server', 'd', 'none'),
  o('set', undefined, 'none', T.SET),
  o('help', 'h', 'none'),
  o('version', 'v', 'none'),
  o('restore', 'R', 'none'),
  o('save', 'S', 'none'),
  o('start-daemon', undefined, 'required', T.START_DAEMON),
  o('stop-daemon', undefined, 'required', T.STOP_DAEMON),
  o('tcp-service', 't', 'required'),
  o('udp-service', 'u', 'required'),
  o('sctp-service', undefined, 'required', T.SCTP_SERVICE),
  o('fwmark-service', 'f', 'required'),
  o('scheduler', 's', 'required'),
  o('persistent', 'p', 'optional'),
  o('netmask', 'M', 'required'),
  o('real-server', 'r', 'required'),
  o('masquerading', 'm', 'none'),
  o('ipip', 'i', 'none'),
  o('gatewaying', 'g', 'none'),
  o('weight', 'w', 'required'),
  o('u-threshold', 'x', 'required'),
  o('l-threshold', 'y', 'required'),
  o('numeric', 'n', 'none'),
  o('connection', 'c', 'none'),
  o('mcast-interface', undefined, 'required', T.MCAST_INTERFACE),
  o('syncid', undefined, 'required', 'I'),
  o('timeout', undefined, 'none', T.TIMEOUT),
  o('daemon', undefined, 'none', T.DAEMON),
  o('stats', undefined, 'none', T.STATS),
  o('rate', undefined, 'none', T.RATE),
  o('thresholds', undefined, 'none', T.THRESHOLDS),
  o('persistent-conn', undefined, 'none', T.PERSISTENTCONN),
  o('tun-info', undefined, 'none', T.TUN_INFO),
  o('nosort', undefined, 'none', T.NO_SORT),
  o('sort', undefined, 'none', T.SORT),
  o('exact', 'X', 'none'),
  o('ipv6', '6', 'none'),
  o('ops', 'o', 'none'),
  o('pe', undefined, 'required', T.PE),
  o('sched-flags', 'b', 'required'),
  o('mcast-group', undefined, 'required', T.MCAST_GROUP),
  o('mcast-port', undefined, 'required', T.MCAST_PORT),
  o('mcast-ttl', undefined, 'required', T.MCAST_TTL),
  o('sync-maxlen', undefined, 'required', T.SYNC_MAXLEN),
  o('tun-type', undefined, 'required', T.TUN_TYPE),
  o('tun-port', undefined, 'required', T.TUN_PORT),
  o('tun-nocsum', undefined, 'none', T.TUN_NOCSUM),
  o('tun-csum', undefined, 'none', T.TUN_CSUM),
  o('tun-remcsum', undefined, 'none', T.TUN_REMCSUM),
];

/** The commands the first option may name (the daemons and -h/-v are read apart). */
export const FIRST_COMMANDS: Readonly<Record<string, CommandName>> = {
  A: 'add-service',
  E: 'edit-service',
  D: 'delete-service',
  a: 'add-server',
  e: 'edit-server',
  d: 'delete-server',
  C: 'flush',
  L: 'list',
  l: 'list',
  Z: 'zero',
  [T.SET]: 'set',
  R: 'restore',
  S: 'save',
};

// ---- OPT_* bits, in ipvsadm's order (optnames[]) ----
const OPT_NAMES = [
  'numeric',
  'connection',
  'service-address',
  'scheduler',
  'persistent',
  'netmask',
  'real-server',
  'forwarding-method',
  'weight',
  'u-threshold',
  'l-threshold',
  'mcast-interface',
  'timeout',
  'daemon',
  'stats',
  'rate',
  'thresholds',
  'persistent-conn',
  'nosort',
  'syncid',
  'exact',
  'ops',
  'pe',
  'sched-flags',
  'mcast-group',
  'mcast-port',
  'mcast-ttl',
  'sync-maxlen',
  'tun-info',
  'tun-type',
  'tun-port',
  'tun-nocsum',
  'tun-csum',
  'tun-remcsum',
] as const;
/** The name of one ipvsadm option (OPT_* in ipvsadm.c, as in its messages). */
export type OptName = (typeof OPT_NAMES)[number];

/**
 * Legal combinations of commands (rows, CMD_NAMES order) and options (columns, OPT_NAMES
 * order), ipvsadm 1.31's commands_v_options: '+' compulsory, 'x' illegal, '1' at most one
 * of the '1' options, ' ' optional.
 */
const COMMANDS_V_OPTIONS: Readonly<Record<CommandName, string>> = {
  'add-service': 'xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx',
  'edit-service': 'xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx',
  'delete-service': 'xx+xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  flush: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  list: ' 11xxxxxxxxx11       xxxxxxx xxxxx',
  'add-server': 'xx+xxx+    xxxxxxxxxxxxxxxxxx     ',
  'delete-server': 'xx+xxx+xxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'edit-server': 'xx+xxx+    xxxxxxxxxxxxxxxxxx     ',
  set: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  'start-daemon': 'xxxxxxxxxxx xxxxxxx xxxx    xxxxxx',
  'stop-daemon': 'xxxxxxxxxxxxxxxxxxx xxxxxxxxxxxxxx',
  restore: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  save: ' xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
  zero: 'xx xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx',
};

/** Tunnel types (rows) vs tunnel options tun-port, tun-nocsum, tun-csum, tun-remcsum. */
export const TUNNEL_TYPES = ['ipip', 'gue', 'gre'] as const;
/** One --tun-type value: ipip, gue or gre. */
export type TunnelType = (typeof TUNNEL_TYPES)[number];
const TUNNEL_V_OPTIONS: Readonly<Record<TunnelType, string>> = {
  ipip: 'xxxx',
  gue: '+111',
  gre: 'x11x',
};
/** The tunnel options, the columns of the tunnel-type matrix. */
export const TUNNEL_OPTS: readonly OptName[] = ['tun-port', 'tun-nocsum', 'tun-csum', 'tun-remcsum'];

/** One row of a legality matrix against the options given; `what` names the row in messages. */
function checkRow(row: string, names: readonly OptName[], options: ReadonlySet<OptName>, what: string): void {
  let last: OptName | undefined;
  names.forEach((name, j) => {
    const rule = row[j];
    if (!options.has(name)) {
      if (rule === '+') fail(`You need to supply the '${name}' option for the ${what}`);
      return;
    }
    if (rule === 'x') fail(`Illegal '${name}' option with the ${what}`);
    if (rule === '1') {
      if (last === undefined) last = name;
      else fail(`The option '${name}' conflicts with the '${last}' option in the ${what}`);
    }
  });
}

/** ipvsadm's generic_opt_check */
export function genericOptCheck(command: CommandName, options: ReadonlySet<OptName>): void {
  checkRow(COMMANDS_V_OPTIONS[command], OPT_NAMES, options, `'${command}' command`);
}

/** ipvsadm's tunnel_opt_check */
export function tunnelOptCheck(type: TunnelType, options: ReadonlySet<OptName>): void {
  checkRow(TUNNEL_V_OPTIONS[type], TUNNEL_OPTS, options, `'${type}' tunnel type`);
}

// ---- the parse state and what each option does to it ----
export interface SvcState {
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

/** The real server the options describe so far (ipvsadm's struct ip_vs_dest_user). */
export interface DestState {
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

/** Everything the options given so far have set: option bits, list format, service, server. */
export interface ParseState {
  /** the OPT_* bits set so far */
  readonly options: Set<OptName>;
  readonly format: { -readonly [K in keyof ListFormat]: ListFormat[K] };
  readonly svc: SvcState;
  readonly dest: DestState;
  schedFlagsArg: string;
  tunTypeName: TunnelType;
  readonly resolver: Resolver;
  readonly hosts: HostLookups;
}

/** The parse state before any option: ipvsadm's defaults. */
export function newParseState(resolver: Resolver, hosts: HostLookups): ParseState {
  return {
    options: new Set(),
    format: { ...DEFAULT_FORMAT },
    svc: {
      af: 0,
      protocol: 0,
      address: '',
      port: 0,
      fwmark: 0,
      scheduler: '',
      flags: 0,
      timeout: 0,
      netmask: 0xffffffff,
      peName: '',
    },
    dest: {
      af: 0,
      address: '',
      port: 0,
      fwd: IP_VS_CONN_F.DROUTE,
      weight: 1,
      uThreshold: 0,
      lThreshold: 0,
      tunType: IP_VS_CONN_F_TUNNEL_TYPE.IPIP,
      tunPort: 0,
      tunFlags: IP_VS_TUNNEL_ENCAP_FLAG.NOCSUM,
    },
    schedFlagsArg: '',
    tunTypeName: 'ipip',
    resolver,
    hosts,
  };
}

/** What one option does to the parse state. */
export interface OptionHandler {
  /** the OPT_* bit the option sets (given twice, it fails); none for -6 and --sort */
  readonly opt?: OptName;
  /** `arg` is '' when the option has none; `given` is popt's argument as it came */
  readonly apply: (st: ParseState, arg: string, given: string | undefined) => void;
}

const only = (opt: OptName): OptionHandler => ({ opt, apply: () => {} });
const listFlag = (opt: OptName, key: keyof ParseState['format']): OptionHandler => ({
  opt,
  apply: (st) => {
    st.format[key] = true;
  },
});
const forwarding = (fwd: number): OptionHandler => ({
  opt: 'forwarding-method',
  apply: (st) => {
    st.dest.fwd = fwd;
  },
});
const tunnelFlag = (opt: OptName, flag: number): OptionHandler => ({
  opt,
  apply: (st) => {
    st.dest.tunFlags = flag;
  },
});
/** An integer option checked against min..max, kept by `set` when the parse uses it. */
const bounded = (
  opt: OptName,
  min: number,
  max: number,
  message: string,
  set?: (st: ParseState, n: number) => void,
): OptionHandler => ({
  opt,
  apply: (st, arg) => {
    const n = stringToNumber(arg, min, max);
    if (n === undefined) fail(message);
    set?.(st, n);
  },
});

const service = (protocol: number): OptionHandler => ({
  opt: 'service-address',
  apply: (st, arg) => {
    st.svc.protocol = protocol;
    const p = parseService(arg, st.svc.protocol, st.resolver, st.hosts);
    if (!p) fail('illegal virtual server address[:port] specified');
    st.svc.af = p.af;
    st.svc.address = p.address;
    if (p.af === AF_INET6) st.svc.netmask = 128;
    if (p.port) st.svc.port = p.portValue;
  },
});

/** process_options' switch, keyed by popt's val (the short letter or a TAG name). */
export const HANDLERS: Readonly<Record<string, OptionHandler>> = {
  t: service(IPPROTO_TCP),
  u: service(IPPROTO_UDP),
  [T.SCTP_SERVICE]: service(IPPROTO_SCTP),
  f: {
    opt: 'service-address',
    apply: (st, arg) => {
      st.svc.af = AF_INET;
      st.svc.protocol = IPPROTO_TCP;
      st.svc.fwmark = parseFwmark(arg);
    },
  },
  s: {
    opt: 'scheduler',
    apply: (st, arg) => {
      st.svc.scheduler = arg.slice(0, IP_VS_SCHEDNAME_MAXLEN);
    },
  },
  p: {
    opt: 'persistent',
    apply: (st, _arg, given) => {
      st.svc.flags |= IP_VS_SVC_F.PERSISTENT;
      st.svc.timeout = parseTimeout(given, 1, MAX_TIMEOUT);
    },
  },
  M: { opt: 'netmask', apply: netmask },
  r: {
    opt: 'real-server',
    apply: (st, arg) => {
      const p = parseService(arg, st.svc.protocol, st.resolver, st.hosts);
      if (!p) fail('illegal real server address[:port] specified');
      st.dest.af = p.af;
      st.dest.address = p.address;
      // the port is taken from the service (so far) unless one is given
      st.dest.port = p.port ? p.portValue : st.svc.port;
    },
  },
  i: forwarding(IP_VS_CONN_F.TUNNEL),
  g: forwarding(IP_VS_CONN_F.DROUTE),
  m: forwarding(IP_VS_CONN_F.MASQ),
  w: bounded('weight', 0, INT_MAX, 'illegal weight specified', (st, n) => (st.dest.weight = n)),
  x: bounded('u-threshold', 0, INT_MAX, 'illegal u_threshold specified', (st, n) => (st.dest.uThreshold = n)),
  y: bounded('l-threshold', 0, INT_MAX, 'illegal l_threshold specified', (st, n) => (st.dest.lThreshold = n)),
  c: only('connection'),
  n: listFlag('numeric', 'numeric'),
  [T.MCAST_INTERFACE]: only('mcast-interface'),
  I: bounded('syncid', 0, 255, 'illegal syncid specified'),
  [T.TIMEOUT]: only('timeout'),
  [T.DAEMON]: only('daemon'),
  [T.STATS]: listFlag('stats', 'stats'),
  [T.RATE]: listFlag('rate', 'rate'),
  [T.THRESHOLDS]: listFlag('thresholds', 'thresholds'),
  [T.PERSISTENTCONN]: listFlag('persistent-conn', 'persistentConn'),
  [T.NO_SORT]: listFlag('nosort', 'nosort'),
  [T.SORT]: { apply: () => {} }, // the default; a no-op kept for compatibility
  X: listFlag('exact', 'exact'),
  '6': {
    apply: (st) => {
      if (!st.svc.fwmark) fail('-6 used before -f\n');
      st.svc.af = AF_INET6;
      st.svc.netmask = 128;
    },
  },
  o: {
    opt: 'ops',
    apply: (st) => {
      st.svc.flags |= IP_VS_SVC_F.ONEPACKET;
    },
  },
  [T.PE]: {
    opt: 'pe',
    apply: (st, arg) => {
      st.svc.peName = arg.slice(0, IP_VS_PENAME_MAXLEN);
    },
  },
  b: {
    opt: 'sched-flags',
    apply: (st, arg) => {
      st.schedFlagsArg = arg.slice(0, 127);
    },
  },
  [T.MCAST_GROUP]: { opt: 'mcast-group', apply: (_st, arg) => mcastGroup(arg) },
  [T.MCAST_PORT]: bounded('mcast-port', 1, 65535, 'illegal mcast-port specified'),
  [T.MCAST_TTL]: bounded('mcast-ttl', 1, 255, 'illegal mcast-ttl specified'),
  [T.SYNC_MAXLEN]: bounded('sync-maxlen', 1, 65535 - 20 - 8, 'illegal sync-maxlen specified'),
  [T.TUN_INFO]: listFlag('tun-info', 'tunInfo'),
  [T.TUN_TYPE]: {
    opt: 'tun-type',
    apply: (st, arg) => {
      const i = (TUNNEL_TYPES as readonly string[]).indexOf(arg);
      if (i < 0) fail('illegal tunnel type specified');
      st.tunTypeName = TUNNEL_TYPES[i]!;
      st.dest.tunType = i; // IP_VS_CONN_F_TUNNEL_TYPE_IPIP/GUE/GRE are 0/1/2
    },
  },
  [T.TUN_PORT]: bounded('tun-port', 1, 65535, 'illegal tunnel port specified', (st, n) => (st.dest.tunPort = n)),
  [T.TUN_NOCSUM]: tunnelFlag('tun-nocsum', IP_VS_TUNNEL_ENCAP_FLAG.NOCSUM),
  [T.TUN_CSUM]: tunnelFlag('tun-csum', IP_VS_TUNNEL_ENCAP_FLAG.CSUM),
  [T.TUN_REMCSUM]: tunnelFlag('tun-remcsum', IP_VS_TUNNEL_ENCAP_FLAG.REMCSUM),
};

/** -M: a dotted (or named) IPv4 mask, or an IPv6 prefix length once the service is IPv6. */
function netmask(st: ParseState, arg: string): void {
  if (st.svc.af !== AF_INET6) {
    let v = inetAton(arg);
    if (v === undefined) {
      const a = lookupHost(st.hosts, arg);
      v = a ? inetAton(a) : undefined;
    }
    if (v === undefined) fail('illegal virtual server persistent mask specified');
    st.svc.netmask = v;
  } else {
    st.svc.netmask = atoi(arg);
    if (st.svc.netmask < 1 || st.svc.netmask > 128) fail('illegal ipv6 netmask specified');
  }
}

function mcastGroup(arg: string): void {
  if (arg.includes(':')) {
    if (!isIPv6(arg) || !/^ff/i.test(canonicalAddress(arg))) fail(`invalid IPv6 mcast-group \`${arg}'`);
  } else {
    const v = inetAton(arg);
    if (v === undefined || v >>> 28 !== 0xe) fail(`invalid IPv4 mcast-group \`${arg}'`);
  }
}
