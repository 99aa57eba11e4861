import { DecodeError } from '../errors';
import { GENL_HDRLEN, NLMSG, NLMSG_HDRLEN, NLMSGERR_ATTR, NLM_F, align4 } from '../uapi/netlink';
import { parseAttrs } from './attr';

/** One netlink message as read off the socket; payload is what follows struct nlmsghdr. */
export interface NetlinkMessage {
  readonly type: number;
  readonly flags: number;
  readonly seq: number;
  readonly pid: number;
  readonly payload: Buffer;
}

/** The netlink and genetlink headers of one generic-netlink message (nlmsghdr + genlmsghdr). */
export interface GenlHeader {
  /** netlink message type: the generic-netlink family id */
  readonly familyId: number;
  readonly flags: number;
  readonly seq: number;
  readonly cmd: number;
  readonly version: number;
  /** sender port; 0 lets the kernel fill it in */
  readonly pid?: number;
}

/** struct nlmsghdr + struct genlmsghdr + attributes. */
export function encodeGenlMessage(h: GenlHeader, attrs: Buffer): Buffer {
  const b = Buffer.allocUnsafe(genlMessageLength(attrs));
  writeGenlMessage(b, 0, h, attrs);
  return b;
}

/** Bytes a generic-netlink message with these attributes takes (attributes are 4-aligned). */
export const genlMessageLength = (attrs: Buffer): number => NLMSG_HDRLEN + GENL_HDRLEN + attrs.length;

/** Writes one message at `off` of `b` (for many messages in one datagram); returns its length. */
export function writeGenlMessage(b: Buffer, off: number, h: GenlHeader, attrs: Buffer): number {
  const len = genlMessageLength(attrs);
  b.writeUInt32LE(len, off);
  b.writeUInt16LE(h.familyId, off + 4);
  b.writeUInt16LE(h.flags, off + 6);
  b.writeUInt32LE(h.seq >>> 0, off + 8);
  b.writeUInt32LE(h.pid ?? 0, off + 12);
  b.writeUInt8(h.cmd, off + 16);
  b.writeUInt8(h.version, off + 17);
  b.writeUInt16LE(0, off + 18);
  attrs.copy(b, off + NLMSG_HDRLEN + GENL_HDRLEN);
  return len;
}

/** Splits one datagram into its messages. Throws DecodeError on a truncated or overlong message. */
export function splitMessages(buf: Buffer): NetlinkMessage[] {
  const out: NetlinkMessage[] = [];
  let off = 0;
  while (off + NLMSG_HDRLEN <= buf.length) {
    const len = buf.readUInt32LE(off);
    if (len < NLMSG_HDRLEN || off + len > buf.length) {
      throw new DecodeError(`message length ${len} with ${buf.length - off} bytes left`, 'nlmsghdr', off);
    }
    out.push({
      type: buf.readUInt16LE(off + 4),
      flags: buf.readUInt16LE(off + 6),
      seq: buf.readUInt32LE(off + 8),
      pid: buf.readUInt32LE(off + 12),
      payload: buf.subarray(off + NLMSG_HDRLEN, off + len),
    });
    off += align4(len);
  }
  return out;
}

/** The body of a generic-netlink message: its genl cmd and the attribute bytes. */
export function genlBody(msg: NetlinkMessage): { cmd: number; version: number; attrs: Buffer } {
  if (msg.payload.length < GENL_HDRLEN) throw new DecodeError('short genlmsghdr', 'genlmsghdr', NLMSG_HDRLEN);
  return { cmd: msg.payload.readUInt8(0), version: msg.payload.readUInt8(1), attrs: msg.payload.subarray(GENL_HDRLEN) };
}

/** An NLMSG_ERROR message decoded: errno (0 for an ACK), the request's seq, and the extended ack. */
export interface NetlinkAck {
  /** positive errno; 0 for a plain ACK */
  readonly errno: number;
  /** the sequence number of the request this answers (from the echoed header) */
  readonly seq: number;
  /** extended-ack message, when the kernel gave one */
  readonly extack?: string;
}

/** Decodes struct nlmsgerr (+ extended-ack TLVs) from an NLMSG_ERROR payload. */
export function decodeAck(msg: NetlinkMessage): NetlinkAck {
  const p = msg.payload;
  if (p.length < 4 + NLMSG_HDRLEN) throw new DecodeError('short nlmsgerr', 'nlmsgerr', NLMSG_HDRLEN);
  const errno = -p.readInt32LE(0);
  const seq = p.readUInt32LE(4 + 8);
  let extack: string | undefined;
  if (msg.flags & NLM_F.ACK_TLVS) {
    // the echoed request is cut to its header when CAPPED, else echoed whole
    const echoed = msg.flags & NLM_F.CAPPED ? NLMSG_HDRLEN : align4(p.readUInt32LE(4));
    const tlvs = parseAttrs(p.subarray(Math.min(p.length, 4 + echoed)), 'nlmsgerr', NLMSG_HDRLEN + 4 + echoed);
    const m = tlvs.get(NLMSGERR_ATTR.MSG);
    if (m) extack = m.subarray(0, m.indexOf(0) < 0 ? m.length : m.indexOf(0)).toString('utf8');
  }
  return extack === undefined ? { errno, seq } : { errno, seq, extack };
}

/** Is the message an NLMSG_ERROR (an error or an ACK)? */
export const isError = (m: NetlinkMessage): boolean => m.type === NLMSG.ERROR;
/** Is the message NLMSG_DONE (the end of a dump)? */
export const isDone = (m: NetlinkMessage): boolean => m.type === NLMSG.DONE;
