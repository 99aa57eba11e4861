/**
 * The IP families kube-ipvs proxies, chosen as kube-proxy chooses them (cmd/kube-proxy/app/
 * server.go newProxyServer, detectNodeIPs; server_linux.go platformCheckSupported):
 *  - both families whenever the node supports both (the dual-stack MetaProxier), whatever
 *    clusterCIDR says; clusterCIDR only feeds local-traffic detection, per family;
 *  - else the one family supported, which must be the primary family (else kube-proxy refuses
 *    to start: "no support for primary IP family");
 *  - the primary family: bindAddress's when it is an IP other than 0.0.0.0 / ::, else the
 *    family of the Node's first InternalIP/ExternalIP, else IPv4 (kube-proxy then assumes the
 *    node IPs are 127.0.0.1 and ::1).
 */
import { isIP } from 'node:net';
import { KubeIpvsError } from '../errors';
import { FamilyCheck, FamilySupport } from '../kernel/family-support';
import { IpFamily, familyOfAddress } from '../model/ip-family';

/** Neither family usable, or the primary family unsupported: the proxy cannot start. */
export class FamilySupportError extends KubeIpvsError {
  readonly code = 'KIPVS_FAMILY_UNSUPPORTED' as const;
}

/** Where the primary family came from: bindAddress, the Node's first IP, or the IPv4 default. */
export type PrimarySource = 'bindAddress' | 'node' | 'default';

/** The primary IP family and where it came from. */
export interface PrimaryFamily {
  readonly family: IpFamily;
  readonly source: PrimarySource;
}

const isUnspecified = (a: string): boolean => a === '0.0.0.0' || /^[0:]+$/.test(a) || a === '::';

/** kube-proxy's detectNodeIPs, the family half: bindAddress, else the Node's first IP, else IPv4. */
export function primaryFamily(bindAddress: string, nodeIPs: readonly string[]): PrimaryFamily {
  if (isIP(bindAddress) !== 0 && !isUnspecified(bindAddress))
    return { family: familyOfAddress(bindAddress), source: 'bindAddress' };
  const first = nodeIPs[0];
  if (first !== undefined) return { family: familyOfAddress(first), source: 'node' };
  return { family: 'ipv4', source: 'default' };
}

/**
 * kube-proxy's node IPs (detectNodeIPs, the IP half; GetNodeHostIPs): the Node's first address
 * and the first of the other family, with bindAddress (an IP, not 0.0.0.0 / ::) in place of
 * its family's. At most one per family, IPv4 first. They are what the LoadBalancer source
 * range check looks for and what `nodePortAddresses: [primary]` serves on.
 */
export function kubeProxyNodeIPs(bindAddress: string, nodeIPs: readonly string[]): string[] {
  const byFamily = new Map<IpFamily, string>();
  for (const a of nodeIPs) {
    const f = familyOfAddress(a);
    if (!byFamily.has(f)) byFamily.set(f, a);
  }
  if (isIP(bindAddress) !== 0 && !isUnspecified(bindAddress)) byFamily.set(familyOfAddress(bindAddress), bindAddress);
  return (['ipv4', 'ipv6'] as const).flatMap((f) => (byFamily.has(f) ? [byFamily.get(f)!] : []));
}

/** The families the proxy runs, and the kernel check of each family. */
export interface FamilyChoice {
  /** the families proxied, IPv4 first */
  readonly families: readonly IpFamily[];
  readonly dualStack: boolean;
  readonly checks: Readonly<Record<IpFamily, FamilyCheck>>;
}

/** Asks the node which families it supports and chooses (see the file comment). */
export async function chooseFamilies(support: FamilySupport): Promise<FamilyChoice> {
  const checks = { ipv4: await support.check('ipv4'), ipv6: await support.check('ipv6') };
  const families = (['ipv4', 'ipv6'] as const).filter((f) => checks[f].supported);
  if (families.length === 0) {
    throw new FamilySupportError(
      `no IP family can be proxied: IPv4: ${checks.ipv4.reason}; IPv6: ${checks.ipv6.reason}`,
    );
  }
  return { families, dualStack: families.length === 2, checks };
}

/** Throws FamilySupportError when the node proxies one family and the primary is the other. */
export function checkPrimaryFamily(choice: FamilyChoice, primary: PrimaryFamily): void {
  if (choice.families.includes(primary.family)) return;
  const other = primary.family === 'ipv4' ? 'ipv6' : 'ipv4';
  throw new FamilySupportError(
    `no support for primary IP family ${primary.family} (from ${primarySourceText(primary)}): ${choice.checks[primary.family].reason}; ` +
      `this node proxies ${other} only`,
  );
}

/** Says where the primary family came from, for log lines. */
export function primarySourceText(p: PrimaryFamily): string {
  return p.source === 'bindAddress'
    ? 'bindAddress'
    : p.source === 'node'
      ? "the Node's addresses"
      : "no bindAddress and no Node addresses yet: kube-proxy's default";
}
