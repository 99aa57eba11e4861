import { decodeConntrackFlow, encodeConntrackDelete, encodeConntrackDump } from '../../lib/netlink/conntrack-codec';
import { DecodeError } from '../../lib/errors';
import { ConntrackFlow } from '../../lib/model/conntrack';
import { be16, be32, ipv4, nest, nla, plainNest, u32, u8 } from '../../testkit/nl-builder';

// Attribute numbers are literals from include/uapi/linux/netfilter/nfnetlink_conntrack.h on
// purpose, so a wrong constant in lib/uapi cannot hide in both sides:
// CTA_TUPLE_ORIG 1, CTA_TUPLE_REPLY 2, CTA_STATUS 3, CTA_TIMEOUT 7, CTA_ID 12, CTA_ZONE 18,
// CTA_FILTER 25; CTA_TUPLE_IP 1, CTA_TUPLE_PROTO 2; CTA_IP_V4_SRC 1 .. CTA_IP_V6_DST 4;
// CTA_PROTO_NUM 1, SRC_PORT 2, DST_PORT 3; CTA_FILTER_ORIG_FLAGS 1, REPLY_FLAGS 2.
// Message types: (NFNL_SUBSYS_CTNETLINK 1 << 8) | IPCTNL_MSG_CT_GET 1 = 0x101, CT_DELETE 2 = 0x102.
// Test addresses: 192.0.2.0/24, 198.51.100.0/24 (RFC 5737), 2001:db8::/32 (RFC 3849).

const v6 = (s: string): Buffer => {
  // 2001:db8::<last> only
  const b = Buffer.alloc(16);
  b.writeUInt16BE(0x2001, 0);
  b.writeUInt16BE(0x0db8, 2);
  b.writeUInt16BE(parseInt(s.split('::')[1]!, 16), 14);
  return b;
};

const v4Tuple = (src: string, dst: string, proto: number, sport: number, dport: number, nested = nest) =>
  Buffer.concat([
    nested(1, nla(1, ipv4(src)), nla(2, ipv4(dst))),
    nested(2, nla(1, u8(proto)), nla(2, be16(sport)), nla(3, be16(dport))),
  ]);

const udpFlow: ConntrackFlow = {
  family: 'ipv4',
  protocol: 17,
  orig: { src: '192.0.2.1', dst: '198.51.100.10', srcPort: 40000, dstPort: 53 },
  reply: { src: '192.0.2.50', dst: '192.0.2.1', srcPort: 5353, dstPort: 40000 },
  zone: 0,
};

describe('encodeConntrackDump', () => {
  it('IPv4, every protocol: type 0x101, nfgen_family AF_INET, no attributes', () => {
    const req = encodeConntrackDump('ipv4');
    expect(req.type).toBe(0x101);
    expect(req.cmd).toBe(2);
    expect(req.attrs.length).toBe(0);
  });

  it('IPv6 UDP: a CTA_FILTER on the original tuple protocol number', () => {
    const req = encodeConntrackDump('ipv6', 17);
    expect(req.type).toBe(0x101);
    expect(req.cmd).toBe(10);
    const want = Buffer.concat([nest(1, nest(2, nla(1, u8(17)))), nest(25, nla(1, u32(1 << 3)), nla(2, u32(0)))]);
    expect(req.attrs.toString('hex')).toBe(want.toString('hex'));
  });
});

describe('encodeConntrackDelete', () => {
  it('IPv4 UDP by original tuple, default zone, no id', () => {
    const req = encodeConntrackDelete(udpFlow);
    expect(req.type).toBe(0x102);
    expect(req.cmd).toBe(2);
    expect(req.attrs.toString('hex')).toBe(
      nest(1, v4Tuple('192.0.2.1', '198.51.100.10', 17, 40000, 53)).toString('hex'),
    );
  });

  it('IPv6 SCTP with zone and id', () => {
    const req = encodeConntrackDelete({
      family: 'ipv6',
      protocol: 132,
      orig: { src: '2001:db8::1', dst: '2001:db8::a', srcPort: 5000, dstPort: 3868 },
      reply: { src: '2001:db8::32', dst: '2001:db8::1', srcPort: 3868, dstPort: 5000 },
      zone: 7,
      id: 0xdeadbeef,
    });
    expect(req.cmd).toBe(10);
    const want = Buffer.concat([
      nest(
        1,
        nest(1, nla(3, v6('2001:db8::1')), nla(4, v6('2001:db8::a'))),
        nest(2, nla(1, u8(132)), nla(2, be16(5000)), nla(3, be16(3868))),
      ),
      nla(18, be16(7)),
      nla(12, be32(0xdeadbeef)),
    ]);
    expect(req.attrs.toString('hex')).toBe(want.toString('hex'));
  });

  it('ICMP has no ports in its tuple', () => {
    const req = encodeConntrackDelete({ ...udpFlow, protocol: 1, orig: { ...udpFlow.orig, srcPort: 0, dstPort: 0 } });
    const want = nest(1, nest(1, nla(1, ipv4('192.0.2.1')), nla(2, ipv4('198.51.100.10'))), nest(2, nla(1, u8(1))));
    expect(req.attrs.toString('hex')).toBe(want.toString('hex'));
  });
});

describe('decodeConntrackFlow', () => {
  // as the kernel sends an entry: nests without NLA_F_NESTED, plus attributes we do not read
  const entry = (extra: Buffer[] = []) =>
    Buffer.concat([
      plainNest(1, v4Tuple('192.0.2.1', '198.51.100.10', 17, 40000, 53, plainNest)),
      plainNest(2, v4Tuple('192.0.2.50', '192.0.2.1', 17, 5353, 40000, plainNest)),
      nla(3, be32(0x188)), // CTA_STATUS
      nla(7, be32(29)), // CTA_TIMEOUT
      nla(12, be32(0x1234)), // CTA_ID
      ...extra,
      nla(99, Buffer.from('unknown')),
    ]);

  it('reads both tuples, the id, and the default zone', () => {
    expect(decodeConntrackFlow(2, entry())).toEqual({ ...udpFlow, id: 0x1234 });
  });

  it('reads CTA_ZONE', () => {
    expect(decodeConntrackFlow(2, entry([nla(18, be16(3))])).zone).toBe(3);
  });

  it('IPv6, canonical addresses', () => {
    const t = (s: string, d: string, sp: number, dp: number) =>
      Buffer.concat([
        plainNest(1, nla(3, v6(s)), nla(4, v6(d))),
        plainNest(2, nla(1, u8(17)), nla(2, be16(sp)), nla(3, be16(dp))),
      ]);
    const f = decodeConntrackFlow(
      10,
      Buffer.concat([
        plainNest(1, t('2001:db8::1', '2001:db8::a', 1000, 53)),
        plainNest(2, t('2001:db8::32', '2001:db8::1', 53, 1000)),
      ]),
    );
    expect(f).toEqual({
      family: 'ipv6',
      protocol: 17,
      orig: { src: '2001:db8::1', dst: '2001:db8::a', srcPort: 1000, dstPort: 53 },
      reply: { src: '2001:db8::32', dst: '2001:db8::1', srcPort: 53, dstPort: 1000 },
      zone: 0,
    });
  });

  it('a missing reply tuple is a DecodeError naming it', () => {
    const attrs = plainNest(1, v4Tuple('192.0.2.1', '198.51.100.10', 17, 40000, 53, plainNest));
    expect(() => decodeConntrackFlow(2, attrs)).toThrow(DecodeError);
    expect(() => decodeConntrackFlow(2, attrs)).toThrow(/CTA_TUPLE_REPLY/);
  });

  it('an IPv6-sized address in an AF_INET entry is a DecodeError', () => {
    const bad = Buffer.concat([
      plainNest(
        1,
        plainNest(1, nla(1, v6('2001:db8::1')), nla(2, ipv4('198.51.100.10'))),
        plainNest(2, nla(1, u8(17))),
      ),
      plainNest(2, v4Tuple('192.0.2.50', '192.0.2.1', 17, 5353, 40000, plainNest)),
    ]);
    expect(() => decodeConntrackFlow(2, bad)).toThrow(/expected 4 bytes, got 16/);
  });

  it('another nfgen_family is a DecodeError', () => {
    expect(() => decodeConntrackFlow(7, entry())).toThrow(/nfgen_family 7/);
  });

  it('round-trips: the delete of a decoded flow names its original tuple and id', () => {
    const f = decodeConntrackFlow(2, entry());
    const want = Buffer.concat([nest(1, v4Tuple('192.0.2.1', '198.51.100.10', 17, 40000, 53)), nla(12, be32(0x1234))]);
    expect(encodeConntrackDelete(f).attrs.toString('hex')).toBe(want.toString('hex'));
  });
});
