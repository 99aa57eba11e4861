/**
 * ctnetlink (nf_conntrack_netlink) messages: the conntrack dump request, a conntrack entry
 * as the dump returns it, and the delete of one entry by its original tuple.
 *
 * Every message is struct nlmsghdr (type (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_*) +
 * struct nfgenmsg (nfgen_family = AF_INET/AF_INET6, version NFNETLINK_V0, res_id 0) +
 * attributes. Requests are returned as GenlRequest values (socket.ts): `type` is the message
 * type and `cmd` the nfgen_family byte.
 */
import { AttrReader, AttrWriter } from './attr';
import { GenlRequest } from './socket';
import { AF_INET, AF_INET6 } from '../uapi/inet';
import {
  CTA,
  CTA_FILTER,
  CTA_FILTER_F,
  CTA_IP,
  CTA_PROTO,
  CTA_TUPLE,
  IPCTNL_MSG,
  ctnlMsgType,
} from '../uapi/nfnetlink_conntrack';
import { ConntrackFlow, ConntrackTuple } from '../model/conntrack';
import { IpFamily, fromAddressFamily, toAddressFamily } from '../model/ip-family';
import { AddressFamily, addressToBytes, bytesToAddress } from '../model/ipvs';
import { DecodeError } from '../errors';

/** attribute names as the kernel spells them, for DecodeError paths */
const names = (prefix: string, table: Readonly<Record<string, number>>): Record<string, number> =>
  Object.fromEntries(Object.entries(table).map(([k, v]) => [prefix + k, v]));
const CTA_NAMES = names('CTA_', CTA);
const CTA_TUPLE_NAMES = names('CTA_TUPLE_', CTA_TUPLE);
const CTA_IP_NAMES = names('CTA_IP_', CTA_IP);
const CTA_PROTO_NAMES = names('CTA_PROTO_', CTA_PROTO);

/**
 * IPCTNL_MSG_CT_GET with NLM_F_DUMP (the socket adds the flags) of one family. With a
 * protocol, a CTA_FILTER on the original tuple's CTA_PROTO_NUM makes the kernel (5.8+) send
 * only that protocol's entries; older kernels ignore the filter, so decoders filter again.
 */
export function encodeConntrackDump(family: IpFamily, protocol?: number): GenlRequest {
  const w = new AttrWriter();
  if (protocol !== undefined) {
    w.nest(CTA.TUPLE_ORIG, (t) => t.nest(CTA_TUPLE.PROTO, (p) => p.u8(CTA_PROTO.NUM, protocol)));
    w.nest(CTA.FILTER, (f) => f.u32(CTA_FILTER.ORIG_FLAGS, CTA_FILTER_F.CTA_PROTO_NUM).u32(CTA_FILTER.REPLY_FLAGS, 0));
  }
  return { type: ctnlMsgType(IPCTNL_MSG.CT_GET), cmd: toAddressFamily(family), attrs: Buffer.from(w.finish()) };
}

/**
 * IPCTNL_MSG_CT_DELETE of the entry with this original tuple (and zone, when not the default
 * one). With the flow's CTA_ID the kernel deletes only that very entry: one created since the
 * dump with the same tuple (e.g. to the new backend) answers ENOENT and stays.
 */
export function encodeConntrackDelete(flow: ConntrackFlow): GenlRequest {
  const af = toAddressFamily(flow.family);
  const w = new AttrWriter();
  w.nest(CTA.TUPLE_ORIG, (t) => writeTuple(t, af, flow.protocol, flow.orig));
  if (flow.zone !== 0) w.be16(CTA.ZONE, flow.zone);
  if (flow.id !== undefined) w.be32(CTA.ID, flow.id);
  return { type: ctnlMsgType(IPCTNL_MSG.CT_DELETE), cmd: af, attrs: Buffer.from(w.finish()) };
}

function writeTuple(w: AttrWriter, af: AddressFamily, protocol: number, t: ConntrackTuple): void {
  const [src, dst] = af === AF_INET ? [CTA_IP.V4_SRC, CTA_IP.V4_DST] : [CTA_IP.V6_SRC, CTA_IP.V6_DST];
  w.nest(CTA_TUPLE.IP, (ip) => ip.bytes(src, addressToBytes(af, t.src)).bytes(dst, addressToBytes(af, t.dst)));
  w.nest(CTA_TUPLE.PROTO, (p) => {
    p.u8(CTA_PROTO.NUM, protocol);
    if (hasPorts(protocol)) p.be16(CTA_PROTO.SRC_PORT, t.srcPort).be16(CTA_PROTO.DST_PORT, t.dstPort);
  });
}

/** TCP, UDP, UDP-Lite, DCCP, SCTP carry ports in the tuple (CTA_PROTO_SRC/DST_PORT). */
const hasPorts = (protocol: number): boolean => [6, 17, 33, 132, 136].includes(protocol);

/**
 * One conntrack entry of a dump (IPCTNL_MSG_CT_NEW), from its nfgen_family byte and its
 * attributes. Throws DecodeError naming the attribute path when a tuple is missing or malformed.
 */
export function decodeConntrackFlow(nfgenFamily: number, attrs: Buffer): ConntrackFlow {
  if (nfgenFamily !== AF_INET && nfgenFamily !== AF_INET6) {
    throw new DecodeError(`nfgen_family ${nfgenFamily} is neither AF_INET nor AF_INET6`, 'nfgenmsg', 0);
  }
  const af = nfgenFamily as AddressFamily;
  const r = AttrReader.parse(attrs, 'IPCTNL_MSG_CT_NEW', CTA_NAMES);
  const orig = readTuple(r, CTA.TUPLE_ORIG, 'CTA_TUPLE_ORIG', af);
  const reply = readTuple(r, CTA.TUPLE_REPLY, 'CTA_TUPLE_REPLY', af);
  if (orig.protocol !== reply.protocol) {
    throw new DecodeError(
      `protocol ${orig.protocol} in the original tuple, ${reply.protocol} in the reply tuple`,
      'IPCTNL_MSG_CT_NEW',
      0,
    );
  }
  const id = r.be32(CTA.ID);
  return {
    family: fromAddressFamily(af),
    protocol: orig.protocol,
    orig: orig.tuple,
    reply: reply.tuple,
    zone: r.be16(CTA.ZONE) ?? 0,
    ...(id === undefined ? {} : { id }),
  };
}

function readTuple(
  r: AttrReader,
  type: number,
  path: string,
  af: AddressFamily,
): { protocol: number; tuple: ConntrackTuple } {
  const t = r.require(type, r.nested(type, path, CTA_TUPLE_NAMES));
  const ip = t.require(CTA_TUPLE.IP, t.nested(CTA_TUPLE.IP, 'CTA_TUPLE_IP', CTA_IP_NAMES));
  const [srcType, dstType, len] =
    af === AF_INET ? [CTA_IP.V4_SRC, CTA_IP.V4_DST, 4] : [CTA_IP.V6_SRC, CTA_IP.V6_DST, 16];
  const addr = (k: number): string => {
    const b = ip.require(k, ip.bytes(k, len));
    if (b.length !== len)
      throw new DecodeError(
        `expected ${len} bytes, got ${b.length}`,
        `${ip.path}>${Object.keys(CTA_IP_NAMES).find((n) => CTA_IP_NAMES[n] === k)}`,
        0,
      );
    return bytesToAddress(af, b);
  };
  const proto = t.require(CTA_TUPLE.PROTO, t.nested(CTA_TUPLE.PROTO, 'CTA_TUPLE_PROTO', CTA_PROTO_NAMES));
  const protocol = proto.require(CTA_PROTO.NUM, proto.u8(CTA_PROTO.NUM));
  return {
    protocol,
    tuple: {
      src: addr(srcType),
      dst: addr(dstType),
      srcPort: proto.be16(CTA_PROTO.SRC_PORT) ?? 0,
      dstPort: proto.be16(CTA_PROTO.DST_PORT) ?? 0,
    },
  };
}
