/**
 * The desired state, written by re-plans (a Service changed) and re-guards (what withholds a
 * frontend changed): every Service's plans, the index over them
 * (virtual servers, ipsets, iptables, kube-ipvs0 addresses; desired-index.ts), the health
 * check ports, and the count of service ports with a Local traffic policy and no local endpoint.
 */
import { IpFamily } from '../model/ip-family';
import { Refusal, ServiceName, ServicePort, TrackedService } from '../model/service';
import { DesiredVirtualServer, ServicePortPlan } from '../plan/service-plan';
import { FrontendFacts } from '../plan/frontend-guard';
import { DesiredIndex } from './desired-index';
import { ServiceHealthIndex } from './service-health';

/** How DesiredState re-plans a Service, and whom it tells. */
export interface DesiredStateDeps {
  /** plans one Service's ports (NodeContext.planService) */
  readonly planService: (service: TrackedService) => { ports: ServicePort[]; plans: ServicePortPlan[] };
  /** what withholds frontends (the node's excludeCIDRs and foreign virtual servers), read live */
  readonly facts: FrontendFacts;
  /** the virtual servers given to a Service went from `before` to `after` (conntrack cleanup) */
  readonly replanned: (before: readonly DesiredVirtualServer[], after: readonly DesiredVirtualServer[]) => void;
  /** a Service's refusals now: its objects', its plans' and its withheld frontends' (refusal reports) */
  readonly refused: (name: ServiceName, refusals: readonly Refusal[]) => void;
}

/** Every Service's plans and the index over them (see the file comment). */
export class DesiredState {
  /** service name -> its plans (all ports, all families) */
  private readonly byService = new Map<string, ServicePortPlan[]>();
  /** service name -> what was refused in its objects when it was last re-planned (none: absent) */
  private readonly objectRefusals = new Map<string, readonly Refusal[]>();
  private indexNow: DesiredIndex;
  /** health check ports and local endpoint counts per Service (for deps.serviceHealth) */
  readonly health = new ServiceHealthIndex();
  /** service ports with a Local traffic policy and no local endpoint (kubeproxy_sync_proxy_rules_no_local_endpoints_total) */
  readonly noLocalEndpoints = { internal: 0, external: 0 };

  constructor(
    private readonly deps: DesiredStateDeps,
    families: readonly IpFamily[],
  ) {
    this.indexNow = new DesiredIndex(families, deps.facts);
  }

  get index(): DesiredIndex {
    return this.indexNow;
  }

  get plans(): ReadonlyMap<string, readonly ServicePortPlan[]> {
    return this.byService;
  }

  /** The desired virtual server of a key. */
  readonly virtualServer = (vsKey: string): DesiredVirtualServer | undefined => this.indexNow.virtualServer(vsKey);

  /** The families changed: nothing planned holds any more. */
  reset(families: readonly IpFamily[]): void {
    this.indexNow = new DesiredIndex(families, this.deps.facts);
    this.byService.clear();
    this.objectRefusals.clear();
    this.noLocalEndpoints.internal = 0;
    this.noLocalEndpoints.external = 0;
  }

  /** Re-plans one Service from what the trackers hold of it; adds the virtual server keys it touches. */
  replan(name: ServiceName, service: TrackedService, touched: Set<string>): void {
    const before = this.byService.get(name) ?? [];
    const givenBefore = this.indexNow.givenVirtualServers(before);
    const { ports, plans: after } = this.deps.planService(service);
    if (service.refusals.length > 0) this.objectRefusals.set(name, service.refusals);
    else this.objectRefusals.delete(name);
    this.health.update(name, ports, after);
    for (const k of this.indexNow.replace(before, after, ports)) touched.add(k);
    for (const p of before) this.countNoLocal(p, -1);
    for (const p of after) this.countNoLocal(p, +1);
    if (after.length > 0) this.byService.set(name, after);
    else this.byService.delete(name);
    this.deps.replanned(givenBefore, this.indexNow.givenVirtualServers(after));
    this.deps.refused(name, this.refusals(name, after));
  }

  /**
   * What withholds frontends changed for `keys` (every key when undefined, `quiet`: no Service
   * is told, as every one is re-planned next): the index gives or takes them back (no re-plan);
   * adds the keys that changed to `touched`.
   */
  reguard(keys: Iterable<string> | undefined, touched: Set<string>, quiet = false): void {
    const { services, given } = this.indexNow.reguard(keys, touched);
    if (given.length > 0) this.deps.replanned([], given);
    if (quiet) return;
    for (const name of services) this.deps.refused(name, this.refusals(name, this.byService.get(name) ?? []));
  }

  /** A Service's refusals: its objects', then per port of its plans the planner's and its withheld frontends'. */
  private refusals(name: ServiceName, plans: readonly ServicePortPlan[]): Refusal[] {
    // one refusal each: every port and family of a Service may refuse the same field (a
    // scheduler flag of another scheduler), and it is said once
    const seen = new Set<string>();
    const fromPlans = plans
      .flatMap((p) => [...p.refusals, ...this.indexNow.withheldRefusals(p)])
      .filter((r) => {
        const k = `${r.field}\0${r.value}\0${r.reason}\0${r.eventReason ?? ''}`;
        if (seen.has(k)) return false;
        seen.add(k);
        return true;
      });
    const fromObjects = this.objectRefusals.get(name);
    return fromObjects === undefined ? fromPlans : [...fromObjects, ...fromPlans];
  }

  private countNoLocal(p: ServicePortPlan, sign: 1 | -1): void {
    if (p.noLocalEndpoints.internal) this.noLocalEndpoints.internal += sign;
    if (p.noLocalEndpoints.external) this.noLocalEndpoints.external += sign;
  }
}
