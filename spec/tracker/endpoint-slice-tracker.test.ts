// Merge semantics written from kube-proxy's endpointslicecache.go: many slices per Service,
// one endpoint per ip:port of a service port, the local copy preferred.
import type { V1Endpoint, V1EndpointSlice } from '@kubernetes/client-node';
import { Endpoint } from '../../lib/model/service';
import { EndpointSliceTracker } from '../../lib/tracker/endpoint-slice-tracker';
import { ServiceTracker } from '../../lib/tracker/service-tracker';
import { TrackerSource } from '../../lib/tracker/tracker-source';
import { makeEndpointSlice, makeService, svcPort } from '../../lib/testing/builders';

function slice(svc: string, name: string, endpoints: V1Endpoint[], rv = '1'): V1EndpointSlice {
  return makeEndpointSlice('ns1', svc, name, (s) => {
    s.metadata!.resourceVersion = rv;
    s.ports = [{ name: 'p80', port: 8080, protocol: 'TCP' }, { name: 'p80', port: 8053, protocol: 'UDP' }];
    s.endpoints = endpoints;
  });
}
const ready = (ip: string, port: number, isLocal = false): Endpoint => ({ ip, port, ready: true, serving: true, terminating: false, isLocal });

describe('EndpointSliceTracker', () => {
  it('merges the slices of a Service: sorted, one per ip:port, per port name and protocol', () => {
    const t = new EndpointSliceTracker('node-a');
    expect(t.onAdd(slice('svc1', 'svc1-b', [{ addresses: ['10.244.3.1'] }, { addresses: ['10.244.2.1'] }]))).toEqual(new Set(['ns1/svc1']));
    expect(t.onAdd(slice('svc1', 'svc1-a', [{ addresses: ['10.244.2.1'] }, { addresses: ['10.244.1.1'], nodeName: 'node-a' }]))).toEqual(
      new Set(['ns1/svc1']),
    );
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([
      ready('10.244.1.1', 8080, true),
      ready('10.244.2.1', 8080),
      ready('10.244.3.1', 8080),
    ]);
    expect(t.endpointsFor('ns1/svc1', 'p80', 'UDP', 'ipv4').map((e) => `${e.ip}:${e.port}`)).toEqual([
      '10.244.1.1:8053', '10.244.2.1:8053', '10.244.3.1:8053',
    ]);
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv6')).toEqual([]);
    expect(t.endpointsFor('ns1/other', 'p80', 'TCP', 'ipv4')).toEqual([]);
    expect(t.drainChanges()).toEqual(new Set(['ns1/svc1']));
  });

  it('the local copy of an endpoint listed twice wins, whatever the slice order', () => {
    for (const order of [['a', 'b'], ['b', 'a']]) {
      const t = new EndpointSliceTracker('node-a');
      const slices = {
        a: slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'], nodeName: 'node-b' }]),
        b: slice('svc1', 'svc1-b', [{ addresses: ['10.244.1.1'], nodeName: 'node-a' }]),
      } as const;
      for (const k of order) t.onAdd(slices[k as 'a' | 'b']);
      expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([ready('10.244.1.1', 8080, true)]);
    }
  });

  it('no-op updates (new resourceVersion, endpoints reordered) change nothing', () => {
    const t = new EndpointSliceTracker('node-a');
    const v1 = slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }, { addresses: ['10.244.2.1'] }]);
    t.onAdd(v1);
    t.drainChanges();
    const v2 = slice('svc1', 'svc1-a', [{ addresses: ['10.244.2.1'] }, { addresses: ['10.244.1.1'] }], '2');
    expect(t.onUpdate(v1, v2)).toEqual(new Set());
    expect(t.pendingChanges).toBe(0);
    expect(t.changesTotal).toBe(1);
    const v3 = slice('svc1', 'svc1-a', [{ addresses: ['10.244.2.1'] }, { addresses: ['10.244.1.1'], conditions: { ready: false } }], '3');
    expect(t.onUpdate(v2, v3)).toEqual(new Set(['ns1/svc1']));
    expect(t.drainChanges()).toEqual(new Set(['ns1/svc1']));
  });

  it('deleting one slice keeps the others; a slice moving to another Service changes both', () => {
    const t = new EndpointSliceTracker('node-a');
    const a = slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }]);
    const b = slice('svc1', 'svc1-b', [{ addresses: ['10.244.2.1'] }]);
    t.onAdd(a);
    t.onAdd(b);
    t.drainChanges();
    expect(t.onDelete(a)).toEqual(new Set(['ns1/svc1']));
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([ready('10.244.2.1', 8080)]);
    const moved = slice('svc2', 'svc1-b', [{ addresses: ['10.244.2.1'] }]);
    expect(t.onUpdate(b, moved)).toEqual(new Set(['ns1/svc1', 'ns1/svc2']));
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([]);
    expect(t.endpointsFor('ns1/svc2', 'p80', 'TCP', 'ipv4')).toEqual([ready('10.244.2.1', 8080)]);
    expect(t.drainChanges()).toEqual(new Set(['ns1/svc1', 'ns1/svc2']));
    expect(t.onDelete(moved)).toEqual(new Set(['ns1/svc2']));
    expect(t.drainChanges()).toEqual(new Set(['ns1/svc2']));
  });

  it("keeps each Service's slice refusals", () => {
    const t = new EndpointSliceTracker('node-a');
    t.onAdd(slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }, { addresses: ['10.244.1.x'] }]));
    expect(t.refusals('ns1/svc1')).toEqual([
      {
        kind: 'EndpointSlice', namespace: 'ns1', name: 'svc1-a', field: 'endpoints[1].addresses[0]', value: '10.244.1.x',
        reason: 'not an IP address; endpoint ignored',
      },
    ]);
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([ready('10.244.1.1', 8080)]);
  });
});

describe('TrackerSource', () => {
  it('joins both trackers: ports, endpoints per port, refusals, one drained set', () => {
    const src = new TrackerSource(new ServiceTracker(), new EndpointSliceTracker('node-a'));
    src.services.onAdd(makeService('ns1', 'svc1', (s) => (s.spec = { clusterIP: '10.96.0.10', ports: [svcPort('p80', 80)] })));
    src.slices.onAdd(slice('svc2', 'svc2-a', [{ addresses: ['10.244.9.9'] }]));
    src.slices.onAdd(slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }]));
    expect([...src.serviceNames()]).toEqual(['ns1/svc1']);
    const [sp] = src.servicePorts('ns1/svc1');
    expect(src.endpoints(sp!)).toEqual([ready('10.244.1.1', 8080)]);
    expect(src.refusals('ns1/svc1')).toEqual([]);
    expect(src.drainChanges()).toEqual(new Set(['ns1/svc1', 'ns1/svc2']));
    expect(src.drainChanges()).toEqual(new Set());
  });
});
