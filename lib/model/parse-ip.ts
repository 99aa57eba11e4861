/**
 * Addresses and CIDRs from Kubernetes objects, validated strictly and spelled canonically
 * (inet_ntop), and CIDR membership through ip-address. Pure.
 *
 * Strict means: no surrounding blanks, no IPv6 zone ("%eth0"), no IPv4 leading zeros
 * ("010.0.0.1" is refused: Go's legacy parser read it as decimal, glibc as octal), prefix a
 * decimal 0..32 / 0..128. One exception: loadBalancerSourceRanges are read as kube-proxy reads
 * them (parseCidrFieldSloppy), since reading fewer than it does would leave a load balancer closed
 * that kube-proxy opens (and, before ranges failed closed, open one it closes).
 */
import { IpFamily } from './ip-family';
import { formatCidr, parseAddress, parseCidr as parseNet, parseCidrSloppy as parseNetSloppy } from './address';

/** A parsed field: its value and family, or why it could not be parsed. */
export type Parsed<T> =
  { readonly ok: true; readonly value: T; readonly family: IpFamily } | { readonly ok: false; readonly reason: string };

/** One address: canonical spelling and family, or why it is not one (model/address.ts parses). */
export function parseIpField(text: unknown): Parsed<string> {
  if (typeof text !== 'string') return { ok: false, reason: 'not a string' };
  if (text.includes('%')) return { ok: false, reason: 'an IPv6 zone is not allowed' };
  const a = parseAddress(text);
  if (!a) return { ok: false, reason: 'not an IP address' };
  return { ok: true, value: a.text, family: a.family };
}

/**
 * A CIDR "addr/prefix": canonical with host bits cleared ("10.1.2.3/8" -> "10.0.0.0/8"),
 * "/0" kept as it is. A bare address is refused (Kubernetes CIDR fields need the prefix).
 */
export function parseCidrField(text: unknown): Parsed<string> {
  if (typeof text !== 'string') return { ok: false, reason: 'not a string' };
  const slash = text.indexOf('/');
  if (slash < 0) return { ok: false, reason: 'not a CIDR (no /prefix)' };
  const ip = parseIpField(text.slice(0, slash));
  if (!ip.ok) return { ok: false, reason: `not a CIDR (${ip.reason})` };
  const c = parseNet(text);
  if (!c) return { ok: false, reason: `not a CIDR (prefix must be 0..${ip.family === 'ipv4' ? 32 : 128})` };
  return { ok: true, value: formatCidr(c), family: c.family };
}

/**
 * A CIDR as kube-proxy reads loadBalancerSourceRanges (netutils.ParseCIDRSloppy): leading
 * zeros read as decimal ("010.0.0.0/8" is 10.0.0.0/8), canonical as parseCidrField's.
 */
export function parseCidrFieldSloppy(text: unknown): Parsed<string> {
  if (typeof text !== 'string') return { ok: false, reason: 'not a string' };
  if (!text.includes('/')) return { ok: false, reason: 'not a CIDR (no /prefix)' };
  const c = parseNetSloppy(text);
  if (!c) return { ok: false, reason: 'not a CIDR' };
  return { ok: true, value: formatCidr(c), family: c.family };
}
