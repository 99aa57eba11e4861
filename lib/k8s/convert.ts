/**
 * Kubernetes objects -> the proxy's validated types (lib/model/service.ts). Pure, and the
 * only place that reads Service / EndpointSlice / Node fields.
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
 * Types only from @kubernetes/client-node (erased at compile time: the package is ESM-only).
 */
import type { V1EndpointSlice, V1Node, V1Service } from '@kubernetes/client-node';
import { Endpoint, Protocol, Refusal, ServicePort } from '../model/service';
import { parseCidr, parseCidrSloppy, parseIp } from '../model/parse-ip';
import { specialAddressProblem } from '../model/address';
import { IP_VS_SCHEDNAME_MAXLEN } from '../uapi/ip_vs';
import { IpFamily } from '../model/ip-family';
import { MalformedObjectError } from '../errors';

export const SCHEDULER_ANNOTATION = 'kube-ipvs.io/scheduler';
export const KUBE_ROUTER_SCHEDULER_ANNOTATION = 'kube-router.io/service.scheduler';
export const SERVICE_PROXY_NAME_LABEL = 'service.kubernetes.io/service-proxy-name';
export const HEADLESS_LABEL = 'service.kubernetes.io/headless';
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
export const TO_BE_DELETED_TAINT = 'ToBeDeletedByClusterAutoscaler';

/** API default of sessionAffinityConfig.clientIP.timeoutSeconds (3 h); the API maximum is 1 day. */
export const DEFAULT_STICKY_SECONDS = 10800;
export const MAX_STICKY_SECONDS = 86400;

const SCHEDULER_NAME = new RegExp(`^[a-z0-9]{1,${IP_VS_SCHEDNAME_MAXLEN - 1}}$`);
/** RFC 1123 label: namespaces, Service names (a stricter 1035 label in the API) and port names. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** RFC 1123 subdomain: EndpointSlice and Node names. */
const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const TRAFFIC_DISTRIBUTIONS: ReadonlySet<string> = new Set(['PreferClose', 'PreferSameZone', 'PreferSameNode']);
const SERVICE_TYPES: ReadonlySet<string> = new Set(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']);

export interface ConvertedService {
  readonly ports: ServicePort[];
  readonly refusals: Refusal[];
}

const FAMILIES: readonly IpFamily[] = ['ipv4', 'ipv6'];

function text(v: unknown): string {
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

function isPort(v: unknown, min: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= 65535;
}

function parseProtocol(v: unknown): Protocol | undefined {
  if (v === undefined || v === null || v === '') return 'TCP';
  return v === 'TCP' || v === 'UDP' || v === 'SCTP' ? v : undefined;
}

function sortUnique(values: Iterable<string>): string[] {
  return [...new Set(values)].sort();
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The elements of an optional list field: [] when absent (undefined or null); `undefined`
 * when it is something else than an array (type-confused JSON; the caller refuses it).
 */
function listOf(v: unknown): readonly unknown[] | undefined {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : undefined;
}

/** The Service's ports, one ServicePort per spec.ports[] per cluster IP family. */
export function convertService(svc: V1Service): ConvertedService {
  const namespace = svc.metadata?.namespace ?? '';
  const name = svc.metadata?.name ?? '';
  const refusals: Refusal[] = [];
  const refuse = (field: string, value: unknown, reason: string): void => {
    refusals.push({ kind: 'Service', namespace, name, field, value: text(value), reason });
  };
  const ports: ServicePort[] = [];

  if (!DNS_LABEL.test(namespace)) {
    refuse('metadata.namespace', namespace, 'not a DNS label; Service ignored');
    return { ports, refusals };
  }
  if (!DNS_LABEL.test(name)) {
    refuse('metadata.name', name, 'not a DNS label; Service ignored');
    return { ports, refusals };
  }
  const labels = svc.metadata?.labels ?? {};
  if (labels[SERVICE_PROXY_NAME_LABEL] !== undefined) return { ports, refusals };

  const spec = svc.spec ?? {};
  let type = spec.type ?? 'ClusterIP';
  if (!SERVICE_TYPES.has(type)) {
    refuse('spec.type', type, 'unknown type (ClusterIP, NodePort, LoadBalancer, ExternalName); treated as ClusterIP');
    type = 'ClusterIP';
  }
  if (type === 'ExternalName') return { ports, refusals };
  if (spec.clusterIP === 'None' || ((spec.clusterIP ?? '') === '' && (listOf(spec.clusterIPs) ?? []).length === 0)) {
    return { ports, refusals };
  }

  // cluster IPs decide the families
  const clusterIPs = new Map<IpFamily, string>();
  const clusterIPList = listOf(spec.clusterIPs);
  if (clusterIPList === undefined) refuse('spec.clusterIPs', spec.clusterIPs, 'not a list; spec.clusterIP used');
  const ipsField = clusterIPList && clusterIPList.length > 0 ? 'spec.clusterIPs' : 'spec.clusterIP';
  const ipList = clusterIPList && clusterIPList.length > 0 ? clusterIPList : [spec.clusterIP];
  ipList.forEach((raw, i) => {
    const field = ipsField === 'spec.clusterIPs' ? `spec.clusterIPs[${i}]` : 'spec.clusterIP';
    if (raw === 'None') return;
    const ip = parseIp(raw);
    if (!ip.ok) return refuse(field, raw, `${ip.reason}; no virtual server for this family`);
    if (clusterIPs.has(ip.family)) return refuse(field, raw, `a second ${ip.family} cluster IP (one per family); ignored`);
    clusterIPs.set(ip.family, ip.value);
  });
  if (clusterIPs.size === 0) return { ports, refusals };

  // per-family lists
  const byFamily = (): Record<IpFamily, string[]> => ({ ipv4: [], ipv6: [] });
  const externalIPs = byFamily();
  const externalIPList = listOf(spec.externalIPs);
  if (externalIPList === undefined) refuse('spec.externalIPs', spec.externalIPs, 'not a list; no externalIP');
  (externalIPList ?? []).forEach((raw, i) => {
    const ip = parseIp(raw);
    if (!ip.ok) return refuse(`spec.externalIPs[${i}]`, raw, `${ip.reason}; ignored`);
    const special = specialAddressProblem(ip.value);
    if (special) return refuse(`spec.externalIPs[${i}]`, raw, `${special} is never a Service address; ignored`);
    externalIPs[ip.family].push(ip.value);
  });
  const lbIPs = byFamily();
  const ingressList = listOf(svc.status?.loadBalancer?.ingress);
  if (ingressList === undefined) refuse('status.loadBalancer.ingress', svc.status?.loadBalancer?.ingress, 'not a list; no load-balancer IP');
  (ingressList ?? []).forEach((raw, i) => {
    if (!isObject(raw)) return refuse(`status.loadBalancer.ingress[${i}]`, raw, 'not an object; ingress ignored');
    const ing = raw as { ip?: unknown; ipMode?: unknown };
    if (ing.ip === undefined || ing.ip === null || ing.ip === '') return; // hostname-only ingress: nothing to program
    const mode = ing.ipMode ?? 'VIP';
    if (mode === 'Proxy') return; // the load balancer proxies: traffic arrives for the node, not the VIP
    if (mode !== 'VIP') return refuse(`status.loadBalancer.ingress[${i}].ipMode`, mode, 'unknown ipMode (VIP or Proxy); ingress ignored');
    const ip = parseIp(ing.ip);
    if (!ip.ok) return refuse(`status.loadBalancer.ingress[${i}].ip`, ing.ip, `${ip.reason}; ingress ignored`);
    const special = specialAddressProblem(ip.value);
    if (special) return refuse(`status.loadBalancer.ingress[${i}].ip`, ing.ip, `${special} is never a Service address; ingress ignored`);
    lbIPs[ip.family].push(ip.value);
  });
  // Source ranges fail closed: a range that cannot be read (kube-proxy would skip it) could
  // be the one that was meant to keep the internet out, so the load balancer then admits
  // nobody (a firewall with no range) rather than everybody.
  let sourceRanges = byFamily();
  let sourceRangesUnreadable = false;
  const rangeList = listOf(spec.loadBalancerSourceRanges);
  const closed = 'the load balancer admits no client until the ranges are fixed';
  if (rangeList === undefined) {
    refuse('spec.loadBalancerSourceRanges', spec.loadBalancerSourceRanges, `not a list; ${closed}`);
    sourceRangesUnreadable = true;
  }
  (rangeList ?? []).forEach((raw, i) => {
    // kube-proxy trims blanks around each range and reads it sloppily (leading zeros decimal)
    const cidr = parseCidrSloppy(typeof raw === 'string' ? raw.trim() : raw);
    if (!cidr.ok) {
      sourceRangesUnreadable = true;
      return refuse(`spec.loadBalancerSourceRanges[${i}]`, raw, `${cidr.reason}; ${closed}`);
    }
    sourceRanges[cidr.family].push(cidr.value);
  });
  if (sourceRangesUnreadable) sourceRanges = byFamily();

  // session affinity
  let stickyMaxAgeSeconds = 0;
  const affinity = spec.sessionAffinity ?? 'None';
  if (affinity === 'ClientIP') {
    stickyMaxAgeSeconds = DEFAULT_STICKY_SECONDS;
    const t = spec.sessionAffinityConfig?.clientIP?.timeoutSeconds;
    if (t !== undefined && t !== null) {
      if (typeof t === 'number' && Number.isInteger(t) && t >= 1 && t <= MAX_STICKY_SECONDS) stickyMaxAgeSeconds = t;
      else refuse('spec.sessionAffinityConfig.clientIP.timeoutSeconds', t, `not an integer 1..${MAX_STICKY_SECONDS}; ${DEFAULT_STICKY_SECONDS} used`);
    }
  } else if (affinity !== 'None' && affinity !== '') {
    refuse('spec.sessionAffinity', affinity, 'unknown session affinity (None or ClientIP); None used');
  }

  // traffic policies
  const policy = (field: string, v: string | undefined): 'Cluster' | 'Local' => {
    if (v === undefined || v === '' || v === 'Cluster') return 'Cluster';
    if (v === 'Local') return 'Local';
    refuse(field, v, 'unknown traffic policy (Cluster or Local); Cluster used');
    return 'Cluster';
  };
  const etp = policy('spec.externalTrafficPolicy', spec.externalTrafficPolicy);
  const itp = policy('spec.internalTrafficPolicy', spec.internalTrafficPolicy);
  // kube-proxy apiservice.ExternallyAccessible: externalTrafficPolicy means something only then
  const externallyAccessible =
    type === 'LoadBalancer' || type === 'NodePort' || (type === 'ClusterIP' && (externalIPList ?? []).length > 0);
  const externalPolicyLocal = externallyAccessible && etp === 'Local';

  let trafficDistribution = spec.trafficDistribution ?? '';
  if (trafficDistribution !== '' && !TRAFFIC_DISTRIBUTIONS.has(trafficDistribution)) {
    refuse('spec.trafficDistribution', trafficDistribution, 'unknown traffic distribution (PreferClose, PreferSameZone, PreferSameNode); ignored');
    trafficDistribution = '';
  }

  // kube-proxy apiservice.NeedsHealthCheck: LoadBalancer with externalTrafficPolicy Local
  let healthCheckNodePort = 0;
  if (type === 'LoadBalancer' && etp === 'Local' && spec.healthCheckNodePort !== undefined && spec.healthCheckNodePort !== 0) {
    if (isPort(spec.healthCheckNodePort, 0)) healthCheckNodePort = spec.healthCheckNodePort;
    else refuse('spec.healthCheckNodePort', spec.healthCheckNodePort, 'not a port 0..65535; no health check port');
  }

  const scheduler = schedulerAnnotation(svc.metadata?.annotations ?? {}, refuse);
  // client-node's typed objects hold a Date, raw JSON a string
  const created: unknown = svc.metadata?.creationTimestamp;
  const creationTimestamp = created instanceof Date && !Number.isNaN(created.getTime()) ? created.toISOString() : typeof created === 'string' ? created : undefined;

  const seenNames = new Set<string>();
  const portList = listOf(spec.ports);
  if (portList === undefined) refuse('spec.ports', spec.ports, 'not a list; no port');
  (portList ?? []).forEach((raw, i) => {
    if (!isObject(raw)) return refuse(`spec.ports[${i}]`, raw, 'not an object; port ignored');
    const p = raw as { name?: unknown; port?: unknown; protocol?: unknown; nodePort?: unknown };
    const portName = p.name ?? '';
    if (typeof portName !== 'string') return refuse(`spec.ports[${i}].name`, portName, 'not a string; port ignored');
    if (portName !== '' && !DNS_LABEL.test(portName)) return refuse(`spec.ports[${i}].name`, portName, 'not a DNS label; port ignored');
    if (seenNames.has(portName)) return refuse(`spec.ports[${i}].name`, portName, 'duplicate port name; port ignored');
    seenNames.add(portName);
    if (!isPort(p.port, 1)) return refuse(`spec.ports[${i}].port`, p.port, 'not a port 1..65535; port ignored');
    const protocol = parseProtocol(p.protocol);
    if (!protocol) return refuse(`spec.ports[${i}].protocol`, p.protocol, 'not TCP, UDP or SCTP; port ignored');
    let nodePort = 0;
    if (p.nodePort !== undefined && p.nodePort !== null) {
      if (isPort(p.nodePort, 0)) nodePort = p.nodePort;
      else refuse(`spec.ports[${i}].nodePort`, p.nodePort, 'not a port 0..65535; no NodePort');
    }
    for (const family of FAMILIES) {
      const clusterIP = clusterIPs.get(family);
      if (!clusterIP) continue;
      ports.push({
        namespace,
        name,
        portName,
        family,
        protocol,
        port: p.port,
        nodePort,
        clusterIP,
        externalIPs: sortUnique(externalIPs[family]),
        loadBalancerIPs: sortUnique(lbIPs[family]),
        loadBalancerSourceRanges: sortUnique(sourceRanges[family]),
        loadBalancerSourceRangesUnreadable: sourceRangesUnreadable,
        stickyMaxAgeSeconds,
        externalPolicyLocal,
        internalPolicyLocal: itp === 'Local',
        healthCheckNodePort,
        trafficDistribution,
        scheduler,
        ...(creationTimestamp !== undefined ? { creationTimestamp } : {}),
      });
    }
  });
  return { ports, refusals };
}

function schedulerAnnotation(
  annotations: Readonly<Record<string, string>>,
  refuse: (field: string, value: unknown, reason: string) => void,
): string {
  const key = annotations[SCHEDULER_ANNOTATION] !== undefined ? SCHEDULER_ANNOTATION : KUBE_ROUTER_SCHEDULER_ANNOTATION;
  const value = annotations[key];
  if (value === undefined) return '';
  if (typeof value === 'string' && SCHEDULER_NAME.test(value)) return value;
  refuse(`metadata.annotations[${key}]`, value, 'not a scheduler name ([a-z0-9]{1,15}); the configured scheduler is used');
  return '';
}

/** One endpoint of a slice, before it is paired with a port. */
export type EndpointAddress = Omit<Endpoint, 'port'>;

export interface SlicePort {
  /** '' for an unnamed port (also when the field is absent) */
  readonly name: string;
  readonly protocol: Protocol;
  readonly port: number;
}

export interface ConvertedEndpointSlice {
  /** from the kubernetes.io/service-name label; undefined: the slice is not proxied */
  readonly service: { readonly namespace: string; readonly name: string } | undefined;
  /** undefined for FQDN (and refused) address types: no endpoints */
  readonly family: IpFamily | undefined;
  readonly ports: SlicePort[];
  /** in slice order; one per endpoint with a valid first address */
  readonly endpoints: EndpointAddress[];
  readonly refusals: Refusal[];
}

/**
 * Where `slice` does not have the API's shape in a field the proxy reads: every list a list
 * (or absent), every element an object, every scalar of its type (or absent). undefined when
 * it has it. A decoder in Go (kube-proxy) fails on such an object, so it never gets it.
 */
export function endpointSliceShapeProblem(slice: unknown): { field: string; value: unknown; reason: string } | undefined {
  const optional = (v: unknown, type: 'string' | 'boolean' | 'number') => v === undefined || v === null || typeof v === type;
  if (!isObject(slice)) return { field: '', value: slice, reason: 'not an object' };
  const md = slice.metadata;
  if (md !== undefined && md !== null) {
    if (!isObject(md)) return { field: 'metadata', value: md, reason: 'not an object' };
    for (const k of ['namespace', 'name'] as const) if (!optional(md[k], 'string')) return { field: `metadata.${k}`, value: md[k], reason: 'not a string' };
    if (md.labels !== undefined && md.labels !== null) {
      if (!isObject(md.labels)) return { field: 'metadata.labels', value: md.labels, reason: 'not an object' };
      for (const [k, v] of Object.entries(md.labels)) if (typeof v !== 'string') return { field: `metadata.labels[${k}]`, value: v, reason: 'not a string' };
    }
  }
  if (!optional(slice.addressType, 'string')) return { field: 'addressType', value: slice.addressType, reason: 'not a string' };
  const ports = listOf(slice.ports);
  if (ports === undefined) return { field: 'ports', value: slice.ports, reason: 'not a list' };
  for (const [i, p] of ports.entries()) {
    if (!isObject(p)) return { field: `ports[${i}]`, value: p, reason: 'not an object' };
    if (!optional(p.name, 'string')) return { field: `ports[${i}].name`, value: p.name, reason: 'not a string' };
    if (!optional(p.port, 'number')) return { field: `ports[${i}].port`, value: p.port, reason: 'not a number' };
    if (!optional(p.protocol, 'string')) return { field: `ports[${i}].protocol`, value: p.protocol, reason: 'not a string' };
  }
  const endpoints = listOf(slice.endpoints);
  if (endpoints === undefined) return { field: 'endpoints', value: slice.endpoints, reason: 'not a list' };
  for (const [i, e] of endpoints.entries()) {
    const at = `endpoints[${i}]`;
    if (!isObject(e)) return { field: at, value: e, reason: 'not an object' };
    const addresses = listOf(e.addresses);
    if (addresses === undefined) return { field: `${at}.addresses`, value: e.addresses, reason: 'not a list' };
    for (const [j, a] of addresses.entries()) if (typeof a !== 'string') return { field: `${at}.addresses[${j}]`, value: a, reason: 'not a string' };
    if (!optional(e.nodeName, 'string')) return { field: `${at}.nodeName`, value: e.nodeName, reason: 'not a string' };
    if (e.conditions !== undefined && e.conditions !== null) {
      if (!isObject(e.conditions)) return { field: `${at}.conditions`, value: e.conditions, reason: 'not an object' };
      for (const k of ['ready', 'serving', 'terminating'] as const) {
        if (!optional(e.conditions[k], 'boolean')) return { field: `${at}.conditions.${k}`, value: e.conditions[k], reason: 'not a boolean' };
      }
    }
    if (e.hints !== undefined && e.hints !== null) {
      if (!isObject(e.hints)) return { field: `${at}.hints`, value: e.hints, reason: 'not an object' };
      for (const k of ['forZones', 'forNodes'] as const) {
        const hints = listOf(e.hints[k]);
        if (hints === undefined) return { field: `${at}.hints.${k}`, value: e.hints[k], reason: 'not a list' };
        for (const [j, h] of hints.entries()) {
          if (!isObject(h) || !optional(h.name, 'string')) return { field: `${at}.hints.${k}[${j}]`, value: h, reason: 'not an object with a string name' };
        }
      }
    }
  }
  return undefined;
}

/**
 * One EndpointSlice, with kube-proxy's endpointslicecache rules: only the first address of an
 * endpoint counts; conditions default ready=true, serving=ready (API: "defer to the ready
 * condition"), terminating=false; `isLocal` when endpoint.nodeName is this node.
 * A port without a number is skipped (and refused).
 * Throws MalformedObjectError when the slice does not have the API's shape
 * (endpointSliceShapeProblem): such a slice is refused whole.
 */
export function convertEndpointSlice(slice: V1EndpointSlice, nodeName: string): ConvertedEndpointSlice {
  const shape = endpointSliceShapeProblem(slice);
  if (shape) throw new MalformedObjectError(shape.field, text(shape.value), shape.reason);
  const namespace = slice.metadata?.namespace ?? '';
  const sliceName = slice.metadata?.name ?? '';
  const refusals: Refusal[] = [];
  const refuse = (field: string, value: unknown, reason: string): void => {
    refusals.push({ kind: 'EndpointSlice', namespace, name: sliceName, field, value: text(value), reason });
  };
  const none = (): ConvertedEndpointSlice => ({ service: undefined, family: undefined, ports: [], endpoints: [], refusals });

  const labels = slice.metadata?.labels ?? {};
  const svcName = labels[SERVICE_NAME_LABEL];
  if (svcName === undefined || svcName === '') return none(); // not a Service's slice
  if (labels[SERVICE_PROXY_NAME_LABEL] !== undefined || labels[HEADLESS_LABEL] !== undefined) return none();
  if (!DNS_LABEL.test(namespace)) {
    refuse('metadata.namespace', namespace, 'not a DNS label; slice ignored');
    return none();
  }
  if (!DNS_SUBDOMAIN.test(sliceName)) {
    refuse('metadata.name', sliceName, 'not a DNS subdomain; slice ignored');
    return none();
  }
  if (!DNS_LABEL.test(svcName)) {
    refuse(`metadata.labels[${SERVICE_NAME_LABEL}]`, svcName, 'not a Service name; slice ignored');
    return none();
  }
  const service = { namespace, name: svcName };

  let family: IpFamily;
  if (slice.addressType === 'IPv4') family = 'ipv4';
  else if (slice.addressType === 'IPv6') family = 'ipv6';
  else {
    if (slice.addressType !== 'FQDN') refuse('addressType', slice.addressType, 'unknown address type (IPv4, IPv6, FQDN); slice ignored');
    return { service, family: undefined, ports: [], endpoints: [], refusals };
  }

  const ports: SlicePort[] = [];
  (slice.ports ?? []).forEach((p, i) => {
    const name = p.name ?? '';
    if (name !== '' && !DNS_LABEL.test(name)) return refuse(`ports[${i}].name`, name, 'not a DNS label; port ignored');
    if (!isPort(p.port, 1)) return refuse(`ports[${i}].port`, p.port, 'not a port 1..65535; port ignored');
    const protocol = parseProtocol(p.protocol);
    if (!protocol) return refuse(`ports[${i}].protocol`, p.protocol, 'not TCP, UDP or SCTP; port ignored');
    ports.push({ name, protocol, port: p.port });
  });

  const endpoints: EndpointAddress[] = [];
  (slice.endpoints ?? []).forEach((e, i) => {
    const raw = e.addresses?.[0];
    if (raw === undefined) return refuse(`endpoints[${i}].addresses`, e.addresses ?? null, 'no address; endpoint ignored');
    const ip = parseIp(raw);
    if (!ip.ok) return refuse(`endpoints[${i}].addresses[0]`, raw, `${ip.reason}; endpoint ignored`);
    if (ip.family !== family) return refuse(`endpoints[${i}].addresses[0]`, raw, `not an ${slice.addressType} address; endpoint ignored`);
    const c = e.conditions ?? {};
    const ready = c.ready ?? true;
    const ep: { -readonly [K in keyof EndpointAddress]: EndpointAddress[K] } = {
      ip: ip.value,
      ready,
      serving: c.serving ?? ready,
      terminating: c.terminating ?? false,
      isLocal: nodeName !== '' && e.nodeName === nodeName,
    };
    const zones = hintNames(e.hints?.forZones);
    if (zones) ep.zoneHints = zones;
    const nodes = hintNames(e.hints?.forNodes);
    if (nodes) ep.nodeHints = nodes;
    endpoints.push(ep);
  });
  return { service, family, ports, endpoints, refusals };
}

function hintNames(list: readonly { name?: string }[] | undefined): string[] | undefined {
  const names = (list ?? []).map((h) => h.name).filter((n): n is string => typeof n === 'string' && n !== '');
  return names.length > 0 ? sortUnique(names) : undefined;
}

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
  const refusals: Refusal[] = [];
  const refuse = (field: string, value: unknown, reason: string): void => {
    refusals.push({ kind: 'Node', namespace: '', name, field, value: text(value), reason });
  };
  const zone = node.metadata?.labels?.[ZONE_LABEL] ?? '';

  const nodeIPs: string[] = [];
  const addressList = listOf(node.status?.addresses);
  if (addressList === undefined) refuse('status.addresses', node.status?.addresses, 'not a list; no node IP');
  for (const type of ['InternalIP', 'ExternalIP']) {
    (addressList ?? []).forEach((raw, i) => {
      if (!isObject(raw)) return type === 'InternalIP' ? refuse(`status.addresses[${i}]`, raw, 'not an object; ignored') : undefined;
      const a = raw as { type?: unknown; address?: unknown };
      if (a.type !== type) return;
      const ip = parseIp(a.address);
      if (!ip.ok) return refuse(`status.addresses[${i}].address`, a.address, `${ip.reason}; ignored`);
      if (!nodeIPs.includes(ip.value)) nodeIPs.push(ip.value);
    });
  }

  const podCIDRs: string[] = [];
  const podCIDRList = listOf(node.spec?.podCIDRs);
  if (podCIDRList === undefined) refuse('spec.podCIDRs', node.spec?.podCIDRs, 'not a list; spec.podCIDR used');
  const cidrField = podCIDRList && podCIDRList.length > 0 ? 'spec.podCIDRs' : 'spec.podCIDR';
  const cidrList: readonly unknown[] = cidrField === 'spec.podCIDRs' ? podCIDRList! : node.spec?.podCIDR ? [node.spec.podCIDR] : [];
  cidrList.forEach((raw, i) => {
    const cidr = parseCidr(raw);
    if (!cidr.ok) return refuse(cidrField === 'spec.podCIDRs' ? `spec.podCIDRs[${i}]` : 'spec.podCIDR', raw, `${cidr.reason}; ignored`);
    if (!podCIDRs.includes(cidr.value)) podCIDRs.push(cidr.value);
  });

  const deleting = node.metadata?.deletionTimestamp !== undefined && node.metadata.deletionTimestamp !== null;
  const tainted = (listOf(node.spec?.taints) ?? []).some((t) => isObject(t) && t.key === TO_BE_DELETED_TAINT);
  return { name, zone, nodeIPs, podCIDRs, eligible: !deleting && !tainted, refusals };
}
