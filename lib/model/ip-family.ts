/**
 * The project's one IP family type. Everything above the byte codecs speaks `IpFamily`; the
 * kernel's AF_INET / AF_INET6 numbers appear only where bytes are made or read (netlink codecs,
 * the rtnetlink codec) and in `VirtualServerId.af` / `RealServerId.af` (model/ipvs.ts: the
 * IPVS wire value, kept as the kernel numbers it).
 */
import { isIPv4, isIPv6 } from 'node:net';
import { AF_INET, AF_INET6 } from '../uapi/inet';
import type { AddressFamily } from './ipvs';

/** IP family of one proxier instance (kube-proxy runs one per family in dual stack). */
export type IpFamily = 'ipv4' | 'ipv6';

/** The family of a textual address; TypeError when it is not one. */
export function familyOfAddress(address: string): IpFamily {
  if (isIPv4(address)) return 'ipv4';
  if (isIPv6(address)) return 'ipv6';
  throw new TypeError(`not an IP address: '${address}'`);
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
