import {
  decodeAddress,
  decodeLink,
  encodeDelAddr,
  encodeNewAddr,
  encodeNewDummy,
  RTM,
} from '../../lib/netlink/rtnl-codec';

// Golden bytes written by hand from struct ifinfomsg / ifaddrmsg and the attribute layout
// (if_link.h, if_addr.h), not produced by the encoder under test.
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

describe('encodeNewDummy', () => {
  it('is ifinfomsg + IFLA_IFNAME + IFLA_LINKINFO{IFLA_INFO_KIND "dummy"}, CREATE|EXCL', () => {
    const req = encodeNewDummy('kube-ipvs0');
    expect(req.type).toBe(RTM.NEWLINK);
    expect(req.flags).toBe(0x400 | 0x200);
    expect(req.payload.toString('hex')).toBe(
      hex(`
        00 00 0000 00000000 00000000 00000000
        0f00 0300 6b7562652d6970767330 00 00
        1000 1200 0a00 0100 64756d6d7900 0000
      `).toString('hex'),
    );
  });
});

describe('address requests', () => {
  it('IPv4 /32 with IFA_LOCAL and IFA_ADDRESS', () => {
    const req = encodeNewAddr(3, '10.96.0.1');
    expect(req.type).toBe(RTM.NEWADDR);
    expect(req.payload.toString('hex')).toBe(
      hex('02 20 00 00 03000000  0800 0200 0a600001  0800 0100 0a600001').toString('hex'),
    );
    expect(req.object).toBe('10.96.0.1/32 on ifindex 3');
  });
  it('IPv6 /128', () => {
    const req = encodeDelAddr(7, 'fd00::a');
    expect(req.type).toBe(RTM.DELADDR);
    expect(req.payload.toString('hex')).toBe(
      hex(
        `0a 80 00 00 07000000 1400 0200 ${'fd00' + '0'.repeat(26) + '0a'} 1400 0100 ${'fd00' + '0'.repeat(26) + '0a'}`,
      ).toString('hex'),
    );
  });
});

describe('decodeLink', () => {
  it('reads index, name, IFLA_INFO_KIND and IFF_UP', () => {
    const payload = hex(`
      00 00 0100 05000000 43100100 00000000
      0a00 0300 7665746830 00 0000
      1000 1200 0900 0100 7665746800 000000
    `);
    expect(decodeLink(payload)).toEqual({ index: 5, name: 'veth0', kind: 'veth', up: true });
  });
  it('kind is empty without IFLA_LINKINFO (lo)', () => {
    const payload = hex('00 00 0403 01000000 49000100 00000000 0700 0300 6c6f00 00');
    expect(decodeLink(payload)).toEqual({ index: 1, name: 'lo', kind: '', up: true });
  });
});

describe('decodeAddress', () => {
  it('prefers IFA_LOCAL over IFA_ADDRESS (peer address on a point-to-point link)', () => {
    const payload = hex('02 18 80 00 02000000 0800 0100 0a000002 0800 0200 0a000001');
    expect(decodeAddress(payload)).toEqual({ ifindex: 2, family: 'ipv4', address: '10.0.0.1', prefixLen: 24 });
  });
  it('IPv6 in inet_ntop form', () => {
    const payload = hex(`0a 40 80 fd 04000000 1400 0100 fe80${'0'.repeat(24)}0001`);
    expect(decodeAddress(payload)).toEqual({ ifindex: 4, family: 'ipv6', address: 'fe80::1', prefixLen: 64 });
  });
  it('a truncated address is a DecodeError', () => {
    const payload = hex('02 18 80 00 02000000 0700 0200 0a0000 00');
    expect(() => decodeAddress(payload)).toThrow(expect.objectContaining({ code: 'KIPVS_DECODE' }));
  });
});
