/**
 * Kubernetes objects -> the proxy's validated types (lib/model/service.ts). Pure. Services
 * (convert-service.ts) and the Node are read here; EndpointSlices are read by their tracker
 * (tracker/endpoint-slice-convert.ts), with the same field readers (convert-fields.ts).
 *
 * Nothing from the API server is trusted: every field the proxy uses is validated here. A bad
 * value is refused for that field or list element only (a Refusal naming the field, the value
 * and the reason, which ends with what is done instead; the proxier logs it and posts an Event)
 * and the rest of the object is kept.
 * A bad cluster IP or port leaves that port/family unplanned, as there is nothing to program.
 * Two exceptions fail closed instead: an unreadable loadBalancerSourceRanges entry closes the
 * load balancer to everybody (never open it to all), and an EndpointSlice that is not the
 * API's shape (a list that is not a list, a null element) is refused whole.
 * Special addresses (unspecified, broadcast, loopback, link-local, multicast, IPv4-mapped
 * IPv6) are refused as externalIPs and load-balancer IPs.
 *
 * Per-Service scheduler annotations (the only annotations kube-ipvs reads):
 *  - `kube-ipvs.io/scheduler: <name>` — kube-ipvs's own;
 *  - `kube-router.io/service.scheduler: <name>` — honoured for clusters migrating from
 *    kube-router; when both are present, `kube-ipvs.io/scheduler` wins and kube-router's is
 *    ignored. kube-router's other annotations (schedflags, dsr, hairpin, local, skiplbips)
 *    are NOT honoured.
 * The value must be an IPVS scheduler name, /^[a-z0-9]{1,15}$/ (IP_VS_SCHEDNAME_MAXLEN 16
 * with the NUL); otherwise it is refused and the configured ipvs.scheduler applies. Whether
 * the kernel has that scheduler is found out when the virtual server is added.
 *
 * Services skipped entirely (no ports, no refusal), as kube-proxy does: ExternalName, headless
 * (clusterIP None or empty), and objects labelled `service.kubernetes.io/service-proxy-name`
 * (served by another proxy; kube-proxy's informers filter them out with a label selector, this
 * check makes the converter safe without one).
 *
 * The Service converter is convert-service.ts (one reader per field group); the names, the
 * field readers and the refusal collector all three converters share are convert-fields.ts.
 * Types only from @kubernetes/client-node (erased at compile time: the package is ESM-only).
 */
import type { V1Node } from '@kubernetes/client-node';
import { Refusal } from '../model/service';
import { parseCidrField, parseIpField } from '../model/parse-ip';
import { RefusalCollector, TO_BE_DELETED_TAINT, ZONE_LABEL, isObject, listOf } from './convert-fields';

export {
  HEADLESS_LABEL,
  KUBE_ROUTER_SCHEDULER_ANNOTATION,
  SCHEDULER_ANNOTATION,
  SERVICE_NAME_LABEL,
  SERVICE_PROXY_NAME_LABEL,
  TO_BE_DELETED_TAINT,
  ZONE_LABEL,
} from './convert-fields';
export { ConvertedService, DEFAULT_STICKY_SECONDS, MAX_STICKY_SECONDS, convertService } from './convert-service';

/** This node as the proxy sees its Node object: zone, IPs, pod CIDRs, eligibility. */
export interface NodeInfo {
  readonly name: string;
  /** topology.kubernetes.io/zone label; '' when none */
  readonly zone: string;
  /** status.addresses of type InternalIP then ExternalIP, canonical, unique, in object order */
  readonly nodeIPs: string[];
  /** spec.podCIDRs (else spec.podCIDR), canonical */
  readonly podCIDRs: string[];
  /** kube-proxy's nodeEligible: not being deleted, not tainted ToBeDeletedByClusterAutoscaler */
  readonly eligible: boolean;
  readonly refusals: Refusal[];
}

/** What the proxy uses from its own Node object. */
export function nodeInfo(node: V1Node): NodeInfo {
  const name = node.metadata?.name ?? '';
  const r = new RefusalCollector('Node', '', name);
  const zone = node.metadata?.labels?.[ZONE_LABEL] ?? '';

  const nodeIPs: string[] = [];
  const addressList = listOf(node.status?.addresses);
  if (addressList === undefined) r.refuse('status.addresses', node.status?.addresses, 'not a list; no node IP');
  for (const type of ['InternalIP', 'ExternalIP']) {
    (addressList ?? []).forEach((raw, i) => {
      if (!isObject(raw))
        return type === 'InternalIP' ? r.refuse(`status.addresses[${i}]`, raw, 'not an object; ignored') : undefined;
      const a = raw as { type?: unknown; address?: unknown };
      if (a.type !== type) return;
      const ip = parseIpField(a.address);
      if (!ip.ok) return r.refuse(`status.addresses[${i}].address`, a.address, `${ip.reason}; ignored`);
      if (!nodeIPs.includes(ip.value)) nodeIPs.push(ip.value);
    });
  }

  const podCIDRs: string[] = [];
  const podCIDRList = listOf(node.spec?.podCIDRs);
  if (podCIDRList === undefined) r.refuse('spec.podCIDRs', node.spec?.podCIDRs, 'not a list; spec.podCIDR used');
  const cidrField = podCIDRList && podCIDRList.length > 0 ? 'spec.podCIDRs' : 'spec.podCIDR';
  const cidrList: readonly unknown[] =
    cidrField === 'spec.podCIDRs' ? podCIDRList! : node.spec?.podCIDR ? [node.spec.podCIDR] : [];
  cidrList.forEach((raw, i) => {
    const cidr = parseCidrField(raw);
    if (!cidr.ok)
      return r.refuse(
        cidrField === 'spec.podCIDRs' ? `spec.podCIDRs[${i}]` : 'spec.podCIDR',
        raw,
        `${cidr.reason}; ignored`,
      );
    if (!podCIDRs.includes(cidr.value)) podCIDRs.push(cidr.value);
  });

  const deleting = node.metadata?.deletionTimestamp !== undefined && node.metadata.deletionTimestamp !== null;
  const tainted = (listOf(node.spec?.taints) ?? []).some((t) => isObject(t) && t.key === TO_BE_DELETED_TAINT);
  return { name, zone, nodeIPs, podCIDRs, eligible: !deleting && !tainted, refusals: r.refusals };
}
