import { FakeIpvs } from '../../../testkit/kernel/fake-ipvs';
import { FakeApiServer } from '../../../testkit/fake-apiserver';
import { ChurnWrite, churnServices, generateChurn } from '../../../scripts/bench/churn-generator';
import { benchObjects, benchSlice, replacementIP } from '../../../scripts/bench/daemon-fixtures';
import { compareKernel, desiredFromApi } from '../../../scripts/bench/daemon-oracle';
import {
  benchTable,
  benchVirtualServerKey,
  loadOps,
  PeerLoop,
  peerSync,
  runPeerChurn,
  sliceRealServers,
} from '../../../scripts/bench/peer-churn';

// 3 Services x 2 endpoints (daemon-fixtures.ts address ranges)
describe("the churn bench: its generator and kube-proxy's sync pattern as the peer", () => {
  let server: FakeApiServer;
  let ipvs: FakeIpvs;
  beforeEach(async () => {
    server = new FakeApiServer();
    for (const o of benchObjects(3, 2)) server.create(o);
    ipvs = new FakeIpvs();
    for (const op of loadOps(desiredFromApi(server))) await ipvs.apply(op);
  });

  it('changes the same Services in the same order on every run, each write replacing endpoint 0', async () => {
    const a = churnServices(1000);
    const b = churnServices(1000);
    const first = Array.from({ length: 50 }, () => a());
    expect(Array.from({ length: 50 }, () => b())).toEqual(first);
    expect(new Set(first).size).toBeGreaterThan(40);

    const writes: ChurnWrite[] = [];
    const r = await generateChurn({
      server,
      services: 3,
      endpoints: 2,
      rate: 2000,
      seconds: 0.05,
      firstGen: 7,
      onWrite: (w) => writes.push(w),
    });
    expect(writes.length).toBe(r.updates);
    expect(r.updates).toBeGreaterThan(0);
    const seq = churnServices(3);
    expect(writes.map((w) => w.service)).toEqual(writes.map(() => seq()));
    const last = new Map(writes.map((w) => [w.service, w]));
    const desired = desiredFromApi(server);
    for (const [i, w] of last)
      expect(desired.get(benchVirtualServerKey(i))?.realServers.has(`${replacementIP(w.gen)}:8080`)).toBe(true);
  });

  it('loads the table the API implies', async () => {
    expect(await compareKernel(ipvs, desiredFromApi(server))).toEqual({
      virtualServers: 3,
      realServers: 6,
      draining: 0,
      wrong: 0,
      examples: [],
    });
  });

  it("asks for a slice's ready endpoints on its port, as the planner does", () => {
    server.update(benchSlice(1, 2, 5));
    const slice = server.get({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      namespace: 'bench',
      name: 'svc-1-1',
    })!;
    expect(sliceRealServers(slice)).toEqual(desiredFromApi(server).get(benchVirtualServerKey(1))?.realServers);
  });

  it('reads the whole table one service at a time and writes only where the changed virtual servers differ: a new real server added, the replaced one deleted', async () => {
    server.update(benchSlice(0, 2, 1));
    server.update(benchSlice(2, 2, 2));
    const want = desiredFromApi(server);
    want.delete(benchVirtualServerKey(1));
    const counts = await peerSync(ipvs, want);
    // the dump, 3 per virtual server, and GracefulDeleteRS's dest dump per removed real server
    expect(counts).toEqual({ reads: 1 + 3 * 3 + 2, writes: 4 });
    expect(
      ipvs.applied
        .slice(-4)
        .map((op) => op.kind)
        .sort(),
    ).toEqual(['delDest', 'delDest', 'newDest', 'newDest']);
    expect(await compareKernel(ipvs, desiredFromApi(server))).toEqual({
      virtualServers: 3,
      realServers: 6,
      draining: 0,
      wrong: 0,
      examples: [],
    });
  });

  it('writes nothing when no Service changed, though it reads the whole table', async () => {
    const before = ipvs.applied.length;
    expect(await peerSync(ipvs, new Map())).toEqual({ reads: 10, writes: 0 });
    expect(ipvs.applied.length).toBe(before);
  });

  it('applies every change of a churn segment, each counted once in the lag, and knows what the table should then hold', async () => {
    const loop = new PeerLoop(ipvs, 2, desiredFromApi(server));
    const r = await runPeerChurn({ server, loop, services: 3, endpoints: 2, rate: 1000, seconds: 0.1, firstGen: 1 });
    expect(r.lag.count).toBe(r.updates);
    expect(r.syncs).toBeGreaterThan(0);
    expect(r.final.wrong).toBe(0);
    expect(loop.desired()).toEqual(desiredFromApi(server));
    expect(r.lag.p99AtMostSeconds).toBeGreaterThanOrEqual(r.lag.p99Seconds);
  });

  it('loads the table daemon-latency.ts starts from, the rollout Service included', () => {
    const t = benchTable(3, 2);
    expect(t.size).toBe(4);
    expect(loadOps(t).length).toBe(4 + 3 * 2 + 100);
  });
});
