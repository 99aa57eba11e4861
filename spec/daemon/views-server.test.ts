// The daemon's /kube-ipvs/ views on the metrics server, over a Proxier on the kernel twins,
// read the way the CLI reads them (httpFetchView, runViews): both sides of the JSON contract.
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { createMetricsServer } from '../../lib/daemon/metrics-server';
import { createViewsHandler } from '../../lib/daemon/views-server';
import { defaultProxyConfig } from '../../lib/config/decode-config';
import { httpFetchView, DaemonViewError } from '../../lib/cli/views/views-client';
import { runViews, realViewsEnv } from '../../lib/cli/views/views-command';
import { DiffResponse, ServiceListResponse, StatusResponse, VIEW_PATHS } from '../../lib/model/views';
import { proxierOverTwins } from '../../lib/testing/proxier-twins';
import { makeEndpointSlice, makeService, svcPort } from '../../lib/testing/builders';
import { AF_INET, IPPROTO_TCP } from '../../lib/netlink/uapi/ip_vs';

const web = makeService('default', 'web', (s) => {
  s.spec = { clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [svcPort('http', 80)] };
});
const webSlice = makeEndpointSlice('default', 'web', 'web-1', (sl) => {
  sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
  sl.endpoints = ['10.244.1.2', '10.244.2.2'].map((ip) => ({ addresses: [ip], conditions: { ready: true }, nodeName: 'node-b' }));
});

async function serve(opts: { start?: boolean } = {}) {
  const t = await proxierOverTwins();
  t.add(web, webSlice);
  if (opts.start ?? true) await t.start();
  const registry = new Registry();
  const server = createMetricsServer(registry, () => ({}), createViewsHandler(t.proxier, () => defaultProxyConfig()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const out: string[] = [];
  const err: string[] = [];
  const env = { ...realViewsEnv(), stdout: { write: (s: string) => out.push(s) }, stderr: { write: (s: string) => err.push(s) } };
  const cli = async (...argv: string[]) => {
    out.length = 0;
    err.length = 0;
    const code = await runViews([...argv, '--server', url], env);
    return { code, stdout: out.join(''), stderr: err.join('') };
  };
  return { ...t, server, url, fetch: httpFetchView(url), cli };
}

let servers: http.Server[] = [];
afterEach(() => {
  for (const s of servers) s.close();
  servers = [];
});
async function started(opts: { start?: boolean } = {}) {
  const s = await serve(opts);
  servers.push(s.server);
  return s;
}

const vs = { af: AF_INET, protocol: IPPROTO_TCP, address: '10.96.0.10', port: 80, fwmark: 0 } as const;

describe('/kube-ipvs/ views on the metrics server', () => {
  it('services: the proxier rows as the contract', async () => {
    const s = await started();
    const list = await s.fetch<ServiceListResponse>(VIEW_PATHS.services);
    expect(list).toEqual({ source: 'daemon', frontends: JSON.parse(JSON.stringify(s.proxier.serviceList())) });
    expect(list.frontends.map((f) => [f.frontend, f.type, f.service, f.backends.length])).toEqual([['10.96.0.10:80/TCP', 'ClusterIP', 'default/web:http', 2]]);
  });

  it('status: the proxier part and the effective configuration', async () => {
    const s = await started();
    const st = await s.fetch<StatusResponse>(VIEW_PATHS.status);
    expect(st).toMatchObject({ mode: 'ipvs', node: { name: 'node-a' }, counts: { virtualServers: 1, realServers: 2 } });
    expect(st.config).toMatchObject({ syncPeriod: '30s', metricsBindAddress: '127.0.0.1:10249', healthzBindAddress: '0.0.0.0:10256', masqueradeBit: 14 });
  });

  it('diff: the ops a full sync would run, as JSON; `kube-ipvs diff` prints them as ipvsadm lines and exits 1', async () => {
    const s = await started();
    expect(await s.cli('diff')).toEqual({ code: 0, stdout: '', stderr: '' });
    await s.ipvs.apply({ kind: 'delDest', vs, rs: { af: AF_INET, address: '10.244.1.2', port: 8080 } });
    await s.ipvs.apply({ kind: 'setService', vs: { ...vs, scheduler: 'wlc' } });
    const d = await s.fetch<DiffResponse>(VIEW_PATHS.diff);
    expect(d.changes.map((c) => c.kind)).toEqual(['setService', 'newDest']);
    expect(await s.cli('diff')).toEqual({
      code: 1,
      stdout: '-E -t 10.96.0.10:80 -s rr\n-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1\n',
      stderr: '',
    });
    // nothing was repaired by looking
    expect((await s.ipvs.listRealServers(vs)).map((r) => r.address)).toEqual(['10.244.2.2']);
    expect(JSON.parse((await s.cli('diff', '-o', 'json')).stdout)).toEqual(d);
  });

  it('concurrent diffs share one kernel read', async () => {
    const s = await started();
    // the kernel read waits until all three requests have reached the server
    const realListAll = s.ipvs.listAll.bind(s.ipvs);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let arrived = 0;
    s.server.on('request', () => ++arrived === 3 && release());
    const listAll = jest.spyOn(s.ipvs, 'listAll').mockImplementation(async () => {
      await gate;
      return realListAll();
    });
    const answers = await Promise.all([s.fetch(VIEW_PATHS.diff), s.fetch(VIEW_PATHS.diff), s.fetch(VIEW_PATHS.diff)]);
    expect(answers).toEqual([{ changes: [] }, { changes: [] }, { changes: [] }]);
    expect(listAll).toHaveBeenCalledTimes(1);
    // a later request reads again
    await s.fetch(VIEW_PATHS.diff);
    expect(listAll).toHaveBeenCalledTimes(2);
  });

  it('diff before the lists arrived: 503 with the reason; `kube-ipvs diff` exits 2', async () => {
    const s = await started({ start: false });
    await expect(s.fetch(VIEW_PATHS.diff)).rejects.toEqual(expect.objectContaining({ status: 503 }));
    await expect(s.fetch(VIEW_PATHS.diff)).rejects.toBeInstanceOf(DaemonViewError);
    const r = await s.cli('diff');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/HTTP 503: Services and EndpointSlices have not been listed yet/);
  });

  it('an unknown view is 404 naming the known ones; the metrics server keeps its own paths', async () => {
    const s = await started();
    await expect(s.fetch('/kube-ipvs/nope')).rejects.toThrow(/HTTP 404: no view \/kube-ipvs\/nope \(try \/kube-ipvs\/services, \/kube-ipvs\/status, \/kube-ipvs\/diff\)/);
    const proxyMode = await new Promise<string>((resolve) => http.get(`${s.url}/proxyMode`, (res) => res.on('data', (d: Buffer) => resolve(d.toString()))));
    expect(proxyMode).toBe('ipvs');
  });
});
