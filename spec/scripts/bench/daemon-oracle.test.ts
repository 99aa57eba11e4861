import { FakeIpvs } from '../../../testkit/kernel/fake-ipvs';
import { IpvsOp } from '../../../lib/kernel/ipvs/ipvs';
import { VirtualServerId } from '../../../lib/model/ipvs';
import { AF_INET, IPPROTO_TCP } from '../../../lib/uapi/inet';
import { FakeApiServer } from '../../../testkit/fake-apiserver';
import { benchObjects, clusterIP, endpointIP, endpointSlice } from '../../../scripts/bench/daemon-fixtures';
import { compareKernel, desiredFromApi } from '../../../scripts/bench/daemon-oracle';

// 3 Services x 2 endpoints (daemon-fixtures.ts address ranges)
describe('the benchmark oracle (API objects -> desired IPVS table, compared with a kernel table)', () => {
  let server: FakeApiServer;
  beforeEach(() => {
    server = new FakeApiServer();
    for (const o of benchObjects(3, 2)) server.create(o);
  });

  const vs = (i: number): VirtualServerId => ({
    af: AF_INET,
    protocol: IPPROTO_TCP,
    address: clusterIP(i),
    port: 80,
    fwmark: 0,
  });
  const dest = (address: string, weight = 1) => ({
    af: AF_INET as typeof AF_INET,
    address,
    port: 8080,
    fwdMethod: 0,
    weight,
  });
  async function kernel(ops: IpvsOp[]): Promise<FakeIpvs> {
    const ipvs = new FakeIpvs();
    for (const op of ops) await ipvs.apply(op);
    return ipvs;
  }
  const programmed = (): IpvsOp[] =>
    [0, 1, 2].flatMap((i): IpvsOp[] => [
      { kind: 'newService', vs: { ...vs(i), scheduler: 'rr' } },
      { kind: 'newDest', vs: vs(i), rs: dest(endpointIP(i, 0, 2)) },
      { kind: 'newDest', vs: vs(i), rs: dest(endpointIP(i, 1, 2)) },
    ]);

  it('plans one virtual server per Service with its ready endpoints', async () => {
    const desired = desiredFromApi(server);
    expect([...desired.keys()].sort()).toEqual(['TCP/10.96.0.0:80', 'TCP/10.96.0.1:80', 'TCP/10.96.0.2:80']);
    expect(desired.get('TCP/10.96.0.1:80')).toEqual({
      scheduler: 'rr',
      realServers: new Set(['10.100.0.2:8080', '10.100.0.3:8080']),
    });
  });

  it('finds a kernel table that matches, counting weight-0 real servers as draining, not wrong', async () => {
    const ipvs = await kernel([...programmed(), { kind: 'newDest', vs: vs(0), rs: dest('10.200.0.1', 0) }]);
    expect(await compareKernel(ipvs, desiredFromApi(server))).toEqual({
      virtualServers: 3,
      realServers: 6,
      draining: 1,
      wrong: 0,
      examples: [],
    });
  });

  it('reports a missing virtual server, a missing real server and a stale one, after an API change', async () => {
    // the API replaces Service 1's endpoints; the kernel still has the old ones and lacks Service 2
    server.update(endpointSlice('svc-1', [{ address: '10.200.0.9' }]));
    const ipvs = await kernel(programmed().filter((op) => !('vs' in op) || op.vs?.address !== clusterIP(2)));
    const got = await compareKernel(ipvs, desiredFromApi(server));
    expect(got.wrong).toBe(2);
    expect(got.examples).toEqual([
      'TCP/10.96.0.1:80: 10.100.0.2:8080,10.100.0.3:8080 (want 10.200.0.9:8080)',
      'TCP/10.96.0.2:80: missing',
    ]);
  });

  it('ignores a terminating endpoint while ready ones exist', async () => {
    server.update(
      endpointSlice('svc-0', [
        { address: endpointIP(0, 0, 2) },
        { address: endpointIP(0, 1, 2), state: 'terminating' },
      ]),
    );
    expect(desiredFromApi(server).get('TCP/10.96.0.0:80')?.realServers).toEqual(new Set(['10.100.0.0:8080']));
  });
});
