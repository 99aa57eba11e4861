// Change semantics written from kube-proxy's ServiceChangeTracker (pkg/proxy/servicechangetracker.go):
// a Service is pending while it differs from its state at the last take.
import type { V1Service } from '@kubernetes/client-node';
import { ServiceTracker } from '../../lib/tracker/service-tracker';
import { makeService, svcPort } from '../../testkit/builders';

function svc1(fn: (s: V1Service) => void = () => {}): V1Service {
  return makeService('ns1', 'svc1', (s) => {
    s.metadata!.resourceVersion = '1';
    s.spec = { type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [svcPort('p80', 80)] };
    fn(s);
  });
}

describe('ServiceTracker', () => {
  it('add, no-op update, update, delete: changed names, current ports, taken names', () => {
    const t = new ServiceTracker();
    expect(t.onAdd(svc1())).toEqual(new Set(['ns1/svc1']));
    expect(t.pendingChanges).toBe(1);
    expect([...t.serviceNames()]).toEqual(['ns1/svc1']);
    expect(t.servicePorts('ns1/svc1').map((p) => `${p.portName}/${p.port}`)).toEqual(['p80/80']);
    expect(t.takeChanges()).toEqual(new Set(['ns1/svc1']));
    expect(t.pendingChanges).toBe(0);

    // a new resourceVersion and an unrelated annotation change nothing the proxy uses
    const touched = svc1((s) => {
      s.metadata!.resourceVersion = '2';
      s.metadata!.annotations = { 'example.com/owner': 'team-a' };
    });
    expect(t.onUpdate(svc1(), touched)).toEqual(new Set());
    expect(t.takeChanges()).toEqual(new Set());
    expect(t.changesTotal).toBe(1);

    const twoPorts = svc1((s) => (s.spec!.ports = [svcPort('p80', 80), svcPort('dns', 53, 'UDP')]));
    expect(t.onUpdate(touched, twoPorts)).toEqual(new Set(['ns1/svc1']));
    expect(t.servicePort('ns1/svc1:dns/ipv4')).toMatchObject({ protocol: 'UDP', port: 53 });

    const renamed = svc1((s) => (s.spec!.ports = [svcPort('http', 80)]));
    t.onUpdate(twoPorts, renamed);
    expect(t.servicePort('ns1/svc1:dns/ipv4')).toBeUndefined();
    expect(t.servicePort('ns1/svc1:p80/ipv4')).toBeUndefined();
    expect(t.servicePort('ns1/svc1:http/ipv4')).toMatchObject({ port: 80 });
    expect(t.takeChanges()).toEqual(new Set(['ns1/svc1']));

    expect(t.onDelete(renamed)).toEqual(new Set(['ns1/svc1']));
    expect([...t.serviceNames()]).toEqual([]);
    expect(t.servicePorts('ns1/svc1')).toEqual([]);
    expect(t.servicePort('ns1/svc1:http/ipv4')).toBeUndefined();
    expect(t.takeChanges()).toEqual(new Set(['ns1/svc1']));
    expect(t.changesTotal).toBe(4);
  });

  it('a change undone before the take leaves nothing pending', () => {
    const t = new ServiceTracker();
    t.onAdd(svc1());
    t.onDelete(svc1());
    expect(t.pendingChanges).toBe(0);
    expect(t.takeChanges()).toEqual(new Set());

    t.onAdd(svc1());
    t.takeChanges();
    const other = svc1((s) => (s.spec!.sessionAffinity = 'ClientIP'));
    expect(t.onUpdate(svc1(), other)).toEqual(new Set(['ns1/svc1']));
    expect(t.onUpdate(other, svc1())).toEqual(new Set(['ns1/svc1']));
    expect(t.takeChanges()).toEqual(new Set());
    expect(t.changesTotal).toBe(5);
  });

  it('skipped Services are not tracked; a Service turning headless loses its ports', () => {
    const t = new ServiceTracker();
    const headless = svc1((s) => ((s.spec!.clusterIP = 'None'), (s.spec!.clusterIPs = ['None'])));
    expect(t.onAdd(headless)).toEqual(new Set());
    expect([...t.serviceNames()]).toEqual([]);
    t.onAdd(makeService('ns1', 'svc2', (s) => (s.spec = { clusterIP: '10.96.0.11', ports: [svcPort('', 80)] })));
    t.takeChanges();
    const svc2Headless = makeService('ns1', 'svc2', (s) => (s.spec = { clusterIP: 'None', ports: [svcPort('', 80)] }));
    expect(t.onUpdate(svc2Headless, svc2Headless)).toEqual(new Set(['ns1/svc2']));
    expect(t.servicePorts('ns1/svc2')).toEqual([]);
  });

  it('keeps refusals per Service; a Service with only refusals is still reported', () => {
    const t = new ServiceTracker();
    const bad = svc1((s) => (s.spec!.clusterIPs = ['10.96.0.300']));
    expect(t.onAdd(bad)).toEqual(new Set(['ns1/svc1']));
    expect(t.servicePorts('ns1/svc1')).toEqual([]);
    expect(t.refusals('ns1/svc1')).toEqual([
      {
        kind: 'Service',
        namespace: 'ns1',
        name: 'svc1',
        field: 'spec.clusterIPs[0]',
        value: '10.96.0.300',
        reason: 'not an IP address; no virtual server for this family',
      },
    ]);
    expect(t.onUpdate(bad, svc1())).toEqual(new Set(['ns1/svc1']));
    expect(t.refusals('ns1/svc1')).toEqual([]);
  });
});
