/**
 * The desired state, written by re-plans only: every Service's plans, the index over them
 * (virtual servers, ipsets, iptables, kube-ipvs0 addresses; desired-index.ts), the health
 * check ports, and the count of service ports with a Local traffic policy and no local endpoint.
 */
import { virtualServerKey } from '../model/ipvs';
import { IpFamily } from '../model/ip-family';
import { ServicePort } from '../model/service';
import { DesiredVirtualServer, ServicePortPlan } from '../plan/service-plan';
import { DesiredIndex } from './desired-index';
import { ServiceHealthIndex } from './service-health';

/** How DesiredState re-plans a Service, and whom it tells. */
export interface DesiredStateDeps {
  /** plans one Service's ports (NodeContext.planService) */
  readonly planService: (name: string) => { ports: ServicePort[]; plans: ServicePortPlan[] };
  /** a Service went from `before` to `after` (conntrack cleanup, refusal reports) */
  readonly replanned: (name: string, before: readonly ServicePortPlan[], after: readonly ServicePortPlan[]) => void;
}

/** Every Service's plans and the index over them (see the file comment). */
export class DesiredState {
  /** service name -> its plans (all ports, all families) */
  private readonly byService = new Map<string, ServicePortPlan[]>();
  private indexNow: DesiredIndex;
  /** health check ports and local endpoint counts per Service (for deps.serviceHealth) */
  readonly health = new ServiceHealthIndex();
  /** service ports with a Local traffic policy and no local endpoint (kubeproxy_sync_proxy_rules_no_local_endpoints_total) */
  readonly noLocalEndpoints = { internal: 0, external: 0 };

  constructor(
    private readonly deps: DesiredStateDeps,
    families: readonly IpFamily[],
  ) {
    this.indexNow = new DesiredIndex(families);
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
    this.indexNow = new DesiredIndex(families);
    this.byService.clear();
    this.noLocalEndpoints.internal = 0;
    this.noLocalEndpoints.external = 0;
  }

  /** Re-plans one Service into the index; adds the virtual server keys it touches. */
  replan(name: string, touched: Set<string>): void {
    const before = this.byService.get(name) ?? [];
    const { ports, plans: after } = this.deps.planService(name);
    this.health.update(name, ports, after);
    for (const k of this.indexNow.replace(before, after, ports)) touched.add(k);
    for (const p of before) this.countNoLocal(p, -1);
    for (const p of after) this.countNoLocal(p, +1);
    if (after.length > 0) this.byService.set(name, after);
    else this.byService.delete(name);
    this.deps.replanned(name, before, after);
  }

  /** The Services that claim these virtual server keys, or were refused them as foreign. */
  claimantsOf(keys: readonly string[]): Set<string> {
    const want = new Set(keys);
    const out = new Set<string>();
    for (const [name, plans] of this.byService) {
      for (const p of plans) {
        if (
          p.foreignVirtualServers?.some((k) => want.has(k)) ||
          p.virtualServers.some((v) => want.has(virtualServerKey(v.vs)))
        ) {
          out.add(name);
          break;
        }
      }
    }
    return out;
  }

  private countNoLocal(p: ServicePortPlan, sign: 1 | -1): void {
    if (p.noLocalEndpoints.internal) this.noLocalEndpoints.internal += sign;
    if (p.noLocalEndpoints.external) this.noLocalEndpoints.external += sign;
  }
}
