/**
 * The endpoints of every Service, merged from its EndpointSlices (kube-proxy's
 * EndpointsChangeTracker + endpointslicecache): a Service may have many slices; an endpoint
 * (ip:port of one service port) listed in two slices counts once, and the local copy wins
 * when the copies disagree on the node. Slices are merged in name order, so the result does
 * not depend on event order.
 */
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { SERVICE_NAME_LABEL } from '../k8s/convert-fields';
import { ConvertedEndpointSlice, convertEndpointSlice } from './endpoint-slice-convert';
import { MalformedObjectError } from '../errors';
import { AddressFamily, hostPort } from '../model/ipvs';
import { Endpoint, Protocol, Refusal, ServiceName, ServicePort } from '../model/service';
import { ChangeTracker, sameStructure } from './pending-changes';
import { IpFamily, toAddressFamily } from '../model/ip-family';

interface SliceState {
  /** "ns/name" of the Service, '' when the slice belongs to none */
  readonly service: ServiceName;
  /**
   * The slice's own merge: portKey -> its endpoints as Endpoints of that port, sorted by
   * ip:port, one per ip:port (the local copy, else the first), port keys in order. A Service
   * with this slice alone has these as its merged endpoints (the same Map); a Service with
   * several merges its slices' lists of a port, reusing these objects.
   */
  readonly byPort: ReadonlyMap<string, readonly Endpoint[]>;
  readonly refusals: readonly Refusal[];
  /** the family of its addresses; undefined when it has no endpoints to merge (no family, no ports) */
  readonly family?: IpFamily;
}

const NO_PORTS: ReadonlyMap<string, readonly Endpoint[]> = new Map();

/** What the tracker keeps of a converted slice: its endpoints made Endpoints once per port, merged. */
function sliceState(service: ServiceName, converted: ConvertedEndpointSlice): SliceState {
  const family = converted.family;
  if (family === undefined || converted.ports.length === 0)
    return { service, byPort: NO_PORTS, refusals: converted.refusals };
  const af = toAddressFamily(family);
  if (converted.ports.length === 1) {
    const port = converted.ports[0]!;
    const list = converted.endpoints.map((e) => withPort(e, port.port));
    return {
      service,
      byPort: new Map([[portKey(port.name, port.protocol, family), mergedList(af, [list])]]),
      refusals: converted.refusals,
      family,
    };
  }
  const lists = new Map<string, Endpoint[]>();
  for (const port of converted.ports) {
    const pk = portKey(port.name, port.protocol, family);
    let list = lists.get(pk);
    if (!list) lists.set(pk, (list = []));
    // two ports of one slice with the same name and protocol merge, as two slices would
    for (const e of converted.endpoints) list.push(withPort(e, port.port));
  }
  const byPort = new Map<string, readonly Endpoint[]>();
  for (const pk of [...lists.keys()].sort(byString)) byPort.set(pk, mergedList(af, [lists.get(pk)!]));
  return { service, byPort, refusals: converted.refusals, family };
}

/**
 * One port's endpoints from lists in slice-name order (each in slice order): one per ip:port,
 * the first local copy, else the first copy; sorted by ip:port. (A stable sort of the
 * concatenation by ip:port, then the winner of each run of equal ones.)
 */
function mergedList(af: AddressFamily, lists: readonly (readonly Endpoint[])[]): readonly Endpoint[] {
  const all = lists.length === 1 ? lists[0]! : lists.flat();
  const n = all.length;
  const ids = new Array<string>(n);
  const order = new Array<number>(n);
  for (let i = 0; i < n; i++) {
    ids[i] = hostPort(af, all[i]!.ip, all[i]!.port);
    order[i] = i;
  }
  order.sort((x, y) => (ids[x]! < ids[y]! ? -1 : ids[x]! > ids[y]! ? 1 : x - y));
  const out: Endpoint[] = [];
  for (let k = 0; k < n;) {
    const id = ids[order[k]!]!;
    let winner = all[order[k++]!]!;
    for (; k < n && ids[order[k]!] === id; k++)
      if (!winner.isLocal && all[order[k]!]!.isLocal) winner = all[order[k]!]!;
    out.push(winner);
  }
  return out;
}

type ConvertedEndpoint = ConvertedEndpointSlice['endpoints'][number];

/**
 * Endpoint's fields, each compared by sameList: the scalars with ===, the hint lists by
 * structure. The check below fails to compile while a field of Endpoint (or of the converter's
 * endpoint, which withPort copies) is in neither list, so a new field cannot go uncompared.
 */
const SCALAR_FIELDS = ['ip', 'port', 'ready', 'serving', 'terminating', 'isLocal'] as const;
const LIST_FIELDS = ['zoneHints', 'nodeHints'] as const;
type Listed = (typeof SCALAR_FIELDS)[number] | (typeof LIST_FIELDS)[number];
type Unlisted = Exclude<keyof Endpoint | keyof ConvertedEndpoint, Listed>;
const everyFieldListed: [Unlisted] extends [never] ? true : { unlisted: Unlisted } = true;
void everyFieldListed;

/** An endpoint of the converter's as an Endpoint of one port (keys in the order `{ ...e, port }` gives). */
const withPort = (e: ConvertedEndpoint, port: number): Endpoint =>
  // without hints, the object built field by field (the common case: one hidden class);
  // every field the converter sets is one of the lists above
  e.zoneHints === undefined && e.nodeHints === undefined
    ? ({
        ip: e.ip,
        ready: e.ready,
        serving: e.serving,
        terminating: e.terminating,
        isLocal: e.isLocal,
        port,
      } satisfies Required<Omit<Endpoint, (typeof LIST_FIELDS)[number]>>)
    : { ...e, port };

interface ServiceEndpoints {
  /** portKey(name, protocol, family) -> endpoints sorted by ip:port */
  readonly byPort: ReadonlyMap<string, readonly Endpoint[]>;
  readonly refusals: readonly Refusal[];
}

/** Two Services' endpoints compared field by field, bailing at the first difference (both sorted). */
function sameEndpoints(a: ServiceEndpoints, b: ServiceEndpoints): boolean {
  if (a.byPort !== b.byPort) {
    if (a.byPort.size !== b.byPort.size) return false;
    for (const [pk, la] of a.byPort) {
      const lb = b.byPort.get(pk);
      if (lb === undefined || !sameList(la, lb)) return false;
    }
  }
  return sameStructure(a.refusals, b.refusals);
}

function sameList(a: readonly Endpoint[], b: readonly Endpoint[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x === y) continue;
    for (const f of SCALAR_FIELDS) if (x[f] !== y[f]) return false;
    for (const f of LIST_FIELDS) if (!sameStructure(x[f], y[f])) return false;
  }
  return true;
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

/** Tracks every Service's endpoints, merged from its EndpointSlices (see the file comment). */
export class EndpointSliceTracker extends ChangeTracker<ServiceEndpoints> {
  private readonly slices = new Map<string, SliceState>();
  private readonly slicesOf = new Map<ServiceName, Set<string>>();
  private readonly merged = new Map<ServiceName, ServiceEndpoints>();

  /** `nodeName`: this node (an endpoint whose nodeName matches is local). */
  constructor(private readonly nodeName: string) {
    super(sameEndpoints);
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
    if (before && after && before.service === after.service) {
      // the common update: the slice stays with its Service
      this.slices.set(sliceKey, after);
      return this.remerged(new Set([after.service]), before, after);
    }
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
    return this.remerged(touched, before, after);
  }

  /** Merges the `touched` Services again after a slice moved from `before` to `after`; the changed ones. */
  private remerged(
    touched: Set<ServiceName>,
    before: SliceState | undefined,
    after: SliceState | undefined,
  ): Set<ServiceName> {
    const changed = new Set<ServiceName>();
    for (const name of touched) {
      const prev = this.merged.get(name);
      const next = this.merge(name, prev, [before, after]);
      if (next) this.merged.set(name, next);
      else this.merged.delete(name);
      if (name !== '' && this.changes.record(name, prev, next)) changed.add(name);
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
      if (before)
        return {
          ...before,
          refusals: [...before.refusals.filter((r) => !r.reason.includes('slice refused whole')), refusal],
        };
      return { service: serviceOf(slice), byPort: NO_PORTS, refusals: [refusal] };
    }
  }

  /**
   * The Service's endpoints after its slices `changed` (their states before and after the
   * event, either side absent) moved from what made `prev`: a Service with one slice has that
   * slice's own merge; with several, the ports no changed slice lists keep prev's lists, the
   * others are merged again from every slice (name order).
   */
  private merge(
    name: ServiceName,
    prev: ServiceEndpoints | undefined,
    changed: readonly (SliceState | undefined)[],
  ): ServiceEndpoints | undefined {
    const set = this.slicesOf.get(name);
    if (set === undefined || set.size === 0) return undefined;
    if (set.size === 1) {
      const only = this.slices.get(set.values().next().value!)!;
      return { byPort: only.byPort, refusals: only.refusals };
    }
    const slices = [...set].sort(byString).map((k) => this.slices.get(k)!);
    const redo = new Set<string>();
    for (const c of changed) if (c !== undefined && c.service === name) for (const pk of c.byPort.keys()) redo.add(pk);
    const keys = new Set<string>();
    const refusals: Refusal[] = [];
    for (const slice of slices) {
      refusals.push(...slice.refusals);
      for (const pk of slice.byPort.keys()) keys.add(pk);
    }
    const byPort = new Map<string, readonly Endpoint[]>();
    for (const pk of [...keys].sort(byString)) {
      const kept = prev === undefined || redo.has(pk) ? undefined : prev.byPort.get(pk);
      if (kept !== undefined) {
        byPort.set(pk, kept);
        continue;
      }
      const lists: (readonly Endpoint[])[] = [];
      let family: IpFamily = 'ipv4';
      for (const slice of slices) {
        const list = slice.byPort.get(pk);
        if (list === undefined) continue;
        lists.push(list);
        // the port key names the family too: every slice listing it has this one
        family = slice.family ?? family;
      }
      byPort.set(pk, mergedList(toAddressFamily(family), lists));
    }
    return { byPort, refusals };
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
