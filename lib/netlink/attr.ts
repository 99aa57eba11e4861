import { DecodeError } from '../errors';
import { NLA_F_NESTED, NLA_HDRLEN, NLA_TYPE_MASK, align4 } from './uapi/netlink';

/**
 * Builds a list of netlink attributes (struct nlattr TLVs, 4-byte aligned).
 * Integers are host order (little-endian on every platform Node supports for netlink
 * here) unless the method name says be (big-endian, network order).
 */
export class AttrWriter {
  private buf: Buffer;
  private len = 0;

  constructor(initialSize = 128) {
    this.buf = Buffer.alloc(initialSize);
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  // callers must take the offset before touching this.buf: header() may reallocate it
  private header(type: number, payloadLen: number): number {
    const total = align4(NLA_HDRLEN + payloadLen);
    this.reserve(total);
    const at = this.len;
    this.buf.writeUInt16LE(NLA_HDRLEN + payloadLen, at);
    this.buf.writeUInt16LE(type, at + 2);
    // callers write the whole payload; only the alignment padding needs zeroing
    for (let i = at + NLA_HDRLEN + payloadLen; i < at + total; i++) this.buf[i] = 0;
    this.len += total;
    return at + NLA_HDRLEN;
  }

  u8(type: number, v: number): this {
    const at = this.header(type, 1);
    this.buf.writeUInt8(v, at);
    return this;
  }
  u16(type: number, v: number): this {
    const at = this.header(type, 2);
    this.buf.writeUInt16LE(v, at);
    return this;
  }
  be16(type: number, v: number): this {
    const at = this.header(type, 2);
    this.buf.writeUInt16BE(v, at);
    return this;
  }
  u32(type: number, v: number): this {
    const at = this.header(type, 4);
    this.buf.writeUInt32LE(v >>> 0, at);
    return this;
  }
  be32(type: number, v: number): this {
    const at = this.header(type, 4);
    this.buf.writeUInt32BE(v >>> 0, at);
    return this;
  }
  /** two host-order u32 (e.g. struct ip_vs_flags { flags; mask; }) */
  u32Pair(type: number, a: number, b: number): this {
    const at = this.header(type, 8);
    this.buf.writeUInt32LE(a >>> 0, at);
    this.buf.writeUInt32LE(b >>> 0, at + 4);
    return this;
  }
  u64(type: number, v: bigint): this {
    const at = this.header(type, 8);
    this.buf.writeBigUInt64LE(v, at);
    return this;
  }
  /** NUL-terminated string (NLA_NUL_STRING) */
  string(type: number, s: string): this {
    const bytes = Buffer.from(s, 'utf8');
    const at = this.header(type, bytes.length + 1);
    bytes.copy(this.buf, at);
    this.buf[at + bytes.length] = 0;
    return this;
  }
  bytes(type: number, b: Uint8Array): this {
    const at = this.header(type, b.length);
    this.buf.set(b, at);
    return this;
  }
  /** A nested attribute; the kernel's IPVS policy does not need NLA_F_NESTED, ipvsadm sets it. */
  nest(type: number, build: (w: AttrWriter) => void): this {
    const at = this.len;
    this.header(type | NLA_F_NESTED, 0);
    build(this);
    this.buf.writeUInt16LE(this.len - at, at);
    return this;
  }

  /** Starts over, keeping the buffer (for a writer reused across messages). */
  reset(): this {
    this.len = 0;
    return this;
  }

  get length(): number {
    return this.len;
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.len);
  }
}

/** Attributes of one level, by type (flags masked off). The last of a repeated type wins. */
export type AttrTable = Map<number, Buffer>;

/** Calls fn for each attribute of one level (type with flags masked off, payload offset and length). */
export function forEachAttr(buf: Buffer, path: string, fn: (type: number, at: number, len: number) => void, baseOffset = 0): void {
  let off = 0;
  while (off + NLA_HDRLEN <= buf.length) {
    const len = buf.readUInt16LE(off);
    if (len < NLA_HDRLEN || off + len > buf.length) {
      throw new DecodeError(`attribute length ${len} overruns ${buf.length - off} bytes left`, path, baseOffset + off);
    }
    fn(buf.readUInt16LE(off + 2) & NLA_TYPE_MASK, off + NLA_HDRLEN, len - NLA_HDRLEN);
    off += align4(len);
  }
}

export function parseAttrs(buf: Buffer, path: string, baseOffset = 0): AttrTable {
  const out: AttrTable = new Map();
  forEachAttr(buf, path, (type, at, len) => out.set(type, buf.subarray(at, at + len)), baseOffset);
  return out;
}

/** Typed, length-checked reads from an AttrTable. `names` maps type numbers to C names for errors. */
export class AttrReader {
  constructor(
    readonly attrs: AttrTable,
    readonly path: string,
    private readonly names: Readonly<Record<string, number>>,
  ) {}

  static parse(buf: Buffer, path: string, names: Readonly<Record<string, number>>): AttrReader {
    return new AttrReader(parseAttrs(buf, path), path, names);
  }

  has(type: number): boolean {
    return this.attrs.has(type);
  }

  private name(type: number): string {
    for (const [k, v] of Object.entries(this.names)) if (v === type) return k;
    return String(type);
  }

  private get(type: number, size: number, exact = true): Buffer | undefined {
    const b = this.attrs.get(type);
    if (b === undefined) return undefined;
    if (exact ? b.length !== size : b.length < size) {
      throw new DecodeError(`expected ${size} bytes, got ${b.length}`, `${this.path}>${this.name(type)}`, 0);
    }
    return b;
  }

  require<T>(type: number, value: T | undefined): T {
    if (value === undefined) throw new DecodeError('missing attribute', `${this.path}>${this.name(type)}`, 0);
    return value;
  }

  u8(type: number): number | undefined {
    return this.get(type, 1)?.readUInt8(0);
  }
  u16(type: number): number | undefined {
    return this.get(type, 2)?.readUInt16LE(0);
  }
  be16(type: number): number | undefined {
    return this.get(type, 2)?.readUInt16BE(0);
  }
  u32(type: number): number | undefined {
    return this.get(type, 4)?.readUInt32LE(0);
  }
  be32(type: number): number | undefined {
    return this.get(type, 4)?.readUInt32BE(0);
  }
  u64(type: number): bigint | undefined {
    return this.get(type, 8)?.readBigUInt64LE(0);
  }
  /** at least `min` bytes */
  bytes(type: number, min = 0): Buffer | undefined {
    return this.get(type, min, false);
  }
  string(type: number): string | undefined {
    const b = this.attrs.get(type);
    if (b === undefined) return undefined;
    const nul = b.indexOf(0);
    return b.subarray(0, nul < 0 ? b.length : nul).toString('utf8');
  }
  nested(type: number, path: string, names: Readonly<Record<string, number>>): AttrReader | undefined {
    const b = this.attrs.get(type);
    return b === undefined ? undefined : AttrReader.parse(b, `${this.path}>${path}`, names);
  }
}
