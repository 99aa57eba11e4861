/**
 * Authentication as client-go does it, against the fake API server in its secure mode
 * (HTTPS with a CA made by openssl, bearer tokens, client certificates): every kubeconfig
 * form kube-proxy accepts sends its credentials; a token file is re-read every minute and at
 * once after a 401 (one retry when it changed); a refused credential is logged once; every
 * request reaches the rest_client metrics observer with client-go's labels.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { V1Service } from '@kubernetes/client-node';
import {
  ApiCall,
  ApiKubeConfig,
  apiRequest,
  H2_CONNECTION_WINDOW_BYTES,
  H2_STREAM_WINDOW_BYTES,
  TokenFile,
  dialReason,
} from '../../lib/k8s/api-request';
import { EventRecorder } from '../../lib/k8s/event-recorder';
import { EndpointSliceHandler, NodeHandler, ServiceHandler, startInformers } from '../../lib/k8s/informers';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { TokenBucketRateLimiter } from '../../lib/k8s/rate-limit';
import { listRaw } from '../../lib/k8s/raw-list';
import { FakeApiServer, FakeAuthOptions, kubeconfigFor, UNAUTHORIZED_STATUS } from '../../testkit/fake-apiserver';
import { FakeClock } from '../../testkit/fake-clock';
import { execPluginUser, writeKubeconfig } from '../../testkit/kubeconfig-file';
import { makeTestPki, TestPki } from '../../testkit/test-pki';
import { waitFor } from '../../testkit/wait-for';

const svc = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace: 'demo', name: 'web' },
  spec: { clusterIP: '10.96.0.10' },
};

class Log {
  readonly lines: { level: string; message: string }[] = [];
  info = (message: string) => this.lines.push({ level: 'info', message });
  error = (message: string) => this.lines.push({ level: 'error', message });
  warn = (message: string) => this.lines.push({ level: 'warn', message });
  debug = (message: string) => this.lines.push({ level: 'debug', message });
  at = (level: string) => this.lines.filter((l) => l.level === level);
}

describe('API authentication and rest_client observations', () => {
  let dir: string;
  let pki: TestPki;
  let server: FakeApiServer | undefined;
  let tokenPath: string;
  const b64 = (pem: string) => Buffer.from(pem).toString('base64');

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'api-auth-'));
    pki = makeTestPki(path.join(dir, 'pki'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  beforeEach(() => {
    tokenPath = path.join(dir, `token-${Math.random().toString(36).slice(2)}`);
    writeFileSync(tokenPath, 'sa-token-1\n');
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  async function secureServer(auth: FakeAuthOptions = { tokenFile: tokenPath }, tls = true): Promise<FakeApiServer> {
    server = new FakeApiServer({
      ...(tls ? { tls: { cert: pki.serverCert, key: pki.serverKey, clientCa: pki.ca } } : {}),
      auth,
    });
    await server.listen();
    server.create(svc);
    return server;
  }

  const kubeconfig = (url: string, cluster: string[], user: string[]) => writeKubeconfig(dir, url, cluster, user);

  const list = (kc: ApiKubeConfig) => listRaw<V1Service>(kc, '/api/v1/services');
  const auths = () =>
    server!.requests
      .filter((r) => r.verb !== 'control')
      .map((r) => `${r.authorization || '-'} ${r.authenticated ? 'ok' : '401'}`);

  describe('each kubeconfig form sends its credentials', () => {
    it.each([['tokenFile'], ['token-file']])("user.%s (client-go's and client-node's spelling)", async (field) => {
      const s = await secureServer();
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, [`certificate-authority: ${pki.caFile}`], [`${field}: ${tokenPath}`]),
      });
      expect((await list(kc)).items).toHaveLength(1);
      expect(auths()).toEqual(['Bearer sa-token-1 ok']);
    });

    it("a relative tokenFile is relative to the kubeconfig's directory, as in client-go", async () => {
      const s = await secureServer();
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(
          s.url,
          [`certificate-authority: ${pki.caFile}`],
          [`tokenFile: ${path.basename(tokenPath)}`],
        ),
      });
      await list(kc);
      expect(auths()).toEqual(['Bearer sa-token-1 ok']);
    });

    it('user.token', async () => {
      const s = await secureServer({ tokens: ['static-1'] });
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, [`certificate-authority-data: ${b64(pki.ca)}`], ['token: static-1']),
      });
      await list(kc);
      expect(auths()).toEqual(['Bearer static-1 ok']);
    });

    it("no credentials: 401 with kube-apiserver's Status body", async () => {
      const s = await secureServer();
      const kc = loadKubeConfig({ kubeconfig: kubeconfig(s.url, [`certificate-authority: ${pki.caFile}`], []) });
      const res = await apiRequest(kc, { method: 'GET', path: '/api/v1/services' });
      expect(res.status).toBe(401);
      expect(JSON.parse(res.body)).toEqual(UNAUTHORIZED_STATUS);
    });

    it.each([
      ['files', () => [`client-certificate: ${pki.clientCertFile}`, `client-key: ${pki.clientKeyFile}`]],
      ['data', () => [`client-certificate-data: ${b64(pki.clientCert)}`, `client-key-data: ${b64(pki.clientKey)}`]],
    ])('a client certificate (%s) to a server that verifies client certificates', async (_how, user) => {
      const s = await secureServer({ tokens: [] });
      const kc = loadKubeConfig({ kubeconfig: kubeconfig(s.url, [`certificate-authority: ${pki.caFile}`], user()) });
      expect((await list(kc)).items).toHaveLength(1);
      expect(auths()).toEqual(['- ok']);
    });

    it('certificate-authority (file or data) is what makes the server trusted; without it TLS fails', async () => {
      const s = await secureServer();
      const withFile = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, [`certificate-authority: ${pki.caFile}`], [`tokenFile: ${tokenPath}`]),
      });
      const withData = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, [`certificate-authority-data: ${b64(pki.ca)}`], [`tokenFile: ${tokenPath}`]),
      });
      const without = loadKubeConfig({ kubeconfig: kubeconfig(s.url, [], [`tokenFile: ${tokenPath}`]) });
      await list(withFile);
      await list(withData);
      await expect(list(without)).rejects.toThrow();
      expect(auths()).toEqual(['Bearer sa-token-1 ok', 'Bearer sa-token-1 ok']);
    });

    it('insecure-skip-tls-verify: no CA needed', async () => {
      const s = await secureServer();
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, ['insecure-skip-tls-verify: true'], [`tokenFile: ${tokenPath}`]),
      });
      await list(kc);
      expect(auths()).toEqual(['Bearer sa-token-1 ok']);
    });

    it("an exec credential plugin (client-node's ExecAuth) still works", async () => {
      const s = await secureServer({ tokens: ['exec-token'] });
      const plugin = path.join(dir, 'plugin.js');
      writeFileSync(
        plugin,
        `process.stdout.write(JSON.stringify({apiVersion:'client.authentication.k8s.io/v1',kind:'ExecCredential',status:{token:'exec-token'}}))`,
      );
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, [`certificate-authority: ${pki.caFile}`], execPluginUser(plugin)),
      });
      await list(kc);
      expect(auths()).toEqual(['Bearer exec-token ok']);
    });

    it("an exec plugin's cached credential refused with 401: the plugin runs again, once, as client-go refreshes it", async () => {
      // the plugin prints the token the file holds; the server accepts only the file's current one
      const s = await secureServer({ tokenFile: tokenPath });
      const plugin = path.join(dir, 'plugin-file.js');
      writeFileSync(
        plugin,
        `process.stdout.write(JSON.stringify({apiVersion:'client.authentication.k8s.io/v1',kind:'ExecCredential',status:{token:require('fs').readFileSync(${JSON.stringify(tokenPath)},'utf8').trim()}}))`,
      );
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, [`certificate-authority: ${pki.caFile}`], execPluginUser(plugin)),
      });
      await list(kc);
      writeFileSync(tokenPath, 'sa-token-2');
      await list(kc);
      expect(auths()).toEqual(['Bearer sa-token-1 ok', 'Bearer sa-token-1 401', 'Bearer sa-token-2 ok']);
    });

    it("an exec plugin whose every credential is refused: one retry after the 401, never more (the caller's backoff does the rest)", async () => {
      await secureServer({ tokens: ['the-right-one'] });
      const plugin = path.join(dir, 'plugin-wrong.js');
      writeFileSync(
        plugin,
        `process.stdout.write(JSON.stringify({apiVersion:'client.authentication.k8s.io/v1',kind:'ExecCredential',status:{token:'not-it'}}))`,
      );
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(server!.url, [`certificate-authority: ${pki.caFile}`], execPluginUser(plugin)),
      });
      await expect(list(kc)).rejects.toMatchObject({ code: 401 });
      expect(auths()).toEqual(['Bearer not-it 401', 'Bearer not-it 401']);
    });

    it("in-cluster config: the service account's CA and token, the token file rotated like any other", async () => {
      const s = await secureServer({ tokenFile: tokenPath });
      const sa = path.join(dir, 'root', 'var/run/secrets/kubernetes.io/serviceaccount');
      mkdirSync(sa, { recursive: true });
      writeFileSync(path.join(sa, 'ca.crt'), pki.ca);
      writeFileSync(path.join(sa, 'token'), 'sa-token-1');
      const port = new URL(s.url).port;
      const kc = loadKubeConfig({
        env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port },
        inClusterRoot: path.join(dir, 'root'),
      });
      await list(kc);
      writeFileSync(tokenPath, 'sa-token-2');
      writeFileSync(path.join(sa, 'token'), 'sa-token-2');
      await list(kc);
      expect(auths()).toEqual(['Bearer sa-token-1 ok', 'Bearer sa-token-1 401', 'Bearer sa-token-2 ok']);
    });
  });

  describe('connections', () => {
    it('requests share one kept-alive TLS connection (client-node built a new Agent, so a handshake, per request); new TLS material gets a new one', async () => {
      const s = await secureServer();
      const caFile = path.join(dir, `ca-${Math.random().toString(36).slice(2)}.crt`);
      writeFileSync(caFile, pki.ca);
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, [`certificate-authority: ${caFile}`], [`tokenFile: ${tokenPath}`]),
      });
      for (let i = 0; i < 5; i++) await list(kc);
      // undici may open a second connection while the first is being handed back to its pool
      const opened = s.connectionsAccepted;
      expect(opened).toBeLessThanOrEqual(2);
      for (let i = 0; i < 10; i++) await list(kc);
      expect(s.connectionsAccepted).toBe(opened);
      // the CA file rewritten (a rotation): read anew, so the next request connects with it
      writeFileSync(caFile, pki.ca + '\n');
      await list(kc);
      expect(s.connectionsAccepted).toBe(opened + 1);
      expect(auths()).toHaveLength(16);
    });
  });

  describe('HTTP/2', () => {
    it('to a server that offers h2 (kube-apiserver does), lists and open watches share one connection (undici offers h2 by default; HTTP/1.1 would need one per open watch), and an aborted watch ends its stream only', async () => {
      let sessions = 0;
      const streamsClosed: string[] = [];
      const h2 = http2.createSecureServer({ cert: pki.serverCert, key: pki.serverKey });
      h2.on('session', () => sessions++);
      h2.on('stream', (stream, headers) => {
        const p = String(headers[':path']);
        stream.on('close', () => streamsClosed.push(p));
        stream.respond({ ':status': 200, 'content-type': 'application/json' });
        if (p.includes('watch=true'))
          stream.write('{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}\n');
        else stream.end(JSON.stringify({ kind: 'ServiceList', metadata: { resourceVersion: '7' }, items: [] }));
      });
      await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r));
      const url = `https://127.0.0.1:${(h2.address() as AddressInfo).port}`;
      try {
        const kc = loadKubeConfig({
          kubeconfig: kubeconfig(url, [`certificate-authority: ${pki.caFile}`], ['token: t']),
        });
        await list(kc); // the connection, before requests made together
        const abortA = new AbortController();
        const watches = await Promise.all(
          ['a', 'b', 'c'].map((n) =>
            apiRequest(
              kc,
              {
                method: 'GET',
                path: `/api/v1/${n}`,
                query: { watch: true },
                ...(n === 'a' ? { signal: abortA.signal } : {}),
              },
              true,
            ),
          ),
        );
        expect(watches.map((w) => w.status)).toEqual([200, 200, 200]);
        for (let i = 0; i < 5; i++) await list(kc);
        expect(sessions).toBe(1);
        abortA.abort(); // as ReportingWatch ends a watch
        await waitFor("the aborted watch's stream closed", () => streamsClosed.includes('/api/v1/a?watch=true'));
        await list(kc);
        expect(sessions).toBe(1);
        expect(streamsClosed.filter((p) => p.includes('watch'))).toEqual(['/api/v1/a?watch=true']);
        for (const w of watches.slice(1)) await w.stream!.body!.cancel();
      } finally {
        h2.close();
      }
    });
  });

  describe('HTTP/2 flow control', () => {
    it("offers client-go's windows (4 MiB a stream, 16 MiB the connection), so the server can send a watch's events ahead of a busy main thread", async () => {
      let settings: http2.Settings | undefined;
      let connectionWindow = 0;
      const h2 = http2.createSecureServer({ cert: pki.serverCert, key: pki.serverKey });
      h2.on('session', (session) => session.on('remoteSettings', (s) => (settings = s)));
      h2.on('stream', (stream) => {
        stream.respond({ ':status': 200, 'content-type': 'application/json' });
        // (by the first request the client's connection WINDOW_UPDATE has arrived)
        connectionWindow = stream.session!.state.remoteWindowSize ?? 0;
        stream.end(JSON.stringify({ kind: 'ServiceList', metadata: { resourceVersion: '7' }, items: [] }));
      });
      await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r));
      const url = `https://127.0.0.1:${(h2.address() as AddressInfo).port}`;
      try {
        const kc = loadKubeConfig({
          kubeconfig: kubeconfig(url, [`certificate-authority: ${pki.caFile}`], ['token: t']),
        });
        await list(kc);
        await list(kc);
        expect(settings?.initialWindowSize).toBe(H2_STREAM_WINDOW_BYTES);
        // what the server may still send on the connection: about 16 MiB, less what it has sent
        expect(connectionWindow).toBeGreaterThan(H2_CONNECTION_WINDOW_BYTES - 65_536);
      } finally {
        h2.close();
      }
    });
  });

  describe('a rotated token file', () => {
    it("is re-read once the token is a minute old (client-go's period), not before", async () => {
      const s = await secureServer({ tokens: ['sa-token-1', 'sa-token-2'] }, false);
      let now = 1_000_000;
      const kc = loadKubeConfig({ kubeconfig: kubeconfig(s.url, [], [`tokenFile: ${tokenPath}`]), clock: () => now });
      await list(kc);
      writeFileSync(tokenPath, 'sa-token-2');
      now += 59_000;
      await list(kc);
      now += 1_000;
      await list(kc);
      expect(auths()).toEqual(['Bearer sa-token-1 ok', 'Bearer sa-token-1 ok', 'Bearer sa-token-2 ok']);
    });

    it('a 401 re-reads it at once and sends the request once more with the new token', async () => {
      const s = await secureServer({ tokenFile: tokenPath });
      const log = new Log();
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, [`certificate-authority: ${pki.caFile}`], [`tokenFile: ${tokenPath}`]),
        log,
      });
      await list(kc);
      // the kubelet rotates the projected token; the server accepts only the new one from now on
      writeFileSync(tokenPath, 'sa-token-2');
      expect((await list(kc)).items).toHaveLength(1);
      expect(auths()).toEqual(['Bearer sa-token-1 ok', 'Bearer sa-token-1 401', 'Bearer sa-token-2 ok']);
      expect(log.lines).toEqual([]);
    });

    it("the retry after a 401 waits for a rate-limit token, as client-go's tryThrottle makes every try wait", async () => {
      const s = await secureServer({ tokenFile: tokenPath }, false);
      const clock = new FakeClock(0);
      const kc = loadKubeConfig({ kubeconfig: kubeconfig(s.url, [], [`tokenFile: ${tokenPath}`]) });
      kc.rateLimiter = new TokenBucketRateLimiter(5, 1, clock); // one token, then one per 200 ms
      writeFileSync(tokenPath, 'sa-token-2');
      kc.tokenFile!.reread();
      writeFileSync(tokenPath, 'sa-token-3'); // the server now takes only this one: the first try gets a 401
      const done = list(kc).then(
        () => 'ok',
        (e: Error) => e.message,
      );
      await waitFor('the first try refused', () => auths().length === 1);
      await new Promise((r) => setTimeout(r, 50));
      expect(auths()).toEqual(['Bearer sa-token-2 401']);
      await clock.advance(200);
      expect(await done).toBe('ok');
      expect(auths()).toEqual(['Bearer sa-token-2 401', 'Bearer sa-token-3 ok']);
    });

    it('requests refused together after a rotation each retry with the new token, though one re-read found it', async () => {
      const s = await secureServer({ tokenFile: tokenPath }, false);
      const log = new Log();
      const kc = loadKubeConfig({ kubeconfig: kubeconfig(s.url, [], [`tokenFile: ${tokenPath}`]), log });
      await list(kc);
      writeFileSync(tokenPath, 'sa-token-2');
      await Promise.all([list(kc), list(kc), list(kc)]);
      expect(auths().sort()).toEqual([
        'Bearer sa-token-1 401',
        'Bearer sa-token-1 401',
        'Bearer sa-token-1 401',
        'Bearer sa-token-1 ok',
        'Bearer sa-token-2 ok',
        'Bearer sa-token-2 ok',
        'Bearer sa-token-2 ok',
      ]);
      expect(log.lines).toEqual([]);
    });

    it("a 401 with the token unchanged is not retried: the caller's backoff retries", async () => {
      await secureServer({ tokens: ['the-right-one'] });
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(server!.url, [`certificate-authority: ${pki.caFile}`], [`tokenFile: ${tokenPath}`]),
      });
      await expect(list(kc)).rejects.toMatchObject({ code: 401 });
      expect(auths()).toEqual(['Bearer sa-token-1 401']);
    });

    it('a token file that goes missing keeps the token read before; a static token is the fallback when none was read', () => {
      let now = 0;
      const log = new Log();
      const t = new TokenFile(tokenPath, 'static', () => now, 60_000, log);
      expect(t.current()).toBe('sa-token-1');
      rmSync(tokenPath);
      now += 60_000;
      expect(t.current()).toBe('sa-token-1');
      expect(log.at('warn')).toHaveLength(1);
      expect(new TokenFile(tokenPath, 'static').current()).toBe('static');
      expect(() => new TokenFile(tokenPath).current()).toThrow(/bearer token file .*token-/);
    });

    it('an unreadable token file without a static token refuses the kubeconfig at load, as client-go does', () => {
      expect(() =>
        loadKubeConfig({ kubeconfig: kubeconfig('https://127.0.0.1:1', [], [`tokenFile: ${path.join(dir, 'nope')}`]) }),
      ).toThrow(/nope/);
    });
  });

  describe('a refused credential', () => {
    it('gets one clear log line naming the kubeconfig, the user and the URL, however many retries; the informers program nothing', async () => {
      const s = await secureServer({ tokens: ['the-right-one'] });
      const log = new Log();
      const file = kubeconfig(s.url, [`certificate-authority: ${pki.caFile}`], [`tokenFile: ${tokenPath}`]);
      const kc = loadKubeConfig({ kubeconfig: file, log });
      const calls: string[] = [];
      const handler = new Proxy({}, { get: (_t, name) => () => calls.push(String(name)) }) as ServiceHandler &
        EndpointSliceHandler &
        NodeHandler;
      const informers = startInformers(kc, {
        nodeName: 'node-a',
        handlers: { service: handler, endpointSlice: handler, node: handler },
        log,
        backoff: { initialMs: 5, maxMs: 20 },
      });
      try {
        await waitFor('several refused lists', () => s.requests.filter((r) => !r.authenticated).length >= 12);
      } finally {
        await informers.stop();
      }
      expect(calls).toEqual([]);
      const errors = log.at('error');
      expect(errors).toHaveLength(1);
      expect(errors[0]!.message).toContain(`kubeconfig ${file}`);
      expect(errors[0]!.message).toContain('user "default"');
      expect(errors[0]!.message).toMatch(new RegExp(`GET ${s.url.replace(/[.]/g, '\\.')}/(api|apis)/`));
      expect(errors[0]!.message).toContain('401 Unauthorized');
      expect(errors[0]!.message).toContain(`bearer token file ${tokenPath}`);
      expect(log.at('warn')).toEqual([]);
    });

    it('logs again after a success, when credentials fail anew', async () => {
      const s = await secureServer({ tokenFile: tokenPath }, false);
      const log = new Log();
      const kc = loadKubeConfig({ kubeconfig: kubeconfig(s.url, [], ['token: wrong']), log });
      await expect(list(kc)).rejects.toThrow();
      await expect(list(kc)).rejects.toThrow();
      expect(log.at('error')).toHaveLength(1);
      kc.users = kc.users.map((u) => ({ ...u, token: 'sa-token-1' }));
      await list(kc);
      kc.users = kc.users.map((u) => ({ ...u, token: 'wrong' }));
      await expect(list(kc)).rejects.toThrow();
      expect(log.at('error')).toHaveLength(2);
    });
  });

  describe('rest_client observations', () => {
    it("every list, watch and event request, with client-go's code, host and method; retries counted each", async () => {
      const s = await secureServer({ tokenFile: tokenPath });
      const calls: ApiCall[] = [];
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig(s.url, [`certificate-authority: ${pki.caFile}`], [`tokenFile: ${tokenPath}`]),
        observer: (c) => calls.push(c),
      });
      const host = new URL(s.url).host;
      await list(kc);
      writeFileSync(tokenPath, 'sa-token-2');
      await list(kc);
      const recorder = new EventRecorder(kc, { nodeName: 'node-a', log: { debug: () => undefined }, clock: () => 0 });
      await recorder.warn({ kind: 'Service', namespace: 'demo', name: 'web' }, 'R', 'm');
      await recorder.warn({ kind: 'Service', namespace: 'demo', name: 'web' }, 'R', 'm');
      const handler = new Proxy({}, { get: () => () => undefined }) as ServiceHandler;
      const informers = startInformers(kc, { nodeName: 'node-a', handlers: { service: handler }, log: new Log() });
      await waitFor('the watch', () =>
        calls.some((c) => c.method === 'GET' && s.requests.some((r) => r.verb === 'watch')),
      );
      await waitFor('the watch observed', () => calls.length >= 7);
      await informers.stop();
      expect(calls.map((c) => `${c.method} ${c.host} ${c.code}`)).toEqual([
        `GET ${host} 200`,
        `GET ${host} 401`,
        `GET ${host} 200`,
        `POST ${host} 201`,
        `PATCH ${host} 200`,
        `GET ${host} 200`,
        `GET ${host} 200`,
      ]);
      expect(calls.every((c) => c.seconds >= 0 && c.seconds < 60)).toBe(true);
    });

    it('no response: code "<error>"; the host label keeps the port as the kubeconfig writes it', async () => {
      const calls: ApiCall[] = [];
      const kc = loadKubeConfig({
        kubeconfig: kubeconfig('https://127.0.0.1:443', ['insecure-skip-tls-verify: true'], ['token: x']),
        observer: (c) => calls.push(c),
      });
      await expect(list(kc)).rejects.toThrow();
      expect(calls).toEqual([{ method: 'GET', host: '127.0.0.1:443', code: '<error>', seconds: expect.any(Number) }]);
    });
  });

  it('kubeconfigFor writes a kubeconfig client-node and kube-ipvs read for the secure mode', async () => {
    const s = await secureServer();
    const f = path.join(dir, 'kc-for');
    writeFileSync(f, kubeconfigFor(s.url, { caFile: pki.caFile, tokenFile: tokenPath }));
    await list(loadKubeConfig({ kubeconfig: f }));
    expect(auths()).toEqual(['Bearer sa-token-1 ok']);
  });
});

describe("dialReason: a failed connection in client-go's words, from the socket error's code (issue 41 item 10)", () => {
  const url = new URL('https://10.0.0.1:6443/api/v1/services?limit=500');
  const sys = (code: string, more: Record<string, unknown> = {}) =>
    Object.assign(new Error(`some text ${code}`), { code, ...more });
  it.each<[Error, string]>([
    [
      sys('ECONNREFUSED', { syscall: 'connect', address: '10.0.0.1', port: 6443 }),
      'dial tcp 10.0.0.1:6443: connect: connection refused',
    ],
    [
      sys('EHOSTUNREACH', { syscall: 'connect', address: 'fd00::1', port: 6443 }),
      'dial tcp [fd00::1]:6443: connect: no route to host',
    ],
    [sys('ECONNRESET', { syscall: 'read' }), 'read tcp 10.0.0.1:6443: read: connection reset by peer'],
    [
      sys('ENOTFOUND', { syscall: 'getaddrinfo', hostname: 'api.example' }),
      'dial tcp: lookup api.example: no such host',
    ],
    [sys('UND_ERR_CONNECT_TIMEOUT'), 'dial tcp 10.0.0.1:6443: i/o timeout'],
    [
      Object.assign(new Error('unable to verify the first certificate'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
      'tls: unable to verify the first certificate',
    ],
  ])('%s', (cause, want) => {
    expect(dialReason(cause, url)).toBe(want);
  });
});
