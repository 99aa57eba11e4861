import { AttrReader, AttrWriter, forEachAttr } from './attr';
import { NLA_TYPE_MASK } from '../uapi/netlink';
import { AF_INET, AF_INET6 } from '../uapi/inet';
import {
  IPVS_CMD,
  IPVS_CMD_ATTR,
  IPVS_DEST_ATTR,
  IPVS_INFO_ATTR,
  IPVS_SVC_ATTR,
  IP_VS_CONN_F,
  IP_VS_CONN_F_FWD_MASK,
  IP_VS_SVC_F,
  IpvsCmd,
} from '../uapi/ip_vs';
import { DecodeError } from '../errors';
import {
  AddressFamily,
  IpvsInfo,
  IpvsTimeouts,
  RealServer,
  RealServerId,
  RealServerSpec,
  VirtualServer,
  VirtualServerId,
  VirtualServerSpec,
  addressToBytes,
  parseIPv4,
  bytesToAddress,
} from '../model/ipvs';
import { IpvsOp } from '../model/ipvs-op';
import { Fields, ObservedRealServer, ObservedVirtualServer } from './ipvs-observed';

// the fakes' constructors of observed objects, where importers have always found them
export { observedRealServer, observedVirtualServer } from './ipvs-observed';

/** Every IPVS request this client can make, as data: the table's changes and the reads. */
export type IpvsRequest =
  | IpvsOp
  | { readonly kind: 'getService'; readonly vs: VirtualServerId }
  | { readonly kind: 'dumpServices' }
  | { readonly kind: 'dumpDests'; readonly vs: VirtualServerId }
  | { readonly kind: 'getInfo' }
  | { readonly kind: 'getConfig' };

/** The kind of an IPVS request: newService, getDests, setConfig, ... */
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

/** The netmask of a virtual server that has none: /32 (0xffffffff) for IPv4, /128 for IPv6. */
export const defaultNetmask = (af: AddressFamily): number => (af === AF_INET6 ? 128 : 0xffffffff);

// IPv4 straight into the attribute (4 bytes, as ipvsadm and moby send it); IPv6 16 bytes
// a batch writes each service's address once per real server: the last one parsed is kept
let lastIPv4 = '';
let lastIPv4Value = -1;

function writeAddress(w: AttrWriter, type: number, af: AddressFamily, address: string): void {
  if (af === AF_INET) {
    const v = address === lastIPv4 ? lastIPv4Value : parseIPv4(address);
    lastIPv4 = address;
    lastIPv4Value = v;
    if (v < 0) throw new TypeError(`not an IPv4 address: '${address}'`);
    w.be32(type, v);
  } else {
    w.bytes(type, addressToBytes(af, address));
  }
}

function writeServiceId(w: AttrWriter, vs: VirtualServerId): void {
  w.u16(IPVS_SVC_ATTR.AF, vs.af);
  if (vs.fwmark > 0) {
    w.u32(IPVS_SVC_ATTR.FWMARK, vs.fwmark);
  } else {
    w.u16(IPVS_SVC_ATTR.PROTOCOL, vs.protocol);
    writeAddress(w, IPVS_SVC_ATTR.ADDR, vs.af, vs.address);
    w.be16(IPVS_SVC_ATTR.PORT, vs.port);
  }
}

function writeServiceFull(w: AttrWriter, vs: VirtualServerSpec): void {
  writeServiceId(w, vs);
  w.string(IPVS_SVC_ATTR.SCHED_NAME, vs.scheduler);
  if (vs.peName) w.string(IPVS_SVC_ATTR.PE_NAME, vs.peName);
  // struct ip_vs_flags { u32 flags; u32 mask; }: the mask says which bits to take
  w.u32Pair(IPVS_SVC_ATTR.FLAGS, (vs.flags ?? 0) & ~IP_VS_SVC_F.HASHED, 0xffffffff);
  w.u32(IPVS_SVC_ATTR.TIMEOUT, vs.timeout ?? 0);
  writeNetmask(w, vs.af, vs.netmask ?? defaultNetmask(vs.af));
}

// IPv4: the mask's bytes in network order; IPv6: the prefix length as a host-order u32.
function writeNetmask(w: AttrWriter, af: AddressFamily, netmask: number): void {
  if (af === AF_INET) w.be32(IPVS_SVC_ATTR.NETMASK, netmask);
  else w.u32(IPVS_SVC_ATTR.NETMASK, netmask);
}

function writeDestId(w: AttrWriter, rs: RealServerId): void {
  writeAddress(w, IPVS_DEST_ATTR.ADDR, rs.af, rs.address);
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

/**
 * Writes a request's genl attributes at the end of `w` (no netlink header: the socket adds
 * it); returns its genl command. IpvsNetlink.run encodes a whole batch this way, straight
 * into the datagrams it sends.
 */
export function writeIpvsRequest(w: AttrWriter, req: IpvsRequest): IpvsCmd {
  let at: number;
  switch (req.kind) {
    case 'newService':
    case 'setService':
      at = w.nestStart(IPVS_CMD_ATTR.SERVICE);
      writeServiceFull(w, req.vs);
      w.nestEnd(at);
      break;
    case 'delService':
    case 'getService':
    case 'dumpDests':
      at = w.nestStart(IPVS_CMD_ATTR.SERVICE);
      writeServiceId(w, req.vs);
      w.nestEnd(at);
      break;
    case 'newDest':
    case 'setDest':
      at = w.nestStart(IPVS_CMD_ATTR.SERVICE);
      writeServiceId(w, req.vs);
      w.nestEnd(at);
      at = w.nestStart(IPVS_CMD_ATTR.DEST);
      writeDestFull(w, req.vs.af, req.rs);
      w.nestEnd(at);
      break;
    case 'delDest':
      at = w.nestStart(IPVS_CMD_ATTR.SERVICE);
      writeServiceId(w, req.vs);
      w.nestEnd(at);
      at = w.nestStart(IPVS_CMD_ATTR.DEST);
      writeDestId(w, req.rs);
      w.nestEnd(at);
      break;
    case 'setConfig':
      w.u32(IPVS_CMD_ATTR.TIMEOUT_TCP, req.timeouts.tcp);
      w.u32(IPVS_CMD_ATTR.TIMEOUT_TCP_FIN, req.timeouts.tcpFin);
      w.u32(IPVS_CMD_ATTR.TIMEOUT_UDP, req.timeouts.udp);
      break;
    case 'zero':
      if (req.vs) {
        at = w.nestStart(IPVS_CMD_ATTR.SERVICE);
        writeServiceId(w, req.vs);
        w.nestEnd(at);
      }
      break;
    case 'dumpServices':
    case 'getInfo':
    case 'getConfig':
    case 'flush':
      break;
  }
  return CMD_OF[req.kind];
}

// One writer reused by every call: encodeIpvsRequest is synchronous and returns a copy of
// what it wrote, so no caller ever sees the shared buffer.
const scratch = new AttrWriter(4096);

/** Encodes a request's genl attributes (no netlink header: the socket adds seq and flags). */
export function encodeIpvsRequest(req: IpvsRequest): EncodedRequest {
  const cmd = writeIpvsRequest(scratch.reset(), req);
  return { cmd, dump: req.kind === 'dumpServices' || req.kind === 'dumpDests', attrs: Buffer.from(scratch.finish()) };
}

function asFamily(af: number, path: string): AddressFamily {
  if (af === AF_INET || af === AF_INET6) return af;
  throw new DecodeError(`unknown address family ${af}`, path, 0);
}

// Dumps decode 100,000+ of these, so the decoders below walk the attributes once with a
// switch instead of building a table, and decode counters only when first read
// (ipvs-observed.ts).

type Attr = { type: number; at: number; len: number };

function attrName(names: Readonly<Record<string, number>>, type: number): string {
  for (const [k, v] of Object.entries(names)) if (v === type) return k;
  return String(type);
}

// Where collect() found each attribute type of the message being decoded: offset and length
// of its payload, -1 when absent. Module-level scratch (decoding is synchronous and never
// nested), instead of an object per attribute: a -S listing decodes 10,000+ services.
// Indexed by the IPVS attribute numbers, all below 64: a read with `!` never passes the end.
const FOUND_AT = new Int32Array(64);
const FOUND_LEN = new Int32Array(64);

function collect(buf: Buffer, path: string, max: number): void {
  FOUND_AT.fill(-1, 0, max + 1);
  let off = 0;
  while (off + 4 <= buf.length) {
    const len = buf[off]! | (buf[off + 1]! << 8);
    if (len < 4 || off + len > buf.length) {
      throw new DecodeError(`attribute length ${len} overruns ${buf.length - off} bytes left`, path, off);
    }
    const type = (buf[off + 2]! | (buf[off + 3]! << 8)) & NLA_TYPE_MASK;
    if (type <= max) {
      FOUND_AT[type] = off + 4;
      FOUND_LEN[type] = len - 4;
    }
    off += (len + 3) & ~3;
  }
}

const found = (type: number): Attr | undefined =>
  FOUND_AT[type]! < 0 ? undefined : { type, at: FOUND_AT[type]!, len: FOUND_LEN[type]! };

/** the payload offset of a found attribute of exactly `size` bytes, -1 when absent */
function sizedAt(type: number, size: number, path: string, names: Readonly<Record<string, number>>): number {
  const at = FOUND_AT[type]!;
  if (at >= 0 && FOUND_LEN[type] !== size)
    throw new DecodeError(`expected ${size} bytes, got ${FOUND_LEN[type]}`, `${path}>${attrName(names, type)}`, at);
  return at;
}

function missing(path: string, names: Readonly<Record<string, number>>, type: number): never {
  throw new DecodeError('missing attribute', `${path}>${attrName(names, type)}`, 0);
}

/** NUL-terminated string attribute; '' when absent */
function foundString(buf: Buffer, type: number): string {
  const at = FOUND_AT[type]!;
  if (at < 0) return '';
  const end = at + FOUND_LEN[type]!;
  let e = at;
  while (e < end && buf[e] !== 0) e++;
  return buf.toString('utf8', at, e);
}

/** A copy (never a view) of the counters' payload: STATS64 when present, else STATS. */
function foundStats(buf: Buffer, t64: number, t32: number): Buffer | undefined {
  const t = FOUND_AT[t64]! >= 0 ? t64 : FOUND_AT[t32]! >= 0 ? t32 : -1;
  if (t < 0) return undefined;
  const at = FOUND_AT[t]!;
  return Buffer.from(buf.subarray(at, at + FOUND_LEN[t]!));
}

const SVC_PATH = 'IPVS_CMD_ATTR_SERVICE';
const DEST_PATH = 'IPVS_CMD_ATTR_DEST';

/** Decodes the attributes nested in IPVS_CMD_ATTR_SERVICE of a NEW_SERVICE reply. */
export function decodeService(nested: Buffer): VirtualServer {
  const P = SVC_PATH;
  const N = IPVS_SVC_ATTR;
  collect(nested, P, N.STATS64);
  const afAt = sizedAt(N.AF, 2, P, N);
  if (afAt < 0) missing(P, N, N.AF);
  const af = asFamily(nested.readUInt16LE(afAt), P);
  const markAt = sizedAt(N.FWMARK, 4, P, N);
  const fwmark = markAt < 0 ? 0 : nested.readUInt32LE(markAt);
  let address = '';
  let port = 0;
  if (fwmark === 0) {
    const addr = found(N.ADDR);
    if (!addr) missing(P, N, N.ADDR);
    if (addr.len < (af === AF_INET ? 4 : 16))
      throw new DecodeError(`expected ${af === AF_INET ? 4 : 16} bytes, got ${addr.len}`, `${P}>ADDR`, addr.at);
    address =
      af === AF_INET
        ? `${nested[addr.at]}.${nested[addr.at + 1]}.${nested[addr.at + 2]}.${nested[addr.at + 3]}`
        : bytesToAddress(af, nested.subarray(addr.at, addr.at + 16));
    const p = sizedAt(N.PORT, 2, P, N);
    port = p < 0 ? 0 : nested.readUInt16BE(p);
  }
  const flagsAt = FOUND_AT[N.FLAGS]!;
  const netmaskAt = sizedAt(N.NETMASK, 4, P, N);
  const protoAt = fwmark > 0 ? -1 : sizedAt(N.PROTOCOL, 2, P, N);
  const timeoutAt = sizedAt(N.TIMEOUT, 4, P, N);
  const vs: Fields<VirtualServer> = {
    af,
    protocol: protoAt < 0 ? 0 : nested.readUInt16LE(protoAt),
    address,
    port,
    fwmark,
    scheduler: foundString(nested, N.SCHED_NAME),
    flags: flagsAt >= 0 && FOUND_LEN[N.FLAGS]! >= 8 ? nested.readUInt32LE(flagsAt) & ~IP_VS_SVC_F.HASHED : 0,
    timeout: timeoutAt < 0 ? 0 : nested.readUInt32LE(timeoutAt),
    // IPv4: network-order mask bytes; IPv6: host-order prefix length
    netmask:
      netmaskAt >= 0
        ? af === AF_INET
          ? nested.readUInt32BE(netmaskAt)
          : nested.readUInt32LE(netmaskAt)
        : defaultNetmask(af),
    peName: foundString(nested, N.PE_NAME),
  };
  const is64 = FOUND_AT[N.STATS64]! >= 0;
  return new ObservedVirtualServer(vs, foundStats(nested, N.STATS64, N.STATS), is64, undefined);
}

/** Decodes the attributes nested in IPVS_CMD_ATTR_DEST; svcAf is used when ADDR_FAMILY is absent (< 3.18). */
export function decodeDest(nested: Buffer, svcAf: AddressFamily): RealServer {
  const P = DEST_PATH;
  const N = IPVS_DEST_ATTR;
  collect(nested, P, N.TUN_FLAGS);
  const u32 = (t: number): number => {
    const at = sizedAt(t, 4, P, N);
    return at < 0 ? 0 : nested.readUInt32LE(at);
  };
  const afAt = sizedAt(N.ADDR_FAMILY, 2, P, N);
  const af = asFamily(afAt < 0 ? svcAf : nested.readUInt16LE(afAt), P);
  const addr = found(N.ADDR);
  if (!addr) missing(P, N, N.ADDR);
  if (addr.len < (af === AF_INET ? 4 : 16))
    throw new DecodeError(`expected ${af === AF_INET ? 4 : 16} bytes, got ${addr.len}`, `${P}>ADDR`, addr.at);
  const portAt = sizedAt(N.PORT, 2, P, N);
  if (portAt < 0) missing(P, N, N.PORT);
  const tunTypeAt = sizedAt(N.TUN_TYPE, 1, P, N);
  const fwdMethod = u32(N.FWD_METHOD) & IP_VS_CONN_F_FWD_MASK;
  const weight = u32(N.WEIGHT);
  const uThreshold = u32(N.U_THRESH);
  const lThreshold = u32(N.L_THRESH);
  const activeConns = u32(N.ACTIVE_CONNS);
  const inactConns = u32(N.INACT_CONNS);
  const persistConns = u32(N.PERSIST_CONNS);
  const tunPortAt = sizedAt(N.TUN_PORT, 2, P, N);
  const tunFlagsAt = sizedAt(N.TUN_FLAGS, 2, P, N);
  const rs: Fields<RealServer> = {
    af,
    address:
      af === AF_INET
        ? `${nested[addr.at]}.${nested[addr.at + 1]}.${nested[addr.at + 2]}.${nested[addr.at + 3]}`
        : bytesToAddress(af, nested.subarray(addr.at, addr.at + 16)),
    port: nested.readUInt16BE(portAt),
    fwdMethod,
    weight,
    uThreshold,
    lThreshold,
    activeConns,
    inactConns,
    persistConns,
    tunType: tunTypeAt < 0 ? 0 : nested.readUInt8(tunTypeAt),
    tunPort: tunPortAt < 0 ? 0 : nested.readUInt16BE(tunPortAt),
    tunFlags: tunFlagsAt < 0 ? 0 : nested.readUInt16LE(tunFlagsAt),
  };
  const is64 = FOUND_AT[N.STATS64]! >= 0;
  return new ObservedRealServer(rs, foundStats(nested, N.STATS64, N.STATS), is64, undefined);
}

/** The nested attribute of one dump reply message (NEW_SERVICE / NEW_DEST). */
export function replyNest(attrs: Buffer, type: number, path: string): Buffer {
  let found: Buffer | undefined;
  forEachAttr(attrs, path, (t, at, len) => {
    if (t === type) found = attrs.subarray(at, at + len);
  });
  if (!found) missing(path, IPVS_CMD_ATTR, type);
  return found;
}

/** Decodes the attributes of IPVS_CMD_GET_INFO's answer: the IPVS version and connection table size. */
export function decodeInfo(attrs: Buffer): IpvsInfo {
  const r = AttrReader.parse(attrs, 'IPVS_CMD_SET_INFO', IPVS_INFO_ATTR);
  return {
    version: r.require(IPVS_INFO_ATTR.VERSION, r.u32(IPVS_INFO_ATTR.VERSION)),
    connTabSize: r.require(IPVS_INFO_ATTR.CONN_TAB_SIZE, r.u32(IPVS_INFO_ATTR.CONN_TAB_SIZE)),
  };
}

/** Decodes the attributes of IPVS_CMD_GET_CONFIG's answer: the tcp, tcpfin and udp timeouts (0: unset). */
export function decodeConfig(attrs: Buffer): IpvsTimeouts {
  const r = AttrReader.parse(attrs, 'IPVS_CMD_SET_CONFIG', IPVS_CMD_ATTR);
  return {
    tcp: r.u32(IPVS_CMD_ATTR.TIMEOUT_TCP) ?? 0,
    tcpFin: r.u32(IPVS_CMD_ATTR.TIMEOUT_TCP_FIN) ?? 0,
    udp: r.u32(IPVS_CMD_ATTR.TIMEOUT_UDP) ?? 0,
  };
}
