import { selectNodePortAddresses } from '../../../lib/kernel/link/node-addresses';
import { LinkAddress } from '../../../lib/model/link';

// Addresses: RFC 5737 (192.0.2.0/24, 198.51.100.0/24) and RFC 3849 (2001:db8::/32).
const a = (ifindex: number, address: string, prefixLen: number): LinkAddress => ({
  ifindex,
  family: address.includes(':') ? 'ipv6' : 'ipv4',
  address,
  prefixLen,
});
const local = [
  a(1, '127.0.0.1', 8),
  a(1, '::1', 128),
  a(2, '192.0.2.10', 24),
  a(2, '2001:db8::10', 64),
  a(2, 'fe80::1', 64),
  a(3, '198.51.100.7', 24),
];

describe('selectNodePortAddresses', () => {
  it.each<{ name: string; npa: string[]; primary?: string[]; extra?: LinkAddress[]; want: string[] }>([
    // kube-proxy IPVS mode (K8S pkg/proxy/ipvs/util netlink_linux.go isValidForSet): loopback
    // and IPv6 link-local addresses are never node IPs
    {
      name: 'empty: every local address but loopback and IPv6 link-local',
      npa: [],
      want: ['192.0.2.10', '198.51.100.7', '2001:db8::10'],
    },
    {
      name: 'empty, with 127.0.0.53 and fe80::/10 upper bound',
      npa: [],
      extra: [a(1, '127.0.0.53', 8), a(2, 'febf::1', 64)],
      want: ['192.0.2.10', '198.51.100.7', '2001:db8::10'],
    },
    { name: 'one CIDR', npa: ['192.0.2.0/24'], want: ['192.0.2.10'] },
    {
      name: 'CIDRs of both families',
      npa: ['198.51.100.0/24', '2001:db8::/64'],
      want: ['198.51.100.7', '2001:db8::10'],
    },
    { name: '0.0.0.0/0 excludes loopback', npa: ['0.0.0.0/0'], want: ['192.0.2.10', '198.51.100.7'] },
    {
      name: 'primary',
      npa: ['primary'],
      primary: ['198.51.100.7', '2001:db8::10'],
      want: ['198.51.100.7', '2001:db8::10'],
    },
    { name: 'primary that is not local is dropped', npa: ['primary'], primary: ['203.0.113.1'], want: [] },
    {
      name: 'primary + CIDR',
      npa: ['primary', '192.0.2.0/24'],
      primary: ['198.51.100.7'],
      want: ['192.0.2.10', '198.51.100.7'],
    },
    { name: 'a CIDR matching nothing', npa: ['203.0.113.0/24'], want: [] },
  ])('$name', ({ npa, primary, extra = [], want }) => {
    expect(selectNodePortAddresses([...local, ...extra], npa, primary)).toEqual(want);
  });
});
