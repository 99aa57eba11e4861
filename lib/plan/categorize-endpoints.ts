/**
 * Which endpoints a service port's virtual servers get: kube-proxy's CategorizeEndpoints
 * (K8S pkg/proxy/topology.go) and the IPVS proxier's use of it in syncEndpoint. Pure.
 */
import { Endpoint, ServicePort } from '../model/service';

/** A service port's endpoints for Cluster and for Local traffic policy, and whether any is usable. */
export interface CategorizedEndpoints {
  /** for "Cluster" policy: ready endpoints (topology-filtered), else serving+terminating ones */
  readonly cluster: readonly Endpoint[];
  /** for "Local" policy: local ready endpoints, else local serving+terminating ones */
  readonly local: readonly Endpoint[];
  /** some endpoint anywhere is ready, or serving and terminating */
  readonly hasAny: boolean;
}

/** kube-proxy ServicePort.ExternallyAccessible(): a NodePort, an LB VIP or an external IP. */
export function externallyAccessible(sp: ServicePort): boolean {
  return sp.nodePort !== 0 || sp.loadBalancerIPs.length > 0 || sp.externalIPs.length > 0;
}

/** kube-proxy UsesClusterEndpoints: iTP Cluster, or any external traffic (eTP Local needs them for pods' short-circuit). */
export function usesClusterEndpoints(sp: ServicePort): boolean {
  return !sp.internalPolicyLocal || externallyAccessible(sp);
}

/** kube-proxy UsesLocalEndpoints. */
export function usesLocalEndpoints(sp: ServicePort): boolean {
  return sp.internalPolicyLocal || (sp.externalPolicyLocal && externallyAccessible(sp));
}

type TopologyMode = '' | 'node' | 'zone';

/**
 * Node hints when every ready endpoint has node hints and one names this node
 * (trafficDistribution PreferSameNode; kube-proxy feature PreferSameTrafficDistribution, on by
 * default since 1.34); else zone hints when every ready endpoint has zone hints and one names
 * this node's zone (topology-aware routing, trafficDistribution PreferClose/PreferSameZone:
 * the EndpointSlice controller sets the hints); else no topology.
 */
function topologyMode(endpoints: readonly Endpoint[], nodeName: string, zone: string): TopologyMode {
  let allNode = true;
  let forNode = false;
  let allZone = true;
  let forZone = false;
  for (const e of endpoints) {
    if (!e.ready) continue;
    if (!e.zoneHints || e.zoneHints.length === 0) allZone = false;
    else if (zone !== '' && e.zoneHints.includes(zone)) forZone = true;
    if (!e.nodeHints || e.nodeHints.length === 0) allNode = false;
    else if (nodeName !== '' && e.nodeHints.includes(nodeName)) forNode = true;
  }
  if (allNode && forNode) return 'node';
  if (allZone && forZone) return 'zone';
  return '';
}

/** kube-proxy's CategorizeEndpoints for one service port on this node (see the file comment). */
export function categorizeEndpoints(
  endpoints: readonly Endpoint[],
  sp: ServicePort,
  nodeName: string,
  zone: string,
): CategorizedEndpoints {
  let cluster: Endpoint[] = [];
  let local: Endpoint[] = [];
  let hasAny = false;
  if (usesClusterEndpoints(sp)) {
    const mode = topologyMode(endpoints, nodeName, zone);
    cluster = endpoints.filter(
      (e) =>
        e.ready &&
        (mode === '' || (mode === 'node' ? !!e.nodeHints?.includes(nodeName) : !!e.zoneHints?.includes(zone))),
    );
    // no ready endpoint anywhere (topology is already ignored when none matches): terminating ones
    if (cluster.length === 0) cluster = endpoints.filter((e) => e.serving && e.terminating);
    hasAny = cluster.length > 0;
  }
  if (!usesLocalEndpoints(sp)) return { cluster, local, hasAny };

  let localReady = false;
  let localTerminating = false;
  for (const e of endpoints) {
    if (e.ready) {
      hasAny = true;
      if (e.isLocal) localReady = true;
    } else if (e.serving && e.terminating) {
      hasAny = true;
      if (e.isLocal) localTerminating = true;
    }
  }
  if (localReady) local = endpoints.filter((e) => e.isLocal && e.ready);
  else if (localTerminating) local = endpoints.filter((e) => e.isLocal && e.serving && e.terminating);
  return { cluster, local, hasAny };
}
