/**
 * THE parser of addresses and networks (every layer uses it: Kubernetes objects through
 * parse-ip.ts, the configuration, ipset members, iptables rules), and of interface names. Each parser accepts exactly what the kernel tools accept without
 * reinterpretation and returns the one canonical spelling (inet_ntop), or undefined.
 */
import { isIPv6 } from 'node:net';
import { Address4, Address6 } from 'ip-address';
import { addressToBytes, bytesToAddress, canonicalAddress, parseIPv4 } from './ipvs';
import { AF_INET6 } from '../uapi/inet';
import { IpFamily, toAddressFamily } from './ip-family';

/** A parsed IP address: its family and canonical (inet_ntop) spelling. */
export interface ParsedAddress {
  readonly family: IpFamily;
  /** inet_ntop spelling */
  readonly text: string;
}

/** A parsed CIDR: family, network address, prefix length and address width. */
export interface ParsedCidr {
  readonly family: IpFamily;
  /** the network address, host bits cleared, inet_ntop spelling */
  readonly address: string;
  readonly prefix: number;
  /** 32 or 128 */
  readonly bits: number;
}

/**
 * An IPv4 dotted quad (no leading zeros) or an IPv6 address without zone, canonical; undefined
 * for anything else (names, zones, whitespace, non-strings).
 */
export function parseAddress(text: unknown): ParsedAddress | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > 45) return undefined;
  if (parseIPv4(text) >= 0) return { family: 'ipv4', text };
  if (text.includes('%') || !isIPv6(text)) return undefined;
  return { family: 'ipv6', text: canonicalAddress(text) };
}

/** "ADDR/PREFIX" (prefix 0..bits, decimal, no sign) or a bare address (a host route). */
export function parseCidr(text: unknown): ParsedCidr | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  const addr = parseAddress(slash < 0 ? text : text.slice(0, slash));
  if (!addr) return undefined;
  const bits = addr.family === 'ipv4' ? 32 : 128;
  let prefix = bits;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > bits) return undefined;
    prefix = Number(p);
  }
  return { family: addr.family, address: maskAddress(addr, prefix), prefix, bits };
}

/**
 * A CIDR as kube-proxy reads Service fields (k8s.io/utils/net ParseCIDRSloppy, Go 1.16's
 * net.ParseCIDR): IPv4 octets, the IPv4 tail of an IPv6 address and the prefix may carry
 * leading zeros, read as decimal ("010.0.0.0/08" is 10.0.0.0/8); the /prefix is required.
 * Blanks are not trimmed here (kube-proxy trims loadBalancerSourceRanges itself).
 */
export function parseCidrSloppy(text: unknown): ParsedCidr | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const prefix = text.slice(slash + 1);
  if (!/^\d+$/.test(prefix)) return undefined;
  const addr = decimalIPv4Octets(text.slice(0, slash));
  if (addr === undefined) return undefined;
  return parseCidr(`${addr}/${prefix.replace(/^0+(?=\d)/, '')}`);
}

/** `text` with the leading zeros of its (trailing) dotted-quad octets dropped; undefined when an octet is over 255. */
function decimalIPv4Octets(text: string): string | undefined {
  const m = /^(.*?)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (!m) return text;
  // only a whole address or the tail after an IPv6 colon is a dotted quad
  if (m[1] !== '' && !m[1]!.endsWith(':')) return text;
  const octets = m.slice(2, 6).map(Number);
  if (octets.some((o) => o > 255)) return undefined;
  return m[1] + octets.join('.');
}

/**
 * Why `text` (an address) cannot be a Service's externalIP or load-balancer IP: the
 * unspecified and broadcast addresses, loopback, link-local, multicast and IPv4-mapped IPv6
 * addresses are never a VIP (bound on kube-ipvs0, they would capture the node's own traffic).
 * undefined for any other address, and for what is not an address.
 */
export function specialAddressProblem(text: string): string | undefined {
  const a = parseAddress(text);
  if (!a) return undefined;
  if (a.family === 'ipv4') {
    if (a.text === '0.0.0.0') return 'the unspecified address';
    if (a.text === '255.255.255.255') return 'the broadcast address';
    const first = Number(a.text.split('.')[0]);
    if (first === 127) return 'a loopback address (127.0.0.0/8)';
    if (a.text.startsWith('169.254.')) return 'a link-local address (169.254.0.0/16)';
    if (first >= 224 && first <= 239) return 'a multicast address (224.0.0.0/4)';
    return undefined;
  }
  const bytes = addressToBytes(AF_INET6, a.text);
  if (bytes.every((b) => b === 0)) return 'the unspecified address';
  if (bytes.subarray(0, 15).every((b) => b === 0) && bytes[15] === 1) return 'the loopback address';
  if (bytes[0] === 0xfe && (bytes[1]! & 0xc0) === 0x80) return 'a link-local address (fe80::/10)';
  if (bytes[0] === 0xff) return 'a multicast address (ff00::/8)';
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff)
    return 'an IPv4-mapped IPv6 address (::ffff:0:0/96)';
  return undefined;
}

/** `address/prefix`, always with the prefix (iptables spelling). */
export function formatCidr(c: ParsedCidr): string {
  return `${c.address}/${c.prefix}`;
}

function maskAddress(addr: ParsedAddress, prefix: number): string {
  const af = toAddressFamily(addr.family);
  const bytes = addressToBytes(af, addr.text);
  if (prefix === bytes.length * 8) return addr.text;
  for (let i = 0; i < bytes.length; i++) {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    bytes[i]! &= (0xff << (8 - keep)) & 0xff;
  }
  return bytesToAddress(af, bytes);
}

/** Linux IFNAMSIZ is 16 including the NUL. */
export const IFNAME_MAX_LENGTH = 15;

/**
 * Why `name` is not a valid Linux interface name (net/core/dev.c dev_valid_name: 1..15 bytes,
 * not "." or "..", no '/', ':' or whitespace), or undefined when it is one. Control and
 * non-ASCII characters and iptables' own syntax characters (quotes, '!', '+') are refused too:
 * the name is written into rule text, where '+' would be a wildcard.
 */
export function interfaceNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.length === 0) return 'empty';
  if (name.length > IFNAME_MAX_LENGTH) return `longer than ${IFNAME_MAX_LENGTH} characters`;
  if (name === '.' || name === '..') return `'${name}' is not a name`;
  if (!/^[\x21-\x7e]+$/.test(name)) return 'holds whitespace, control or non-ASCII characters';
  const bad = /[/:'"!+\\`$]/.exec(name);
  if (bad) return `holds '${bad[0]}'`;
  return undefined;
}

/**
 * A membership test for many CIDRs, parsed once (ip-address): does `ip` lie inside one of
 * them? Addresses of the other family never match; CIDRs that do not parse are ignored (the
 * configuration and object layers validate them first).
 */
export function cidrMatcher(cidrs: readonly string[]): (ip: string) => boolean {
  if (cidrs.length === 0) return () => false;
  const v4: Address4[] = [];
  const v6: Address6[] = [];
  for (const text of cidrs) {
    const c = parseCidr(text);
    if (!c) continue;
    if (c.family === 'ipv4') v4.push(new Address4(formatCidr(c)));
    else v6.push(new Address6(formatCidr(c)));
  }
  return (ip: string): boolean => {
    const a = parseAddress(ip);
    if (!a) return false;
    if (a.family === 'ipv4') {
      if (v4.length === 0) return false;
      const x = new Address4(a.text);
      return v4.some((n) => x.isInSubnet(n));
    }
    if (v6.length === 0) return false;
    const x = new Address6(a.text);
    return v6.some((n) => x.isInSubnet(n));
  };
}

// one matcher per CIDR array: the configuration and the plan contexts hand the same array
// until it changes
const sharedMatchers = new WeakMap<readonly string[], (ip: string) => boolean>();

/** cidrMatcher(cidrs), made once per array (the same array object: the same matcher). */
export function cachedCidrMatcher(cidrs: readonly string[]): (ip: string) => boolean {
  let m = sharedMatchers.get(cidrs);
  if (!m) sharedMatchers.set(cidrs, (m = cidrMatcher(cidrs)));
  return m;
}

/** Is `ip` inside `cidr`? (One-off form of cidrMatcher.) */
export function cidrContains(cidr: string, ip: string): boolean {
  return cidrMatcher([cidr])(ip);
}
