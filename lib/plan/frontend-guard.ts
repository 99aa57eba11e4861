/**
 * Whether the node gives a planned frontend at all, beside other Services' claims
 * (claim-rank.ts): a VIP inside ipvs.excludeCIDRs is not kube-ipvs's (keepalived's, an
 * admin's), and neither is a virtual server found in the kernel that kube-ipvs did not make
 * (lib/proxier/ownership.ts). Such a frontend is withheld whole: no virtual server, kube-ipvs0
 * address, ipset member or out-filter entry names it, and the Service is told why (a NodePort
 * on a node address inside excludeCIDRs is the node's configuration: withheld silently).
 * kube-proxy only spares excludeCIDRs when cleaning up; a tenant's externalIP there would take
 * a foreign virtual server over. Pure.
 */
import { PROTOCOL_NAMES } from '../model/ipvs';
import { cachedCidrMatcher, cidrContains } from '../model/address';
import { Refusal, ServicePortKey, parseServicePortKey } from '../model/service';
import { DesiredFrontend } from './service-plan';

/** The Event reason of a VIP inside ipvs.excludeCIDRs. */
export const VIP_IN_EXCLUDED_CIDR = 'VIPInExcludedCIDR';
/** The Event reason of a frontend at the ip:port of a virtual server kube-ipvs does not own. */
export const FOREIGN_VIRTUAL_SERVER = 'ForeignVirtualServer';

/** What withholds frontends: the configuration's excludeCIDRs and what the kernel showed. */
export interface FrontendFacts {
  /** ipvs.excludeCIDRs, both families */
  readonly excludeCIDRs: readonly string[];
  /** why a virtual server key in the kernel is not kube-ipvs's; undefined: it is not foreign */
  readonly foreign: (vsKey: string) => string | undefined;
}

/** Why a frontend key is withheld: the same for every service port that claims it. */
export type Withholding =
  { readonly kind: 'excluded'; readonly cidr: string } | { readonly kind: 'foreign'; readonly why: string };

/** Whether the frontend `key` at `address` is withheld, and why (excludeCIDRs first). */
export function withholding(key: string, address: string, facts: FrontendFacts): Withholding | undefined {
  const cidrs = facts.excludeCIDRs;
  if (cidrs.length > 0 && cachedCidrMatcher(cidrs)(address))
    return { kind: 'excluded', cidr: cidrs.find((c) => cidrContains(c, address))! };
  const why = facts.foreign(key);
  return why === undefined ? undefined : { kind: 'foreign', why };
}

/** Whether two withholdings are the same (both none, or the same kind for the same reason). */
export function sameWithholding(a: Withholding | undefined, b: Withholding | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.kind === 'excluded') return b.kind === 'excluded' && a.cidr === b.cidr;
  return b.kind === 'foreign' && a.why === b.why;
}

/** The refusal `owner` gets for its withheld frontend `f`; undefined when it is told nothing. */
export function withheldRefusal(owner: ServicePortKey, f: DesiredFrontend, w: Withholding): Refusal | undefined {
  const { vs, kind } = f.virtualServer;
  if (w.kind === 'excluded' && kind === 'NodePort') return undefined;
  const { namespace, name } = parseServicePortKey(owner);
  const port = `${PROTOCOL_NAMES[vs.protocol] ?? vs.protocol}/${vs.port}`;
  const base = { kind: 'Service', namespace, name, field: f.field, value: vs.address };
  if (w.kind === 'excluded')
    return {
      ...base,
      reason: `inside ipvs.excludeCIDRs ${w.cidr}: kube-ipvs never creates, changes or deletes a virtual server there (port ${port} not programmed on it)`,
      eventReason: VIP_IN_EXCLUDED_CIDR,
    };
  return {
    ...base,
    reason: `virtual server ${f.key} exists in the kernel and is not kube-ipvs's (${w.why}): kube-ipvs never changes or deletes it, and programs nothing for it (port ${port} not programmed on ${vs.address})`,
    eventReason: FOREIGN_VIRTUAL_SERVER,
  };
}
