// rtnetlink link/address messages, built and parsed with the `netlink` package's `rt`
// structs; the one thing the package cannot express, IFLA_LINKINFO's nested
// IFLA_INFO_KIND, is encoded here with AttrWriter.
// Based on include/uapi/linux/rtnetlink.h, if_link.h, if_addr.h (Linux 6.1).
// its modules one by one: the package index also loads its nl80211 and wireguard codecs
import { AttrStream } from 'netlink/dist/structs';
import * as rt from 'netlink/dist/rt/structs';
import { AttrReader, AttrWriter } from './attr';
import { NLM_F } from '../uapi/netlink';
import { AF_INET, AF_INET6 } from '../uapi/inet';
import { addressToBytes, bytesToAddress } from '../model/ipvs';
import { addressFamilyOf } from '../model/ip-family';
import { IpFamily, fromAddressFamily, ipVersion, toAddressFamily } from '../model/ip-family';
import { DecodeError } from '../errors';
import { LinkAddress, LinkInfo } from '../model/link';

/** enum in rtnetlink.h */
export const RTM = {
  NEWLINK: 16,
  DELLINK: 17,
  GETLINK: 18,
  NEWADDR: 20,
  DELADDR: 21,
  GETADDR: 22,
} as const;

/** enum in if_link.h (IFLA_INFO_*) */
export const IFLA_INFO = {
  KIND: 1,
  DATA: 2,
} as const;

/** IFF_UP in if.h */
export const IFF_UP = 0x1;

/** struct ifaddrmsg.ifa_scope for a host address (RT_SCOPE_UNIVERSE, as `ip addr add` uses) */
export const RT_SCOPE_UNIVERSE = 0;

/** NLM_F_CREATE: create the object when it does not exist (netlink.h, NEW requests). */
export const NLM_F_CREATE = 0x400;
/** NLM_F_EXCL: fail when the object exists (netlink.h, NEW requests). */
export const NLM_F_EXCL = 0x200;

/** One rtnetlink request, as data: message type, extra header flags (REQUEST|ACK are added by the socket), payload. */
export interface RtnlRequest {
  readonly type: number;
  readonly flags: number;
  readonly payload: Buffer;
  /** for errors: "add dummy link", "add address" */
  readonly operation: string;
  /** for errors: "kube-ipvs0", "10.96.0.1/32 on ifindex 3" */
  readonly object: string;
}

function link(data: rt.Link, attrs: Parameters<typeof rt.formatLinkMessage>[0]['attrs']): Buffer {
  const s = new AttrStream();
  rt.formatLinkMessage({ kind: 'link', data, attrs }, s);
  return Buffer.concat(s.bufs);
}

function addr(data: rt.Address, attrs: rt.AddressAttrs): Buffer {
  const s = new AttrStream();
  rt.formatAddressMessage({ kind: 'address', data, attrs }, s);
  return Buffer.concat(s.bufs);
}

/** IFLA_LINKINFO payload: { IFLA_INFO_KIND "kind\0" } */
export function encodeLinkInfoKind(kind: string): Buffer {
  return new AttrWriter(16).string(IFLA_INFO.KIND, kind).finish();
}

/** Encodes RTM_GETLINK as a dump: every link. */
export function encodeGetLinks(): RtnlRequest {
  return { type: RTM.GETLINK, flags: NLM_F.DUMP, payload: link({}, {}), operation: 'list links', object: '' };
}

/** Encodes RTM_GETLINK for one link, by name. */
export function encodeGetLink(name: string): RtnlRequest {
  return { type: RTM.GETLINK, flags: 0, payload: link({}, { ifname: name }), operation: 'get link', object: name };
}

/** Encodes RTM_NEWLINK for a new dummy link (`ip link add NAME type dummy`); EEXIST when it exists. */
export function encodeNewDummy(name: string): RtnlRequest {
  return {
    type: RTM.NEWLINK,
    flags: NLM_F_CREATE | NLM_F_EXCL,
    payload: link({}, { ifname: name, linkinfo: encodeLinkInfoKind('dummy') }),
    operation: 'add dummy link',
    object: name,
  };
}

/** Encodes RTM_DELLINK for the link with this index. */
export function encodeDelLink(index: number): RtnlRequest {
  return {
    type: RTM.DELLINK,
    flags: 0,
    payload: link({ index }, {}),
    operation: 'delete link',
    object: `ifindex ${index}`,
  };
}

/** Encodes RTM_GETADDR as a dump: every address of one family. */
export function encodeGetAddrs(family: IpFamily): RtnlRequest {
  return {
    type: RTM.GETADDR,
    flags: NLM_F.DUMP,
    payload: addr({ family: toAddressFamily(family) }, {}),
    operation: 'list addresses',
    object: `IPv${ipVersion(family)}`,
  };
}

function hostAddr(type: number, flags: number, index: number, address: string, operation: string): RtnlRequest {
  const af = addressFamilyOf(address);
  const bytes = addressToBytes(af, address);
  const prefixlen = af === AF_INET6 ? 128 : 32;
  return {
    type,
    flags,
    // IFA_LOCAL and IFA_ADDRESS both, as iproute2 sends them for a non-peer address
    payload: addr({ family: af, prefixlen, scope: RT_SCOPE_UNIVERSE, index }, { local: bytes, address: bytes }),
    operation,
    object: `${address}/${prefixlen} on ifindex ${index}`,
  };
}

/** Encodes RTM_NEWADDR for a host address (/32 or /128) on a link; EEXIST when it is there. */
export const encodeNewAddr = (index: number, address: string): RtnlRequest =>
  hostAddr(RTM.NEWADDR, NLM_F_CREATE | NLM_F_EXCL, index, address, 'add address');
/** Encodes RTM_DELADDR for a host address (/32 or /128) on a link. */
export const encodeDelAddr = (index: number, address: string): RtnlRequest =>
  hostAddr(RTM.DELADDR, 0, index, address, 'delete address');

/** The package's parsers throw plain Errors on bad bytes; ours are DecodeErrors. */
function parseWith<T>(parse: (b: Buffer) => T, payload: Buffer, path: string): T {
  try {
    return parse(payload);
  } catch (e) {
    throw new DecodeError((e as Error).message, path, 0);
  }
}

/** RTM_NEWLINK payload (struct ifinfomsg + IFLA_*) -> LinkInfo */
export function decodeLink(payload: Buffer): LinkInfo {
  const m = parseWith(rt.parseLinkMessage, payload, 'ifinfomsg');
  if (m.data.index === undefined || m.attrs.ifname === undefined) {
    throw new DecodeError('RTM_NEWLINK without index or IFLA_IFNAME', 'ifinfomsg', 0);
  }
  let kind = '';
  if (m.attrs.linkinfo) {
    kind = AttrReader.parse(m.attrs.linkinfo, 'IFLA_LINKINFO', IFLA_INFO).string(IFLA_INFO.KIND) ?? '';
  }
  return { index: m.data.index, name: m.attrs.ifname, kind, up: m.data.flags?.up === true };
}

/** RTM_NEWADDR payload (struct ifaddrmsg + IFA_*) -> LinkAddress. IFA_LOCAL wins over IFA_ADDRESS (peer links). */
export function decodeAddress(payload: Buffer): LinkAddress {
  const m = parseWith(rt.parseAddressMessage, payload, 'ifaddrmsg');
  const af = m.data.family;
  const bytes = m.attrs.local ?? m.attrs.address;
  if ((af !== AF_INET && af !== AF_INET6) || bytes === undefined || m.data.index === undefined) {
    throw new DecodeError(`RTM_NEWADDR family ${af} without address or index`, 'ifaddrmsg', 0);
  }
  if (bytes.length !== (af === AF_INET ? 4 : 16)) {
    throw new DecodeError(`address of ${bytes.length} bytes`, 'ifaddrmsg>IFA_LOCAL', 0);
  }
  return {
    ifindex: m.data.index,
    family: fromAddressFamily(af),
    address: bytesToAddress(af, bytes),
    prefixLen: m.data.prefixlen ?? 0,
  };
}
