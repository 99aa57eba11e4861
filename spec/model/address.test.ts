// Addresses: RFC 5737 / RFC 3849 style ranges; fd00::/8 for IPv6.
import { formatCidr, interfaceNameProblem, parseAddress, parseCidr, parseCidrSloppy } from '../../lib/model/address';

describe('parseAddress / parseCidr', () => {
  it.each([
    ['10.96.0.1', { family: 'ipv4', text: '10.96.0.1' }],
    ['2001:DB8:0:0::A', { family: 'ipv6', text: '2001:db8::a' }],
    ['::ffff:10.1.2.3', { family: 'ipv6', text: '::ffff:10.1.2.3' }],
  ])('%s is an address, printed as inet_ntop does', (text, want) => {
    expect(parseAddress(text)).toEqual(want);
  });

  it.each([
    '',
    '010.1.1.1',
    '10.1.1',
    '10.1.1.256',
    ' 10.1.1.1',
    '10.1.1.1\n',
    'fe80::1%eth0',
    'localhost',
    42,
    undefined,
  ])('%p is not an address', (text) => {
    expect(parseAddress(text)).toBeUndefined();
  });

  it.each([
    ['10.244.3.7/24', '10.244.3.0/24', 24],
    ['10.0.0.1', '10.0.0.1/32', 32],
    ['0.0.0.0/0', '0.0.0.0/0', 0],
    ['FD00:0:0:1::5/64', 'fd00:0:0:1::/64', 64],
    ['fd00::1/128', 'fd00::1/128', 128],
  ])('%s is the network %s', (text, want, prefix) => {
    const c = parseCidr(text)!;
    expect(formatCidr(c)).toBe(want);
    expect(c.prefix).toBe(prefix);
  });

  it.each(['10.0.0.0/33', '10.0.0.0/', '10.0.0.0/+8', '10.0.0.0/08', 'fd00::/129', '10.0.0.0/8/8', '10.0.0.0/8 '])(
    '%p is not a CIDR',
    (text) => {
      expect(parseCidr(text)).toBeUndefined();
    },
  );
});

describe('parseCidrSloppy (netutils.ParseCIDRSloppy: leading zeros read as decimal)', () => {
  it.each([
    ['010.0.0.0/8', '10.0.0.0/8'],
    ['0010.000.001.009/08', '10.0.0.0/8'],
    ['192.168.001.010/032', '192.168.1.10/32'],
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['::ffff:010.000.000.000/104', '::ffff:10.0.0.0/104'],
    ['FD00::1/064', 'fd00::/64'],
  ])('%s is the network %s', (text, want) => {
    expect(formatCidr(parseCidrSloppy(text)!)).toBe(want);
  });

  it.each([
    '010.0.0.0',
    '256.0.0.0/8',
    '0256.0.0.0/8',
    '10.0.0/8',
    '10.0.0.0/33',
    '10.0.0.0/+8',
    '10.0.0.0/8 ',
    ' 10.0.0.0/8',
    '0x0a.0.0.0/8',
    'fd00::1%eth0/64',
    42,
  ])('%p is not a CIDR', (text) => {
    expect(parseCidrSloppy(text)).toBeUndefined();
  });
});

describe('interfaceNameProblem (Linux dev_valid_name, and nothing iptables would read as syntax)', () => {
  it.each(['eth0', 'cbr0', 'veth1234abcd', 'a', 'abcdefghijklmno', 'br-1.100', 'ens3@x'])('%s is a name', (n) => {
    expect(interfaceNameProblem(n)).toBeUndefined();
  });

  it.each([
    ['', 'empty'],
    ['abcdefghijklmnop', 'longer than 15 characters'],
    ['.', "'.' is not a name"],
    ['..', "'..' is not a name"],
    ['eth 0', 'whitespace'],
    ['eth0\n', 'whitespace'],
    ['eth\u00e9', 'non-ASCII'],
    ['br/0', "holds '/'"],
    ['eth0:1', "holds ':'"],
    ['veth+', "holds '+'"],
    ['!eth0', "holds '!'"],
    ['eth"0', `holds '"'`],
  ])('%p is refused: %s', (n, why) => {
    expect(interfaceNameProblem(n)).toContain(why);
  });
});
