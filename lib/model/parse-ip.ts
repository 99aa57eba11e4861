/**
 * Addresses and CIDRs from Kubernetes objects, validated strictly and spelled canonically
 * (inet_ntop), and CIDR membership through ip-address. Pure.
 *
 * Strict means: no surrounding blanks, no IPv6 zone ("%eth0"), no IPv4 leading zeros
 * ("010.0.0.1" is refused: Go's legacy parser read it as decimal, glibc as octal), prefix a
 * decimal 0..32 / 0..128.
 */
import { isIP } from 'node:net';
import { Address4, Address6 } from 'ip-address';
import { canonicalAddress } from './ipvs';
import { IpFamily } from './ip-family';

export type Parsed<T> = { readonly ok: true; readonly value: T; readonly family: IpFamily } | { readonly ok: false; readonly reason: string };

/** One address: canonical spelling and family, or why it is not one. */
export function parseIp(text: unknown): Parsed<string> {
  if (typeof text !== 'string') return { ok: false, reason: 'not a string' };
  if (text.includes('%')) return { ok: false, reason: 'an IPv6 zone is not allowed' };
  const v = isIP(text);
  if (v === 0) return { ok: false, reason: 'not an IP address' };
  return { ok: true, value: canonicalAddress(text), family: v === 4 ? 'ipv4' : 'ipv6' };
}

/**
 * A CIDR "addr/prefix": canonical with host bits cleared ("10.1.2.3/8" -> "10.0.0.0/8"),
 * "/0" kept as it is. A bare address is refused (Kubernetes CIDR fields need the prefix).
 */
export function parseCidr(text: unknown): Parsed<string> {
  if (typeof text !== 'string') return { ok: false, reason: 'not a string' };
  const slash = text.indexOf('/');
  if (slash < 0) return { ok: false, reason: 'not a CIDR (no /prefix)' };
  const ip = parseIp(text.slice(0, slash));
  if (!ip.ok) return { ok: false, reason: `not a CIDR (${ip.reason})` };
  const prefixText = text.slice(slash + 1);
  const max = ip.family === 'ipv4' ? 32 : 128;
  if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText) || Number(prefixText) > max) {
    return { ok: false, reason: `not a CIDR (prefix must be 0..${max})` };
  }
  const prefix = Number(prefixText);
  const net = ip.family === 'ipv4' ? new Address4(`${ip.value}/${prefix}`) : new Address6(`${ip.value}/${prefix}`);
  return { ok: true, value: `${canonicalAddress(net.startAddress().correctForm())}/${prefix}`, family: ip.family };
}

/**
 * A membership test for many CIDRs, parsed once: does `ip` (canonical) lie inside one of
 * them? Addresses of the other family never match. CIDRs that do not parse are ignored (the
 * configuration layer validates them).
 */
export function cidrMatcher(cidrs: readonly string[]): (ip: string) => boolean {
  if (cidrs.length === 0) return () => false;
  const v4: Address4[] = [];
  const v6: Address6[] = [];
  for (const c of cidrs) {
    const p = parseCidr(c);
    if (!p.ok) continue;
    if (p.family === 'ipv4') v4.push(new Address4(p.value));
    else v6.push(new Address6(p.value));
  }
  return (ip: string): boolean => {
    const v = isIP(ip);
    if (v === 4) {
      if (v4.length === 0) return false;
      const a = new Address4(ip);
      return v4.some((n) => a.isInSubnet(n));
    }
    if (v === 6) {
      if (v6.length === 0) return false;
      const a = new Address6(ip);
      return v6.some((n) => a.isInSubnet(n));
    }
    return false;
  };
}

/** Is `ip` inside `cidr`? (One-off form of cidrMatcher.) */
export function cidrContains(cidr: string, ip: string): boolean {
  return cidrMatcher([cidr])(ip);
}
