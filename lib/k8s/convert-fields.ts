/**
 * What the converters (convert.ts, convert-service.ts) share: the names kube-ipvs reads, the
 * small readers every object's fields go through, and the one refusal collector.
 */
import { Protocol, Refusal } from '../model/service';

/** Service annotation naming the IPVS scheduler for that Service (kube-ipvs's own). */
export const SCHEDULER_ANNOTATION = 'kube-ipvs.io/scheduler';
/** kube-ipvs.io/scheduler-flags (model/service.ts: the planner names it in its refusals too). */
export { SCHEDULER_FLAGS_ANNOTATION } from '../model/service';
/** kube-router's scheduler annotation, read when kube-ipvs.io/scheduler is absent. */
export const KUBE_ROUTER_SCHEDULER_ANNOTATION = 'kube-router.io/service.scheduler';
/** Label of a Service served by another proxy; kube-proxy (and kube-ipvs) skip it. */
export const SERVICE_PROXY_NAME_LABEL = 'service.kubernetes.io/service-proxy-name';
/** Label the EndpointSlice controller puts on a headless Service's slices; kube-proxy skips those slices. */
export const HEADLESS_LABEL = 'service.kubernetes.io/headless';
/** EndpointSlice label naming the slice's Service. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
/** Node label with the node's zone (topology-aware routing). */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
/** Taint of a Node the cluster autoscaler is deleting; such a node is not eligible. */
export const TO_BE_DELETED_TAINT = 'ToBeDeletedByClusterAutoscaler';

/** RFC 1123 label: namespaces, Service names (a stricter 1035 label in the API) and port names. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** RFC 1123 subdomain: EndpointSlice and Node names. */
export const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The refusals of one object, in the order its fields are read. Each converter makes one;
 * every refusal carries the object's kind, namespace and name.
 */
export class RefusalCollector {
  readonly refusals: Refusal[] = [];

  constructor(
    private readonly kind: 'Service' | 'EndpointSlice' | 'Node',
    private readonly namespace: string,
    private readonly name: string,
  ) {}

  refuse(field: string, value: unknown, reason: string): void {
    this.refusals.push({
      kind: this.kind,
      namespace: this.namespace,
      name: this.name,
      field,
      value: text(value),
      reason,
    });
  }
}

/**
 * Characters of a refused value a log line or an Event quotes: a tenant's 100 KB annotation
 * must not become a 100 KB log line, Event and remembered refusal on every node.
 */
export const MAX_QUOTED_CHARS = 200;

/** `s`, or its first MAX_QUOTED_CHARS characters (not half a surrogate pair) and how long it was. */
export function bounded(s: string): string {
  if (s.length <= MAX_QUOTED_CHARS) return s;
  let end = MAX_QUOTED_CHARS;
  const last = s.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${s.slice(0, end)}... (${Buffer.byteLength(s)} bytes)`;
}

/** A field's value as a refusal shows it: strings as they are, anything else as JSON; bounded. */
export function text(v: unknown): string {
  if (typeof v === 'string') return bounded(v);
  try {
    return bounded(JSON.stringify(v) ?? String(v));
  } catch {
    return bounded(String(v));
  }
}

/** Is `v` an integer port in min..65535? */
export function isPort(v: unknown, min: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= 65535;
}

/** A port's protocol: TCP when unset, TCP/UDP/SCTP, undefined for anything else. */
export function parseProtocol(v: unknown): Protocol | undefined {
  if (v === undefined || v === null || v === '') return 'TCP';
  return v === 'TCP' || v === 'UDP' || v === 'SCTP' ? v : undefined;
}

/** The values, duplicates dropped, sorted. */
export function sortUnique(values: Iterable<string>): string[] {
  return [...new Set(values)].sort();
}

/** Is `v` a JSON object (not null, not an array)? */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The elements of an optional list field: [] when absent (undefined or null); `undefined`
 * when it is something else than an array (type-confused JSON; the caller refuses it).
 */
export function listOf(v: unknown): readonly unknown[] | undefined {
  if (v === undefined || v === null) return [];
  return Array.isArray(v) ? v : undefined;
}
