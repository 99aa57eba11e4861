/**
 * Desired state of kube-proxy's 17 ipsets for one family (K8S pkg/proxy/ipvs/proxier.go
 * ensureIPSet). The set vocabulary (types, IPSET_INFO, members) is model/ipset.ts. Pure: no I/O.
 */
import { IpFamily } from '../model/ip-family';
import { DesiredIpsets, DesiredSet, IPSET_INFO, IpsetMember, SYNCED_IPSET_INFO } from '../model/ipset';
import { SetKey, ipsetName } from '../model/names';

/**
 * Desired state of all 17 sets for one family. Every set is present even when empty: kube-proxy
 * creates all of them on every sync (ensureIPSet), and iptables rules name some of them
 * unconditionally (KUBE-IPVS-FILTER).
 */
export function planIpsets(
  family: IpFamily,
  members: Partial<Record<SetKey, Iterable<IpsetMember>>> = {},
): Map<string, DesiredSet> {
  const out = new Map<string, DesiredSet>();
  for (const info of SYNCED_IPSET_INFO) {
    out.set(ipsetName(info.name, family), { type: info.type, family, members: new Set(members[info.key] ?? []) });
  }
  return out;
}

/** Keys of the sets that have members (the iptables generator writes rules only for those). */
export function nonEmptySetKeys(family: IpFamily, sets: DesiredIpsets): Set<SetKey> {
  const out = new Set<SetKey>();
  for (const info of IPSET_INFO) {
    const s = sets.get(ipsetName(info.name, family));
    if (s && s.members.size > 0) out.add(info.key);
  }
  return out;
}
