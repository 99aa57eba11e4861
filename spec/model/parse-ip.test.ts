// Expected spellings written by hand (inet_ntop / RFC 5952).
import { parseCidrField, parseIpField } from '../../lib/model/parse-ip';
import { cidrContains, cidrMatcher } from '../../lib/model/address';

describe('parseIpField', () => {
  it.each([
    { name: 'IPv4', text: '192.0.2.1', want: { ok: true, value: '192.0.2.1', family: 'ipv4' } },
    {
      name: 'IPv6 upper case, uncompressed',
      text: '2001:DB8:0:0:0:0:0:1',
      want: { ok: true, value: '2001:db8::1', family: 'ipv6' },
    },
    {
      name: 'IPv4-mapped IPv6',
      text: '::FFFF:192.0.2.1',
      want: { ok: true, value: '::ffff:192.0.2.1', family: 'ipv6' },
    },
    { name: 'leading zero', text: '192.0.2.01', want: { ok: false, reason: 'not an IP address' } },
    { name: 'blank around', text: ' 192.0.2.1', want: { ok: false, reason: 'not an IP address' } },
    { name: 'zone', text: 'fe80::1%eth0', want: { ok: false, reason: 'an IPv6 zone is not allowed' } },
    { name: 'not a string', text: 42, want: { ok: false, reason: 'not a string' } },
  ])('$name', ({ text, want }) => {
    expect(parseIpField(text)).toEqual(want);
  });
});

describe('parseCidrField', () => {
  it.each([
    {
      name: 'host bits cleared',
      text: '198.51.100.7/24',
      want: { ok: true, value: '198.51.100.0/24', family: 'ipv4' },
    },
    { name: '/0 kept', text: '0.0.0.0/0', want: { ok: true, value: '0.0.0.0/0', family: 'ipv4' } },
    { name: 'host route', text: '192.0.2.1/32', want: { ok: true, value: '192.0.2.1/32', family: 'ipv4' } },
    { name: 'IPv6', text: '2001:DB8:1:2::5/48', want: { ok: true, value: '2001:db8:1::/48', family: 'ipv6' } },
    { name: 'no prefix', text: '192.0.2.0', want: { ok: false, reason: 'not a CIDR (no /prefix)' } },
    { name: 'prefix too long', text: '192.0.2.0/33', want: { ok: false, reason: 'not a CIDR (prefix must be 0..32)' } },
    {
      name: 'prefix with a leading zero',
      text: '192.0.2.0/024',
      want: { ok: false, reason: 'not a CIDR (prefix must be 0..32)' },
    },
    { name: 'bad address', text: '192.0.2/24', want: { ok: false, reason: 'not a CIDR (not an IP address)' } },
  ])('$name', ({ text, want }) => {
    expect(parseCidrField(text)).toEqual(want);
  });
});

describe('cidrMatcher', () => {
  it('matches addresses of either family against their own family only', () => {
    const m = cidrMatcher(['10.245.0.0/16', '2001:db8:245::/48']);
    expect(['10.245.3.4', '10.244.3.4', '2001:db8:245::9', '2001:db8:244::9', '::ffff:10.245.3.4'].map(m)).toEqual([
      true,
      false,
      true,
      false,
      false,
    ]);
    expect(cidrMatcher([])('10.0.0.1')).toBe(false);
    expect(cidrContains('0.0.0.0/0', '203.0.113.1')).toBe(true);
    expect(cidrContains('0.0.0.0/0', '2001:db8::1')).toBe(false);
  });
});
