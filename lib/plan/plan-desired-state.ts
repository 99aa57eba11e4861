/**
 * The desired state of one family: the union of its service ports' plans, the 17 ipsets and
 * kube-proxy's iptables rules. Pure.
 */
import { virtualServerKey } from '../model/ipvs';
import { ServicePort, ServicePortKey, parseServicePortKey } from '../model/service';
import { claimOf, compareClaims, whyWins } from './claim-rank';
import { nonEmptySetKeys, planIpsets } from './ipsets';
import { LbOutFilterEntry, planIptables } from './iptables';
import {
  DesiredVirtualServer,
  FamilyDesiredState,
  IptablesOptions,
  ServicePortPlan,
  VirtualServerConflict,
  planContents,
} from './service-plan';
import { FrontendFacts, withholding } from './frontend-guard';
import { IpFamily } from '../model/ip-family';
import { SetKey } from '../model/names';
import { entryIp, IpsetMember } from '../model/ipset';

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Nothing withheld. */
const NO_FACTS: FrontendFacts = { excludeCIDRs: [], foreign: () => undefined };

/**
 * Union of `plans` (all of `family`; another family's plan is a caller bug and throws):
 *  - virtual servers by virtualServerKey; when two service ports claim the same key the best
 *    claim keeps it (claim-rank.ts, over `servicePorts`: the ServicePort each plan came from)
 *    and every other gets a conflict entry;
 *  - bound addresses; KUBE-IPVS-IPS holds exactly them (the record KUBE-IPVS-OWNED is not
 *    planned: proxier/ownership-record.ts writes it in order with the IPVS changes);
 *  - every set's members (planIpsets: all 17 sets, empty ones too);
 *  - iptables (planIptables) with the non-empty sets and the LB out-filter entries.
 * A frontend `facts` withholds (frontend-guard.ts) is left out whole.
 * The result does not depend on the order of `plans`.
 */
export function planFamilyState(
  plans: Iterable<ServicePortPlan>,
  family: IpFamily,
  iptablesOptions: IptablesOptions,
  servicePorts: ReadonlyMap<ServicePortKey, ServicePort> = new Map(),
  facts: FrontendFacts = NO_FACTS,
): FamilyDesiredState {
  const sorted = [...plans].sort((a, b) => byString(a.key, b.key));
  const claims = new Map<string, DesiredVirtualServer[]>();
  const conflicts: VirtualServerConflict[] = [];
  const bound = new Set<string>();
  const members: Partial<Record<SetKey, Set<IpsetMember>>> = {};
  const lbOut = new Map<string, LbOutFilterEntry>();

  for (const p of sorted) {
    if (p.family !== family) throw new TypeError(`plan ${p.key} is ${p.family}, not ${family}`);
    const given = planContents(p, (f) => withholding(f.key, f.virtualServer.vs.address, facts) === undefined);
    for (const v of given.virtualServers) {
      const k = virtualServerKey(v.vs);
      const list = claims.get(k);
      if (list) list.push(v);
      else claims.set(k, [v]);
    }
    for (const a of given.boundAddresses) bound.add(a);
    for (const e of given.ipsetEntries) (members[e.set] ??= new Set()).add(e.member);
    for (const e of given.lbOutFilter) lbOut.set(`${e.lbIP} ${e.proto} ${e.port}`, e);
  }

  const virtualServers = new Map<string, DesiredVirtualServer>();
  for (const [k, list] of claims) {
    if (list.length === 1) {
      virtualServers.set(k, list[0]!);
      continue;
    }
    const ranked = list
      .map((v) => ({ v, claim: claimOf(v.owner, servicePorts.get(v.owner), v.kind) }))
      .sort((a, b) => compareClaims(a.claim, b.claim));
    const [winner, ...losers] = ranked;
    virtualServers.set(k, winner!.v);
    for (const l of losers) {
      const loser = parseServicePortKey(l.v.owner);
      conflicts.push({
        kind: 'Service',
        namespace: loser.namespace,
        name: loser.name,
        field: `spec.ports[${loser.portName}]`,
        value: k,
        reason: `virtual server ${k} is ${winner!.v.owner}'s: ${whyWins(winner!.claim, l.claim)}`,
        virtualServer: k,
        winner: winner!.v.owner,
        loser: l.v.owner,
      });
    }
  }
  conflicts.sort((a, b) => byString(a.loser, b.loser) || byString(a.virtualServer, b.virtualServer));

  const boundAddresses = new Set([...bound].sort(byString));
  members.IPVS_IPS = new Set([...boundAddresses].map(entryIp));
  const ipsets = planIpsets(family, members);
  const iptables = planIptables({
    family,
    masqueradeBit: iptablesOptions.masqueradeBit,
    masqueradeAll: iptablesOptions.masqueradeAll,
    localDetector: iptablesOptions.localDetector,
    randomFully: iptablesOptions.randomFully,
    nonEmptySets: nonEmptySetKeys(family, ipsets),
    lbOutFilter: [...lbOut.keys()].sort(byString).map((k) => lbOut.get(k)!),
  });
  const byKey = new Map([...virtualServers.keys()].sort(byString).map((k) => [k, virtualServers.get(k)!]));
  return { family, virtualServers: byKey, boundAddresses, ipsets, iptables, conflicts };
}
