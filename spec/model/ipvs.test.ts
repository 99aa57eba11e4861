import { isIPv4 } from 'node:net';
import { bytesToAddress, canonicalAddress, formatIPv4, parseIPv4, virtualServerKey } from '../../lib/model/ipvs';

describe('parseIPv4', () => {
  it.each([
    ['0.0.0.0', 0],
    ['10.96.0.10', 0x0a60000a],
    ['255.255.255.255', 0xffffffff],
    ['192.0.2.1', 0xc0000201],
  ])('%s', (text, value) => {
    expect(parseIPv4(text)).toBe(value);
  });

  // the same verdict as Node's own (inet_pton-like) check, on valid and invalid spellings
  it.each([
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '1.2.3.256',
    '01.2.3.4',
    '1.2.3.04',
    '1..2.3',
    '.1.2.3',
    '1.2.3.',
    '',
    'a.b.c.d',
    '1.2.3.4 ',
    ' 1.2.3.4',
    '1.2.3.-4',
    '::1',
    '1.2.3.4/32',
    '0.0.0.00',
    '100.200.250.255',
  ])('%j agrees with net.isIPv4', (text) => {
    expect(parseIPv4(text) >= 0).toBe(isIPv4(text));
  });
});

describe('addresses and keys', () => {
  it('prints IPv6 as inet_ntop does (longest zero run, embedded IPv4)', () => {
    const b = (hex: string) => Buffer.from(hex, 'hex');
    expect(bytesToAddress(10, b('20010db8000000000001000000000001'))).toBe('2001:db8::1:0:0:1');
    expect(bytesToAddress(10, b('00000000000000000000ffff01020304'))).toBe('::ffff:1.2.3.4');
    expect(bytesToAddress(10, b('00010000000100000001000000010000'))).toBe('1:0:1:0:1:0:1:0');
    expect(canonicalAddress('2001:0DB8:0:0::0A')).toBe('2001:db8::a');
  });

  it('canonicalAddress: IPv4 as given (only canonical dotted decimal is an address); other text throws', () => {
    expect(canonicalAddress('10.96.0.1')).toBe('10.96.0.1');
    expect(canonicalAddress('::ffff:1.2.3.4')).toBe('::ffff:1.2.3.4');
    for (const bad of ['010.96.0.1', '10.96.0.256', '10.96.0', ' 10.96.0.1', ''])
      expect(() => canonicalAddress(bad)).toThrow();
  });

  it('keys virtual servers the same whatever the address spelling', () => {
    expect(
      virtualServerKey({ af: 10, protocol: 17, address: canonicalAddress('fd00:0::a'), port: 53, fwmark: 0 }),
    ).toBe('UDP/[fd00::a]:53');
    expect(virtualServerKey({ af: 2, protocol: 0, address: '', port: 0, fwmark: 7 })).toBe('FWM/4/7');
  });
});

describe('formatIPv4', () => {
  it('spells a host-order u32 as inet_ntoa does, the inverse of parseIPv4', () => {
    expect([0, 0xffffffff, 0x0a000001, 0xc0a80a0b].map(formatIPv4)).toEqual([
      '0.0.0.0',
      '255.255.255.255',
      '10.0.0.1',
      '192.168.10.11',
    ]);
    for (const a of ['1.2.3.4', '100.64.0.255', '172.31.250.9']) expect(formatIPv4(parseIPv4(a))).toBe(a);
  });
});
