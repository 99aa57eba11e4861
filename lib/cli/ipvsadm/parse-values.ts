// The values of ipvsadm's options, read as ipvsadm 1.31 reads them: host[:port]
// (parse_service), timeouts, fwmarks and scheduler flags. Host names are never looked up
// here: the parse reads them from HostLookups, filled before it starts (parse-args.ts).

import { isIPv6 } from 'node:net';
import { AddressFamily, canonicalAddress, formatIPv4 } from '../../model/ipvs';
import { AF_INET, AF_INET6 } from '../../uapi/inet';
import { IP_VS_SVC_F } from '../../uapi/ip_vs';
import { DEF_PERSISTENT_TIMEOUT, DEF_SCHED, fail } from './command';
import { inetAton, stringToNumber, strtolWhole } from './inet';
import { Resolver } from './resolve-names';

/** The longest persistence timeout ipvsadm takes (-p), in seconds: 31 days. */
export const MAX_TIMEOUT = 86400 * 31;
/** INT_MAX: the largest weight or threshold ipvsadm takes. */
export const INT_MAX = 2147483647;

/** Host names looked up (gethostbyname, IPv4): name -> address, undefined when unknown. */
export type HostLookups = Map<string, string | undefined>;

/** A host name the parse needs; parse-args.ts looks up every one before the parse. */
export function lookupHost(hosts: HostLookups, name: string): string | undefined {
  if (!hosts.has(name)) throw new Error(`ipvsadm parse: host name '${name}' was not looked up before the parse`);
  return hosts.get(name);
}

/**
 * host[:port] split as parse_service() does: an IPv6 literal (canonical), or the IPv4 part,
 * an address in any inet_aton form or a name (`host`); undefined when it cannot be one.
 */
export type ServiceWords =
  | { readonly af: typeof AF_INET6; readonly address: string; readonly portText: string | undefined }
  | { readonly af: typeof AF_INET; readonly host: string; readonly portText: string | undefined };

/** Splits host[:port] as parse_service() does; undefined when it cannot be a service. */
export function splitService(buf: string): ServiceWords | undefined {
  if (/^[0-9]*$/.test(buf)) return undefined; // str_is_digit, also true for ""
  let host = buf;
  let portText: string | undefined;
  if (host.startsWith('[')) {
    const close = host.indexOf(']');
    if (close < 0) return undefined;
    if (host[close + 1] !== ':') return undefined;
    portText = host.slice(close + 2);
    host = host.slice(1, close);
  }
  // an IPv6 address has two colons at least: "10.0.0.1:80" skips the IPv6 test
  if (host.indexOf(':') !== host.lastIndexOf(':') && isIPv6(host) && !host.includes('%')) {
    return { af: AF_INET6, address: canonicalAddress(host), portText };
  }
  // not IPv6: the port is looked for again (strrchr) in what is left, so "[1.2.3.4]:80"
  // loses its port, as in ipvsadm
  const colon = host.lastIndexOf(':');
  return {
    af: AF_INET,
    host: colon >= 0 ? host.slice(0, colon) : host,
    portText: colon >= 0 ? host.slice(colon + 1) : undefined,
  };
}

/** The host name an IPv4 host part needs looked up; undefined for an inet_aton address. */
export function hostName(words: ServiceWords): string | undefined {
  return words.af === AF_INET && inetAton(words.host) === undefined ? words.host : undefined;
}

/** A parsed host[:port]: its family, address, and port (`port` false when none was given). */
export type ParsedAddr = { port: boolean; af: AddressFamily; address: string; portValue: number };

/** ipvsadm's parse_service(): host[:port], [v6]:port, with IPv4 in any inet_aton form or a name. */
export function parseService(
  buf: string,
  protocol: number,
  resolver: Resolver,
  hosts: HostLookups,
): ParsedAddr | undefined {
  const words = splitService(buf);
  if (!words) return undefined;
  let address: string;
  if (words.af === AF_INET6) address = words.address;
  else {
    const v = inetAton(words.host);
    if (v !== undefined) address = formatIPv4(v);
    else {
      const r = lookupHost(hosts, words.host);
      if (r === undefined) return undefined;
      address = r;
    }
  }
  let portValue = 0;
  if (words.portText !== undefined) {
    const n = stringToNumber(words.portText, 0, 65535);
    if (n !== undefined) portValue = n;
    else {
      const s = resolver.serviceToPort(words.portText, protocol);
      if (s === undefined) return undefined;
      portValue = s;
    }
  }
  return { port: words.portText !== undefined, af: words.af, address, portValue };
}

/** Reads a -p timeout as ipvsadm does: 360 s when none is given; fails outside [min, max]. */
export function parseTimeout(buf: string | undefined, min: number, max: number): number {
  if (buf === undefined) return DEF_PERSISTENT_TIMEOUT;
  const n = stringToNumber(buf, min, max);
  if (n === undefined) fail(`invalid timeout value \`${buf}' specified`);
  return n;
}

/** Reads a -f fwmark as ipvsadm does: an integer in 1..2^32-1, or fails. */
export function parseFwmark(buf: string): number {
  const n = strtolWhole(buf);
  if (n === undefined || n <= 0 || n > 0xffffffff) fail(`invalid fwmark value \`${buf}' specified`);
  return n;
}

/** Reads -b sched-flags into IP_VS_SVC_F_SCHED* bits; sh-* and mh-* need that scheduler. */
export function parseSchedFlags(sched: string, arg: string): number {
  const s = sched || DEF_SCHED;
  let flags = 0;
  const tokens = arg.split(',').filter((t) => t !== ''); // strtok skips empty fields
  for (const flag of tokens) {
    switch (flag) {
      case 'flag-1':
        flags |= IP_VS_SVC_F.SCHED1;
        break;
      case 'flag-2':
        flags |= IP_VS_SVC_F.SCHED2;
        break;
      case 'flag-3':
        flags |= IP_VS_SVC_F.SCHED3;
        break;
      case 'sh-fallback':
      case 'sh-port':
        flags |= flag === 'sh-port' ? IP_VS_SVC_F.SCHED2 : IP_VS_SVC_F.SCHED1;
        if (s !== 'sh') fail(`incompatible scheduler flag \`${flag}'`);
        break;
      case 'mh-fallback':
      case 'mh-port':
        flags |= flag === 'mh-port' ? IP_VS_SVC_F.SCHED2 : IP_VS_SVC_F.SCHED1;
        if (s !== 'mh') fail(`incompatible scheduler flag \`${flag}'`);
        break;
      default:
        fail(`invalid scheduler flag \`${flag}'`);
    }
  }
  return flags;
}
