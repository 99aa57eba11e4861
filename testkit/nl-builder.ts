// A deliberately simple byte builder for golden netlink messages in tests (after
// pg-protocol's testing/buffer-list.ts). It shares no code with lib/netlink: tests build
// expected bytes with it and compare them with what the encoder under test produced.

export class Bytes {
  private readonly parts: Buffer[] = [];

  u8(v: number): this {
    this.parts.push(Buffer.from([v & 0xff]));
    return this;
  }
  u16le(v: number): this {
    this.parts.push(Buffer.from([v & 0xff, (v >> 8) & 0xff]));
    return this;
  }
  u16be(v: number): this {
    this.parts.push(Buffer.from([(v >> 8) & 0xff, v & 0xff]));
    return this;
  }
  u32le(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v >>> 0);
    this.parts.push(b);
    return this;
  }
  u32be(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(v >>> 0);
    this.parts.push(b);
    return this;
  }
  u64le(v: bigint): this {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(v);
    this.parts.push(b);
    return this;
  }
  hex(h: string): this {
    this.parts.push(Buffer.from(h.replace(/[\s_]/g, ''), 'hex'));
    return this;
  }
  raw(b: Buffer): this {
    this.parts.push(b);
    return this;
  }
  build(): Buffer {
    return Buffer.concat(this.parts);
  }
}

const pad = (b: Buffer): Buffer => Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);

/** struct nlattr + payload + padding */
export function nla(type: number, payload: Buffer): Buffer {
  return pad(
    new Bytes()
      .u16le(4 + payload.length)
      .u16le(type)
      .raw(payload)
      .build(),
  );
}
/** a nested attribute with NLA_F_NESTED (0x8000), as ipvsadm sends them */
export function nest(type: number, ...children: Buffer[]): Buffer {
  return nla(type | 0x8000, Buffer.concat(children));
}
/** a nested attribute as the kernel sends it in replies (no NLA_F_NESTED) */
export function plainNest(type: number, ...children: Buffer[]): Buffer {
  return nla(type, Buffer.concat(children));
}
export const u8 = (v: number): Buffer => new Bytes().u8(v).build();
export const u16 = (v: number): Buffer => new Bytes().u16le(v).build();
export const be16 = (v: number): Buffer => new Bytes().u16be(v).build();
export const u32 = (v: number): Buffer => new Bytes().u32le(v).build();
export const be32 = (v: number): Buffer => new Bytes().u32be(v).build();
export const u64 = (v: bigint): Buffer => new Bytes().u64le(v).build();
export const cstr = (s: string): Buffer => Buffer.concat([Buffer.from(s), Buffer.from([0])]);
export const ipv4 = (s: string): Buffer => Buffer.from(s.split('.').map(Number));
/** 16-byte union nf_inet_addr holding an IPv4 address, as kernel replies carry it */
export const ipv4in16 = (s: string): Buffer => Buffer.concat([ipv4(s), Buffer.alloc(12)]);

/** nlmsghdr + genlmsghdr + attributes */
export function genlMsg(
  h: { type: number; flags: number; seq: number; pid?: number; cmd: number; version?: number },
  ...attrs: Buffer[]
): Buffer {
  const body = Buffer.concat(attrs);
  return new Bytes()
    .u32le(16 + 4 + body.length)
    .u16le(h.type)
    .u16le(h.flags)
    .u32le(h.seq)
    .u32le(h.pid ?? 0)
    .u8(h.cmd)
    .u8(h.version ?? 1)
    .u16le(0)
    .raw(body)
    .build();
}

/** NLMSG_ERROR answering a request header (error 0 = ACK) */
export function nlError(
  errno: number,
  req: { type: number; flags: number; seq: number; pid?: number },
  seq = req.seq,
): Buffer {
  return new Bytes()
    .u32le(16 + 4 + 16)
    .u16le(2)
    .u16le(0x100 /* CAPPED */)
    .u32le(seq)
    .u32le(0)
    .u32le(-errno >>> 0)
    .u32le(20)
    .u16le(req.type)
    .u16le(req.flags)
    .u32le(req.seq)
    .u32le(req.pid ?? 0)
    .build();
}

/** NLMSG_DONE ending a dump */
export function nlDone(seq: number, errno = 0): Buffer {
  return new Bytes()
    .u32le(20)
    .u16le(3)
    .u16le(0x2)
    .u32le(seq)
    .u32le(0)
    .u32le(-errno >>> 0)
    .build();
}
