/**
 * listRaw against the fake API server: items keep the wire shape (a timestamp stays a string,
 * fields client-node's models do not know survive), selectors are sent, and a refused list is
 * an ApiException carrying the HTTP status (and Retry-After) the informers' backoff reads; a
 * body past the cap is refused as it comes.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiException } from '@kubernetes/client-node';
import type { V1Service } from '@kubernetes/client-node';
import { listPaged, listRaw } from '../../lib/k8s/raw-list';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { RESPONSE_MAX_BYTES, ResponseTooLargeError } from '../../lib/k8s/api-request';
import { FakeApiServer, FakeObject } from '../../testkit/fake-apiserver';

const svc = (name: string, labels: Record<string, string> = {}): FakeObject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace: 'demo', name, uid: `uid-${name}`, labels },
  spec: {
    clusterIP: '10.96.0.10',
    clusterIPs: ['10.96.0.10'],
    ports: [{ port: 80, protocol: 'TCP' }],
    futureField: { kept: true },
  },
});

describe('listRaw', () => {
  let server: FakeApiServer;
  beforeEach(async () => {
    server = new FakeApiServer();
    await server.listen();
  });
  afterEach(() => server.close());

  it('returns the items as sent, with the list resourceVersion, filtered by the label selector', async () => {
    server.create(svc('web'));
    server.create(svc('mesh', { 'service.kubernetes.io/service-proxy-name': 'other' }));
    const kc = loadKubeConfig({ master: server.url });
    const list = await listRaw<V1Service>(kc, '/api/v1/services', {
      labelSelector: '!service.kubernetes.io/service-proxy-name',
    });
    expect(list.items.map((s) => s.metadata?.name)).toEqual(['web']);
    const item = list.items[0] as unknown as {
      metadata: { creationTimestamp: unknown };
      spec: { futureField?: unknown };
    };
    // client-node's model would have made it a Date
    expect(item.metadata.creationTimestamp).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT/));
    expect(item.spec.futureField).toEqual({ kept: true });
    expect(Number(list.metadata?.resourceVersion)).toBeGreaterThan(0);
  });

  it('a refused list is an ApiException with the status', async () => {
    const kc = loadKubeConfig({ master: server.url });
    const err = await listRaw(kc, '/api/v1/services', { fieldSelector: 'spec.nonsense==x,' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<string>).code).toBe(400);
    expect((err as Error).message).toContain(
      'list /api/v1/services: HTTP 400: field label not supported: spec.nonsense',
    );
  });
});

describe('listPaged', () => {
  let server: FakeApiServer;
  beforeEach(async () => {
    server = new FakeApiServer();
    await server.listen();
  });
  afterEach(() => server.close());
  const lists = () =>
    server.requests
      .filter((r) => r.verb === 'list')
      .map((r) => `limit=${r.query.limit ?? ''} continue=${r.query.continue ? 'yes' : 'no'}`);

  it("lists page by page from one snapshot: a write between pages is not seen, the first page's version is returned", async () => {
    for (const n of ['a', 'b', 'c', 'd', 'e']) server.create(svc(n));
    const kc = loadKubeConfig({ master: server.url });
    const version = server.resourceVersion;
    const pages: string[][] = [];
    const rv = await listPaged<V1Service>(
      kc,
      '/api/v1/services',
      {},
      (items) => {
        pages.push(items.map((s) => s.metadata!.name!));
        if (pages.length === 1) server.delete({ apiVersion: 'v1', kind: 'Service', namespace: 'demo', name: 'e' });
      },
      () => pages.push(['restart']),
      2,
    );
    expect(pages).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
    expect(rv).toBe(version);
    expect(lists()).toEqual(['limit=2 continue=no', 'limit=2 continue=yes', 'limit=2 continue=yes']);
  });

  it('an expired continue token falls back to one unpaged list, after onRestart', async () => {
    for (const n of ['a', 'b', 'c']) server.create(svc(n));
    const kc = loadKubeConfig({ master: server.url });
    const pages: string[][] = [];
    const rv = await listPaged<V1Service>(
      kc,
      '/api/v1/services',
      {},
      (items) => {
        pages.push(items.map((s) => s.metadata!.name!));
        if (pages.length === 1) {
          server.delete({ apiVersion: 'v1', kind: 'Service', namespace: 'demo', name: 'a' });
          server.expireListContinuations();
        }
      },
      () => pages.push(['restart']),
      2,
    );
    expect(pages).toEqual([['a', 'b'], ['restart'], ['b', 'c']]);
    expect(rv).toBe(server.resourceVersion);
    expect(lists()).toEqual(['limit=2 continue=no', 'limit=2 continue=yes', 'limit= continue=no']);
  });
});

describe('a list body past the cap (RESPONSE_MAX_BYTES, or the kubeconfig’s maxResponseBytes)', () => {
  let server: http.Server;
  let url: string;
  let answer: (res: http.ServerResponse) => void;
  beforeAll(async () => {
    server = http.createServer((_req, res) => answer(res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const cap = 1024;
  /** A ServiceList body of exactly `bytes` bytes (padded with trailing spaces). */
  const body = (bytes: number) => {
    const text = JSON.stringify({
      kind: 'ServiceList',
      metadata: { resourceVersion: '7' },
      items: [{ metadata: { name: 'a' } }],
    });
    return text + ' '.repeat(bytes - text.length);
  };
  const capped = () => {
    const kc = loadKubeConfig({ master: url });
    kc.maxResponseBytes = cap;
    return kc;
  };

  it('the default is 512 MiB, the longest string V8 makes', () => {
    expect(RESPONSE_MAX_BYTES).toBe(512 * 2 ** 20);
    expect(loadKubeConfig({ master: url }).maxResponseBytes).toBe(RESPONSE_MAX_BYTES);
  });

  it.each([
    ['with a Content-Length', false],
    ['chunked, no Content-Length', true],
  ])(
    '%s: a body of the cap is read; a byte more is refused with ResponseTooLargeError naming the cap',
    async (_what, chunked) => {
      const send = (bytes: number) => (res: http.ServerResponse) => {
        const b = Buffer.from(body(bytes));
        res.writeHead(200, { 'content-type': 'application/json', ...(chunked ? {} : { 'content-length': b.length }) });
        if (!chunked) return res.end(b);
        res.write(b.subarray(0, 600));
        res.end(b.subarray(600));
      };
      answer = send(cap);
      const list = await listRaw(capped(), '/api/v1/services');
      expect(list.items.map((i) => i.metadata?.name)).toEqual(['a']);
      answer = send(cap + 1);
      const err = await listRaw(capped(), '/api/v1/services').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ResponseTooLargeError);
      expect((err as Error).message).toBe(
        `GET /api/v1/services: the answer (HTTP 200) is larger than ${cap} bytes, the most a body may have; not read further`,
      );
    },
  );

  it("a refusal's Retry-After is on the ApiException's headers (the informers wait at least that long)", async () => {
    answer = (res) => {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '1' });
      res.end('{"kind":"Status","message":"Too many requests, please try again later.","code":429}');
    };
    const err = (await listRaw(capped(), '/api/v1/services').catch((e: unknown) => e)) as ApiException<string>;
    expect(err.code).toBe(429);
    expect(err.headers).toEqual({ 'retry-after': '1' });
  });
});
