// What the proxier tells the health server (kube-proxy's healthz QueuedUpdate / Updated):
// changes count as queued only once the informers have synced, a failed sync is no update,
// and /healthz's "initial sync done" waits for a full sync that went through.
import { proxyHealth } from '../../lib/daemon/health-server';
import { breakIpvsReads, proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';

const TIMEOUT_MS = 60_000;

const web = makeService('default', 'web', (s) => {
  s.spec = { type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [svcPort('http', 80)] };
});
const webSlice = makeEndpointSlice('default', 'web', 'web-1', (sl) => {
  sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
  sl.endpoints = [{ addresses: ['10.244.1.2'], conditions: { ready: true }, nodeName: 'node-b' }];
});

describe('Proxier health bookkeeping', () => {
  it('a change that arrives while the initial list is still running is not queued: /livez stays healthy however slow the list', async () => {
    const t = await proxierOverFakes();
    t.add(web, webSlice);
    t.proxier.onServicesSynced(); // Services listed, EndpointSlices not yet
    t.add(web);
    await t.settle(10 * TIMEOUT_MS);
    expect(t.proxier.lastQueuedAt).toBe(0);
    expect(proxyHealth(t.proxier, t.clock.now(), TIMEOUT_MS).healthy).toBe(true);
    expect(t.proxier.initialSyncDone).toBe(false);
    expect(await t.ipvs.listAll()).toEqual([]);

    t.proxier.onEndpointSlicesSynced();
    await t.settle();
    expect(t.proxier.initialSyncDone).toBe(true);
    expect(t.proxier.lastSyncAt).toBe(t.clock.now());
    expect((await t.ipvs.listAll()).map((e) => e.vs.address)).toEqual(['10.96.0.10']);
  });

  it('a failed full sync is neither the initial sync nor an update: a change queued behind it makes /livez fail after the timeout', async () => {
    const t = await proxierOverFakes();
    const reads = breakIpvsReads(t.ipvs);
    t.add(web, webSlice);
    await t.start();
    expect(t.proxier.initialSyncDone).toBe(false);
    expect(t.proxier.lastSyncAt).toBe(0);

    t.remove(webSlice); // a change: the Service loses its endpoints
    const queuedAt = t.proxier.lastQueuedAt;
    expect(queuedAt).toBe(t.clock.now());
    await t.settle(TIMEOUT_MS + 1);
    expect(t.proxier.initialSyncDone).toBe(false);
    expect(proxyHealth(t.proxier, t.clock.now(), TIMEOUT_MS).healthy).toBe(false);

    reads.broken = false;
    await t.settle(TIMEOUT_MS); // the retry backoff is well under a minute
    expect(t.proxier.initialSyncDone).toBe(true);
    expect(t.proxier.lastSyncAt).toBeGreaterThan(queuedAt);
    expect(proxyHealth(t.proxier, t.clock.now(), TIMEOUT_MS).healthy).toBe(true);
  });
});
