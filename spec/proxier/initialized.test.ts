// The proxier syncs only once both Services AND EndpointSlices have been listed (kube-proxy's
// isInitialized): a sync after the Service list alone would program every Service with no
// endpoints (each real server of an adopted table deleted), and after the slice list alone
// would flush every virtual server it does not know of yet.
import { proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';

const svc = makeService('default', 'web', (s) => {
  s.spec = { type: 'ClusterIP', clusterIP: '10.96.0.20', clusterIPs: ['10.96.0.20'], ports: [svcPort('http', 80)] };
});
const slice = makeEndpointSlice('default', 'web', 'web-1', (sl) => {
  sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
  sl.endpoints = [{ addresses: ['10.244.1.5'], conditions: { ready: true }, nodeName: 'node-b' }];
});

describe('Proxier initialization', () => {
  it.each([
    ['Services', 'onServicesSynced'],
    ['EndpointSlices', 'onEndpointSlicesSynced'],
  ] as const)('does not sync once only %s have been listed', async (_what, synced) => {
    const t = await proxierOverFakes();
    t.add(svc);
    t.proxier[synced]();
    t.proxier.sync();
    await t.settle(60_000);
    expect(t.proxier.isInitialized()).toBe(false);
    expect(await t.ipvs.listAll()).toEqual([]);
    expect(await t.proxier.syncProxyRules()).toBeUndefined();
    expect(await t.ipvs.listAll()).toEqual([]);
  });

  it('syncs once both have been listed', async () => {
    const t = await proxierOverFakes();
    t.add(svc, slice);
    t.proxier.onServicesSynced();
    await t.settle();
    expect(await t.ipvs.listAll()).toEqual([]);
    t.proxier.onEndpointSlicesSynced();
    await t.settle();
    expect(t.proxier.isInitialized()).toBe(true);
    const table = await t.ipvs.listAll();
    expect(
      table.map((e) => `${e.vs.address}:${e.vs.port} -> ${e.dests.map((d) => `${d.address}:${d.port}`).join(',')}`),
    ).toEqual(['10.96.0.20:80 -> 10.244.1.5:8080']);
  });
});
