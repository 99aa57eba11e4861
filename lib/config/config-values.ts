// Parsers for single configuration values, shared by the config file decoder and the flags.
// `field` is the config path (`ipvs.excludeCIDRs[1]`) or the flag (`--ipvs-exclude-cidrs`);
// every failure is a ConfigError naming it and the value.
import { ConfigError } from '../errors';
import {
  IPVS_SCHEDULERS,
  SCHEDULER_FLAG_NAMES,
  SchedulerFlag,
  canonicalAddress,
  isSchedulerFlag,
  sortSchedulerFlags,
} from '../model/ipvs';
import { addressBits, addressPort, familyOfValidAddress } from '../model/ip-family';
import { formatCidr, parseAddress, parseCidr as parseNet } from '../model/address';
import { parseDurationMs } from './duration';
import { DetectLocalMode } from './proxy-config';

/** Schedulers kube-ipvs accepts ('' means rr): the kernel's. */
export const KNOWN_SCHEDULERS: readonly string[] = IPVS_SCHEDULERS;

/** The detectLocalMode values (KubeProxyConfiguration's LocalMode). */
export const DETECT_LOCAL_MODES: readonly DetectLocalMode[] = [
  'ClusterCIDR',
  'NodeCIDR',
  'BridgeInterface',
  'InterfaceNamePrefix',
];

/** The only nodePortAddresses keyword: the node's primary IPs. */
export const NODE_PORT_ADDRESSES_PRIMARY = 'primary';

const q = (v: string): string => JSON.stringify(v);

const isIP = (text: string): boolean => parseAddress(text) !== undefined;

/**
 * A configuration CIDR (or a ConfigError naming `field`) in canonical form with the host bits
 * cleared, as Go's net.ParseCIDR returns the network: `10.1.2.3/8` -> `10.0.0.0/8`,
 * `FD00:0::1/64` -> `fd00::/64` (model/address.ts parses).
 */
export function configCidr(text: string, field: string): string {
  const slash = text.indexOf('/');
  if (slash < 0 || !isIP(text.slice(0, slash)) || !/^[0-9]{1,3}$/.test(text.slice(slash + 1))) {
    throw new ConfigError(
      field,
      `${q(text)} is not a valid CIDR (address/prefix, e.g. 10.244.0.0/16 or fd00:10:244::/56)`,
    );
  }
  const c = parseNet(text);
  if (!c) {
    const bits = addressBits(familyOfValidAddress(text.slice(0, slash)));
    throw new ConfigError(
      field,
      `${q(text)} is not a valid CIDR: prefix length ${Number(text.slice(slash + 1))} > ${bits}`,
    );
  }
  return formatCidr(c);
}

/** Canonical IP address. */
export function parseIP(text: string, field: string): string {
  const a = parseAddress(text);
  if (!a) throw new ConfigError(field, `${q(text)} is not a valid IP address`);
  return a.text;
}

/**
 * A bind address as kube-proxy takes it: `IP:port`, `[IPv6]:port`, or a bare IP that gets
 * `defaultPort` appended (proxyutil.AppendPortIfNeeded). Returned canonical: `0.0.0.0:10256`,
 * `[::]:10256`.
 */
export function parseBindAddress(text: string, field: string, defaultPort: number): string {
  const bad = (why: string): ConfigError =>
    new ConfigError(field, `${q(text)} is not a valid IP:port bind address: ${why}`);
  if (isIP(text)) return addressPort(canonicalAddress(text), defaultPort);
  const m = /^(?:\[([^\]]*)\]|([^:[\]]*)):([0-9]+)$/.exec(text);
  if (!m) throw bad('expected IP:port or [IPv6]:port');
  const host = m[1] ?? m[2] ?? '';
  if (!isIP(host)) throw bad(`${q(host)} is not an IP address`);
  if (m[2] !== undefined && familyOfValidAddress(host) === 'ipv6') throw bad('an IPv6 address needs brackets');
  const port = Number(m[3]);
  if (port < 1 || port > 65535) throw bad(`port ${m[3]} is outside 1-65535`);
  return addressPort(canonicalAddress(host), port);
}

/** clusterCIDR: one CIDR or a dual-stack pair (one per family), comma-separated. */
export function parseClusterCidrs(list: readonly string[], field: string): string[] {
  const cidrs = list
    .map((c) => c.trim())
    .filter((c) => c !== '')
    .map((c) => configCidr(c, field));
  if (cidrs.length > 2 || (cidrs.length === 2 && familyOfValidAddress(cidrs[0]!) === familyOfValidAddress(cidrs[1]!))) {
    throw new ConfigError(
      field,
      `${q(list.join(','))}: only one CIDR or a dual-stack pair (one IPv4 and one IPv6, e.g. 10.244.0.0/16,fd00:10:244::/56) is allowed`,
    );
  }
  return cidrs;
}

/**
 * nodePortAddresses: CIDRs, or the single keyword `primary`. Checked in order as kube-proxy
 * does, so the first error names the same index (`primary` anywhere but alone is refused).
 */
export function parseNodePortAddresses(list: readonly string[], field: string): string[] {
  list.forEach((c, i) => {
    if (c === NODE_PORT_ADDRESSES_PRIMARY) {
      if (list.length !== 1)
        throw new ConfigError(`${field}[${i}]`, `${q(list.join(','))}: can't use both 'primary' and CIDRs`);
    } else {
      configCidr(c, `${field}[${i}]`);
    }
  });
  return list.length === 1 && list[0] === NODE_PORT_ADDRESSES_PRIMARY
    ? [NODE_PORT_ADDRESSES_PRIMARY]
    : list.map((c, i) => configCidr(c, `${field}[${i}]`));
}

/** Checks ipvs.scheduler: '' (rr) or one of KNOWN_SCHEDULERS; else a ConfigError. */
export function parseScheduler(text: string, field: string): string {
  if (text !== '' && !KNOWN_SCHEDULERS.includes(text)) {
    throw new ConfigError(
      field,
      `unknown IPVS scheduler ${q(text)} (known: ${KNOWN_SCHEDULERS.join(' ')}; '' means rr)`,
    );
  }
  return text;
}

/**
 * Checks ipvs.schedulerFlags (kube-ipvs extension): each one of ipvsadm's scheduler flag names
 * (sh-fallback, sh-port, mh-fallback, mh-port); the flags in SCHEDULER_FLAGS's order, each once.
 */
export function parseSchedulerFlags(list: readonly string[], field: string): SchedulerFlag[] {
  list.forEach((f, i) => {
    if (!isSchedulerFlag(f))
      throw new ConfigError(
        `${field}[${i}]`,
        `unknown scheduler flag ${q(f)} (known: ${SCHEDULER_FLAG_NAMES.join(' ')})`,
      );
  });
  return sortSchedulerFlags(list.filter(isSchedulerFlag));
}

/** Reads detectLocalMode: '' means ClusterCIDR; an unknown mode is a ConfigError. */
export function parseDetectLocalMode(text: string, field: string): DetectLocalMode {
  if (text === '') return 'ClusterCIDR';
  if (!(DETECT_LOCAL_MODES as readonly string[]).includes(text)) {
    throw new ConfigError(field, `${q(text)} is not a detect-local mode (one of ${DETECT_LOCAL_MODES.join(', ')})`);
  }
  return text as DetectLocalMode;
}

/** Checks iptables.masqueradeBit: an integer in 0..31, else a ConfigError. */
export function parseMasqueradeBit(value: number, field: string): number {
  if (!Number.isInteger(value) || value < 0 || value > 31) {
    throw new ConfigError(field, `${value} is outside the range 0-31`);
  }
  return value;
}

/** A Go duration in milliseconds; negative or malformed is a ConfigError. */
export function parseDuration(text: string, field: string): number {
  try {
    return parseDurationMs(text);
  } catch (e) {
    throw new ConfigError(field, `${(e as Error).message} (a duration such as 30s, 1m30s, 500ms, 0)`);
  }
}

/** A Go duration as whole seconds, truncated like kube-proxy's `int(d.Seconds())`. */
export function parseDurationSec(text: string, field: string): number {
  return Math.trunc(parseDuration(text, field) / 1000);
}

/** The modes kube-proxy accepts on Linux ('' is its default, iptables). */
export const PROXY_MODES: readonly string[] = ['', 'iptables', 'ipvs', 'nftables'];

/**
 * `mode` / --proxy-mode: refused as kube-proxy refuses it on Linux (`kernelspace` is
 * Windows-only). kube-ipvs runs ipvs whatever the valid value says (the caller warns).
 */
export function parseProxyMode(text: string, field: string): string {
  if (!PROXY_MODES.includes(text)) {
    throw new ConfigError(
      field,
      `${q(text)}: must be iptables, ipvs, nftables or blank (blank means the best-available proxy [currently iptables])`,
    );
  }
  return text;
}

/** conntrack.maxPerCore / conntrack.min (int32 >= 0). */
export function parseConntrackCount(value: number, field: string): number {
  if (!Number.isInteger(value) || value < 0 || value > 0x7fffffff)
    throw new ConfigError(field, `${value}: must be greater than or equal to 0`);
  return value;
}

/** oomScoreAdj: the kernel's range. */
export function parseOomScoreAdj(value: number, field: string): number {
  if (!Number.isInteger(value) || value < -1000 || value > 1000)
    throw new ConfigError(field, `${value}: must be within the range [-1000, 1000]`);
  return value;
}

/**
 * portRange (userspace-era, unused): kube-proxy still validates it as apimachinery's
 * PortRange: '' or `N`, `N-M`, `N+OFFSET`, ports 0-65535.
 */
export function parsePortRange(text: string, field: string): string {
  const t = text.trim();
  if (t === '') return text;
  const m = /^([0-9]+)(?:([-+])([0-9]+))?$/.exec(t);
  const low = m ? Number(m[1]) : NaN;
  const high = !m ? NaN : m[2] === undefined ? low : m[2] === '-' ? Number(m[3]) : low + Number(m[3]);
  if (!m || low > 65535 || high > 65535 || high < low) {
    throw new ConfigError(field, `${q(text)}: must be a valid port range (e.g. 300-2000)`);
  }
  return text;
}

/**
 * showHiddenMetricsForVersion: '' or `MAJOR.MINOR` (kube-proxy also requires the previous
 * minor of its own version; kube-ipvs has no Kubernetes version to compare with).
 */
export function parseShowHiddenMetricsForVersion(text: string, field: string): string {
  if (text !== '' && !/^v?[0-9]+\.[0-9]+$/.test(text)) {
    throw new ConfigError(field, `${q(text)}: must be in the format <major>.<minor>, e.g. 1.16`);
  }
  return text;
}
