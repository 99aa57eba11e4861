/**
 * The current Services, converted and validated, by service port (kube-proxy's
 * ServiceChangeTracker + ServicePortMap). Fed by informer callbacks; the proxier takes the
 * names of changed Services and re-plans only those.
 */
import type { V1Service } from '@kubernetes/client-node';
import { convertService } from '../k8s/convert';
import { Refusal, ServiceName, ServicePort, ServicePortKey, servicePortKey } from '../model/service';
import { ChangeTracker, sameStructure } from './pending-changes';

interface ServiceState {
  readonly ports: readonly ServicePort[];
  readonly refusals: readonly Refusal[];
}

const sameService = (a: ServiceState, b: ServiceState): boolean =>
  sameStructure(a.ports, b.ports) && sameStructure(a.refusals, b.refusals);

/** "namespace/name" of an object. */
export function serviceNameOf(obj: { metadata?: { namespace?: string; name?: string } }): ServiceName {
  return `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

const NONE: readonly never[] = [];

/** Tracks every Service's ports and refusals, and which Services changed. */
export class ServiceTracker extends ChangeTracker<ServiceState> {
  private readonly services = new Map<ServiceName, ServiceState>();
  private readonly byKey = new Map<ServicePortKey, ServicePort>();

  constructor() {
    super(sameService);
  }

  /** A Service appeared. Returns the names whose state changed (empty or this one). */
  onAdd(svc: V1Service): Set<ServiceName> {
    return this.apply(serviceNameOf(svc), svc);
  }

  /** A Service changed; an update that changes nothing the proxy uses returns an empty set. */
  onUpdate(old: V1Service, svc: V1Service): Set<ServiceName> {
    const oldName = serviceNameOf(old);
    const name = serviceNameOf(svc);
    const changed = this.apply(name, svc);
    if (oldName !== name) for (const n of this.apply(oldName, undefined)) changed.add(n);
    return changed;
  }

  /** A Service is gone (pass the last known object, or the tombstone's). */
  onDelete(svc: V1Service): Set<ServiceName> {
    return this.apply(serviceNameOf(svc), undefined);
  }

  private apply(name: ServiceName, svc: V1Service | undefined): Set<ServiceName> {
    const before = this.services.get(name);
    let after: ServiceState | undefined;
    if (svc) {
      const c = convertService(svc);
      if (c.ports.length > 0 || c.refusals.length > 0) {
        after = { ports: c.ports, refusals: c.refusals };
      }
    }
    if (before)
      for (const p of before.ports) this.byKey.delete(servicePortKey(p.namespace, p.name, p.portName, p.family));
    if (after) {
      this.services.set(name, after);
      for (const p of after.ports) this.byKey.set(servicePortKey(p.namespace, p.name, p.portName, p.family), p);
    } else {
      this.services.delete(name);
    }
    const changed = this.changes.record(name, before, after);
    return changed ? new Set([name]) : new Set();
  }

  /** Every Service that has ports (or refusals). */
  serviceNames(): IterableIterator<ServiceName> {
    return this.services.keys();
  }

  /** The ports of one Service, every family; empty when it has none (or is gone). */
  servicePorts(name: ServiceName): readonly ServicePort[] {
    return this.services.get(name)?.ports ?? NONE;
  }

  servicePort(key: ServicePortKey): ServicePort | undefined {
    return this.byKey.get(key);
  }

  /** What the converter refused in this Service. */
  refusals(name: ServiceName): readonly Refusal[] {
    return this.services.get(name)?.refusals ?? NONE;
  }
}
