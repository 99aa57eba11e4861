/**
 * The two trackers seen as one source of Services and endpoints: the shape the proxier reads
 * (serviceNames, servicePorts, endpoints, refusals, takeChanges).
 */
import { Endpoint, Refusal, ServiceName, ServicePort } from '../model/service';
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

  /** The Service's refusals, then its slices'. */
  refusals(name: ServiceName): readonly Refusal[] {
    return [...this.services.refusals(name), ...this.slices.refusals(name)];
  }

  /** Services whose Service object or endpoints changed since the last take. */
  takeChanges(): Set<ServiceName> {
    const out = this.services.takeChanges();
    for (const n of this.slices.takeChanges()) out.add(n);
    return out;
  }
}
