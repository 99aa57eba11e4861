/**
 * What the proxier tells the HealthCheckNodePort servers after each sync (kube-proxy's
 * ServiceHealthServer.SyncServices / SyncEndpoints, K8S pkg/proxy/healthcheck/service_health.go),
 * and the per-Service figures it keeps up to date one re-planned Service at a time.
 *
 * kube-proxy hands over `svcPortMap.HealthCheckNodePorts()` (every Service whose
 * healthCheckNodePort is set: only LoadBalancer with externalTrafficPolicy Local, see
 * lib/k8s/convert.ts) and `endpointsMap.LocalReadyEndpoints()` (distinct local ready endpoint
 * IPs per Service). Both are whole maps on every sync: a Service whose port could not be opened
 * is retried on the next one.
 */
import { ServiceName, ServicePort } from '../model/service';
import { ServicePortPlan } from '../plan/service-plan';

/** The HealthCheckNodePort servers as the proxier feeds them (the daemon's ServiceHealthServer). */
export interface ServiceHealthSink {
  /**
   * The Services that want a health check server, with its port; every such Service on each
   * call. Opens the new ones (and those that failed before), closes the ones no longer listed
   * or whose port changed. The map is read during the call only.
   */
  syncServices(services: ReadonlyMap<ServiceName, number>): void;
  /** Ready local endpoints per Service; a Service not in the map has none. Read during the call only. */
  syncEndpoints(localEndpoints: ReadonlyMap<ServiceName, number>): void;
  /**
   * The node-port addresses the servers listen on (kube-proxy: those matching
   * nodePortAddresses), or undefined for every address (nodePortAddresses unset or 0.0.0.0/0).
   * Called after each full sync; the sink reopens its servers only when the list changed.
   */
  setNodePortAddresses?(addresses: readonly string[] | undefined): void;
}

/**
 * Per-Service health check port and local endpoint count, from the Service's ports and plans.
 * Only Services with a health check port are kept (the others are never served).
 */
export class ServiceHealthIndex {
  /** Service -> healthCheckNodePort */
  readonly ports = new Map<ServiceName, number>();
  /** Service -> ready local endpoints (Services with a port only) */
  readonly localEndpoints = new Map<ServiceName, number>();

  clear(): void {
    this.ports.clear();
    this.localEndpoints.clear();
  }

  /**
   * One Service re-planned: `ports` are its service ports in the families this node runs,
   * `plans` their plans. The count is the largest per-port count of distinct local ready IPs
   * (kube-proxy counts distinct IPs over all ports of one family; ports of one Service
   * normally share their endpoints, and a dual-stack Service's pods have an IP per family, so
   * the maximum counts pods, not addresses).
   */
  update(name: ServiceName, ports: readonly ServicePort[], plans: readonly ServicePortPlan[]): void {
    let port = 0;
    for (const sp of ports) if (sp.healthCheckNodePort !== 0) port = sp.healthCheckNodePort;
    if (port === 0) {
      this.ports.delete(name);
      this.localEndpoints.delete(name);
      return;
    }
    this.ports.set(name, port);
    let count = 0;
    for (const p of plans) count = Math.max(count, p.localEndpoints);
    if (count > 0) this.localEndpoints.set(name, count);
    else this.localEndpoints.delete(name);
  }
}
