// The daemon's /kube-ipvs/ views on the metrics server, over a Proxier on the kernel fakes,
// read the way the CLI reads them (httpFetchView, runViews): both sides of the JSON contract.
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { createMetricsServer } from '../../lib/daemon/metrics-server';
import { createViewsHandler, isLocalRequest, DEFAULT_DIFF_MIN_INTERVAL_MS } from '../../lib/daemon/views-server';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { defaultProxyConfig } from '../../lib/config/decode-config';
import { httpFetchView, DaemonViewError } from '../../lib/cli/views/views-client';
import { runViews, realViewsEnv } from '../../lib/cli/views/views-command';
import { DiffResponse, ServiceListResponse, StatusResponse, VIEW_PATHS } from '../../lib/model/views';
import { proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';

const web = makeService('default', 'web', (s) => {
  s.spec = { clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [svcPort('http', 80)] };
});
const webSlice = makeEndpointSlice('default', 'web', 'web-1', (sl) => {
  sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
  sl.endpoints = ['10.244.1.2', '10.244.2.2'].map((ip) => ({
    addresses: [ip],
    conditions: { ready: true },
    nodeName: 'node-b',
  }));
});

async function serve(opts: { start?: boolean; host?: string; diffMinIntervalMs?: number } = {}) {
  const t = await proxierOverFakes();
  t.add(web, webSlice);
  if (opts.start ?? true) await t.start();
  const registry = new Registry();
  // the views' diff interval on the proxier's fake clock (none unless a test asks for one)
  const views = createViewsHandler(t.proxier, () => defaultProxyConfig(), {
    clock: t.clock,
    diffMinIntervalMs: opts.diffMinIntervalMs ?? 0,
  });
  const server = createMetricsServer(registry, () => ({}), views);
  await new Promise<void>((r) => server.listen(0, opts.host ?? '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const out: string[] = [];
  const err: string[] = [];
  const env = {
    ...realViewsEnv(),
    stdout: { write: (s: string) => out.push(s) },
    stderr: { write: (s: string) => err.push(s) },
  };
  const cli = async (...argv: string[]) => {
    out.length = 0;
    err.length = 0;
    const code = await runViews([...argv, '--server', url], env);
    return { code, stdout: out.join(''), stderr: err.join('') };
  };
  return { ...t, server, url, fetch: httpFetchView(url), cli };
}

/** Resolves once `server` has received `n` requests in all (counted from its creation). */
async function waitForRequests(server: http.Server & { seen?: number }, n: number): Promise<void> {
  while ((server.seen ?? 0) < n) await new Promise((r) => setTimeout(r, 5));
}

let servers: http.Server[] = [];
afterEach(() => {
  for (const s of servers) s.close();
  servers = [];
});
async function started(opts: { start?: boolean; diffMinIntervalMs?: number } = {}) {
  const s = await serve(opts);
  servers.push(s.server);
  const counted = s.server as http.Server & { seen?: number };
  counted.seen = 0;
  s.server.prependListener('request', () => (counted.seen = (counted.seen ?? 0) + 1));
  return s;
}

const vs = { af: AF_INET, protocol: IPPROTO_TCP, address: '10.96.0.10', port: 80, fwmark: 0 } as const;

describe('/kube-ipvs/ views on the metrics server', () => {
  it('services: the proxier rows as the contract', async () => {
    const s = await started();
    const list = await s.fetch<ServiceListResponse>(VIEW_PATHS.services);
    expect(list).toEqual({
      source: 'daemon',
      frontends: JSON.parse(JSON.stringify(s.proxier.serviceList())),
      refused: [],
    });
    expect(list.frontends.map((f) => [f.frontend, f.type, f.service, f.backends.length])).toEqual([
      ['10.96.0.10:80/TCP', 'ClusterIP', 'default/web:http', 2],
    ]);
  });

  it('status: the proxier part and the effective configuration', async () => {
    const s = await started();
    const st = await s.fetch<StatusResponse>(VIEW_PATHS.status);
    expect(st).toMatchObject({ mode: 'ipvs', node: { name: 'node-a' }, counts: { virtualServers: 1, realServers: 2 } });
    expect(st.config).toMatchObject({
      syncPeriod: '30s',
      metricsBindAddress: '127.0.0.1:10249',
      healthzBindAddress: '0.0.0.0:10256',
      masqueradeBit: 14,
    });
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

  it('concurrent diffs share one kernel read; the next read waits out the minimum interval, and the requests meanwhile share it', async () => {
    const s = await started({ diffMinIntervalMs: DEFAULT_DIFF_MIN_INTERVAL_MS });
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
    // later requests wait until the interval since the last read is over, then share one read
    let answered = 0;
    const later = [s.fetch(VIEW_PATHS.diff), s.fetch(VIEW_PATHS.diff)].map((p) => p.then((a) => (++answered, a)));
    await waitForRequests(s.server, 5);
    await s.clock.advance(DEFAULT_DIFF_MIN_INTERVAL_MS - 1);
    expect(listAll).toHaveBeenCalledTimes(1);
    expect(answered).toBe(0);
    await s.clock.advance(1);
    expect(await Promise.all(later)).toEqual([{ changes: [] }, { changes: [] }]);
    expect(listAll).toHaveBeenCalledTimes(2);
  });

  it('a diff that fails still counts: the next one waits out the interval too', async () => {
    const s = await started({ diffMinIntervalMs: DEFAULT_DIFF_MIN_INTERVAL_MS });
    const listAll = jest.spyOn(s.ipvs, 'listAll').mockRejectedValueOnce(new Error('netlink: ENOBUFS'));
    await expect(s.fetch(VIEW_PATHS.diff)).rejects.toEqual(expect.objectContaining({ status: 500 }));
    const next = s.fetch(VIEW_PATHS.diff);
    await waitForRequests(s.server, 2);
    await s.clock.advance(DEFAULT_DIFF_MIN_INTERVAL_MS - 1);
    expect(listAll).toHaveBeenCalledTimes(1);
    await s.clock.advance(1);
    expect(await next).toEqual({ changes: [] });
    expect(listAll).toHaveBeenCalledTimes(2);
  });

  it('answers only local clients: a peer that is not loopback gets 403 and nothing is read; metrics paths are unaffected', async () => {
    const s = await started();
    const handler = createViewsHandler(s.proxier, () => defaultProxyConfig(), { clock: s.clock });
    const listAll = jest.spyOn(s.ipvs, 'listAll');
    const answer = (
      peer: string | undefined,
      serverAddress: unknown = { address: '0.0.0.0', family: 'IPv4', port: 10249 },
    ) => {
      const res = {
        code: 0,
        body: '',
        writeHead(code: number) {
          this.code = code;
          return this;
        },
        end(b: string) {
          this.body = b;
          return this;
        },
      };
      const req = {
        socket: { remoteAddress: peer, server: { address: () => serverAddress } },
      } as unknown as http.IncomingMessage;
      expect(handler(VIEW_PATHS.diff, res as unknown as http.ServerResponse, req)).toBe(true);
      return res;
    };
    for (const peer of ['192.0.2.9', '10.96.0.1', '::ffff:192.0.2.9', 'fd00::1', '128.0.0.1', undefined]) {
      const res = answer(peer);
      expect({ peer, code: res.code, body: JSON.parse(res.body) }).toEqual({
        peer,
        code: 403,
        body: { error: 'the /kube-ipvs/ views answer local clients only (loopback or a unix socket)' },
      });
    }
    expect(listAll).not.toHaveBeenCalled();
    expect(
      handler(
        '/metrics',
        {} as http.ServerResponse,
        { socket: { remoteAddress: '192.0.2.9' } } as unknown as http.IncomingMessage,
      ),
    ).toBe(false);
    for (const peer of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) {
      expect(isLocalRequest({ socket: { remoteAddress: peer } } as unknown as http.IncomingMessage)).toBe(true);
    }
  });

  it('over a unix socket the views answer', async () => {
    const t = await proxierOverFakes();
    t.add(web, webSlice);
    await t.start();
    const server = createMetricsServer(
      new Registry(),
      () => ({}),
      createViewsHandler(t.proxier, () => defaultProxyConfig(), { clock: t.clock }),
    );
    servers.push(server);
    const sock = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'kipvs-views-')), 'metrics.sock');
    await new Promise<void>((r) => server.listen(sock, r));
    const body = await new Promise<string>((resolve, reject) =>
      http.get({ socketPath: sock, path: VIEW_PATHS.services }, (res) => {
        let b = '';
        res.on('data', (d: Buffer) => (b += d.toString()));
        res.on('end', () => (res.statusCode === 200 ? resolve(b) : reject(new Error(`HTTP ${res.statusCode} ${b}`))));
      }),
    );
    expect((JSON.parse(body) as ServiceListResponse).frontends.length).toBeGreaterThan(0);
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
    await expect(s.fetch('/kube-ipvs/nope')).rejects.toThrow(
      /HTTP 404: no view \/kube-ipvs\/nope \(try \/kube-ipvs\/services, \/kube-ipvs\/status, \/kube-ipvs\/diff\)/,
    );
    const proxyMode = await new Promise<string>((resolve) =>
      http.get(`${s.url}/proxyMode`, (res) => res.on('data', (d: Buffer) => resolve(d.toString()))),
    );
    expect(proxyMode).toBe('ipvs');
  });
});
