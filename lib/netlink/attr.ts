import { DecodeError } from '../errors';
import { NLA_F_NESTED, NLA_HDRLEN, NLA_TYPE_MASK, align4 } from '../uapi/netlink';

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

  // callers must take the offset before touching this.buf: header() may reallocate it.
  // Byte stores instead of writeUInt16LE: a restore encodes ~800,000 attribute headers.
  private header(type: number, payloadLen: number): number {
    const total = align4(NLA_HDRLEN + payloadLen);
    this.reserve(total);
    const b = this.buf;
    const at = this.len;
    const len = NLA_HDRLEN + payloadLen;
    b[at] = len & 0xff;
    b[at + 1] = len >>> 8;
    b[at + 2] = type & 0xff;
    b[at + 3] = type >>> 8;
    // callers write the whole payload; only the alignment padding needs zeroing
    for (let i = at + len; i < at + total; i++) b[i] = 0;
    this.len += total;
    return at + NLA_HDRLEN;
  }

  u8(type: number, v: number): this {
    const at = this.header(type, 1);
    this.buf.writeUInt8(v, at);
    return this;
  }
  u16(type: number, v: number): this {
    check16(v);
    const at = this.header(type, 2);
    this.buf[at] = v & 0xff;
    this.buf[at + 1] = (v >>> 8) & 0xff;
    return this;
  }
  be16(type: number, v: number): this {
    check16(v);
    const at = this.header(type, 2);
    this.buf[at] = (v >>> 8) & 0xff;
    this.buf[at + 1] = v & 0xff;
    return this;
  }
  u32(type: number, v: number): this {
    const at = this.header(type, 4);
    putU32LE(this.buf, at, v);
    return this;
  }
  be32(type: number, v: number): this {
    const at = this.header(type, 4);
    const b = this.buf;
    b[at] = (v >>> 24) & 0xff;
    b[at + 1] = (v >>> 16) & 0xff;
    b[at + 2] = (v >>> 8) & 0xff;
    b[at + 3] = v & 0xff;
    return this;
  }
  /** two host-order u32 (e.g. struct ip_vs_flags { flags; mask; }) */
  u32Pair(type: number, a: number, b: number): this {
    const at = this.header(type, 8);
    putU32LE(this.buf, at, a);
    putU32LE(this.buf, at + 4, b);
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
    const at = this.nestStart(type);
    build(this);
    return this.nestEnd(at);
  }
  /** Opens a nested attribute (NLA_F_NESTED set); returns the offset nestEnd takes. */
  nestStart(type: number): number {
    const at = this.len;
    this.header(type | NLA_F_NESTED, 0);
    return at;
  }
  /** Closes the nested attribute opened at `at`: its length now covers what was written since. */
  nestEnd(at: number): this {
    const len = this.len - at;
    this.buf[at] = len & 0xff;
    this.buf[at + 1] = len >>> 8;
    return this;
  }

  /** Appends `n` bytes for the caller to fill through `buffer` (e.g. a message header); returns their offset. */
  skip(n: number): number {
    this.reserve(n);
    const at = this.len;
    this.len += n;
    return at;
  }
  /** Appends bytes as they are (no attribute header). */
  raw(b: Uint8Array): this {
    this.reserve(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
    return this;
  }
  /** Drops everything written after `len` bytes. */
  truncate(len: number): this {
    if (len < this.len) this.len = len;
    return this;
  }
  /** The writer's current buffer (replaced when it grows): for patching bytes already written. */
  get buffer(): Buffer {
    return this.buf;
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

/** as writeUInt16LE refuses it: a 16-bit field never takes a value that does not fit */
function check16(v: number): void {
  if ((v & 0xffff) !== v) throw new RangeError(`value ${v} out of range for a 16-bit attribute`);
}

function putU32LE(b: Buffer, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = (v >>> 24) & 0xff;
}

/** Attributes of one level, by type (flags masked off). The last of a repeated type wins. */
export type AttrTable = Map<number, Buffer>;

/** Calls fn for each attribute of one level (type with flags masked off, payload offset and length). */
export function forEachAttr(
  buf: Buffer,
  path: string,
  fn: (type: number, at: number, len: number) => void,
  baseOffset = 0,
): void {
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

/** Parses one level of attributes into an AttrTable (see forEachAttr); DecodeError on a bad length. */
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
