/**
 * ip_set's netlink dump (NETLINK_NETFILTER, subsystem NFNL_SUBSYS_IPSET): the request `ipset
 * save` sends, and the reply messages decoded into sets whose members are spelled the way
 * `ipset save` prints them, so the result equals parseIpsetSave (lib/kernel/ipset/ipset-text.ts)
 * of the same kernel state.
 *
 * Request: nlmsghdr (type (6 << 8) | IPSET_CMD_SAVE, NLM_F_REQUEST | NLM_F_DUMP) + nfgenmsg
 * (AF_INET, NFNETLINK_V0, res_id 0) + IPSET_ATTR_PROTOCOL (u8).
 *
 * Reply (net/netfilter/ipset/ip_set_core.c ip_set_dump_do): one message (type IPSET_CMD_LIST)
 * per set and part. Each carries IPSET_ATTR_PROTOCOL and IPSET_ATTR_SETNAME. A set's first
 * message adds TYPENAME, FAMILY, REVISION (INDEX with protocol 7) and the header nest
 * IPSET_ATTR_DATA (hashsize, maxelem, ... from the type's head()), then the members:
 * IPSET_ATTR_ADT, a nest of one IPSET_ATTR_DATA nest per member. A set too large for one
 * message continues in the next ones, which carry PROTOCOL, SETNAME and another ADT nest
 * (never a header). Sets never interleave.
 */
import { AttrWriter, forEachAttr, parseAttrs } from './attr';
import { GenlRequest } from './socket';
import { AF_INET, AF_INET6 } from '../uapi/inet';
import {
  IPSET_ATTR,
  IPSET_ATTR_CADT,
  IPSET_ATTR_IPADDR,
  IPSET_CMD,
  IPSET_FLAG_CADT,
  IPSET_PROTOCOL_MIN,
  NFPROTO,
  ipsetMsgType,
} from '../uapi/ip_set';
import { IpFamily, addressBits, familyOfValidAddress } from '../model/ip-family';
import { bytesToAddress } from '../model/ipvs';
import { DecodeError } from '../errors';

/** One set as the dump shows it; the shape of ObservedSet (lib/kernel/ipset/ipset.ts). */
export interface DumpedIpset {
  readonly name: string;
  readonly type: string;
  /** for the types whose `ipset save` line says `family` (hash:* but hash:mac) */
  readonly family?: IpFamily;
  /** the create options `ipset save` prints after the type, for the header fields decoded */
  readonly options: string;
  /** in `ipset save`'s spelling */
  readonly members: Set<string>;
  /** a set created with `comment`: each member's comment ('' for none) */
  readonly comments?: Map<string, string>;
}

/**
 * The dump of every set. Protocol 6 (IPSET_PROTOCOL_MIN) is accepted by every kernel with
 * ip_set over netlink: 6.1 takes 6 or 7, kernels before 5.6 exactly 6.
 */
export function encodeIpsetDump(protocol: number = IPSET_PROTOCOL_MIN): GenlRequest {
  const w = new AttrWriter(8);
  w.u8(IPSET_ATTR.PROTOCOL, protocol);
  return { type: ipsetMsgType(IPSET_CMD.SAVE), cmd: AF_INET, attrs: Buffer.from(w.finish()) };
}

/** A set type whose members this codec cannot spell as `ipset save` does. */
export class UnspelledIpsetTypeError extends DecodeError {
  constructor(
    readonly set: string,
    readonly type: string,
  ) {
    super(`set ${set}: members of type ${type} are not decoded`, `IPSET_CMD_LIST ${set}`, 0);
  }
}

/** What one member field is, per type dimension ("hash:ip,port,net" -> ip, port, net). */
type Dim = 'ip' | 'net' | 'port' | 'mac' | 'iface' | 'mark' | 'set';
const DIMS: ReadonlySet<string> = new Set<Dim>(['ip', 'net', 'port', 'mac', 'iface', 'mark', 'set']);

function dimsOf(set: string, type: string): Dim[] {
  if (type === 'list:set') return ['set'];
  const colon = type.indexOf(':');
  const kind = type.slice(0, colon);
  const dims = type.slice(colon + 1).split(',');
  if ((kind !== 'hash' && kind !== 'bitmap') || !dims.every((d) => DIMS.has(d)))
    throw new UnspelledIpsetTypeError(set, type);
  return dims as Dim[];
}

/** getprotobynumber's names (Debian's /etc/protocols) for the protocols of port members. */
const PROTO_NAMES: Readonly<Record<number, string>> = {
  1: 'icmp',
  6: 'tcp',
  17: 'udp',
  33: 'dccp',
  58: 'ipv6-icmp',
  132: 'sctp',
  136: 'udplite',
};

interface Building {
  readonly name: string;
  readonly type: string;
  readonly family?: IpFamily;
  readonly options: string;
  readonly members: Set<string>;
  /** a set created with `comment`: each member's comment */
  readonly comments?: Map<string, string>;
  readonly dims: readonly Dim[];
}

/**
 * Decodes the reply messages of one dump, in order (feed each message's attributes to
 * `add`, then take `sets`). Throws DecodeError naming the set and attribute on malformed
 * bytes, UnspelledIpsetTypeError for a type whose members it cannot spell.
 */
export class IpsetDumpDecoder {
  private readonly building = new Map<string, Building>();
  private last: Building | undefined;

  add(attrs: Buffer): void {
    const top = parseAttrs(attrs, 'IPSET_CMD_LIST');
    const nameBuf = top.get(IPSET_ATTR.SETNAME);
    if (!nameBuf) throw new DecodeError('missing attribute', 'IPSET_CMD_LIST>IPSET_ATTR_SETNAME', 0);
    const name = cstring(nameBuf);
    const path = `IPSET_CMD_LIST ${name}`;
    let set: Building | undefined;
    const typeBuf = top.get(IPSET_ATTR.TYPENAME);
    if (typeBuf) {
      if (this.building.has(name)) throw new DecodeError('a second header for the set', path, 0);
      set = this.header(name, cstring(typeBuf), top, path);
      this.building.set(name, set);
    } else {
      set = this.building.get(name);
      // a continuation follows its set's earlier parts directly
      if (!set || set !== this.last)
        throw new DecodeError('members of a set whose header did not come just before', path, 0);
    }
    this.last = set;
    const adt = top.get(IPSET_ATTR.ADT);
    if (adt) decodeMembers(set, adt, `${path}>IPSET_ATTR_ADT`);
  }

  /** Every set, by name, in dump order. */
  get sets(): Map<string, DumpedIpset> {
    const out = new Map<string, DumpedIpset>();
    for (const s of this.building.values()) {
      out.set(s.name, {
        name: s.name,
        type: s.type,
        ...(s.family ? { family: s.family } : {}),
        options: s.options,
        members: s.members,
        ...(s.comments ? { comments: s.comments } : {}),
      });
    }
    return out;
  }

  private header(name: string, type: string, top: Map<number, Buffer>, path: string): Building {
    const famByte = top.get(IPSET_ATTR.FAMILY)?.[0] ?? NFPROTO.UNSPEC;
    const fam: IpFamily | undefined = famByte === NFPROTO.IPV4 ? 'ipv4' : famByte === NFPROTO.IPV6 ? 'ipv6' : undefined;
    // `ipset save` prints `family` for the types whose create takes one: hash:* but hash:mac
    const family = type.startsWith('hash:') && type !== 'hash:mac' ? fam : undefined;
    const data = top.get(IPSET_ATTR.DATA);
    const h = data ? parseAttrs(data, `${path}>IPSET_ATTR_DATA`) : new Map<number, Buffer>();
    const options = formatOptions(type, family, h, `${path}>IPSET_ATTR_DATA`);
    return {
      name,
      type,
      ...(family ? { family } : {}),
      options,
      members: new Set(),
      ...(/(^| )comment( |$)/.test(options) ? { comments: new Map<string, string>() } : {}),
      dims: dimsOf(name, type),
    };
  }
}

/** Decodes every reply message of a dump (a convenience over IpsetDumpDecoder). */
export function decodeIpsetDump(messages: readonly Buffer[]): Map<string, DumpedIpset> {
  const d = new IpsetDumpDecoder();
  for (const m of messages) d.add(m);
  return d.sets;
}

const cstring = (b: Buffer): string => {
  const nul = b.indexOf(0);
  return b.toString('utf8', 0, nul < 0 ? b.length : nul);
};

function be32(b: Buffer | undefined, path: string): number | undefined {
  if (b === undefined) return undefined;
  if (b.length !== 4) throw new DecodeError(`expected 4 bytes, got ${b.length}`, path, 0);
  return b.readUInt32BE(0);
}

const hex8 = (v: number): string => '0x' + v.toString(16).padStart(8, '0');

/**
 * The create options as `ipset save` (ipset 7.17, list_create) prints them, for the fields
 * decoded here: family, hashsize, maxelem, netmask, markmask, timeout, counters, comment,
 * skbinfo, forceadd, bucketsize, initval (hash); range (bitmap:port, bitmap:ip); size
 * (list:set). The order was checked against `ipset save` in the VM (spec/vm/ipset-netlink)
 * except netmask's. Not decoded: bitmap:ip's netmask, hash types' bitmask (Linux 6.2+).
 */
function formatOptions(type: string, family: IpFamily | undefined, h: Map<number, Buffer>, path: string): string {
  const o: string[] = [];
  const A = IPSET_ATTR_CADT;
  const num = (t: number, what: string): number | undefined => be32(h.get(t), `${path}>${what}`);
  if (type.startsWith('hash:')) {
    if (family) o.push('family', family === 'ipv4' ? 'inet' : 'inet6');
    // hash:ip,mark prints markmask before hashsize (seen from ipset 7.17 on 6.1)
    const markmask = h.get(A.MARKMASK);
    if (markmask?.length === 4) o.push('markmask', hex8(markmask.readUInt32LE(0)));
    const hashsize = num(A.HASHSIZE, 'IPSET_ATTR_HASHSIZE');
    const maxelem = num(A.MAXELEM, 'IPSET_ATTR_MAXELEM');
    if (hashsize !== undefined) o.push('hashsize', String(hashsize));
    if (maxelem !== undefined) o.push('maxelem', String(maxelem));
    const netmask = h.get(A.NETMASK);
    if (netmask?.length === 1) o.push('netmask', String(netmask[0]));
  } else if (type === 'bitmap:port') {
    const from = h.get(A.PORT_FROM);
    const to = h.get(A.PORT_TO);
    if (from?.length === 2 && to?.length === 2) o.push('range', `${from.readUInt16BE(0)}-${to.readUInt16BE(0)}`);
  } else if (type.startsWith('bitmap:ip')) {
    const from = h.get(A.IP_FROM);
    const to = h.get(A.IP_TO);
    if (from && to)
      o.push(
        'range',
        `${nestedAddress(from, `${path}>IPSET_ATTR_IP`)}-${nestedAddress(to, `${path}>IPSET_ATTR_IP_TO`)}`,
      );
  } else if (type === 'list:set') {
    const size = num(A.SIZE, 'IPSET_ATTR_SIZE');
    if (size !== undefined) o.push('size', String(size));
  }
  const timeout = num(A.TIMEOUT, 'IPSET_ATTR_TIMEOUT');
  if (timeout !== undefined) o.push('timeout', String(timeout));
  const flags = num(A.CADT_FLAGS, 'IPSET_ATTR_CADT_FLAGS') ?? 0;
  if (flags & IPSET_FLAG_CADT.WITH_COUNTERS) o.push('counters');
  if (flags & IPSET_FLAG_CADT.WITH_COMMENT) o.push('comment');
  if (flags & IPSET_FLAG_CADT.WITH_FORCEADD) o.push('forceadd');
  if (flags & IPSET_FLAG_CADT.WITH_SKBINFO) o.push('skbinfo');
  const bucketsize = h.get(A.BUCKETSIZE);
  if (type.startsWith('hash:') && bucketsize?.length === 1) o.push('bucketsize', String(bucketsize[0]));
  const initval = type.startsWith('hash:') ? num(A.INITVAL, 'IPSET_ATTR_INITVAL') : undefined;
  if (initval !== undefined) o.push('initval', hex8(initval));
  return o.join(' ');
}

/** The address inside an IPSET_ATTR_IP-like nest (IPSET_ATTR_IPADDR_IPV4 / _IPV6). */
function nestedAddress(nest: Buffer, path: string): string {
  let out: string | undefined;
  forEachAttr(nest, path, (t, at, len) => {
    if (t === IPSET_ATTR_IPADDR.IPV4 && len === 4) out = `${nest[at]}.${nest[at + 1]}.${nest[at + 2]}.${nest[at + 3]}`;
    else if (t === IPSET_ATTR_IPADDR.IPV6 && len === 16) out = bytesToAddress(AF_INET6, nest.subarray(at, at + 16));
    else throw new DecodeError(`address attribute ${t} of ${len} bytes`, path, at);
  });
  if (out === undefined) throw new DecodeError('no address in the nest', path, 0);
  return out;
}

/** The fields of one member, reused across members (the dump has 100,000s of them). */
class Fields {
  ip: Buffer | undefined;
  cidr = -1;
  ip2: Buffer | undefined;
  cidr2 = -1;
  port = -1;
  proto = -1;
  flags = 0;
  ether: Buffer | undefined;
  iface: string | undefined;
  mark = -1;
  name: string | undefined;
  comment: string | undefined;

  reset(): void {
    this.ip = this.ip2 = this.ether = undefined;
    this.iface = this.name = this.comment = undefined;
    this.cidr = this.cidr2 = this.port = this.proto = this.mark = -1;
    this.flags = 0;
  }
}

function decodeMembers(set: Building, adt: Buffer, path: string): void {
  const f = new Fields();
  const A = IPSET_ATTR_CADT;
  forEachAttr(adt, path, (t, at, len) => {
    if (t !== IPSET_ATTR.DATA) return;
    const elem = adt.subarray(at, at + len);
    const epath = `${path}>IPSET_ATTR_DATA`;
    f.reset();
    forEachAttr(elem, epath, (et, eat, elen) => {
      switch (et) {
        case A.IP:
          f.ip = elem.subarray(eat, eat + elen);
          break;
        case A.IP2:
          f.ip2 = elem.subarray(eat, eat + elen);
          break;
        case A.CIDR:
          f.cidr = elem[eat]!;
          break;
        case A.CIDR2:
          f.cidr2 = elem[eat]!;
          break;
        case A.PORT:
          if (elen === 2) f.port = elem.readUInt16BE(eat);
          break;
        case A.PROTO:
          f.proto = elem[eat]!;
          break;
        case A.CADT_FLAGS:
          if (elen === 4) f.flags = elem.readUInt32BE(eat);
          break;
        case A.ETHER:
          f.ether = elem.subarray(eat, eat + elen);
          break;
        case A.IFACE:
          f.iface = cstring(elem.subarray(eat, eat + elen));
          break;
        case A.MARK:
          if (elen === 4) f.mark = elem.readUInt32BE(eat);
          break;
        case A.NAME:
          f.name = cstring(elem.subarray(eat, eat + elen));
          break;
        case A.COMMENT:
          f.comment = cstring(elem.subarray(eat, eat + elen));
          break;
        default: // extensions (timeout, counters, skbinfo): `ipset save` prints them after the entry
      }
    });
    const member = spell(set, f, epath);
    set.members.add(member);
    set.comments?.set(member, f.comment ?? '');
  });
}

/** The entry as `ipset save` prints it (lib/print.c of ipset 7.17). */
function spell(set: Building, f: Fields, path: string): string {
  let out = '';
  let addrs = 0;
  for (const d of set.dims) {
    if (out !== '') out += ',';
    switch (d) {
      case 'ip':
      case 'net': {
        const [ip, cidr] = addrs++ === 0 ? [f.ip, f.cidr] : [f.ip2, f.cidr2];
        if (!ip) throw new DecodeError(`missing ${addrs === 1 ? 'IPSET_ATTR_IP' : 'IPSET_ATTR_IP2'}`, path, 0);
        const a = nestedAddress(ip, path);
        // a host prefix is not printed
        out += cidr < 0 || cidr === addressBits(familyOfValidAddress(a)) ? a : `${a}/${cidr}`;
        break;
      }
      case 'port': {
        if (f.port < 0) throw new DecodeError('missing IPSET_ATTR_PORT', path, 0);
        if (f.proto < 0) {
          out += String(f.port);
        } else if (f.proto === 1 || f.proto === 58) {
          // ICMP type/code in the port field (ipset prints their names; not decoded)
          out += `${PROTO_NAMES[f.proto]}:${f.port >> 8}/${f.port & 0xff}`;
        } else {
          out += `${PROTO_NAMES[f.proto] ?? String(f.proto)}:${f.port}`;
        }
        break;
      }
      case 'mac':
        if (!f.ether || f.ether.length !== 6) throw new DecodeError('missing IPSET_ATTR_ETHER', path, 0);
        out += [...f.ether].map((b) => b.toString(16).toUpperCase().padStart(2, '0')).join(':');
        break;
      case 'iface':
        if (f.iface === undefined) throw new DecodeError('missing IPSET_ATTR_IFACE', path, 0);
        out += (f.flags & IPSET_FLAG_CADT.PHYSDEV ? 'physdev:' : '') + f.iface;
        break;
      case 'mark':
        if (f.mark < 0) throw new DecodeError('missing IPSET_ATTR_MARK', path, 0);
        out += hex8(f.mark);
        break;
      case 'set':
        if (f.name === undefined) throw new DecodeError('missing IPSET_ATTR_NAME', path, 0);
        out += f.name;
        break;
    }
  }
  return out;
}
