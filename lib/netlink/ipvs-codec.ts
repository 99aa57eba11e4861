import { AttrReader, AttrWriter } from './attr';
import {
  AF_INET,
  AF_INET6,
  IPVS_CMD,
  IPVS_CMD_ATTR,
  IPVS_DEST_ATTR,
  IPVS_INFO_ATTR,
  IPVS_STATS_ATTR,
  IPVS_SVC_ATTR,
  IP_VS_CONN_F,
  IP_VS_CONN_F_FWD_MASK,
  IP_VS_SVC_F,
  IpvsCmd,
} from './uapi/ip_vs';
import { DecodeError } from '../errors';
import {
  AddressFamily,
  IpvsInfo,
  IpvsTimeouts,
  RealServer,
  RealServerId,
  Stats,
  VirtualServer,
  VirtualServerId,
  addressToBytes,
  bytesToAddress,
} from '../model/ipvs';

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

/** Every IPVS request this client can make, as data. */
export type IpvsRequest =
  | { readonly kind: 'newService'; readonly vs: VirtualServerSpec }
  | { readonly kind: 'setService'; readonly vs: VirtualServerSpec }
  | { readonly kind: 'delService'; readonly vs: VirtualServerId }
  | { readonly kind: 'getService'; readonly vs: VirtualServerId }
  | { readonly kind: 'dumpServices' }
  | { readonly kind: 'newDest'; readonly vs: VirtualServerId; readonly rs: RealServerSpec }
  | { readonly kind: 'setDest'; readonly vs: VirtualServerId; readonly rs: RealServerSpec }
  | { readonly kind: 'delDest'; readonly vs: VirtualServerId; readonly rs: RealServerId }
  | { readonly kind: 'dumpDests'; readonly vs: VirtualServerId }
  | { readonly kind: 'getInfo' }
  | { readonly kind: 'getConfig' }
  | { readonly kind: 'setConfig'; readonly timeouts: IpvsTimeouts }
  | { readonly kind: 'zero'; readonly vs?: VirtualServerId }
  | { readonly kind: 'flush' };

export type IpvsRequestKind = IpvsRequest['kind'];

/** The genl command and attribute bytes of one request; `dump` means NLM_F_DUMP. */
export interface EncodedRequest {
  readonly cmd: IpvsCmd;
  readonly dump: boolean;
  readonly attrs: Buffer;
}

const CMD_OF: Readonly<Record<IpvsRequestKind, IpvsCmd>> = {
  newService: IPVS_CMD.NEW_SERVICE,
  setService: IPVS_CMD.SET_SERVICE,
  delService: IPVS_CMD.DEL_SERVICE,
  getService: IPVS_CMD.GET_SERVICE,
  dumpServices: IPVS_CMD.GET_SERVICE,
  newDest: IPVS_CMD.NEW_DEST,
  setDest: IPVS_CMD.SET_DEST,
  delDest: IPVS_CMD.DEL_DEST,
  dumpDests: IPVS_CMD.GET_DEST,
  getInfo: IPVS_CMD.GET_INFO,
  getConfig: IPVS_CMD.GET_CONFIG,
  setConfig: IPVS_CMD.SET_CONFIG,
  zero: IPVS_CMD.ZERO,
  flush: IPVS_CMD.FLUSH,
};

export const defaultNetmask = (af: AddressFamily): number => (af === AF_INET6 ? 128 : 0xffffffff);

function writeServiceId(w: AttrWriter, vs: VirtualServerId): void {
  w.u16(IPVS_SVC_ATTR.AF, vs.af);
  if (vs.fwmark > 0) {
    w.u32(IPVS_SVC_ATTR.FWMARK, vs.fwmark);
  } else {
    w.u16(IPVS_SVC_ATTR.PROTOCOL, vs.protocol);
    w.bytes(IPVS_SVC_ATTR.ADDR, addressToBytes(vs.af, vs.address));
    w.be16(IPVS_SVC_ATTR.PORT, vs.port);
  }
}

function writeServiceFull(w: AttrWriter, vs: VirtualServerSpec): void {
  writeServiceId(w, vs);
  w.string(IPVS_SVC_ATTR.SCHED_NAME, vs.scheduler);
  if (vs.peName) w.string(IPVS_SVC_ATTR.PE_NAME, vs.peName);
  // struct ip_vs_flags { u32 flags; u32 mask; }: the mask says which bits to take
  const flags = Buffer.alloc(8);
  flags.writeUInt32LE((vs.flags ?? 0) & ~IP_VS_SVC_F.HASHED, 0);
  flags.writeUInt32LE(0xffffffff, 4);
  w.bytes(IPVS_SVC_ATTR.FLAGS, flags);
  w.u32(IPVS_SVC_ATTR.TIMEOUT, vs.timeout ?? 0);
  writeNetmask(w, vs.af, vs.netmask ?? defaultNetmask(vs.af));
}

// IPv4: the mask's bytes in network order; IPv6: the prefix length as a host-order u32.
function writeNetmask(w: AttrWriter, af: AddressFamily, netmask: number): void {
  if (af === AF_INET) w.be32(IPVS_SVC_ATTR.NETMASK, netmask);
  else w.u32(IPVS_SVC_ATTR.NETMASK, netmask);
}

function writeDestId(w: AttrWriter, rs: RealServerId): void {
  w.bytes(IPVS_DEST_ATTR.ADDR, addressToBytes(rs.af, rs.address));
  w.be16(IPVS_DEST_ATTR.PORT, rs.port);
}

function writeDestFull(w: AttrWriter, svcAf: AddressFamily, rs: RealServerSpec): void {
  writeDestId(w, rs);
  w.u32(IPVS_DEST_ATTR.FWD_METHOD, rs.fwdMethod & IP_VS_CONN_F_FWD_MASK);
  w.u32(IPVS_DEST_ATTR.WEIGHT, rs.weight);
  w.u32(IPVS_DEST_ATTR.U_THRESH, rs.uThreshold ?? 0);
  w.u32(IPVS_DEST_ATTR.L_THRESH, rs.lThreshold ?? 0);
  // only when it differs: kernels before 3.18 reject the attribute, and absent means "the service's"
  if (rs.af !== svcAf) w.u16(IPVS_DEST_ATTR.ADDR_FAMILY, rs.af);
  if ((rs.fwdMethod & IP_VS_CONN_F_FWD_MASK) === IP_VS_CONN_F.TUNNEL && rs.tunType !== undefined) {
    w.u8(IPVS_DEST_ATTR.TUN_TYPE, rs.tunType);
    if (rs.tunPort) w.be16(IPVS_DEST_ATTR.TUN_PORT, rs.tunPort);
    if (rs.tunFlags !== undefined) w.u16(IPVS_DEST_ATTR.TUN_FLAGS, rs.tunFlags);
  }
}

/** Encodes a request's genl attributes (no netlink header: the socket adds seq and flags). */
export function encodeIpvsRequest(req: IpvsRequest): EncodedRequest {
  const w = new AttrWriter();
  switch (req.kind) {
    case 'newService':
    case 'setService':
      w.nest(IPVS_CMD_ATTR.SERVICE, (n) => writeServiceFull(n, req.vs));
      break;
    case 'delService':
    case 'getService':
    case 'dumpDests':
      w.nest(IPVS_CMD_ATTR.SERVICE, (n) => writeServiceId(n, req.vs));
      break;
    case 'newDest':
    case 'setDest':
      w.nest(IPVS_CMD_ATTR.SERVICE, (n) => writeServiceId(n, req.vs));
      w.nest(IPVS_CMD_ATTR.DEST, (n) => writeDestFull(n, req.vs.af, req.rs));
      break;
    case 'delDest':
      w.nest(IPVS_CMD_ATTR.SERVICE, (n) => writeServiceId(n, req.vs));
      w.nest(IPVS_CMD_ATTR.DEST, (n) => writeDestId(n, req.rs));
      break;
    case 'setConfig':
      w.u32(IPVS_CMD_ATTR.TIMEOUT_TCP, req.timeouts.tcp);
      w.u32(IPVS_CMD_ATTR.TIMEOUT_TCP_FIN, req.timeouts.tcpFin);
      w.u32(IPVS_CMD_ATTR.TIMEOUT_UDP, req.timeouts.udp);
      break;
    case 'zero':
      if (req.vs) w.nest(IPVS_CMD_ATTR.SERVICE, (n) => writeServiceId(n, req.vs!));
      break;
    case 'dumpServices':
    case 'getInfo':
    case 'getConfig':
    case 'flush':
      break;
  }
  return { cmd: CMD_OF[req.kind], dump: req.kind === 'dumpServices' || req.kind === 'dumpDests', attrs: w.finish() };
}

function asFamily(af: number, path: string): AddressFamily {
  if (af === AF_INET || af === AF_INET6) return af;
  throw new DecodeError(`unknown address family ${af}`, path, 0);
}

function readAddress(r: AttrReader, type: number, af: AddressFamily): string {
  const b = r.require(type, r.bytes(type, af === AF_INET ? 4 : 16));
  return bytesToAddress(af, b);
}

const STATS_U32 = ['CONNS', 'INPKTS', 'OUTPKTS', 'CPS', 'INPPS', 'OUTPPS', 'INBPS', 'OUTBPS'] as const;

function decodeStats(r: AttrReader, statsType: number, stats64Type: number): Stats | undefined {
  const s64 = r.nested(stats64Type, 'STATS64', IPVS_STATS_ATTR);
  if (s64) {
    const g = (t: number): bigint => s64.u64(t) ?? 0n;
    return {
      conns: g(IPVS_STATS_ATTR.CONNS), inpkts: g(IPVS_STATS_ATTR.INPKTS), outpkts: g(IPVS_STATS_ATTR.OUTPKTS),
      inbytes: g(IPVS_STATS_ATTR.INBYTES), outbytes: g(IPVS_STATS_ATTR.OUTBYTES), cps: g(IPVS_STATS_ATTR.CPS),
      inpps: g(IPVS_STATS_ATTR.INPPS), outpps: g(IPVS_STATS_ATTR.OUTPPS), inbps: g(IPVS_STATS_ATTR.INBPS),
      outbps: g(IPVS_STATS_ATTR.OUTBPS),
    };
  }
  const s = r.nested(statsType, 'STATS', IPVS_STATS_ATTR);
  if (!s) return undefined;
  const v: Record<string, bigint> = {};
  for (const k of STATS_U32) v[k] = BigInt(s.u32(IPVS_STATS_ATTR[k]) ?? 0);
  return {
    conns: v.CONNS!, inpkts: v.INPKTS!, outpkts: v.OUTPKTS!,
    inbytes: s.u64(IPVS_STATS_ATTR.INBYTES) ?? 0n, outbytes: s.u64(IPVS_STATS_ATTR.OUTBYTES) ?? 0n,
    cps: v.CPS!, inpps: v.INPPS!, outpps: v.OUTPPS!, inbps: v.INBPS!, outbps: v.OUTBPS!,
  };
}

/** Decodes the attributes nested in IPVS_CMD_ATTR_SERVICE of a NEW_SERVICE reply. */
export function decodeService(nested: Buffer): VirtualServer {
  const r = AttrReader.parse(nested, 'IPVS_CMD_ATTR_SERVICE', IPVS_SVC_ATTR);
  const af = asFamily(r.require(IPVS_SVC_ATTR.AF, r.u16(IPVS_SVC_ATTR.AF)), r.path);
  const fwmark = r.u32(IPVS_SVC_ATTR.FWMARK) ?? 0;
  const flagsBuf = r.bytes(IPVS_SVC_ATTR.FLAGS, 8);
  const stats = decodeStats(r, IPVS_SVC_ATTR.STATS, IPVS_SVC_ATTR.STATS64);
  const vs: VirtualServer = {
    af,
    protocol: fwmark > 0 ? 0 : (r.u16(IPVS_SVC_ATTR.PROTOCOL) ?? 0),
    address: fwmark > 0 ? '' : readAddress(r, IPVS_SVC_ATTR.ADDR, af),
    port: fwmark > 0 ? 0 : (r.be16(IPVS_SVC_ATTR.PORT) ?? 0),
    fwmark,
    scheduler: r.string(IPVS_SVC_ATTR.SCHED_NAME) ?? '',
    flags: flagsBuf ? flagsBuf.readUInt32LE(0) & ~IP_VS_SVC_F.HASHED : 0,
    timeout: r.u32(IPVS_SVC_ATTR.TIMEOUT) ?? 0,
    netmask: af === AF_INET ? (r.be32(IPVS_SVC_ATTR.NETMASK) ?? 0xffffffff) : (r.u32(IPVS_SVC_ATTR.NETMASK) ?? 128),
    peName: r.string(IPVS_SVC_ATTR.PE_NAME) ?? '',
  };
  return stats ? { ...vs, stats } : vs;
}

/** Decodes the attributes nested in IPVS_CMD_ATTR_DEST; svcAf is used when ADDR_FAMILY is absent (< 3.18). */
export function decodeDest(nested: Buffer, svcAf: AddressFamily): RealServer {
  const r = AttrReader.parse(nested, 'IPVS_CMD_ATTR_DEST', IPVS_DEST_ATTR);
  const af = asFamily(r.u16(IPVS_DEST_ATTR.ADDR_FAMILY) ?? svcAf, r.path);
  const stats = decodeStats(r, IPVS_DEST_ATTR.STATS, IPVS_DEST_ATTR.STATS64);
  const rs: RealServer = {
    af,
    address: readAddress(r, IPVS_DEST_ATTR.ADDR, af),
    port: r.require(IPVS_DEST_ATTR.PORT, r.be16(IPVS_DEST_ATTR.PORT)),
    fwdMethod: (r.u32(IPVS_DEST_ATTR.FWD_METHOD) ?? 0) & IP_VS_CONN_F_FWD_MASK,
    weight: r.u32(IPVS_DEST_ATTR.WEIGHT) ?? 0,
    uThreshold: r.u32(IPVS_DEST_ATTR.U_THRESH) ?? 0,
    lThreshold: r.u32(IPVS_DEST_ATTR.L_THRESH) ?? 0,
    activeConns: r.u32(IPVS_DEST_ATTR.ACTIVE_CONNS) ?? 0,
    inactConns: r.u32(IPVS_DEST_ATTR.INACT_CONNS) ?? 0,
    persistConns: r.u32(IPVS_DEST_ATTR.PERSIST_CONNS) ?? 0,
    tunType: r.u8(IPVS_DEST_ATTR.TUN_TYPE) ?? 0,
    tunPort: r.be16(IPVS_DEST_ATTR.TUN_PORT) ?? 0,
    tunFlags: r.u16(IPVS_DEST_ATTR.TUN_FLAGS) ?? 0,
  };
  return stats ? { ...rs, stats } : rs;
}

/** The nested attribute of one dump reply message (NEW_SERVICE / NEW_DEST). */
export function replyNest(attrs: Buffer, type: number, path: string): Buffer {
  const r = AttrReader.parse(attrs, path, IPVS_CMD_ATTR);
  return r.require(type, r.bytes(type));
}

export function decodeInfo(attrs: Buffer): IpvsInfo {
  const r = AttrReader.parse(attrs, 'IPVS_CMD_SET_INFO', IPVS_INFO_ATTR);
  return {
    version: r.require(IPVS_INFO_ATTR.VERSION, r.u32(IPVS_INFO_ATTR.VERSION)),
    connTabSize: r.require(IPVS_INFO_ATTR.CONN_TAB_SIZE, r.u32(IPVS_INFO_ATTR.CONN_TAB_SIZE)),
  };
}

export function decodeConfig(attrs: Buffer): IpvsTimeouts {
  const r = AttrReader.parse(attrs, 'IPVS_CMD_SET_CONFIG', IPVS_CMD_ATTR);
  return {
    tcp: r.u32(IPVS_CMD_ATTR.TIMEOUT_TCP) ?? 0,
    tcpFin: r.u32(IPVS_CMD_ATTR.TIMEOUT_TCP_FIN) ?? 0,
    udp: r.u32(IPVS_CMD_ATTR.TIMEOUT_UDP) ?? 0,
  };
}
