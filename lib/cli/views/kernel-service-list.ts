/**
 * `kube-ipvs service list` without the daemon: rows from the kernel's IPVS table, the Service
 * type from kube-proxy's ipsets (frontendTypeFromIpsets), Service names unknown. Pure.
 */
import { VirtualServerEntry } from '../../kernel/ipvs/ipvs';
import { SetMembers, frontendTypeFromIpsets } from '../../model/ipset-claims';
import { realServerKey } from '../../model/ipvs';
import { ServiceListResponse, affinityOf, compareBackends, compareFrontends, frontendName } from '../../model/views';

/** Every virtual server of the table, numbered in row order; weight 0 reads as draining. */
export function kernelServiceList(entries: readonly VirtualServerEntry[], sets: SetMembers): ServiceListResponse {
  const sorted = [...entries].sort((a, b) => compareFrontends(a.vs, b.vs));
  return {
    source: 'kernel',
    frontends: sorted.map((e, i) => ({
      id: i + 1,
      frontend: frontendName(e.vs),
      type: frontendTypeFromIpsets(sets, e.vs),
      service: null,
      scheduler: e.vs.scheduler,
      affinity: affinityOf(e.vs),
      backends: [...e.dests].sort(compareBackends).map((d) => ({
        address: realServerKey(d),
        state: d.weight === 0 ? 'draining' : 'active',
        weight: d.weight,
        activeConns: d.activeConns,
        inactConns: d.inactConns,
      })),
    })),
  };
}
