/**
 * An EndpointSlice as the tracker keeps it (kube-proxy's endpointslicecache
 * newEndpointSliceInfo, which the EndpointsChangeTracker calls on each update): the raw
 * object read once, in the tracker that merges it, so a slice goes from the watch to the
 * tracker and stays there. The field readers and the refusal collector are the ones every
 * converter shares (k8s/convert-fields.ts).
 *
 * Nothing from the API server is trusted (k8s/convert.ts says how a bad value is refused);
 * a slice that is not the API's shape (a list that is not a list, a null element) is refused
 * whole.
 */
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { Endpoint, Protocol, Refusal } from '../model/service';
import { parseIpField } from '../model/parse-ip';
import { IpFamily } from '../model/ip-family';
import { MalformedObjectError } from '../errors';
import {
  DNS_LABEL,
  DNS_SUBDOMAIN,
  HEADLESS_LABEL,
  RefusalCollector,
  SERVICE_NAME_LABEL,
  SERVICE_PROXY_NAME_LABEL,
  isObject,
  isPort,
  listOf,
  parseProtocol,
  sortUnique,
  text,
} from '../k8s/convert-fields';

/** One endpoint of a slice, before it is paired with a port. */
export type EndpointAddress = Omit<Endpoint, 'port'>;

/** One port of an EndpointSlice (ports[]). */
export interface SlicePort {
  /** '' for an unnamed port (also when the field is absent) */
  readonly name: string;
  readonly protocol: Protocol;
  readonly port: number;
}

/** An EndpointSlice as the proxy sees it: its Service, family, ports, endpoints and refusals. */
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
export function endpointSliceShapeProblem(
  slice: unknown,
): { field: string; value: unknown; reason: string } | undefined {
  const optional = (v: unknown, type: 'string' | 'boolean' | 'number') =>
    v === undefined || v === null || typeof v === type;
  if (!isObject(slice)) return { field: '', value: slice, reason: 'not an object' };
  const md = slice.metadata;
  if (md !== undefined && md !== null) {
    if (!isObject(md)) return { field: 'metadata', value: md, reason: 'not an object' };
    for (const k of ['namespace', 'name'] as const)
      if (!optional(md[k], 'string')) return { field: `metadata.${k}`, value: md[k], reason: 'not a string' };
    if (md.labels !== undefined && md.labels !== null) {
      if (!isObject(md.labels)) return { field: 'metadata.labels', value: md.labels, reason: 'not an object' };
      const labels = md.labels;
      for (const k in labels)
        if (typeof labels[k] !== 'string')
          return { field: `metadata.labels[${k}]`, value: labels[k], reason: 'not a string' };
    }
  }
  if (!optional(slice.addressType, 'string'))
    return { field: 'addressType', value: slice.addressType, reason: 'not a string' };
  const ports = listOf(slice.ports);
  if (ports === undefined) return { field: 'ports', value: slice.ports, reason: 'not a list' };
  // index loops, and a field's name made only when it is refused: this runs on every watch event
  for (let i = 0; i < ports.length; i++) {
    const p = ports[i];
    if (!isObject(p)) return { field: `ports[${i}]`, value: p, reason: 'not an object' };
    if (!optional(p.name, 'string')) return { field: `ports[${i}].name`, value: p.name, reason: 'not a string' };
    if (!optional(p.port, 'number')) return { field: `ports[${i}].port`, value: p.port, reason: 'not a number' };
    if (!optional(p.protocol, 'string'))
      return { field: `ports[${i}].protocol`, value: p.protocol, reason: 'not a string' };
  }
  const endpoints = listOf(slice.endpoints);
  if (endpoints === undefined) return { field: 'endpoints', value: slice.endpoints, reason: 'not a list' };
  for (let i = 0; i < endpoints.length; i++) {
    const e = endpoints[i];
    const at = () => `endpoints[${i}]`;
    if (!isObject(e)) return { field: at(), value: e, reason: 'not an object' };
    const addresses = listOf(e.addresses);
    if (addresses === undefined) return { field: `${at()}.addresses`, value: e.addresses, reason: 'not a list' };
    for (let j = 0; j < addresses.length; j++) {
      if (typeof addresses[j] !== 'string')
        return { field: `${at()}.addresses[${j}]`, value: addresses[j], reason: 'not a string' };
    }
    if (!optional(e.nodeName, 'string'))
      return { field: `${at()}.nodeName`, value: e.nodeName, reason: 'not a string' };
    const c = e.conditions;
    if (c !== undefined && c !== null) {
      if (!isObject(c)) return { field: `${at()}.conditions`, value: c, reason: 'not an object' };
      if (!optional(c.ready, 'boolean'))
        return { field: `${at()}.conditions.ready`, value: c.ready, reason: 'not a boolean' };
      if (!optional(c.serving, 'boolean'))
        return { field: `${at()}.conditions.serving`, value: c.serving, reason: 'not a boolean' };
      if (!optional(c.terminating, 'boolean'))
        return { field: `${at()}.conditions.terminating`, value: c.terminating, reason: 'not a boolean' };
    }
    if (e.hints !== undefined && e.hints !== null) {
      if (!isObject(e.hints)) return { field: `${at()}.hints`, value: e.hints, reason: 'not an object' };
      for (const k of ['forZones', 'forNodes'] as const) {
        const hints = listOf(e.hints[k]);
        if (hints === undefined) return { field: `${at()}.hints.${k}`, value: e.hints[k], reason: 'not a list' };
        for (let j = 0; j < hints.length; j++) {
          const h = hints[j];
          if (!isObject(h) || !optional(h.name, 'string'))
            return { field: `${at()}.hints.${k}[${j}]`, value: h, reason: 'not an object with a string name' };
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
  const r = new RefusalCollector('EndpointSlice', namespace, sliceName);
  const none = (): ConvertedEndpointSlice => ({
    service: undefined,
    family: undefined,
    ports: [],
    endpoints: [],
    refusals: r.refusals,
  });

  const labels = slice.metadata?.labels ?? {};
  const svcName = labels[SERVICE_NAME_LABEL];
  if (svcName === undefined || svcName === '') return none(); // not a Service's slice
  if (labels[SERVICE_PROXY_NAME_LABEL] !== undefined || labels[HEADLESS_LABEL] !== undefined) return none();
  if (!DNS_LABEL.test(namespace)) {
    r.refuse('metadata.namespace', namespace, 'not a DNS label; slice ignored');
    return none();
  }
  if (!DNS_SUBDOMAIN.test(sliceName)) {
    r.refuse('metadata.name', sliceName, 'not a DNS subdomain; slice ignored');
    return none();
  }
  if (!DNS_LABEL.test(svcName)) {
    r.refuse(`metadata.labels[${SERVICE_NAME_LABEL}]`, svcName, 'not a Service name; slice ignored');
    return none();
  }
  const service = { namespace, name: svcName };

  let family: IpFamily;
  if (slice.addressType === 'IPv4') family = 'ipv4';
  else if (slice.addressType === 'IPv6') family = 'ipv6';
  else {
    if (slice.addressType !== 'FQDN')
      r.refuse('addressType', slice.addressType, 'unknown address type (IPv4, IPv6, FQDN); slice ignored');
    return { service, family: undefined, ports: [], endpoints: [], refusals: r.refusals };
  }

  const ports: SlicePort[] = [];
  (slice.ports ?? []).forEach((p, i) => {
    const name = p.name ?? '';
    if (name !== '' && !DNS_LABEL.test(name))
      return r.refuse(`ports[${i}].name`, name, 'not a DNS label; port ignored');
    if (!isPort(p.port, 1)) return r.refuse(`ports[${i}].port`, p.port, 'not a port 1..65535; port ignored');
    const protocol = parseProtocol(p.protocol);
    if (!protocol) return r.refuse(`ports[${i}].protocol`, p.protocol, 'not TCP, UDP or SCTP; port ignored');
    ports.push({ name, protocol, port: p.port });
  });

  const endpoints: EndpointAddress[] = [];
  (slice.endpoints ?? []).forEach((e, i) => {
    const raw = e.addresses?.[0];
    if (raw === undefined)
      return r.refuse(`endpoints[${i}].addresses`, e.addresses ?? null, 'no address; endpoint ignored');
    const ip = parseIpField(raw);
    if (!ip.ok) return r.refuse(`endpoints[${i}].addresses[0]`, raw, `${ip.reason}; endpoint ignored`);
    if (ip.family !== family)
      return r.refuse(`endpoints[${i}].addresses[0]`, raw, `not an ${slice.addressType} address; endpoint ignored`);
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
  return { service, family, ports, endpoints, refusals: r.refusals };
}

function hintNames(list: readonly { name?: string }[] | undefined): string[] | undefined {
  if (list === undefined || list === null || list.length === 0) return undefined;
  const names = (list ?? []).map((h) => h.name).filter((n): n is string => typeof n === 'string' && n !== '');
  return names.length > 0 ? sortUnique(names) : undefined;
}
