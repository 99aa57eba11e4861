/**
 * Kubernetes object fixtures for tests, like kube-proxy's makeTestService /
 * makeTestEndpointSlice: a bare object with its identity, changed by a callback.
 *
 * Address ranges used by the tests that build on these (keep to them so a test's addresses
 * say what they are):
 *   10.96.0.0/12      ClusterIPs (kubeadm's default service CIDR)
 *   10.244.0.0/16     pod IPs of this cluster's CNI; 10.245.0.0/16 pods of a second CNI
 *   192.0.2.0/24      node IPs (RFC 5737 TEST-NET-1)
 *   198.51.100.0/24   clients and loadBalancerSourceRanges (TEST-NET-2)
 *   203.0.113.0/24    externalIPs and load-balancer VIPs (TEST-NET-3)
 *   2001:db8::/32     every IPv6 address (RFC 3849): 2001:db8:96::/64 ClusterIPs,
 *                     2001:db8:244::/64 pods, 2001:db8:1::/64 nodes, 2001:db8:203::/64 VIPs
 * Node names: node-a (this node), node-b; zones zone-a, zone-b.
 */
import type { V1EndpointSlice, V1Node, V1Service, V1ServicePort } from '@kubernetes/client-node';

/** A Service with only namespace and name; `fn` fills spec and status. */
export function makeService(namespace: string, name: string, fn: (svc: V1Service) => void = () => {}): V1Service {
  const svc: V1Service = { metadata: { namespace, name }, spec: {}, status: {} };
  fn(svc);
  return svc;
}

/** spec.ports[] element. */
export function svcPort(name: string, port: number, protocol = 'TCP', nodePort?: number): V1ServicePort {
  const p: V1ServicePort = { name, port, protocol };
  if (nodePort !== undefined) p.nodePort = nodePort;
  return p;
}

/**
 * An EndpointSlice of Service `svcName` (label kubernetes.io/service-name), addressType IPv4,
 * no endpoints, no ports; `fn` fills them.
 */
export function makeEndpointSlice(
  namespace: string,
  svcName: string,
  sliceName: string,
  fn: (slice: V1EndpointSlice) => void = () => {},
): V1EndpointSlice {
  const slice: V1EndpointSlice = {
    metadata: { namespace, name: sliceName, labels: { 'kubernetes.io/service-name': svcName } },
    addressType: 'IPv4',
    endpoints: [],
    ports: [],
  };
  fn(slice);
  return slice;
}

/** A Node with its name; `fn` fills labels, addresses, podCIDRs, taints. */
export function makeNode(name: string, fn: (node: V1Node) => void = () => {}): V1Node {
  const node: V1Node = { metadata: { name, labels: {} }, spec: {}, status: { addresses: [] } };
  fn(node);
  return node;
}
