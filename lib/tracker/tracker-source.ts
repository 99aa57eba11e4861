/**
 * The two trackers seen as one source of Services and endpoints: the shape the proxier reads.
 * A sync reads them in one step (take: the changed Services, each whole); the views read a
 * Service's ports and endpoints as they are.
 */
import { Endpoint, ServiceName, ServicePort, TrackedService } from '../model/service';
import { EndpointSliceTracker } from './endpoint-slice-tracker';
import { ServiceTracker } from './service-tracker';

/** The Service and EndpointSlice trackers as the proxier reads them (see the file comment). */
export class TrackerSource {
  constructor(
    readonly services: ServiceTracker,
    readonly slices: EndpointSliceTracker,
  ) {}

  serviceNames(): Iterable<ServiceName> {
    return this.services.serviceNames();
  }

  servicePorts(name: ServiceName): readonly ServicePort[] {
    return this.services.servicePorts(name);
  }

  endpoints(sp: ServicePort): readonly Endpoint[] {
    return this.slices.endpoints(sp);
  }

  /** One Service now: its ports with their endpoints; its Service's refusals, then its slices'. */
  service(name: ServiceName): TrackedService {
    return {
      ports: this.services.servicePorts(name).map((port) => ({ port, endpoints: this.slices.endpoints(port) })),
      refusals: [...this.services.refusals(name), ...this.slices.refusals(name)],
    };
  }

  /**
   * A sync's one read of the trackers (kube-proxy: the change trackers applied at sync
   * start): the Services whose Service object or endpoints changed since the last take, and
   * those in `also` (every Service there is, and those in `also`, when `everything`), each as
   * it is now; the changes are taken either way.
   */
  take(also: Iterable<ServiceName>, everything: boolean): Map<ServiceName, TrackedService> {
    const changed = this.services.takeChanges();
    for (const n of this.slices.takeChanges()) changed.add(n);
    const names = everything ? new Set(this.serviceNames()) : changed;
    for (const n of also) names.add(n);
    const out = new Map<ServiceName, TrackedService>();
    for (const name of names) out.set(name, this.service(name));
    return out;
  }
}
