/**
 * The endpoints of every Service, merged from its EndpointSlices (kube-proxy's
 * EndpointsChangeTracker + endpointslicecache): a Service may have many slices; an endpoint
 * (ip:port of one service port) listed in two slices counts once, and the local copy wins
 * when the copies disagree on the node. Slices are merged in name order, so the result does
 * not depend on event order.
 */
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { ConvertedEndpointSlice, SERVICE_NAME_LABEL, SlicePort, convertEndpointSlice } from '../k8s/convert';
import { MalformedObjectError } from '../errors';
import { hostPort } from '../model/ipvs';
import { Endpoint, Protocol, Refusal, ServiceName, ServicePort } from '../model/service';
import { AF_INET, AF_INET6 } from '../uapi/inet';
import { ChangeTracker, Snapshot } from './pending-changes';
import { IpFamily } from '../model/ip-family';

interface SliceState {
  /** "ns/name" of the Service, '' when the slice belongs to none */
  readonly service: ServiceName;
  readonly family: IpFamily | undefined;
  /** the slice's endpoints as Endpoints of each of its ports (the merge reuses these objects) */
  readonly ports: readonly { readonly port: SlicePort; readonly endpoints: readonly Endpoint[] }[];
  readonly refusals: readonly Refusal[];
}

/**
 * What the tracker keeps of a converted slice: its endpoints made Endpoints once per port, so
 * a Service's merged endpoints are these same objects (one per endpoint and port) and not
 * copies beside the converter's port-less ones.
 */
/**
 * The endpoint with its port, the keys in the order `{ ...e, port }` gives them. Written out
 * when there are no hints: a spread object gets its last key out of line (a separate
 * property array, ~40 bytes per endpoint and port: 3.8 MB at 100,000 endpoints).
 */
function withPort(e: ConvertedEndpointSlice['endpoints'][number], port: number): Endpoint {
  if (e.zoneHints !== undefined || e.nodeHints !== undefined) return { ...e, port };
  return { ip: e.ip, ready: e.ready, serving: e.serving, terminating: e.terminating, isLocal: e.isLocal, port };
}

function sliceState(service: ServiceName, converted: ConvertedEndpointSlice): SliceState {
  const ports = converted.family === undefined ? [] : converted.ports.map((port) => ({
    port,
    endpoints: converted.endpoints.map((e) => withPort(e, port.port)),
  }));
  return { service, family: converted.family, ports, refusals: converted.refusals };
}

interface ServiceEndpoints {
  /** portKey(name, protocol, family) -> endpoints sorted by ip:port */
  readonly byPort: ReadonlyMap<string, readonly Endpoint[]>;
  readonly refusals: readonly Refusal[];
  readonly snapshot: Snapshot;
}

const portKey = (portName: string, protocol: Protocol, family: IpFamily): string => `${portName}/${protocol}/${family}`;
/** The Service a slice names by its label, read defensively ('' when none can be read). */
function serviceOf(slice: V1EndpointSlice): ServiceName {
  const namespace = slice.metadata?.namespace;
  const svc = (slice.metadata?.labels as Record<string, unknown> | undefined)?.[SERVICE_NAME_LABEL];
  return typeof namespace === 'string' && typeof svc === 'string' && svc !== '' ? `${namespace}/${svc}` : '';
}

const sliceKeyOf = (s: V1EndpointSlice): string => `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
const NONE: readonly never[] = [];
const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export class EndpointSliceTracker extends ChangeTracker {
  private readonly slices = new Map<string, SliceState>();
  private readonly slicesOf = new Map<ServiceName, Set<string>>();
  private readonly merged = new Map<ServiceName, ServiceEndpoints>();

  /** `nodeName`: this node (an endpoint whose nodeName matches is local). */
  constructor(private readonly nodeName: string) {
    super();
  }

  onAdd(slice: V1EndpointSlice): Set<ServiceName> {
    return this.apply(sliceKeyOf(slice), slice);
  }

  /** An update that changes no endpoint, port or refusal returns an empty set. */
  onUpdate(old: V1EndpointSlice, slice: V1EndpointSlice): Set<ServiceName> {
    const changed = this.apply(sliceKeyOf(slice), slice);
    if (sliceKeyOf(old) !== sliceKeyOf(slice)) for (const n of this.apply(sliceKeyOf(old), undefined)) changed.add(n);
    return changed;
  }

  onDelete(slice: V1EndpointSlice): Set<ServiceName> {
    return this.apply(sliceKeyOf(slice), undefined);
  }

  private apply(sliceKey: string, slice: V1EndpointSlice | undefined): Set<ServiceName> {
    const touched = new Set<ServiceName>();
    const before = this.slices.get(sliceKey);
    // converted before anything is changed: a slice that cannot be converted leaves the
    // tracker as it was, but for the refusal that says so
    const after = slice ? this.convert(sliceKey, slice, before) : undefined;
    if (before) {
      touched.add(before.service);
      const set = this.slicesOf.get(before.service);
      set?.delete(sliceKey);
      if (set?.size === 0) this.slicesOf.delete(before.service);
      this.slices.delete(sliceKey);
    }
    if (after) {
      const service = after.service;
      this.slices.set(sliceKey, after);
      let set = this.slicesOf.get(service);
      if (!set) this.slicesOf.set(service, (set = new Set()));
      set.add(sliceKey);
      touched.add(service);
    }
    const changed = new Set<ServiceName>();
    for (const name of touched) {
      const prev = this.merged.get(name);
      const next = this.merge(name);
      if (next) this.merged.set(name, next);
      else this.merged.delete(name);
      if (name !== '' && this.changes.record(name, prev?.snapshot, next?.snapshot)) changed.add(name);
    }
    return changed;
  }

  /**
   * The state a slice leaves. A slice the converter refuses whole (not the API's shape, or a
   * converter fault) is refused with a refusal naming why (the proxier logs it and posts an
   * Event): its previous version is kept, as kube-proxy keeps it when an object fails to
   * decode; a slice never seen before contributes no endpoint.
   */
  private convert(sliceKey: string, slice: V1EndpointSlice, before: SliceState | undefined): SliceState {
    try {
      const converted = convertEndpointSlice(slice, this.nodeName);
      const service = converted.service ? `${converted.service.namespace}/${converted.service.name}` : '';
      return sliceState(service, converted);
    } catch (e) {
      const bad = e instanceof MalformedObjectError ? e : undefined;
      const [namespace = '', name = ''] = sliceKey.split('/');
      const kept = before ? 'its previous version is kept' : 'no endpoint used';
      const refusal: Refusal = {
        kind: 'EndpointSlice',
        namespace,
        name,
        field: bad ? bad.field || '(object)' : '(object)',
        value: bad ? bad.value : '',
        reason: `${bad ? bad.reason : `cannot be converted (${e instanceof Error ? e.message : String(e)})`}; slice refused whole, ${kept}`,
      };
      if (before) return { ...before, refusals: [...before.refusals.filter((r) => !r.reason.includes('slice refused whole')), refusal] };
      return { service: serviceOf(slice), family: undefined, ports: [], refusals: [refusal] };
    }
  }

  private merge(name: ServiceName): ServiceEndpoints | undefined {
    const keys = [...(this.slicesOf.get(name) ?? [])].sort(byString);
    if (keys.length === 0) return undefined;
    const byPort = new Map<string, Map<string, Endpoint>>();
    const refusals: Refusal[] = [];
    for (const k of keys) {
      const slice = this.slices.get(k)!;
      refusals.push(...slice.refusals);
      const family = slice.family;
      if (!family) continue;
      const af = family === 'ipv4' ? AF_INET : AF_INET6;
      for (const { port, endpoints } of slice.ports) {
        const pk = portKey(port.name, port.protocol, family);
        let eps = byPort.get(pk);
        if (!eps) byPort.set(pk, (eps = new Map()));
        for (const e of endpoints) {
          const id = hostPort(af, e.ip, e.port);
          const have = eps.get(id);
          if (have && (have.isLocal || !e.isLocal)) continue;
          eps.set(id, e);
        }
      }
    }
    const out = new Map<string, readonly Endpoint[]>();
    for (const pk of [...byPort.keys()].sort(byString)) {
      const eps = byPort.get(pk)!;
      out.set(pk, [...eps.keys()].sort(byString).map((id) => eps.get(id)!));
    }
    return { byPort: out, refusals, snapshot: new Snapshot(() => [[...out], refusals]) };
  }

  /** The endpoints of one service port: sorted by ip:port, one per ip:port. */
  endpointsFor(serviceName: ServiceName, portName: string, protocol: Protocol, family: IpFamily): readonly Endpoint[] {
    return this.merged.get(serviceName)?.byPort.get(portKey(portName, protocol, family)) ?? NONE;
  }

  /** endpointsFor the service port `sp`. */
  endpoints(sp: ServicePort): readonly Endpoint[] {
    return this.endpointsFor(`${sp.namespace}/${sp.name}`, sp.portName, sp.protocol, sp.family);
  }

  /** What the converter refused in this Service's slices. */
  refusals(serviceName: ServiceName): readonly Refusal[] {
    return this.merged.get(serviceName)?.refusals ?? NONE;
  }

  /** Refusals in slices that name no Service (no kubernetes.io/service-name label, bad metadata). */
  unattributedRefusals(): readonly Refusal[] {
    return this.merged.get('')?.refusals ?? NONE;
  }
}
