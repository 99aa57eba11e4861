/**
 * The daemon's `service list` rows: every desired virtual server (a frontend) with its type,
 * its Service port, scheduler and affinity, and its backends in the state the proxier knows
 * them (desired vs. what it applied, draining). Pure; the Proxier supplies the inputs.
 */
import { RealServerSpec, VirtualServerSpec, realServerKey } from '../model/ipvs';
import { Endpoint, ServicePort, ServicePortKey } from '../model/service';
import {
  Backend,
  BackendState,
  FrontendRow,
  FrontendType,
  affinityOf,
  compareBackends,
  compareFrontends,
  frontendName,
} from '../model/views';
import { DesiredVirtualServer } from '../plan/service-plan';
import { IpvsTable, TableRealServer } from '../reconcile/ipvs-table';

/** Which of a Service port's addresses a virtual server serves; null when none matches. */
export function frontendType(sp: ServicePort, vs: Pick<VirtualServerSpec, 'address' | 'port'>): FrontendType | null {
  if (vs.port === sp.port) {
    if (vs.address === sp.clusterIP) return 'ClusterIP';
    if (sp.loadBalancerIPs.includes(vs.address)) return 'LoadBalancer';
    if (sp.externalIPs.includes(vs.address)) return 'ExternalIP';
  }
  if (sp.nodePort !== 0 && vs.port === sp.nodePort) return 'NodePort';
  return null;
}

/** "namespace/name:port": the port's name, or its number when unnamed. */
export function servicePortLabel(sp: Pick<ServicePort, 'namespace' | 'name' | 'portName' | 'port'>): string {
  return `${sp.namespace}/${sp.name}:${sp.portName || sp.port}`;
}

/** Frontend ids: given in row order on first sight, kept while the frontend exists. */
export class FrontendIds {
  private next = 1;
  private readonly ids = new Map<string, number>();

  /** Ids for `keys` (in the order given); forgets every key not among them. */
  assign(keys: readonly string[]): Map<string, number> {
    const keep = new Set(keys);
    for (const k of [...this.ids.keys()]) if (!keep.has(k)) this.ids.delete(k);
    for (const k of keys) if (!this.ids.has(k)) this.ids.set(k, this.next++);
    return this.ids;
  }
}

/** What the service list is made from: desired and applied virtual servers, ports, endpoints, ids. */
export interface ServiceListInput {
  /** by virtualServerKey */
  readonly desired: ReadonlyMap<string, DesiredVirtualServer>;
  /** what the proxier applied (the kernel as of the last full sync, moved forward by accepted ops) */
  readonly applied: IpvsTable;
  readonly servicePort: (key: ServicePortKey) => ServicePort | undefined;
  readonly endpoints: (sp: ServicePort) => readonly Endpoint[];
  readonly ids: FrontendIds;
}

function backend(
  rs: RealServerSpec,
  state: BackendState,
  have: TableRealServer | undefined,
): Backend & { rs: RealServerSpec } {
  return {
    rs,
    address: realServerKey(rs),
    state,
    weight: have?.weight ?? rs.weight,
    activeConns: have?.activeConns ?? 0,
    inactConns: have?.inactConns ?? 0,
  };
}

/** One frontend per desired virtual server, in row order. */
export function buildServiceList(input: ServiceListInput): FrontendRow[] {
  const keys = [...input.desired.keys()].sort((a, b) =>
    compareFrontends(input.desired.get(a)!.vs, input.desired.get(b)!.vs),
  );
  const ids = input.ids.assign(keys);
  return keys.map((key) => {
    const want = input.desired.get(key)!;
    const entry = input.applied.get(key);
    const sp = input.servicePort(want.owner);
    const eps = sp ? input.endpoints(sp) : [];
    const terminating = new Set(
      eps.filter((e) => e.terminating).map((e) => realServerKey({ af: want.vs.af, address: e.ip, port: e.port })),
    );
    const backends: (Backend & { rs: RealServerSpec })[] = [];
    const wanted = new Set<string>();
    for (const rs of want.realServers) {
      const k = realServerKey(rs);
      wanted.add(k);
      const have = entry?.realServers.get(k);
      const state: BackendState =
        !have || have.weight !== rs.weight ? 'pending' : terminating.has(k) ? 'terminating' : 'active';
      backends.push(backend(rs, state, have));
    }
    for (const [k, have] of entry?.realServers ?? []) {
      if (!wanted.has(k)) backends.push(backend(have, have.weight === 0 ? 'draining' : 'stale', have));
    }
    const vs = entry?.vs ?? want.vs;
    return {
      id: ids.get(key)!,
      frontend: frontendName(vs),
      type: sp ? frontendType(sp, vs) : null,
      service: sp ? servicePortLabel(sp) : ownerLabel(want.owner),
      scheduler: vs.scheduler,
      affinity: affinityOf(vs),
      backends: backends.sort((a, b) => compareBackends(a.rs, b.rs)).map(({ rs: _rs, ...b }) => b),
    };
  });
}

/** "ns/name:port" from a ServicePortKey "ns/name:port/ipv4". */
function ownerLabel(owner: ServicePortKey): string {
  return owner.slice(0, owner.lastIndexOf('/'));
}
