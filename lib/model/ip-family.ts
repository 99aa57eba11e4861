/**
 * The project's one IP family vocabulary. Everything above the byte codecs speaks `IpFamily`;
 * the kernel's AF_INET / AF_INET6 numbers appear only where bytes are made or read (netlink
 * codecs, the rtnetlink codec) and in `VirtualServerId.af` / `RealServerId.af` (model/ipvs.ts:
 * the IPVS wire value, kept as the kernel numbers it). Every family decision about an address
 * goes through here: familyOfAddress for text not yet checked, familyOfValidAddress for an
 * address (or CIDR) the project already holds as valid.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { AF_INET, AF_INET6 } from '../uapi/inet';

/** IP family of one proxier instance (kube-proxy runs one per family in dual stack). */
export type IpFamily = 'ipv4' | 'ipv6';

/** The kernel's number of an IP family (IPVS wire values, rtnetlink). */
export type AddressFamily = typeof AF_INET | typeof AF_INET6;

/** The family of a textual address; TypeError when it is not one. */
export function familyOfAddress(address: string): IpFamily {
  if (isIPv4(address)) return 'ipv4';
  if (isIPv6(address)) return 'ipv6';
  throw new TypeError(`not an IP address: '${address}'`);
}

/**
 * The family of an address or CIDR already known valid (a model value, a kernel's answer, a
 * checked field): an IPv6 address always holds a colon, an IPv4 one never. Cheap (the hot
 * paths: every endpoint); text not yet checked goes through familyOfAddress.
 */
export function familyOfValidAddress(address: string): IpFamily {
  return address.includes(':') ? 'ipv6' : 'ipv4';
}

/** The kernel's number of a textual address's family; TypeError when it is not an address. */
export function addressFamilyOf(address: string): AddressFamily {
  return toAddressFamily(familyOfAddress(address));
}

/** The kernel's number for a family: AF_INET (2) or AF_INET6 (10). */
export function toAddressFamily(family: IpFamily): AddressFamily {
  return family === 'ipv6' ? AF_INET6 : AF_INET;
}

/** The family of a kernel AF_* number: AF_INET6 is ipv6, anything else ipv4 (callers asked for one of the two). */
export function fromAddressFamily(af: number): IpFamily {
  return af === AF_INET6 ? 'ipv6' : 'ipv4';
}

/** 4 or 6, for text that spells the family as a version ("IPv4", the fake link's call log). */
export function ipVersion(family: IpFamily): 4 | 6 {
  return family === 'ipv6' ? 6 : 4;
}

/** The bits of an address of the family (a host's prefix length): 32 or 128. */
export function addressBits(family: IpFamily): 32 | 128 {
  return family === 'ipv6' ? 128 : 32;
}

/** A valid address and a port as text: "10.0.0.1:80", "[fd00::1]:80". */
export function addressPort(address: string, port: number): string {
  return familyOfValidAddress(address) === 'ipv6' ? `[${address}]:${port}` : `${address}:${port}`;
}
