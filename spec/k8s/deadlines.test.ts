/**
 * Issue 25 item 6, deadlines: a server that accepts connections and never answers, and an
 * exec credential plugin that never exits, each end a list or a watch within its deadline;
 * the informer then logs one line per failure and backs off, and reports itself as not
 * watching (what /healthz reads).
 */
import http from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { V1Service } from '@kubernetes/client-node';
import { ApiKubeConfig, apiRequest } from '../../lib/k8s/api-request';
import { RunningInformers, ServiceHandler, startInformers } from '../../lib/k8s/informers';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { listRaw } from '../../lib/k8s/raw-list';
import { execPluginUser, writeKubeconfig } from '../../testkit/kubeconfig-file';
import { waitFor } from '../../testkit/wait-for';

/** An HTTP server that answers lists (empty) unless `hangLists`, and never answers a watch. */
class HungServer {
  readonly server: http.Server;
  readonly sockets = new Set<Socket>();
  readonly requests: string[] = [];
  hangLists = true;

  constructor() {
    this.server = http.createServer((req, res) => {
      this.requests.push(req.url ?? '');
      if (this.hangLists || /[?&]watch=true/.test(req.url ?? '')) return; // never answers
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'ServiceList', apiVersion: 'v1', metadata: { resourceVersion: '7' }, items: [] }));
    });
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

/** Whether `p` settles within `ms`: 'pending' when it does not. */
async function within<T>(p: Promise<T>, ms: number): Promise<{ ok: T } | { error: Error } | 'pending'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'pending'>((r) => (timer = setTimeout(() => r('pending'), ms)));
  try {
    return await Promise.race([
      p.then(
        (ok) => ({ ok }),
        (error: Error) => ({ error }),
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

class Log {
  readonly lines: { level: string; message: string }[] = [];
  warn = (message: string) => this.lines.push({ level: 'warn', message });
  error = (message: string) => this.lines.push({ level: 'error', message });
  debug = (message: string) => this.lines.push({ level: 'debug', message });
  info = (message: string) => this.lines.push({ level: 'info', message });
}

const noop: ServiceHandler = { onServiceAdd() {}, onServiceUpdate() {}, onServiceDelete() {}, onServicesSynced() {} };

describe('deadlines (issue 25 item 6)', () => {
  let hung: HungServer;
  let url: string;
  let dir: string;
  const running: RunningInformers[] = [];

  beforeEach(async () => {
    hung = new HungServer();
    url = await hung.listen();
    dir = mkdtempSync(path.join(tmpdir(), 'deadlines-'));
  });
  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
    await hung.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const kcWith = (timeoutMs: number, kc = loadKubeConfig({ master: url })) => {
    (kc as { requestTimeoutMs?: number }).requestTimeoutMs = timeoutMs;
    return kc;
  };

  /** A kubeconfig (in `dir`) for the hung server whose user runs `plugin` with node as its exec credential plugin. */
  const execPluginKubeconfig = (plugin: string): string => writeKubeconfig(dir, url, [], execPluginUser(plugin));

  it('a list to a server that never answers fails with a TimeoutError once the deadline has passed', async () => {
    const outcome = await within(listRaw<V1Service>(kcWith(200), '/api/v1/services'), 3000);
    expect(outcome).not.toBe('pending');
    expect((outcome as { error: Error }).error).toMatchObject({
      name: 'TimeoutError',
      message: 'GET /api/v1/services: an answer did not come within 200 ms',
    });
  });

  it("the default deadline is 60 s (kube-apiserver's --request-timeout)", () => {
    expect((loadKubeConfig({ master: url }) as ApiKubeConfig).requestTimeoutMs).toBe(60_000);
  });

  it('an exec credential plugin that never exits fails the request at the deadline, naming the plugin', async () => {
    hung.hangLists = false;
    const plugin = path.join(dir, 'hung-plugin.js');
    writeFileSync(plugin, 'setTimeout(() => process.exit(1), 2000);'); // hangs past the deadline, then goes
    const file = execPluginKubeconfig(plugin);
    const outcome = await within(
      listRaw<V1Service>(kcWith(300, loadKubeConfig({ kubeconfig: file })), '/api/v1/services'),
      3000,
    );
    expect(outcome).not.toBe('pending');
    expect((outcome as { error: Error }).error).toMatchObject({
      name: 'TimeoutError',
      message: `GET /api/v1/services: the credentials (exec plugin ${process.execPath}) did not come within 300 ms`,
    });
    expect(hung.requests).toEqual([]);
  });

  it('a hung exec plugin runs once for requests made together, and is killed at the deadline (none is left behind)', async () => {
    hung.hangLists = false;
    const plugin = path.join(dir, 'forever-plugin.js');
    const pids = path.join(dir, 'pids');
    writeFileSync(
      plugin,
      `require('fs').appendFileSync(${JSON.stringify(pids)}, process.pid + '\\n'); setInterval(() => {}, 60_000);`,
    );
    const file = execPluginKubeconfig(plugin);
    const kc = kcWith(1500, loadKubeConfig({ kubeconfig: file })); // room for the plugin to start on a loaded host
    const outcomes = await Promise.all([1, 2, 3].map(() => within(listRaw<V1Service>(kc, '/api/v1/services'), 5000)));
    for (const o of outcomes) expect((o as { error: Error }).error).toMatchObject({ name: 'TimeoutError' });
    await waitFor('the plugin started', () => existsSync(pids));
    const started = readFileSync(pids, 'utf8').trim().split('\n').map(Number);
    expect(started).toHaveLength(1);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor('the hung plugin killed', () => !alive(started[0]!), 3000);
    expect(hung.requests).toEqual([]);
  });

  it("a request whose own deadline is later than the plugin's kill still fails with a TimeoutError naming the plugin", async () => {
    // the plugin is killed at the kubeconfig's deadline (300 ms); the request allows 5 s
    hung.hangLists = false;
    const plugin = path.join(dir, 'slow-plugin.js');
    writeFileSync(plugin, 'setInterval(() => {}, 60_000);');
    const kc = kcWith(300, loadKubeConfig({ kubeconfig: execPluginKubeconfig(plugin) }));
    const outcome = await within(apiRequest(kc, { method: 'GET', path: '/api/v1/services', timeoutMs: 5000 }), 4000);
    expect(outcome).not.toBe('pending');
    expect((outcome as { error: Error }).error).toMatchObject({
      name: 'TimeoutError',
      message: `GET /api/v1/services: the credentials (exec plugin ${process.execPath}) did not come within 300 ms`,
    });
    expect(hung.requests).toEqual([]);
  });

  it('an informer whose list hangs: one log line per deadline, then its backoff; it reports itself not watching since its start', async () => {
    const log = new Log();
    const before = Date.now();
    const r = startInformers(kcWith(150), {
      nodeName: 'n',
      handlers: { service: noop },
      log,
      backoff: { initialMs: 50, maxMs: 100 },
    });
    running.push(r);
    await waitFor('two failures logged', () => log.lines.length >= 2, 5000);
    expect(log.lines[0]).toEqual({
      level: 'warn',
      message: expect.stringMatching(
        /^services informer failed: TimeoutError: GET \/api\/v1\/services: an answer did not come within 150 ms; restarting in \d+ ms$/,
      ),
    });
    expect(hung.requests.filter((u) => u.startsWith('/api/v1/services?')).length).toBeGreaterThanOrEqual(2);
    expect(r.notWatching()).toEqual([{ resource: 'services', sinceMs: expect.any(Number) }]);
    expect(r.notWatching()[0]!.sinceMs).toBeGreaterThanOrEqual(before);
  });

  it('an informer whose watch never answers: the deadline is a failure (log line, backoff), not a silent resume', async () => {
    hung.hangLists = false;
    const log = new Log();
    const r = startInformers(kcWith(5000), {
      nodeName: 'n',
      handlers: { service: noop },
      log,
      backoff: { initialMs: 50, maxMs: 100 },
      watchTimeoutMs: 150,
    });
    running.push(r);
    await waitFor('two failures logged', () => log.lines.length >= 2, 5000);
    expect(log.lines[0]).toEqual({
      level: 'warn',
      message: expect.stringMatching(
        /^services informer failed: TimeoutError: GET \/api\/v1\/services: an answer did not come within 150 ms; restarting in \d+ ms$/,
      ),
    });
    expect(r.notWatching().map((n) => n.resource)).toEqual(['services']);
  });

  it('an informer with an open watch is watching', async () => {
    hung.hangLists = false;
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      if (/[?&]watch=true/.test(req.url ?? ''))
        res.write(''); // headers, then silence
      else
        res.end(
          JSON.stringify({ kind: 'ServiceList', apiVersion: 'v1', metadata: { resourceVersion: '7' }, items: [] }),
        );
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const log = new Log();
      const kc = kcWith(5000, loadKubeConfig({ master: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
      const r = startInformers(kc, { nodeName: 'n', handlers: { service: noop }, log, watchTimeoutMs: 10_000 });
      running.push(r);
      await waitFor('the watch open', () => r.notWatching().length === 0, 5000);
      await r.stop();
    } finally {
      server.closeAllConnections();
      await new Promise((ok) => server.close(ok));
    }
  });
});

describe('informer backoff jitter (issue 25 item 7)', () => {
  it("each wait is stretched at random by up to as much again (client-go's reflector jitter 1.0), so nodes do not retry in step", async () => {
    const hung = new HungServer();
    const url = await hung.listen();
    const log = new Log();
    const kc = loadKubeConfig({ master: url });
    (kc as { requestTimeoutMs?: number }).requestTimeoutMs = 50;
    const draws = [0.5, 0.25, 0.75];
    const r = startInformers(kc, {
      nodeName: 'n',
      handlers: { service: noop },
      log,
      backoff: { initialMs: 100, maxMs: 1000 },
      random: () => draws.shift() ?? 0,
    } as Parameters<typeof startInformers>[1]);
    try {
      await waitFor('three failures logged', () => log.lines.length >= 3, 5000);
      expect(log.lines.slice(0, 3).map((l) => /restarting in (\d+) ms/.exec(l.message)?.[1])).toEqual([
        '150',
        '250',
        '700',
      ]);
    } finally {
      await r.stop();
      await hung.close();
    }
  });
});
