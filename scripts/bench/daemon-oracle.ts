// The benchmark's oracle: what the fake API server's current objects imply for the IPVS table
// (the daemon's own trackers and planner, run here on a fresh list: ServiceTracker,
// EndpointSliceTracker, planServicePort, planFamilyState), compared with the kernel's table.
// Real servers at weight 0 are draining ones (graceful termination), counted apart.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { Ipvs } from '../../lib/kernel/ipvs/ipvs';
import { realServerKey, virtualServerKey } from '../../lib/model/ipvs';
import { planFamilyState } from '../../lib/plan/plan-desired-state';
import { planServicePort } from '../../lib/plan/plan-service-port';
import { PlanContext, ServicePortPlan } from '../../lib/plan/service-plan';
import { FakeApiServer } from '../../testkit/fake-apiserver';
import { EndpointSliceTracker } from '../../lib/tracker/endpoint-slice-tracker';
import { ServiceTracker } from '../../lib/tracker/service-tracker';
import { NODE_IP, NODE_NAME } from './daemon-fixtures';

/** virtualServerKey -> "scheduler" and the realServerKeys it should have (weight 1) */
export type DesiredTable = Map<string, { scheduler: string; realServers: Set<string> }>;

/** What the API server's Services and EndpointSlices imply for this node's IPv4 IPVS table. */
export function desiredFromApi(server: FakeApiServer): DesiredTable {
  const st = new ServiceTracker();
  const et = new EndpointSliceTracker(NODE_NAME);
  for (const s of server.list('v1', 'Service')) st.onAdd(s as unknown as V1Service);
  for (const s of server.list('discovery.k8s.io/v1', 'EndpointSlice')) et.onAdd(s as unknown as V1EndpointSlice);
  const ctx: PlanContext = {
    family: 'ipv4',
    scheduler: '',
    nodeName: NODE_NAME,
    nodeZone: '',
    nodePortAddresses: [],
    localAddresses: new Set(),
    nodeIPs: [NODE_IP],
    excludeClusterCIDRs: [],
  };
  const plans: ServicePortPlan[] = [];
  for (const name of st.serviceNames())
    for (const sp of st.servicePorts(name))
      if (sp.family === 'ipv4') plans.push(planServicePort(sp, et.endpoints(sp), ctx));
  const state = planFamilyState(plans, 'ipv4', { masqueradeBit: 14, masqueradeAll: false, randomFully: false });
  const out: DesiredTable = new Map();
  for (const [k, v] of state.virtualServers)
    out.set(k, { scheduler: v.vs.scheduler, realServers: new Set(v.realServers.map(realServerKey)) });
  return out;
}

export interface TableComparison {
  readonly virtualServers: number;
  readonly realServers: number;
  /** weight-0 real servers the desired state does not have (graceful termination) */
  readonly draining: number;
  /** virtual servers missing, unexpected, or with other serving real servers or scheduler */
  readonly wrong: number;
  /** up to 5 of them, for the log */
  readonly examples: string[];
}

export async function compareKernel(ipvs: Ipvs, desired: DesiredTable): Promise<TableComparison> {
  const kernel = await ipvs.listAll();
  let wrong = 0;
  let draining = 0;
  let realServers = 0;
  const examples: string[] = [];
  const seen = new Set<string>();
  const bad = (what: string) => {
    wrong++;
    if (examples.length < 5) examples.push(what);
  };
  for (const e of kernel) {
    const k = virtualServerKey(e.vs);
    seen.add(k);
    const want = desired.get(k);
    if (!want) {
      bad(`${k}: not desired`);
      continue;
    }
    const serving = new Set<string>();
    for (const d of e.dests) {
      if (d.weight > 0) serving.add(realServerKey(d));
      else if (!want.realServers.has(realServerKey(d))) draining++;
    }
    realServers += serving.size;
    const same = serving.size === want.realServers.size && [...serving].every((r) => want.realServers.has(r));
    if (!same || e.vs.scheduler !== want.scheduler)
      bad(`${k}: ${[...serving].sort().join(',')} (want ${[...want.realServers].sort().join(',')})`);
  }
  for (const k of desired.keys()) if (!seen.has(k)) bad(`${k}: missing`);
  return { virtualServers: kernel.length, realServers, draining, wrong, examples };
}
