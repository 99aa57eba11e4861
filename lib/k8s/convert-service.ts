/**
 * A Service -> its validated ServicePorts (the rules are in convert.ts's header). One reader
 * per field group, each refusing what it cannot read into the Service's RefusalCollector, in
 * the order the fields are read; convertService then fans the ports out over the families.
 */
import type { V1Service, V1ServiceSpec, V1ServiceStatus } from '@kubernetes/client-node';
import { Protocol, Refusal, ServicePort } from '../model/service';
import { parseCidrFieldSloppy, parseIpField } from '../model/parse-ip';
import { specialAddressProblem } from '../model/address';
import { IP_VS_SCHEDNAME_MAXLEN } from '../uapi/ip_vs';
import { IpFamily } from '../model/ip-family';
import { SCHEDULER_FLAG_NAMES, SchedulerFlag, isSchedulerFlag, sortSchedulerFlags } from '../model/ipvs';
import {
  DNS_LABEL,
  KUBE_ROUTER_SCHEDULER_ANNOTATION,
  RefusalCollector,
  SCHEDULER_ANNOTATION,
  SCHEDULER_FLAGS_ANNOTATION,
  SERVICE_PROXY_NAME_LABEL,
  isObject,
  isPort,
  listOf,
  parseProtocol,
  sortUnique,
} from './convert-fields';

/** API default of sessionAffinityConfig.clientIP.timeoutSeconds (3 h); the API maximum is 1 day. */
export const DEFAULT_STICKY_SECONDS = 10800;
/** The API maximum of sessionAffinityConfig.clientIP.timeoutSeconds (1 day). */
export const MAX_STICKY_SECONDS = 86400;

const SCHEDULER_NAME = new RegExp(`^[a-z0-9]{1,${IP_VS_SCHEDNAME_MAXLEN - 1}}$`);
const TRAFFIC_DISTRIBUTIONS: ReadonlySet<string> = new Set(['PreferClose', 'PreferSameZone', 'PreferSameNode']);
const SERVICE_TYPES: ReadonlySet<string> = new Set(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']);
const FAMILIES: readonly IpFamily[] = ['ipv4', 'ipv6'];

/** A Service as the proxy sees it: its ServicePorts and the fields refused. */
export interface ConvertedService {
  readonly ports: ServicePort[];
  readonly refusals: Refusal[];
}

type ByFamily = Record<IpFamily, string[]>;
const byFamily = (): ByFamily => ({ ipv4: [], ipv6: [] });
type Policy = 'Cluster' | 'Local';

/** The Service's ports, one ServicePort per spec.ports[] per cluster IP family. */
export function convertService(svc: V1Service): ConvertedService {
  const namespace = svc.metadata?.namespace ?? '';
  const name = svc.metadata?.name ?? '';
  const r = new RefusalCollector('Service', namespace, name);
  const none = (): ConvertedService => ({ ports: [], refusals: r.refusals });

  if (!DNS_LABEL.test(namespace)) {
    r.refuse('metadata.namespace', namespace, 'not a DNS label; Service ignored');
    return none();
  }
  if (!DNS_LABEL.test(name)) {
    r.refuse('metadata.name', name, 'not a DNS label; Service ignored');
    return none();
  }
  if ((svc.metadata?.labels ?? {})[SERVICE_PROXY_NAME_LABEL] !== undefined) return none();
  const spec = svc.spec ?? {};
  const type = readType(spec, r);
  if (type === 'ExternalName' || isHeadless(spec)) return none();
  const clusterIPs = readClusterIPs(spec, r);
  if (clusterIPs.size === 0) return none();

  const external = readExternalIPs(spec, r);
  const lbIPs = readIngressIPs(svc.status, r);
  const sourceRanges = readSourceRanges(spec, r);
  const stickyMaxAgeSeconds = readAffinity(spec, r);
  const etp = readPolicy('spec.externalTrafficPolicy', spec.externalTrafficPolicy, r);
  const itp = readPolicy('spec.internalTrafficPolicy', spec.internalTrafficPolicy, r);
  // kube-proxy apiservice.ExternallyAccessible: externalTrafficPolicy means something only then
  const externallyAccessible =
    type === 'LoadBalancer' || type === 'NodePort' || (type === 'ClusterIP' && external.listed > 0);
  const trafficDistribution = readTrafficDistribution(spec, r);
  const healthCheckNodePort = readHealthCheckNodePort(spec, type, etp, r);
  const scheduler = readSchedulerAnnotation(svc.metadata?.annotations ?? {}, r);
  const schedulerFlags = readSchedulerFlagsAnnotation(svc.metadata?.annotations ?? {}, r);
  const creationTimestamp = readCreationTimestamp(svc);

  const ports: ServicePort[] = [];
  for (const p of readPorts(spec, r)) {
    for (const family of FAMILIES) {
      const clusterIP = clusterIPs.get(family);
      if (!clusterIP) continue;
      ports.push({
        namespace,
        name,
        portName: p.portName,
        family,
        protocol: p.protocol,
        port: p.port,
        nodePort: p.nodePort,
        clusterIP,
        externalIPs: sortUnique(external.ips[family]),
        loadBalancerIPs: sortUnique(lbIPs[family]),
        loadBalancerSourceRanges: sortUnique(sourceRanges.ranges[family]),
        loadBalancerSourceRangesUnreadable: sourceRanges.unreadable,
        stickyMaxAgeSeconds,
        externalPolicyLocal: externallyAccessible && etp === 'Local',
        internalPolicyLocal: itp === 'Local',
        healthCheckNodePort,
        trafficDistribution,
        scheduler,
        ...(schedulerFlags !== undefined ? { schedulerFlags } : {}),
        ...(creationTimestamp !== undefined ? { creationTimestamp } : {}),
      });
    }
  }
  return { ports, refusals: r.refusals };
}

function readType(spec: V1ServiceSpec, r: RefusalCollector): string {
  const type = spec.type ?? 'ClusterIP';
  if (SERVICE_TYPES.has(type)) return type;
  r.refuse('spec.type', type, 'unknown type (ClusterIP, NodePort, LoadBalancer, ExternalName); treated as ClusterIP');
  return 'ClusterIP';
}

/** clusterIP None, or neither clusterIP nor clusterIPs: skipped without a refusal, as kube-proxy does. */
function isHeadless(spec: V1ServiceSpec): boolean {
  return spec.clusterIP === 'None' || ((spec.clusterIP ?? '') === '' && (listOf(spec.clusterIPs) ?? []).length === 0);
}

/** The cluster IP of each family (they decide which families the Service has). */
function readClusterIPs(spec: V1ServiceSpec, r: RefusalCollector): Map<IpFamily, string> {
  const clusterIPs = new Map<IpFamily, string>();
  const list = listOf(spec.clusterIPs);
  if (list === undefined) r.refuse('spec.clusterIPs', spec.clusterIPs, 'not a list; spec.clusterIP used');
  const plural = list !== undefined && list.length > 0;
  (plural ? list : [spec.clusterIP]).forEach((raw, i) => {
    const field = plural ? `spec.clusterIPs[${i}]` : 'spec.clusterIP';
    if (raw === 'None') return;
    const ip = parseIpField(raw);
    if (!ip.ok) return r.refuse(field, raw, `${ip.reason}; no virtual server for this family`);
    if (clusterIPs.has(ip.family))
      return r.refuse(field, raw, `a second ${ip.family} cluster IP (one per family); ignored`);
    clusterIPs.set(ip.family, ip.value);
  });
  return clusterIPs;
}

/** spec.externalIPs by family; `listed` counts the list's elements, readable or not. */
function readExternalIPs(spec: V1ServiceSpec, r: RefusalCollector): { ips: ByFamily; listed: number } {
  const ips = byFamily();
  const list = listOf(spec.externalIPs);
  if (list === undefined) r.refuse('spec.externalIPs', spec.externalIPs, 'not a list; no externalIP');
  (list ?? []).forEach((raw, i) => {
    const ip = parseIpField(raw);
    if (!ip.ok) return r.refuse(`spec.externalIPs[${i}]`, raw, `${ip.reason}; ignored`);
    const special = specialAddressProblem(ip.value);
    if (special) return r.refuse(`spec.externalIPs[${i}]`, raw, `${special} is never a Service address; ignored`);
    ips[ip.family].push(ip.value);
  });
  return { ips, listed: (list ?? []).length };
}

/** status.loadBalancer.ingress[].ip by family, for the ingresses in VIP mode. */
function readIngressIPs(status: V1ServiceStatus | undefined, r: RefusalCollector): ByFamily {
  const ips = byFamily();
  const list = listOf(status?.loadBalancer?.ingress);
  if (list === undefined)
    r.refuse('status.loadBalancer.ingress', status?.loadBalancer?.ingress, 'not a list; no load-balancer IP');
  (list ?? []).forEach((raw, i) => {
    const at = `status.loadBalancer.ingress[${i}]`;
    if (!isObject(raw)) return r.refuse(at, raw, 'not an object; ingress ignored');
    const ing = raw as { ip?: unknown; ipMode?: unknown };
    if (ing.ip === undefined || ing.ip === null || ing.ip === '') return; // hostname-only ingress: nothing to program
    const mode = ing.ipMode ?? 'VIP';
    if (mode === 'Proxy') return; // the load balancer proxies: traffic arrives for the node, not the VIP
    if (mode !== 'VIP') return r.refuse(`${at}.ipMode`, mode, 'unknown ipMode (VIP or Proxy); ingress ignored');
    const ip = parseIpField(ing.ip);
    if (!ip.ok) return r.refuse(`${at}.ip`, ing.ip, `${ip.reason}; ingress ignored`);
    const special = specialAddressProblem(ip.value);
    if (special) return r.refuse(`${at}.ip`, ing.ip, `${special} is never a Service address; ingress ignored`);
    ips[ip.family].push(ip.value);
  });
  return ips;
}

/**
 * Source ranges fail closed: a range that cannot be read (kube-proxy would skip it) could
 * be the one that was meant to keep the internet out, so the load balancer then admits
 * nobody (a firewall with no range) rather than everybody.
 */
function readSourceRanges(spec: V1ServiceSpec, r: RefusalCollector): { ranges: ByFamily; unreadable: boolean } {
  const ranges = byFamily();
  let unreadable = false;
  const list = listOf(spec.loadBalancerSourceRanges);
  const closed = 'the load balancer admits no client until the ranges are fixed';
  if (list === undefined) {
    r.refuse('spec.loadBalancerSourceRanges', spec.loadBalancerSourceRanges, `not a list; ${closed}`);
    unreadable = true;
  }
  (list ?? []).forEach((raw, i) => {
    // kube-proxy trims blanks around each range and reads it sloppily (leading zeros decimal)
    const cidr = parseCidrFieldSloppy(typeof raw === 'string' ? raw.trim() : raw);
    if (!cidr.ok) {
      unreadable = true;
      return r.refuse(`spec.loadBalancerSourceRanges[${i}]`, raw, `${cidr.reason}; ${closed}`);
    }
    ranges[cidr.family].push(cidr.value);
  });
  return { ranges: unreadable ? byFamily() : ranges, unreadable };
}

/** The session-affinity timeout in seconds; 0 without ClientIP affinity. */
function readAffinity(spec: V1ServiceSpec, r: RefusalCollector): number {
  const affinity = spec.sessionAffinity ?? 'None';
  if (affinity === 'ClientIP') {
    const t = spec.sessionAffinityConfig?.clientIP?.timeoutSeconds;
    if (t === undefined || t === null) return DEFAULT_STICKY_SECONDS;
    if (typeof t === 'number' && Number.isInteger(t) && t >= 1 && t <= MAX_STICKY_SECONDS) return t;
    r.refuse(
      'spec.sessionAffinityConfig.clientIP.timeoutSeconds',
      t,
      `not an integer 1..${MAX_STICKY_SECONDS}; ${DEFAULT_STICKY_SECONDS} used`,
    );
    return DEFAULT_STICKY_SECONDS;
  }
  if (affinity !== 'None' && affinity !== '') {
    r.refuse('spec.sessionAffinity', affinity, 'unknown session affinity (None or ClientIP); None used');
  }
  return 0;
}

/** externalTrafficPolicy or internalTrafficPolicy. */
function readPolicy(field: string, v: string | undefined, r: RefusalCollector): Policy {
  if (v === undefined || v === '' || v === 'Cluster') return 'Cluster';
  if (v === 'Local') return 'Local';
  r.refuse(field, v, 'unknown traffic policy (Cluster or Local); Cluster used');
  return 'Cluster';
}

function readTrafficDistribution(spec: V1ServiceSpec, r: RefusalCollector): string {
  const distribution = spec.trafficDistribution ?? '';
  if (distribution === '' || TRAFFIC_DISTRIBUTIONS.has(distribution)) return distribution;
  r.refuse(
    'spec.trafficDistribution',
    distribution,
    'unknown traffic distribution (PreferClose, PreferSameZone, PreferSameNode); ignored',
  );
  return '';
}

/** kube-proxy apiservice.NeedsHealthCheck: LoadBalancer with externalTrafficPolicy Local. */
function readHealthCheckNodePort(spec: V1ServiceSpec, type: string, etp: Policy, r: RefusalCollector): number {
  if (
    type !== 'LoadBalancer' ||
    etp !== 'Local' ||
    spec.healthCheckNodePort === undefined ||
    spec.healthCheckNodePort === 0
  )
    return 0;
  if (isPort(spec.healthCheckNodePort, 0)) return spec.healthCheckNodePort;
  r.refuse('spec.healthCheckNodePort', spec.healthCheckNodePort, 'not a port 0..65535; no health check port');
  return 0;
}

/** kube-ipvs.io/scheduler, else kube-router.io/service.scheduler; '' for the configured scheduler. */
function readSchedulerAnnotation(annotations: Readonly<Record<string, string>>, r: RefusalCollector): string {
  const key = annotations[SCHEDULER_ANNOTATION] !== undefined ? SCHEDULER_ANNOTATION : KUBE_ROUTER_SCHEDULER_ANNOTATION;
  const value = annotations[key];
  if (value === undefined) return '';
  if (typeof value === 'string' && SCHEDULER_NAME.test(value)) return value;
  r.refuse(
    `metadata.annotations[${key}]`,
    value,
    'not a scheduler name ([a-z0-9]{1,15}); the configured scheduler is used',
  );
  return '';
}

/**
 * kube-ipvs.io/scheduler-flags: comma-separated flag names (blanks around each ignored); an
 * unknown name is refused alone. undefined without the annotation, or when it names no known
 * flag; [] for an empty value (no scheduler flag, kube-proxy's mh-port default included). Whether each
 * flag fits the Service's scheduler is the planner's to say (the scheduler may be the node's).
 */
function readSchedulerFlagsAnnotation(
  annotations: Readonly<Record<string, string>>,
  r: RefusalCollector,
): readonly SchedulerFlag[] | undefined {
  const value: unknown = annotations[SCHEDULER_FLAGS_ANNOTATION];
  if (value === undefined) return undefined;
  const field = `metadata.annotations[${SCHEDULER_FLAGS_ANNOTATION}]`;
  if (typeof value !== 'string') {
    r.refuse(field, value, "not a string; the node's scheduler flags are used");
    return undefined;
  }
  const words = value
    .split(',')
    .map((w) => w.trim())
    .filter((w) => w !== '');
  const flags = words.filter(isSchedulerFlag);
  for (const word of words)
    if (!isSchedulerFlag(word))
      r.refuse(field, word, `not a scheduler flag (${SCHEDULER_FLAG_NAMES.join(', ')}); ignored`);
  // only unknown words: as if the annotation were absent (not "no flags")
  if (words.length > 0 && flags.length === 0) return undefined;
  return sortSchedulerFlags(flags);
}

function readCreationTimestamp(svc: V1Service): string | undefined {
  // client-node's typed objects hold a Date, raw JSON a string
  const created: unknown = svc.metadata?.creationTimestamp;
  if (created instanceof Date && !Number.isNaN(created.getTime())) return created.toISOString();
  return typeof created === 'string' ? created : undefined;
}

interface PortRead {
  readonly portName: string;
  readonly protocol: Protocol;
  readonly port: number;
  readonly nodePort: number;
}

/** spec.ports, in order, without the refused ones. */
function readPorts(spec: V1ServiceSpec, r: RefusalCollector): PortRead[] {
  const out: PortRead[] = [];
  const seenNames = new Set<string>();
  const list = listOf(spec.ports);
  if (list === undefined) r.refuse('spec.ports', spec.ports, 'not a list; no port');
  (list ?? []).forEach((raw, i) => {
    const at = `spec.ports[${i}]`;
    if (!isObject(raw)) return r.refuse(at, raw, 'not an object; port ignored');
    const p = raw as { name?: unknown; port?: unknown; protocol?: unknown; nodePort?: unknown };
    const portName = p.name ?? '';
    if (typeof portName !== 'string') return r.refuse(`${at}.name`, portName, 'not a string; port ignored');
    if (portName !== '' && !DNS_LABEL.test(portName))
      return r.refuse(`${at}.name`, portName, 'not a DNS label; port ignored');
    if (seenNames.has(portName)) return r.refuse(`${at}.name`, portName, 'duplicate port name; port ignored');
    seenNames.add(portName);
    if (!isPort(p.port, 1)) return r.refuse(`${at}.port`, p.port, 'not a port 1..65535; port ignored');
    const protocol = parseProtocol(p.protocol);
    if (!protocol) return r.refuse(`${at}.protocol`, p.protocol, 'not TCP, UDP or SCTP; port ignored');
    let nodePort = 0;
    if (p.nodePort !== undefined && p.nodePort !== null) {
      if (isPort(p.nodePort, 0)) nodePort = p.nodePort;
      else r.refuse(`${at}.nodePort`, p.nodePort, 'not a port 0..65535; no NodePort');
    }
    out.push({ portName, protocol, port: p.port, nodePort });
  });
  return out;
}
