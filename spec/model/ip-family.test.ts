// The kernel numbers are written out (AF_INET 2, AF_INET6 10: include/linux/socket.h), not
// taken from the uapi table the code under test uses.
import { familyOfAddress, fromAddressFamily, ipVersion, toAddressFamily } from '../../lib/model/ip-family';

describe('IpFamily helpers', () => {
  it('familyOfAddress tells the family of an address and refuses what is not one', () => {
    expect(familyOfAddress('192.0.2.1')).toBe('ipv4');
    expect(familyOfAddress('2001:db8::1')).toBe('ipv6');
    expect(familyOfAddress('::ffff:192.0.2.1')).toBe('ipv6');
    expect(() => familyOfAddress('192.0.2.256')).toThrow("not an IP address: '192.0.2.256'");
  });

  it('maps to and from the kernel AF numbers', () => {
    expect(toAddressFamily('ipv4')).toBe(2);
    expect(toAddressFamily('ipv6')).toBe(10);
    expect(fromAddressFamily(2)).toBe('ipv4');
    expect(fromAddressFamily(10)).toBe('ipv6');
  });

  it('ipVersion spells the family as 4 or 6', () => {
    expect(ipVersion('ipv4')).toBe(4);
    expect(ipVersion('ipv6')).toBe(6);
  });
});
