// Merge semantics written from kube-proxy's endpointslicecache.go: many slices per Service,
// one endpoint per ip:port of a service port, the local copy preferred.
import type { V1Endpoint, V1EndpointSlice } from '@kubernetes/client-node';
import { convertEndpointSlice } from '../../lib/tracker/endpoint-slice-convert';
import { hostPort } from '../../lib/model/ipvs';
import { Endpoint, Refusal } from '../../lib/model/service';
import { AF_INET, AF_INET6 } from '../../lib/uapi/inet';
import { EndpointSliceTracker } from '../../lib/tracker/endpoint-slice-tracker';
import { ServiceTracker } from '../../lib/tracker/service-tracker';
import { TrackerSource } from '../../lib/tracker/tracker-source';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';

function slice(svc: string, name: string, endpoints: V1Endpoint[], rv = '1'): V1EndpointSlice {
  return makeEndpointSlice('ns1', svc, name, (s) => {
    s.metadata!.resourceVersion = rv;
    s.ports = [
      { name: 'p80', port: 8080, protocol: 'TCP' },
      { name: 'p80', port: 8053, protocol: 'UDP' },
    ];
    s.endpoints = endpoints;
  });
}
const ready = (ip: string, port: number, isLocal = false): Endpoint => ({
  ip,
  port,
  ready: true,
  serving: true,
  terminating: false,
  isLocal,
});

describe('EndpointSliceTracker', () => {
  it('merges the slices of a Service: sorted, one per ip:port, per port name and protocol', () => {
    const t = new EndpointSliceTracker('node-a');
    expect(t.onAdd(slice('svc1', 'svc1-b', [{ addresses: ['10.244.3.1'] }, { addresses: ['10.244.2.1'] }]))).toEqual(
      new Set(['ns1/svc1']),
    );
    expect(
      t.onAdd(
        slice('svc1', 'svc1-a', [{ addresses: ['10.244.2.1'] }, { addresses: ['10.244.1.1'], nodeName: 'node-a' }]),
      ),
    ).toEqual(new Set(['ns1/svc1']));
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([
      ready('10.244.1.1', 8080, true),
      ready('10.244.2.1', 8080),
      ready('10.244.3.1', 8080),
    ]);
    expect(t.endpointsFor('ns1/svc1', 'p80', 'UDP', 'ipv4').map((e) => `${e.ip}:${e.port}`)).toEqual([
      '10.244.1.1:8053',
      '10.244.2.1:8053',
      '10.244.3.1:8053',
    ]);
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv6')).toEqual([]);
    expect(t.endpointsFor('ns1/other', 'p80', 'TCP', 'ipv4')).toEqual([]);
    expect(t.takeChanges()).toEqual(new Set(['ns1/svc1']));
  });

  it('the local copy of an endpoint listed twice wins, whatever the slice order', () => {
    for (const order of [
      ['a', 'b'],
      ['b', 'a'],
    ]) {
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
    t.takeChanges();
    const v2 = slice('svc1', 'svc1-a', [{ addresses: ['10.244.2.1'] }, { addresses: ['10.244.1.1'] }], '2');
    expect(t.onUpdate(v1, v2)).toEqual(new Set());
    expect(t.pendingChanges).toBe(0);
    expect(t.changesTotal).toBe(1);
    const v3 = slice(
      'svc1',
      'svc1-a',
      [{ addresses: ['10.244.2.1'] }, { addresses: ['10.244.1.1'], conditions: { ready: false } }],
      '3',
    );
    expect(t.onUpdate(v2, v3)).toEqual(new Set(['ns1/svc1']));
    expect(t.takeChanges()).toEqual(new Set(['ns1/svc1']));
  });

  it.each<[string, (e: V1Endpoint) => void]>([
    ['address', (e) => (e.addresses = ['10.244.9.9'])],
    ['conditions.ready', (e) => (e.conditions = { ...e.conditions, ready: false })],
    ['conditions.serving', (e) => (e.conditions = { ...e.conditions, serving: false })],
    ['conditions.terminating', (e) => (e.conditions = { ...e.conditions, terminating: true })],
    ['nodeName (local or not)', (e) => (e.nodeName = 'node-a')],
    ['hints.forZones', (e) => (e.hints = { ...e.hints, forZones: [{ name: 'zone-b' }] })],
    ['hints.forNodes', (e) => (e.hints = { ...e.hints, forNodes: [{ name: 'node-b' }] })],
  ])('an update that changes only %s is a change (every Endpoint field is compared)', (_field, change) => {
    const t = new EndpointSliceTracker('node-a');
    const endpoint = (): V1Endpoint => ({
      addresses: ['10.244.1.1'],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: 'node-b',
      hints: { forZones: [{ name: 'zone-a' }], forNodes: [{ name: 'node-a' }] },
    });
    const v1 = slice('svc1', 'svc1-a', [endpoint()]);
    t.onAdd(v1);
    t.takeChanges();
    const changed = endpoint();
    change(changed);
    expect(t.onUpdate(v1, slice('svc1', 'svc1-a', [changed], '2'))).toEqual(new Set(['ns1/svc1']));
  });

  it('an update that changes only a port number is a change', () => {
    const t = new EndpointSliceTracker('node-a');
    const v1 = slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }]);
    t.onAdd(v1);
    t.takeChanges();
    const v2 = slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }], '2');
    v2.ports = [{ ...v2.ports![0]!, port: 9090 }, v2.ports![1]!];
    expect(t.onUpdate(v1, v2)).toEqual(new Set(['ns1/svc1']));
  });

  it('deleting one slice keeps the others; a slice moving to another Service changes both', () => {
    const t = new EndpointSliceTracker('node-a');
    const a = slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }]);
    const b = slice('svc1', 'svc1-b', [{ addresses: ['10.244.2.1'] }]);
    t.onAdd(a);
    t.onAdd(b);
    t.takeChanges();
    expect(t.onDelete(a)).toEqual(new Set(['ns1/svc1']));
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([ready('10.244.2.1', 8080)]);
    const moved = slice('svc2', 'svc1-b', [{ addresses: ['10.244.2.1'] }]);
    expect(t.onUpdate(b, moved)).toEqual(new Set(['ns1/svc1', 'ns1/svc2']));
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([]);
    expect(t.endpointsFor('ns1/svc2', 'p80', 'TCP', 'ipv4')).toEqual([ready('10.244.2.1', 8080)]);
    expect(t.takeChanges()).toEqual(new Set(['ns1/svc1', 'ns1/svc2']));
    expect(t.onDelete(moved)).toEqual(new Set(['ns1/svc2']));
    expect(t.takeChanges()).toEqual(new Set(['ns1/svc2']));
  });

  it("keeps each Service's slice refusals", () => {
    const t = new EndpointSliceTracker('node-a');
    t.onAdd(slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }, { addresses: ['10.244.1.x'] }]));
    expect(t.refusals('ns1/svc1')).toEqual([
      {
        kind: 'EndpointSlice',
        namespace: 'ns1',
        name: 'svc1-a',
        field: 'endpoints[1].addresses[0]',
        value: '10.244.1.x',
        reason: 'not an IP address; endpoint ignored',
      },
    ]);
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([ready('10.244.1.1', 8080)]);
  });
});

/**
 * The merge as first written (before the tracker kept each slice's own merge and merged only
 * the ports a changed slice lists): every slice of the Service in name order, every port,
 * one endpoint per ip:port, the first local copy, else the first; sorted.
 */
function mergeFromScratch(
  slices: readonly V1EndpointSlice[],
  nodeName: string,
): { byPort: Map<string, Endpoint[]>; refusals: Refusal[] } {
  const sorted = [...slices].sort((a, b) => (a.metadata!.name! < b.metadata!.name! ? -1 : 1));
  const byPort = new Map<string, Map<string, Endpoint>>();
  const refusals: Refusal[] = [];
  for (const s of sorted) {
    const c = convertEndpointSlice(s, nodeName);
    refusals.push(...c.refusals);
    if (!c.family) continue;
    for (const port of c.ports) {
      const pk = `${port.name}/${port.protocol}/${c.family}`;
      let eps = byPort.get(pk);
      if (!eps) byPort.set(pk, (eps = new Map()));
      for (const e of c.endpoints) {
        const ep: Endpoint = { ...e, port: port.port };
        const id = hostPort(c.family === 'ipv4' ? AF_INET : AF_INET6, ep.ip, ep.port);
        const have = eps.get(id);
        if (have && (have.isLocal || !ep.isLocal)) continue;
        eps.set(id, ep);
      }
    }
  }
  const out = new Map<string, Endpoint[]>();
  for (const [pk, eps] of byPort)
    out.set(
      pk,
      [...eps.keys()].sort().map((id) => eps.get(id)!),
    );
  return { byPort: out, refusals };
}

/** mulberry32: a seeded PRNG, so a failing sequence can be replayed */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('EndpointSliceTracker: merged endpoints after any sequence of events equal a from-scratch merge', () => {
  const SERVICES = ['svc1', 'svc2'];
  const SLICES = ['s-a', 's-b', 's-c', 's-d'];
  const PORTS = [
    { name: 'p', port: 80, protocol: 'TCP' },
    { name: 'p', port: 81, protocol: 'TCP' }, // the same service port twice in one slice
    { name: 'q', port: 53, protocol: 'UDP' },
    { name: '', port: 9, protocol: 'TCP' },
  ];
  const V4 = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.10', '10.0.0.x'];
  const V6 = ['fd00::1', 'fd00::2', 'fd00::a'];
  const PORT_KEYS = ['p/TCP', 'q/UDP', '/TCP', 'p/UDP'].flatMap((k) => [`${k}/ipv4`, `${k}/ipv6`]);

  it.each(Array.from({ length: 25 }, (_, i) => i + 1))(
    'seed %i: 200 adds, updates, moves and deletes over 4 slices of 2 Services',
    (seed) => {
      const rnd = prng(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
      const t = new EndpointSliceTracker('node-a');
      const live = new Map<string, V1EndpointSlice>();
      let rv = 0;
      const make = (name: string): V1EndpointSlice => {
        const v6 = rnd() < 0.25;
        return makeEndpointSlice('ns1', pick(SERVICES), name, (s) => {
          s.metadata!.resourceVersion = String(++rv);
          s.addressType = v6 ? 'IPv6' : 'IPv4';
          s.ports = PORTS.filter(() => rnd() < 0.5);
          s.endpoints = Array.from({ length: Math.floor(rnd() * 5) }, () => ({
            addresses: [pick(v6 ? V6 : V4)],
            nodeName: pick(['node-a', 'node-b']),
            conditions: { ready: rnd() < 0.8, terminating: rnd() < 0.2 },
          }));
        });
      };
      for (let step = 0; step < 200; step++) {
        const name = pick(SLICES);
        const old = live.get(name);
        if (old === undefined) {
          const s = make(name);
          t.onAdd(s);
          live.set(name, s);
        } else if (rnd() < 0.2) {
          t.onDelete(old);
          live.delete(name);
        } else {
          const s = make(name);
          t.onUpdate(old, s);
          live.set(name, s);
        }
        for (const svc of SERVICES) {
          const want = mergeFromScratch(
            [...live.values()].filter((s) => s.metadata!.labels!['kubernetes.io/service-name'] === svc),
            'node-a',
          );
          for (const pk of PORT_KEYS) {
            const [portName, protocol, family] = pk.split('/') as [string, 'TCP' | 'UDP', 'ipv4' | 'ipv6'];
            expect([step, pk, t.endpointsFor(`ns1/${svc}`, portName, protocol, family)]).toEqual([
              step,
              pk,
              want.byPort.get(pk) ?? [],
            ]);
          }
          expect(t.refusals(`ns1/${svc}`)).toEqual(want.refusals);
        }
      }
    },
  );
});

describe('TrackerSource', () => {
  it('joins both trackers: ports, endpoints per port, refusals, one take of the changed Services', () => {
    const src = new TrackerSource(new ServiceTracker(), new EndpointSliceTracker('node-a'));
    src.services.onAdd(
      makeService('ns1', 'svc1', (s) => (s.spec = { clusterIP: '10.96.0.10', ports: [svcPort('p80', 80)] })),
    );
    src.slices.onAdd(slice('svc2', 'svc2-a', [{ addresses: ['10.244.9.9'] }]));
    src.slices.onAdd(slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }]));
    expect([...src.serviceNames()]).toEqual(['ns1/svc1']);
    const [sp] = src.servicePorts('ns1/svc1');
    expect(src.endpoints(sp!)).toEqual([ready('10.244.1.1', 8080)]);
    expect(src.service('ns1/svc1')).toEqual({
      ports: [{ port: sp, endpoints: [ready('10.244.1.1', 8080)] }],
      refusals: [],
    });
    // one take: the changed Services, each whole; then nothing until the next change
    const taken = src.take([], false);
    expect([...taken.keys()]).toEqual(['ns1/svc1', 'ns1/svc2']);
    expect(taken.get('ns1/svc2')).toEqual({ ports: [], refusals: [] });
    expect(src.take(['ns1/gone'], false)).toEqual(new Map([['ns1/gone', { ports: [], refusals: [] }]]));
    // everything: every Service there is, and those asked for
    expect([...src.take(['ns1/gone'], true).keys()]).toEqual(['ns1/svc1', 'ns1/gone']);
  });
});

describe('EndpointSliceTracker: slices that are not the API shape (type-confused JSON)', () => {
  const good = () => slice('svc1', 'svc1-a', [{ addresses: ['10.244.1.1'] }, { addresses: ['10.244.2.1'] }]);
  const confused = (fn: (s: Record<string, unknown>) => void, rv = '2'): V1EndpointSlice => {
    const s = slice('svc1', 'svc1-a', [{ addresses: ['10.244.3.1'] }], rv) as unknown as Record<string, unknown>;
    fn(s);
    return s as unknown as V1EndpointSlice;
  };
  const CASES: [string, (s: Record<string, unknown>) => void, string][] = [
    ['endpoints: [null]', (s) => (s.endpoints = [null]), 'endpoints[0]'],
    ['endpoints: "str"', (s) => (s.endpoints = 'str'), 'endpoints'],
    ['ports: "str"', (s) => (s.ports = 'str'), 'ports'],
    ['ports: [7]', (s) => (s.ports = [7]), 'ports[0]'],
    ['addresses: 5', (s) => (s.endpoints = [{ addresses: 5 }]), 'endpoints[0].addresses'],
    ['addresses: [5]', (s) => (s.endpoints = [{ addresses: [5] }]), 'endpoints[0].addresses[0]'],
    [
      'conditions: "yes"',
      (s) => (s.endpoints = [{ addresses: ['10.244.3.1'], conditions: 'yes' }]),
      'endpoints[0].conditions',
    ],
    [
      'conditions.ready: "true"',
      (s) => (s.endpoints = [{ addresses: ['10.244.3.1'], conditions: { ready: 'true' } }]),
      'endpoints[0].conditions.ready',
    ],
    [
      'hints.forZones: {}',
      (s) => (s.endpoints = [{ addresses: ['10.244.3.1'], hints: { forZones: {} } }]),
      'endpoints[0].hints.forZones',
    ],
    ['nodeName: 1', (s) => (s.endpoints = [{ addresses: ['10.244.3.1'], nodeName: 1 }]), 'endpoints[0].nodeName'],
    ['port: "80"', (s) => (s.ports = [{ name: 'p80', port: '8080' }]), 'ports[0].port'],
  ];

  it.each(CASES)(
    'an update with %s is refused whole: the previous endpoints stay, a refusal says so, and the delete removes them',
    (_name, fn, field) => {
      const t = new EndpointSliceTracker('node-a');
      const v1 = good();
      t.onAdd(v1);
      t.takeChanges();
      const before = t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4');
      const v2 = confused(fn);
      expect(() => t.onUpdate(v1, v2)).not.toThrow();
      expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual(before);
      expect(t.refusals('ns1/svc1')).toEqual([
        expect.objectContaining({
          kind: 'EndpointSlice',
          namespace: 'ns1',
          name: 'svc1-a',
          field,
          reason: expect.stringMatching(/slice refused whole, its previous version is kept$/),
        }),
      ]);
      // the refusal is a change (so it is reported); the endpoints are not
      expect(t.takeChanges()).toEqual(new Set(['ns1/svc1']));
      // deleting the slice (the informer hands over the last object it has) removes its endpoints
      expect(t.onDelete(v2)).toEqual(new Set(['ns1/svc1']));
      expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([]);
      expect(t.endpointsFor('ns1/svc1', 'p80', 'UDP', 'ipv4')).toEqual([]);
      expect(t.refusals('ns1/svc1')).toEqual([]);
    },
  );

  it.each(CASES)(
    'a new slice with %s contributes no endpoint, only a refusal; a later good version is used',
    (_name, fn) => {
      const t = new EndpointSliceTracker('node-a');
      const bad = confused(fn, '1');
      expect(() => t.onAdd(bad)).not.toThrow();
      expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([]);
      expect(t.refusals('ns1/svc1')).toEqual([
        expect.objectContaining({ reason: expect.stringMatching(/slice refused whole, no endpoint used$/) }),
      ]);
      t.onUpdate(bad, good());
      expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4').map((e) => e.ip)).toEqual(['10.244.1.1', '10.244.2.1']);
      expect(t.refusals('ns1/svc1')).toEqual([]);
      t.onDelete(good());
      expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([]);
    },
  );

  it('a converter fault (not a shape problem) leaks nothing either: previous state kept, the delete removes it', () => {
    const t = new EndpointSliceTracker('node-a');
    const v1 = good();
    t.onAdd(v1);
    // a getter that throws where the converter reads: any exception, not only a shape refusal
    const v2 = good();
    Object.defineProperty(v2, 'addressType', {
      get: () => {
        throw new TypeError('boom');
      },
    });
    expect(() => t.onUpdate(v1, v2)).not.toThrow();
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4').map((e) => e.ip)).toEqual(['10.244.1.1', '10.244.2.1']);
    expect(t.refusals('ns1/svc1')).toEqual([
      expect.objectContaining({
        field: '(object)',
        reason: 'cannot be converted (boom); slice refused whole, its previous version is kept',
      }),
    ]);
    t.onDelete(v1);
    expect(t.endpointsFor('ns1/svc1', 'p80', 'TCP', 'ipv4')).toEqual([]);
  });
});
