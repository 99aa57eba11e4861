import {
  decodeDest,
  decodeInfo,
  decodeConfig,
  decodeService,
  encodeIpvsRequest,
  IpvsRequest,
} from '../../lib/netlink/ipvs-codec';
import { encodeGenlMessage } from '../../lib/netlink/nlmsg';
import { DecodeError } from '../../lib/errors';
import { be16, be32, cstr, ipv4, ipv4in16, nest, nla, plainNest, u16, u32, u64, u8 } from '../../testkit/nl-builder';

// Attribute numbers below are written as literals from include/uapi/linux/ip_vs.h on
// purpose, so a wrong constant in lib/uapi cannot hide in both sides.
// Test addresses: 192.0.2.0/24, 198.51.100.0/24 (RFC 5737), 2001:db8::/32 (RFC 3849).

const tcpId = { af: 2 as const, protocol: 6, address: '192.0.2.10', port: 80, fwmark: 0 };
const v6Id = { af: 10 as const, protocol: 17, address: '2001:db8::a', port: 53, fwmark: 0 };
const fwmId = { af: 2 as const, protocol: 0, address: '', port: 0, fwmark: 7 };

const v6bytes = Buffer.from('20010db8000000000000000000000000a'.slice(0, 32).padEnd(32, '0'), 'hex');
v6bytes.writeUInt16BE(0x000a, 14);

const svcIdAttrs = nla(1, u16(2)); /* AF */
const tcpIdAttrs = Buffer.concat([svcIdAttrs, nla(2, u16(6)), nla(3, ipv4('192.0.2.10')), nla(4, be16(80))]);
const fullTail = (sched: string, flags: number, timeout: number, netmask: Buffer) =>
  Buffer.concat([
    nla(6, cstr(sched)),
    nla(7, Buffer.concat([u32(flags), u32(0xffffffff)])),
    nla(8, u32(timeout)),
    nla(9, netmask),
  ]);

interface Case {
  name: string;
  req: IpvsRequest;
  cmd: number;
  dump: boolean;
  attrs: Buffer;
}

const cases: Case[] = [
  {
    name: 'NEW_SERVICE TCP IPv4',
    req: { kind: 'newService', vs: { ...tcpId, scheduler: 'rr' } },
    cmd: 1,
    dump: false,
    attrs: nest(1, tcpIdAttrs, fullTail('rr', 0, 0, be32(0xffffffff))),
  },
  {
    name: 'SET_SERVICE persistent with netmask 255.255.255.0 and sh flags',
    req: {
      kind: 'setService',
      vs: { ...tcpId, scheduler: 'sh', flags: 0x1 | 0x8 | 0x10, timeout: 10800, netmask: 0xffffff00 },
    },
    cmd: 2,
    dump: false,
    attrs: nest(1, tcpIdAttrs, fullTail('sh', 0x19, 10800, Buffer.from([0xff, 0xff, 0xff, 0x00]))),
  },
  {
    name: 'NEW_SERVICE IPv6 UDP, prefix length in host order, PE name',
    req: { kind: 'newService', vs: { ...v6Id, scheduler: 'wlc', flags: 1, timeout: 60, netmask: 64, peName: 'sip' } },
    cmd: 1,
    dump: false,
    attrs: nest(
      1,
      nla(1, u16(10)),
      nla(2, u16(17)),
      nla(3, v6bytes),
      nla(4, be16(53)),
      nla(6, cstr('wlc')),
      nla(11, cstr('sip')),
      nla(7, Buffer.concat([u32(1), u32(0xffffffff)])),
      nla(8, u32(60)),
      nla(9, u32(64)),
    ),
  },
  {
    name: 'NEW_SERVICE fwmark: no protocol/address/port',
    req: { kind: 'newService', vs: { ...fwmId, scheduler: 'mh', flags: 0x10 } },
    cmd: 1,
    dump: false,
    attrs: nest(1, nla(1, u16(2)), nla(5, u32(7)), fullTail('mh', 0x10, 0, be32(0xffffffff))),
  },
  {
    name: 'HASHED is never sent',
    req: { kind: 'newService', vs: { ...tcpId, scheduler: 'rr', flags: 0x2 | 0x4 } },
    cmd: 1,
    dump: false,
    attrs: nest(1, tcpIdAttrs, fullTail('rr', 0x4, 0, be32(0xffffffff))),
  },
  { name: 'DEL_SERVICE', req: { kind: 'delService', vs: tcpId }, cmd: 3, dump: false, attrs: nest(1, tcpIdAttrs) },
  {
    name: 'GET_SERVICE single',
    req: { kind: 'getService', vs: tcpId },
    cmd: 4,
    dump: false,
    attrs: nest(1, tcpIdAttrs),
  },
  { name: 'GET_SERVICE dump', req: { kind: 'dumpServices' }, cmd: 4, dump: true, attrs: Buffer.alloc(0) },
  {
    name: 'NEW_DEST masq',
    req: {
      kind: 'newDest',
      vs: tcpId,
      rs: { af: 2, address: '198.51.100.7', port: 8080, fwdMethod: 0, weight: 3, uThreshold: 100, lThreshold: 10 },
    },
    cmd: 5,
    dump: false,
    attrs: Buffer.concat([
      nest(1, tcpIdAttrs),
      nest(
        2,
        nla(1, ipv4('198.51.100.7')),
        nla(2, be16(8080)),
        nla(3, u32(0)),
        nla(4, u32(3)),
        nla(5, u32(100)),
        nla(6, u32(10)),
      ),
    ]),
  },
  {
    name: 'SET_DEST route weight 0',
    req: { kind: 'setDest', vs: tcpId, rs: { af: 2, address: '198.51.100.7', port: 8080, fwdMethod: 3, weight: 0 } },
    cmd: 6,
    dump: false,
    attrs: Buffer.concat([
      nest(1, tcpIdAttrs),
      nest(
        2,
        nla(1, ipv4('198.51.100.7')),
        nla(2, be16(8080)),
        nla(3, u32(3)),
        nla(4, u32(0)),
        nla(5, u32(0)),
        nla(6, u32(0)),
      ),
    ]),
  },
  {
    name: 'NEW_DEST IPv6 tunnel (GUE) under an IPv4 service: ADDR_FAMILY and tunnel attributes',
    req: {
      kind: 'newDest',
      vs: tcpId,
      rs: { af: 10, address: '2001:db8::a', port: 80, fwdMethod: 2, weight: 1, tunType: 1, tunPort: 6080, tunFlags: 1 },
    },
    cmd: 5,
    dump: false,
    attrs: Buffer.concat([
      nest(1, tcpIdAttrs),
      nest(
        2,
        nla(1, v6bytes),
        nla(2, be16(80)),
        nla(3, u32(2)),
        nla(4, u32(1)),
        nla(5, u32(0)),
        nla(6, u32(0)),
        nla(11, u16(10)),
        nla(13, u8(1)),
        nla(14, be16(6080)),
        nla(15, u16(1)),
      ),
    ]),
  },
  {
    name: 'DEL_DEST',
    req: { kind: 'delDest', vs: tcpId, rs: { af: 2, address: '198.51.100.7', port: 8080 } },
    cmd: 7,
    dump: false,
    attrs: Buffer.concat([nest(1, tcpIdAttrs), nest(2, nla(1, ipv4('198.51.100.7')), nla(2, be16(8080)))]),
  },
  {
    name: 'GET_DEST dump',
    req: { kind: 'dumpDests', vs: fwmId },
    cmd: 8,
    dump: true,
    attrs: nest(1, nla(1, u16(2)), nla(5, u32(7))),
  },
  { name: 'GET_INFO', req: { kind: 'getInfo' }, cmd: 15, dump: false, attrs: Buffer.alloc(0) },
  { name: 'GET_CONFIG', req: { kind: 'getConfig' }, cmd: 13, dump: false, attrs: Buffer.alloc(0) },
  {
    name: 'SET_CONFIG',
    req: { kind: 'setConfig', timeouts: { tcp: 900, tcpFin: 0, udp: 60 } },
    cmd: 12,
    dump: false,
    attrs: Buffer.concat([nla(4, u32(900)), nla(5, u32(0)), nla(6, u32(60))]),
  },
  { name: 'ZERO all', req: { kind: 'zero' }, cmd: 16, dump: false, attrs: Buffer.alloc(0) },
  { name: 'ZERO one', req: { kind: 'zero', vs: tcpId }, cmd: 16, dump: false, attrs: nest(1, tcpIdAttrs) },
  { name: 'FLUSH', req: { kind: 'flush' }, cmd: 17, dump: false, attrs: Buffer.alloc(0) },
];

describe('encodeIpvsRequest', () => {
  it.each(cases)('$name', ({ req, cmd, dump, attrs }) => {
    const enc = encodeIpvsRequest(req);
    expect(enc.cmd).toBe(cmd);
    expect(enc.dump).toBe(dump);
    expect(enc.attrs.toString('hex')).toBe(attrs.toString('hex'));
  });

  it('covers every request kind', () => {
    const kinds = new Set(cases.map((c) => c.req.kind));
    expect([...kinds].sort()).toEqual([
      'delDest',
      'delService',
      'dumpDests',
      'dumpServices',
      'flush',
      'getConfig',
      'getInfo',
      'getService',
      'newDest',
      'newService',
      'setConfig',
      'setDest',
      'setService',
      'zero',
    ]);
  });

  it('frames a whole message: nlmsghdr, genlmsghdr, attributes (annotated golden bytes)', () => {
    const enc = encodeIpvsRequest({ kind: 'delService', vs: tcpId });
    const msg = encodeGenlMessage({ familyId: 0x20, flags: 0x5, seq: 0x01020304, cmd: enc.cmd, version: 1 }, enc.attrs);
    const golden =
      '38000000' + // nlmsg_len 56
      '2000' + // nlmsg_type: family id 0x20
      '0500' + // NLM_F_REQUEST | NLM_F_ACK
      '04030201' + // seq
      '00000000' + // pid
      '03' +
      '01' +
      '0000' + // DEL_SERVICE, version 1, reserved
      '2400' +
      '0180' + // nest IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED, len 36
      '0600' +
      '0100' +
      '0200' +
      '0000' + // AF_INET + pad
      '0600' +
      '0200' +
      '0600' +
      '0000' + // PROTOCOL tcp + pad
      '0800' +
      '0300' +
      'c000020a' + // ADDR 192.0.2.10
      '0600' +
      '0400' +
      '0050' +
      '0000'; // PORT 80 big-endian + pad
    expect(msg.toString('hex')).toBe(golden);
  });

  it('rejects an address of the wrong family', () => {
    expect(() => encodeIpvsRequest({ kind: 'delService', vs: { ...tcpId, address: '2001:db8::1' } })).toThrow(
      /not an IPv4 address/,
    );
  });
});

const stats32 = plainNest(
  10,
  nla(1, u32(5)),
  nla(2, u32(6)),
  nla(3, u32(7)),
  nla(4, u64(8n)),
  nla(5, u64(9n)),
  nla(6, u32(1)),
  nla(7, u32(2)),
  nla(8, u32(3)),
  nla(9, u32(4)),
  nla(10, u32(5)),
);
const stats64 = plainNest(
  12,
  nla(1, u64(5_000_000_000n)),
  nla(2, u64(6n)),
  nla(3, u64(7n)),
  nla(4, u64(123_456_789_012n)),
  nla(5, u64(9n)),
  nla(6, u64(1n)),
  nla(7, u64(2n)),
  nla(8, u64(3n)),
  nla(9, u64(4n)),
  nla(10, u64(5n)),
);

describe('decodeService', () => {
  it('decodes a kernel reply: 16-byte address, HASHED stripped, STATS64 preferred, unknown attribute ignored', () => {
    const nested = Buffer.concat([
      nla(1, u16(2)),
      nla(2, u16(6)),
      nla(3, ipv4in16('192.0.2.10')),
      nla(4, be16(443)),
      nla(6, cstr('rr')),
      nla(7, Buffer.concat([u32(0x1 | 0x2), u32(0xffffffff)])),
      nla(8, u32(10800)),
      nla(9, Buffer.from([0xff, 0xff, 0xff, 0x00])),
      stats32,
      nla(99, u32(42)),
      stats64,
    ]);
    const vs = decodeService(nested);
    expect({ ...vs }).toEqual({
      af: 2,
      protocol: 6,
      address: '192.0.2.10',
      port: 443,
      fwmark: 0,
      scheduler: 'rr',
      flags: 1,
      timeout: 10800,
      netmask: 0xffffff00,
      peName: '',
    });
    // counters are decoded on first read, through a getter
    expect(vs.stats).toEqual({
      conns: 5_000_000_000n,
      inpkts: 6n,
      outpkts: 7n,
      inbytes: 123_456_789_012n,
      outbytes: 9n,
      cps: 1n,
      inpps: 2n,
      outpps: 3n,
      inbps: 4n,
      outbps: 5n,
    });
    expect(vs.stats).toBe(vs.stats);
  });

  it('falls back to 32-bit STATS when STATS64 is absent', () => {
    const nested = Buffer.concat([nla(1, u16(2)), nla(5, u32(9)), nla(6, cstr('wlc')), stats32]);
    const vs = decodeService(nested);
    expect(vs.fwmark).toBe(9);
    expect(vs.address).toBe('');
    expect(vs.stats).toEqual({
      conns: 5n,
      inpkts: 6n,
      outpkts: 7n,
      inbytes: 8n,
      outbytes: 9n,
      cps: 1n,
      inpps: 2n,
      outpps: 3n,
      inbps: 4n,
      outbps: 5n,
    });
  });

  it('decodes IPv6 with a host-order prefix length and a PE name', () => {
    const nested = Buffer.concat([
      nla(1, u16(10)),
      nla(2, u16(132)),
      nla(3, v6bytes),
      nla(4, be16(5060)),
      nla(6, cstr('sh')),
      nla(9, u32(96)),
      nla(11, cstr('sip')),
    ]);
    const vs = decodeService(nested);
    expect([vs.address, vs.protocol, vs.port, vs.netmask, vs.peName]).toEqual(['2001:db8::a', 132, 5060, 96, 'sip']);
  });

  it('names the attribute path of a malformed reply', () => {
    const bad = Buffer.concat([nla(1, u16(2)), nla(2, u16(6)), nla(3, Buffer.from([1, 2])), nla(4, be16(1))]);
    expect(() => decodeService(bad)).toThrow(DecodeError);
    expect(() => decodeService(bad)).toThrow(/IPVS_CMD_ATTR_SERVICE>ADDR/);
    const truncated = nla(1, u16(2)).subarray(0, 6);
    expect(() => decodeService(Buffer.concat([nla(2, u16(6)), Buffer.from([0x20, 0, 1, 0])]))).toThrow(/overruns/);
    expect(() => decodeService(truncated)).toThrow(DecodeError);
    expect(() => decodeService(nla(2, u16(6)))).toThrow(/missing attribute/);
  });
});

describe('decodeDest', () => {
  it('decodes every field, ADDR_FAMILY overriding the service family', () => {
    const nested = Buffer.concat([
      nla(1, v6bytes),
      nla(2, be16(8443)),
      nla(3, u32(2 | 0x100 /* kernel may return more conn flags */)),
      nla(4, u32(7)),
      nla(5, u32(1000)),
      nla(6, u32(100)),
      nla(7, u32(11)),
      nla(8, u32(12)),
      nla(9, u32(13)),
      nla(11, u16(10)),
      nla(13, u8(2)),
      nla(14, be16(0)),
      nla(15, u16(2)),
      stats64,
    ]);
    const rs = decodeDest(nested, 2);
    expect({ ...rs, stats: undefined }).toEqual({
      af: 10,
      address: '2001:db8::a',
      port: 8443,
      fwdMethod: 2,
      weight: 7,
      uThreshold: 1000,
      lThreshold: 100,
      activeConns: 11,
      inactConns: 12,
      persistConns: 13,
      tunType: 2,
      tunPort: 0,
      tunFlags: 2,
      stats: undefined,
    });
    expect(rs.stats?.conns).toBe(5_000_000_000n);
  });

  it('uses the service family when ADDR_FAMILY is absent (kernels < 3.18)', () => {
    const rs = decodeDest(Buffer.concat([nla(1, ipv4in16('198.51.100.1')), nla(2, be16(80)), nla(4, u32(1))]), 2);
    expect([rs.af, rs.address, rs.port, rs.weight, rs.fwdMethod]).toEqual([2, '198.51.100.1', 80, 1, 0]);
    expect(rs.stats).toBeUndefined();
  });
});

describe('decodeInfo / decodeConfig', () => {
  it('reads GET_INFO and GET_CONFIG replies', () => {
    expect(decodeInfo(Buffer.concat([nla(1, u32(0x010201)), nla(2, u32(4096))]))).toEqual({
      version: 0x010201,
      connTabSize: 4096,
    });
    expect(decodeConfig(Buffer.concat([nla(4, u32(900)), nla(5, u32(120)), nla(6, u32(300))]))).toEqual({
      tcp: 900,
      tcpFin: 120,
      udp: 300,
    });
    expect(() => decodeInfo(nla(1, u32(1)))).toThrow(/CONN_TAB_SIZE/);
  });
});

describe('decoded objects and the reply bytes', () => {
  // A cache of observed state must not keep every receive datagram alive: decoded objects
  // hold copies, never views, of the reply (proved by overwriting the reply after decoding).
  it('keep no view of the datagram: overwriting it after decoding changes nothing, counters included', () => {
    const svc = Buffer.concat([
      nla(1, u16(2)),
      nla(2, u16(6)),
      nla(3, ipv4in16('192.0.2.10')),
      nla(4, be16(443)),
      nla(6, cstr('rr')),
      stats64,
    ]);
    const dst = Buffer.concat([nla(1, ipv4in16('198.51.100.1')), nla(2, be16(80)), nla(4, u32(1)), stats32]);
    const datagram = Buffer.concat([Buffer.alloc(64), svc, dst, Buffer.alloc(64)]);
    const vs = decodeService(datagram.subarray(64, 64 + svc.length));
    const rs = decodeDest(datagram.subarray(64 + svc.length, 64 + svc.length + dst.length), 2);
    datagram.fill(0xff);
    expect([vs.address, vs.port, vs.scheduler]).toEqual(['192.0.2.10', 443, 'rr']);
    expect(vs.stats?.conns).toBe(5_000_000_000n);
    expect(vs.stats?.inbytes).toBe(123_456_789_012n);
    expect([rs.address, rs.port]).toEqual(['198.51.100.1', 80]);
    expect(rs.stats?.conns).toBe(5n);
    expect(rs.stats?.outbps).toBe(5n);
  });
});
