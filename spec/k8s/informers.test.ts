/**
 * startInformers against the fake API server: initial sync, updates with the old object,
 * deletes, restart after a dropped watch, relist after 410, relist after a refused watch
 * (etcd restore), the Node field selector, and stop().
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  listPageSize,
  informerBackoff,
  intakeHoldMaxMs,
  intakeSliceMs,
  INFORMER_BACKOFF,
  startInformers,
  watchListClient,
  WATCH_LIST_CLIENT_DEFAULT,
  RunningInformers,
  EndpointSliceHandler,
  NodeHandler,
  ServiceHandler,
} from '../../lib/k8s/informers';
import { INTAKE_HOLD_MAX_MS, INTAKE_SLICE_MS, IntakeGate } from '../../lib/k8s/intake-gate';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { LIST_PAGE_SIZE } from '../../lib/k8s/raw-list';
import { FakeApiError, FakeApiServer, FakeObject } from '../../testkit/fake-apiserver';
import { waitFor } from '../../testkit/wait-for';

const NS = 'demo';

function service(name: string, labels?: Record<string, string>, clusterIP = '10.96.0.10'): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: NS, name, ...(labels ? { labels } : {}) },
    spec: { clusterIP },
  };
}
const svcRef = (name: string) => ({ apiVersion: 'v1', kind: 'Service', namespace: NS, name });

/** Records handler calls as "add demo/s1", "update demo/s1 ->10.96.0.11", "synced"; the previous objects of updates in `olds`. */
class Recorder implements ServiceHandler, EndpointSliceHandler, NodeHandler {
  readonly calls: string[] = [];
  readonly objects: KubernetesObject[] = [];
  readonly olds: KubernetesObject[] = [];
  private key = (o: KubernetesObject) =>
    `${o.metadata?.namespace ? o.metadata.namespace + '/' : ''}${o.metadata?.name}`;
  private ip = (o: KubernetesObject) => (o as { spec?: { clusterIP?: string } }).spec?.clusterIP ?? '';
  private add = (o: KubernetesObject) => {
    this.objects.push(o);
    this.calls.push(`add ${this.key(o)}`);
  };
  private update = (a: KubernetesObject, b: KubernetesObject) => {
    this.olds.push(a);
    this.calls.push(`update ${this.key(b)}${this.ip(b) ? ` ->${this.ip(b)}` : ''}`);
  };
  private del = (o: KubernetesObject) => this.calls.push(`delete ${this.key(o)}`);
  private synced = () => this.calls.push('synced');
  onServiceAdd = this.add;
  onServiceUpdate = this.update;
  onServiceDelete = this.del;
  onServicesSynced = this.synced;
  onEndpointSliceAdd = this.add;
  onEndpointSliceUpdate = this.update;
  onEndpointSliceDelete = this.del;
  onEndpointSlicesSynced = this.synced;
  onNodeAdd = this.add;
  onNodeUpdate = this.update;
  onNodeDelete = this.del;
  onNodeSynced = this.synced;
  has = (call: string) => this.calls.includes(call);
}

class Log {
  readonly lines: { level: string; message: string }[] = [];
  info = (message: string) => this.lines.push({ level: 'info', message });
  warn = (message: string) => this.lines.push({ level: 'warn', message });
  error = (message: string) => this.lines.push({ level: 'error', message });
  debug = (message: string) => this.lines.push({ level: 'debug', message });
}

describe('startInformers', () => {
  let server: FakeApiServer;
  const running: RunningInformers[] = [];
  let log: Log;

  beforeEach(async () => {
    server = new FakeApiServer();
    await server.listen();
    log = new Log();
  });
  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
    await server.close();
  });

  function start(
    handlers: Parameters<typeof startInformers>[1]['handlers'],
    nodeName = 'node-a',
    initialMs = 10,
    listPageSize?: number,
    streamingLists?: boolean,
    master = server.url,
  ): Recorder {
    const kc = loadKubeConfig({ master });
    running.push(
      startInformers(kc, {
        nodeName,
        handlers,
        log,
        backoff: { initialMs, maxMs: 100 },
        random: () => 0,
        ...(listPageSize ? { listPageSize } : {}),
        ...(streamingLists !== undefined ? { streamingLists } : {}),
      }),
    );
    return handlers.service as Recorder;
  }
  const count = (verb: string, resource = 'v1/services') =>
    server.requests.filter((r) => r.verb === verb && r.resource === resource).length;

  it('delivers the initial list as adds, then Synced once; skips what kube-proxy skips', async () => {
    server.create(service('s1'));
    server.create(service('s2'));
    // kube-proxy v1.37 proxies a Service labelled headless that has a cluster IP; a
    // clusterIP None one, and one of another proxy, it never receives
    server.create(service('labelled', { 'service.kubernetes.io/headless': '' }));
    server.create(service('headless', undefined, 'None'));
    server.create(service('other-proxy', { 'service.kubernetes.io/service-proxy-name': 'x' }));
    const rec = start({ service: new Recorder() });
    await waitFor('synced', () => rec.has('synced'));
    await waitFor('the watch', () => server.openWatches === 1);
    server.create(service('s3'));
    await waitFor('add s3', () => rec.has('add demo/s3'));
    expect(rec.calls).toEqual(['add demo/labelled', 'add demo/s1', 'add demo/s2', 'synced', 'add demo/s3']);
    // list items carry no kind; the handler got them all the same
    expect(rec.objects[0]).toBeDefined();
    expect(rec.objects[0]!.kind).toBeUndefined();
    const list = server.requests.find((r) => r.verb === 'list')!;
    expect([list.query.labelSelector, list.query.fieldSelector]).toEqual([
      '!service.kubernetes.io/service-proxy-name',
      'spec.clusterIP!=None',
    ]);
    expect(log.lines).toEqual([]);
  });

  it("hands over (and so caches) list items and watch events without metadata.managedFields and kubectl's last-applied copy, the rest as sent", async () => {
    const managed = (name: string): FakeObject => {
      const o = service(name, { app: name });
      const annotations = { a: '1', 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(o) };
      return {
        ...o,
        metadata: {
          ...o.metadata,
          annotations,
          managedFields: [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': {} } }],
        } as FakeObject['metadata'],
      };
    };
    server.create(managed('listed'));
    const rec = start({ service: new Recorder() });
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    server.create(managed('watched'));
    await waitFor('add watched', () => rec.has('add demo/watched'));
    expect(rec.objects.map((o) => o.metadata?.name)).toEqual(['listed', 'watched']);
    for (const o of rec.objects) {
      expect(o.metadata).not.toHaveProperty('managedFields');
      expect(o.metadata).toEqual(
        expect.objectContaining({
          labels: { app: o.metadata?.name },
          annotations: { a: '1' },
          resourceVersion: expect.any(String),
        }),
      );
      expect((o as { spec?: unknown }).spec).toEqual({ clusterIP: '10.96.0.10' });
    }
  });

  it('firstListSpreadMs: the first lists wait the drawn share of the spread (none before it), then go together; stop() before then lists nothing', async () => {
    server.create(service('s1'));
    const startAt = (draw: number) => {
      const rec = new Recorder();
      const r = startInformers(loadKubeConfig({ master: server.url }), {
        nodeName: 'node-a',
        handlers: { service: rec, endpointSlice: new Recorder() },
        log,
        random: () => draw,
        firstListSpreadMs: 600,
      });
      running.push(r);
      return { rec, r, at: Date.now() };
    };
    const { rec, at } = startAt(0.5);
    await new Promise((r) => setTimeout(r, 200));
    expect(server.requests.filter((r) => r.verb === 'list')).toEqual([]);
    await waitFor('synced', () => rec.has('synced'));
    expect(Date.now() - at).toBeGreaterThanOrEqual(295);
    expect(count('list')).toBe(1);
    expect(count('list', 'discovery.k8s.io/v1/endpointslices')).toBe(1);
    expect(log.lines).toEqual([{ level: 'debug', message: 'first lists in 300 ms (spread over 600 ms)' }]);

    const stopped = startAt(0.99);
    await stopped.r.stop();
    await new Promise((r) => setTimeout(r, 700));
    expect(count('list')).toBe(1);
  });

  it('intakeGate held (a sync runs): the watch hands over no event until it is released, then each in order', async () => {
    server.create(service('s1'));
    const gate = new IntakeGate();
    const rec = new Recorder();
    running.push(
      startInformers(loadKubeConfig({ master: server.url }), {
        nodeName: 'node-a',
        handlers: { service: rec },
        log,
        backoff: { initialMs: 10, maxMs: 100 },
        random: () => 0,
        intakeGate: gate,
      }),
    );
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    gate.hold();
    server.create(service('s2'));
    server.patch(svcRef('s1'), { spec: { clusterIP: '10.96.0.11' } });
    // the fake server has written both events by now; the informer has taken none in
    await new Promise((r) => setTimeout(r, 300));
    expect(rec.calls).toEqual(['add demo/s1', 'synced']);
    gate.release();
    await waitFor('both events', () => rec.calls.length === 4);
    expect(rec.calls.slice(2)).toEqual(['add demo/s2', 'update demo/s1 ->10.96.0.11']);
    expect(server.openWatches).toBe(1);
    expect(log.lines).toEqual([]);
  });

  it('delivers updates with the previous object, deletes, and selector moves', async () => {
    server.create(service('s1'));
    server.create(service('s2'));
    const rec = start({ service: new Recorder() });
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    server.patch(svcRef('s1'), { spec: { clusterIP: '10.96.0.11' } });
    server.delete(svcRef('s2'));
    server.patch(svcRef('s1'), { metadata: { labels: { 'service.kubernetes.io/service-proxy-name': 'other' } } });
    await waitFor('3 events after sync', () => rec.calls.length >= 5);
    expect(rec.calls.slice(3)).toEqual(['update demo/s1 ->10.96.0.11', 'delete demo/s2', 'delete demo/s1']);
    // a Service's previous object is kept by its metadata only: its name and version
    const first = rec.objects.find((o) => o.metadata?.name === 's1')!;
    expect(rec.olds).toEqual([
      { metadata: { namespace: NS, name: 's1', resourceVersion: first.metadata!.resourceVersion } },
    ]);
    expect(rec.olds[0]!.metadata!.resourceVersion).not.toBe(undefined);
  });

  it('restarts after a dropped watch, resuming without a relist, and converges', async () => {
    server.create(service('s1'));
    const rec = start({ service: new Recorder() });
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    server.dropWatches();
    server.create(service('s2')); // while nobody watches
    await waitFor('a second watch', () => count('watch') === 2 && server.openWatches === 1);
    server.patch(svcRef('s1'), { spec: { clusterIP: '10.96.0.12' } });
    await waitFor('the update', () => rec.calls.length >= 4);
    expect(rec.calls).toEqual(['add demo/s1', 'synced', 'add demo/s2', 'update demo/s1 ->10.96.0.12']);
    // the list, and one page of one to check the server's history before resuming
    expect(server.requests.filter((r) => r.verb === 'list').map((r) => r.query.limit ?? '')).toEqual(['2000', '1']);
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toMatchObject({
      level: 'warn',
      message: expect.stringMatching(/^services informer failed: .*terminated.*; restarting in 10 ms$/),
    });
  });

  it("every watch asks for timeoutSeconds in [300, 600) as client-go's reflector, with bookmarks; the bookmarks keep a quiet watch open past the idle timeout", async () => {
    await server.close();
    server = new FakeApiServer({ bookmarkIntervalMs: 100 });
    await server.listen();
    const draws = [0, 0.999, 0.5];
    const kc = loadKubeConfig({ master: server.url });
    const rec = new Recorder();
    running.push(
      startInformers(kc, {
        nodeName: 'node-a',
        handlers: { service: rec },
        log,
        watchIdleTimeoutMs: 400,
        random: () => draws.shift() ?? 0.5,
      }),
    );
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    // a write the watch's selector leaves out: the version passes the watch's, and the
    // server's bookmarks (as kube-apiserver's, only then and only to a watch with a deadline)
    // keep it open through three idle timeouts with no event
    server.create(service('other', { 'service.kubernetes.io/service-proxy-name': 'other' }));
    await new Promise((r) => setTimeout(r, 1200));
    expect(count('watch')).toBe(1);
    server.endWatches(); // the server's timeout: resumed with a new draw
    await waitFor('a second watch', () => count('watch') === 2 && server.openWatches === 1);
    server.endWatches();
    await waitFor('a third watch', () => count('watch') === 3 && server.openWatches === 1);
    const watches = server.requests.filter((r) => r.verb === 'watch' && r.resource === 'v1/services');
    expect(watches.map((w) => [w.query.timeoutSeconds, w.query.allowWatchBookmarks])).toEqual([
      ['300', 'true'],
      ['599', 'true'],
      ['450', 'true'],
    ]);
    expect(log.lines).toEqual([]);
  });

  it('a watch silent for the idle timeout (no event, no bookmark) is ended and resumed', async () => {
    await server.close();
    server = new FakeApiServer({ bookmarkIntervalMs: 60_000 });
    await server.listen();
    const kc = loadKubeConfig({ master: server.url });
    const rec = new Recorder();
    running.push(
      startInformers(kc, {
        nodeName: 'node-a',
        handlers: { service: rec },
        log,
        backoff: { initialMs: 10, maxMs: 100 },
        watchIdleTimeoutMs: 300,
        random: () => 0,
      }),
    );
    await waitFor('two watches', () => rec.has('synced') && count('watch') >= 2, 5000);
    expect(count('list')).toBe(1);
  });

  it('resumes from the last version seen when the server ends the watch, without a relist or a log line', async () => {
    server.create(service('s1'));
    const rec = start({ service: new Recorder() });
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    server.patch(svcRef('s1'), { spec: { clusterIP: '10.96.0.11' } });
    await waitFor('the update', () => rec.calls.length === 3);
    const seen = server.resourceVersion;
    server.endWatches();
    await waitFor('a second watch', () => count('watch') === 2 && server.openWatches === 1);
    server.create(service('s2'));
    await waitFor('the add', () => rec.has('add demo/s2'));
    const watches = server.requests.filter((r) => r.verb === 'watch' && r.resource === 'v1/services');
    expect(watches.map((w) => w.query.resourceVersion)).toEqual([expect.any(String), seen]);
    expect(watches[0]!.query.resourceVersion).not.toBe(seen);
    expect(count('list')).toBe(1);
    expect(rec.calls).toEqual(['add demo/s1', 'synced', 'update demo/s1 ->10.96.0.11', 'add demo/s2']);
    expect(log.lines).toEqual([]);
  });

  it('lists in pages; a relist whose continue token expires lists once more unpaged and still reports what vanished', async () => {
    for (const n of ['s1', 's2', 's3', 's4', 's5']) server.create(service(n));
    const rec = start({ service: new Recorder() }, 'node-a', 10, 2);
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    expect(rec.calls).toEqual(['add demo/s1', 'add demo/s2', 'add demo/s3', 'add demo/s4', 'add demo/s5', 'synced']);
    expect(server.requests.filter((r) => r.verb === 'list').map((r) => r.query.limit)).toEqual(['2', '2', '2']);
    // a relist (the watch's version compacted away) whose token expires after its first page,
    // s1 (on that page) deleted meanwhile: the unpaged list lacks it, so it is reported gone
    server.dropWatches();
    server.delete(svcRef('s5'));
    server.compact();
    server.beforeList = (q) => {
      if (!q.continue) return;
      server.beforeList = undefined;
      server.delete(svcRef('s1'));
      server.expireListContinuations();
    };
    await waitFor('the relist to be delivered', () => rec.has('delete demo/s5') && rec.has('delete demo/s1'));
    expect(rec.calls.slice(6).sort()).toEqual(['delete demo/s1', 'delete demo/s5']);
    expect(
      server.requests
        .filter((r) => r.verb === 'list')
        .map((r) => `${r.query.limit ?? ''}${r.query.continue ? '+' : ''}`),
    ).toEqual(['2', '2+', '2+', '1', '2', '2+', '']); // ('1': the history check after the drop)
    expect(rec.calls.filter((c) => c === 'synced')).toHaveLength(1);
  });

  it('a relist that fails mid-way (after its first page) reports no delete; the next complete relist reports only what vanished', async () => {
    for (const n of ['s1', 's2', 's3', 's4', 's5']) server.create(service(n));
    const rec = start({ service: new Recorder() }, 'node-a', 10, 2);
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    // the watch's version compacted away: a relist, whose second page fails twice
    let failures = 0;
    server.beforeList = (q) => {
      if (!q.continue) return;
      if (++failures === 2) server.beforeList = undefined;
      throw new FakeApiError(500, 'InternalError', 'etcdserver: request timed out');
    };
    server.dropWatches();
    server.delete(svcRef('s3'));
    server.compact();
    await waitFor(
      'two failed relists logged',
      () => log.lines.filter((l) => /^services informer failed: .*500/.test(l.message)).length >= 2,
    );
    expect(rec.calls.filter((c) => c.startsWith('delete'))).toEqual([]);
    // the third, complete relist reports s3 (gone meanwhile) and nothing else
    await waitFor('the relist to be delivered', () => rec.has('delete demo/s3') && server.openWatches === 1);
    expect(rec.calls.filter((c) => c.startsWith('delete'))).toEqual(['delete demo/s3']);
    expect(rec.calls.filter((c) => c === 'synced')).toHaveLength(1);
  });

  it('an initial list that fails mid-way reports no delete and Synced only once the retry completes', async () => {
    for (const n of ['s1', 's2', 's3']) server.create(service(n));
    server.beforeList = (q) => {
      if (!q.continue) return;
      server.beforeList = undefined;
      throw new FakeApiError(500, 'InternalError', 'etcdserver: request timed out');
    };
    const rec = start({ service: new Recorder() }, 'node-a', 10, 2);
    await waitFor('synced', () => rec.has('synced'));
    expect(rec.calls).toEqual(['add demo/s1', 'add demo/s2', 'add demo/s3', 'synced']);
  });

  it('after compaction and a drop, relists on 410 and reports objects deleted meanwhile as deletes', async () => {
    server.create(service('s1'));
    server.create(service('s2'));
    server.create(service('s3'));
    const rec = start({ service: new Recorder() });
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    server.dropWatches();
    server.delete(svcRef('s2'));
    server.patch(svcRef('s3'), { spec: { clusterIP: '10.96.0.13' } });
    server.create(service('s4'));
    server.compact();
    await waitFor('the relist to be delivered', () => rec.has('add demo/s4') && rec.has('delete demo/s2'));
    expect(rec.calls.slice(4).sort()).toEqual(['add demo/s4', 'delete demo/s2', 'update demo/s3 ->10.96.0.13']);
    expect(rec.calls.filter((c) => c === 'synced')).toHaveLength(1);
    // the first list and the relist (besides the history check's page of one after the drop)
    expect(server.requests.filter((r) => r.verb === 'list' && r.query.limit !== '1')).toHaveLength(2);
    // one line says why the informer lists everything again
    expect(
      log.lines.filter((l) =>
        /^services informer: watch from resourceVersion \d+ expired \(410 Gone: .*\); relisting$/.test(l.message),
      ),
    ).toHaveLength(1);
  });

  it('a watch refused with an HTTP error (403, as after the ClusterRoleBinding is deleted) is not resumed: the informer relists once allowed', async () => {
    server.create(service('s1'));
    server.create(service('s2'));
    const rec = start({ service: new Recorder() });
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    let refused = 0;
    server.beforeWatch = () => {
      if (++refused === 1)
        throw new FakeApiError(
          403,
          'Forbidden',
          'services is forbidden: User "system:serviceaccount:kube-system:kube-proxy" cannot watch resource "services"',
        );
    };
    server.dropWatches();
    server.delete(svcRef('s2'));
    await waitFor('the delete after the relist', () => rec.has('delete demo/s2') && server.openWatches === 1);
    // the first list, then (the history check's page of one after the drop) one full relist after the 403
    expect(server.requests.filter((r) => r.verb === 'list').map((r) => r.query.limit)).toEqual(['2000', '1', '2000']);
    expect(log.lines.filter((l) => /^services informer failed: .*403/.test(l.message)).length).toBeGreaterThanOrEqual(
      1,
    );
  });

  it('an API server back with its store rewound (etcd restored): the watch it would answer silently is not resumed; relist, vanished objects deleted', async () => {
    server.create(service('s1'));
    server.create(service('s2'));
    server.create(service('s3'));
    const rec = start({ service: new Recorder() });
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    server.patch(svcRef('s3'), { spec: { clusterIP: '10.96.0.13' } });
    await waitFor('the update', () => rec.has('update demo/s3 ->10.96.0.13'));
    await server.restart({ loseHistory: true, clearObjects: true });
    server.create(service('s5'));
    await waitFor('the relist to be delivered', () => rec.has('add demo/s5') && rec.has('delete demo/s3'));
    expect(rec.calls.slice(5).sort()).toEqual(['add demo/s5', 'delete demo/s1', 'delete demo/s2', 'delete demo/s3']);
    expect(
      log.lines.filter((l) =>
        /^services informer: the API server's resourceVersion \d+ is older than the last one seen, \d+ .*; relisting$/.test(
          l.message,
        ),
      ),
    ).toHaveLength(1);
  });

  it('restarts after a failed initial list (server down) with backoff and syncs once it is up', async () => {
    const url = server.url;
    await server.close();
    const kc = loadKubeConfig({ master: url });
    const rec = new Recorder();
    running.push(
      startInformers(kc, {
        nodeName: 'n',
        handlers: { service: rec },
        log,
        backoff: { initialMs: 5, maxMs: 20 },
        random: () => 0,
      }),
    );
    await waitFor('two failures logged', () => log.lines.length >= 2);
    server.create(service('s1'));
    await server.listen(Number(new URL(url).port));
    await waitFor('synced', () => rec.has('synced'));
    expect(rec.calls).toEqual(['add demo/s1', 'synced']);
    // one line per backoff step naming the URL and the cause, as client-go's (issue 41 item 10)
    const port = new URL(url).port;
    expect(log.lines[0]?.message).toBe(
      `services informer failed: Get "${url}/api/v1/services?labelSelector=%21service.kubernetes.io%2Fservice-proxy-name&fieldSelector=spec.clusterIP%21%3DNone&limit=2000": dial tcp 127.0.0.1:${port}: connect: connection refused; restarting in 5 ms`,
    );
    expect(log.lines[1]?.message).toMatch(/restarting in 10 ms$/);
    // the successful list did not reset the backoff (only a watch that lasted 2 minutes does,
    // spec/k8s/informer-retries.test.ts): two failures or more, so the cap
    await waitFor('the watch', () => server.openWatches === 1);
    const failures = log.lines.length;
    server.dropWatches();
    await waitFor('the drop logged', () => log.lines.length > failures);
    expect(log.lines[failures]?.message).toMatch(/restarting in 20 ms$/);
  });

  it('a throwing handler is logged with the object and does not stop the informer', async () => {
    server.create(service('bad'));
    const rec = new Recorder();
    const throwing: ServiceHandler = {
      ...rec,
      onServiceAdd: (svc) => {
        if (svc.metadata?.name === 'bad') throw new Error('boom');
        rec.onServiceAdd(svc);
      },
    };
    const kc = loadKubeConfig({ master: server.url });
    running.push(
      startInformers(kc, {
        nodeName: 'n',
        handlers: { service: throwing },
        log,
        backoff: { initialMs: 10, maxMs: 100 },
      }),
    );
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    server.create(service('good'));
    await waitFor('add good', () => rec.has('add demo/good'));
    expect(log.lines).toEqual([
      { level: 'error', message: 'services informer: add handler failed for demo/bad: Error: boom' },
    ]);
  });

  it('the Node informer sees only its own node, in one request: a watch that streams it', async () => {
    for (const n of ['n1', 'n2']) server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: n } });
    const rec = new Recorder();
    start({ node: rec }, 'n2');
    await waitFor('the watch', () => rec.has('synced') && server.openWatches === 1);
    const node = (name: string) => ({ apiVersion: 'v1', kind: 'Node', name });
    server.patch(node('n1'), { metadata: { labels: { x: '1' } } });
    server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n3' } });
    server.patch(node('n2'), { metadata: { labels: { x: '1' } } });
    server.delete(node('n2'));
    await waitFor('the delete', () => rec.has('delete n2'));
    expect(rec.calls).toEqual(['add n2', 'synced', 'update n2', 'delete n2']);
    // the Node is kept whole: its update comes with the previous object as delivered
    expect(rec.olds).toEqual([rec.objects[0]]);
    expect(
      server.requests
        .filter((r) => r.resource === 'v1/nodes')
        .map((r) => [r.verb, r.query.fieldSelector, r.query.sendInitialEvents]),
    ).toEqual([['watch', 'metadata.name=n2', 'true']]);
  });

  it('runs Services, EndpointSlices and Node side by side', async () => {
    server.create(service('s1'));
    server.create({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { namespace: NS, name: 's1-abc', labels: { 'kubernetes.io/service-name': 's1' } },
      addressType: 'IPv4',
      endpoints: [],
    });
    server.create({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { namespace: NS, name: 'h-abc', labels: { 'service.kubernetes.io/headless': '' } },
      addressType: 'IPv4',
      endpoints: [],
    });
    server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } });
    const svc = new Recorder();
    const eps = new Recorder();
    const node = new Recorder();
    start({ service: svc, endpointSlice: eps, node });
    await waitFor('all synced', () => [svc, eps, node].every((r) => r.has('synced')));
    expect([svc.calls, eps.calls, node.calls]).toEqual([
      ['add demo/s1', 'synced'],
      ['add demo/s1-abc', 'synced'],
      ['add node-a', 'synced'],
    ]);
  });

  it('stop() closes the watches and nothing restarts afterwards', async () => {
    server.create(service('s1'));
    const stopped = new Recorder();
    const kc = loadKubeConfig({ master: server.url });
    const informers = startInformers(kc, {
      nodeName: 'n',
      handlers: { service: stopped },
      log,
      backoff: { initialMs: 1, maxMs: 1 },
    });
    await waitFor('the watch', () => stopped.has('synced') && server.openWatches === 1);
    await informers.stop();
    await waitFor('the watch to close', () => server.openWatches === 0);
    const requestsAtStop = server.requests.length;
    // a sentinel informer with a slower restart: once it has restarted and seen s2, the
    // stopped one (1 ms backoff) would have restarted long before
    const sentinel = start({ service: new Recorder() }, 'n', 50);
    await waitFor('the sentinel watch', () => sentinel.has('synced') && server.openWatches === 1);
    server.dropWatches();
    server.create(service('s2'));
    await waitFor('the sentinel to restart and see s2', () => sentinel.has('add demo/s2'));
    expect(stopped.calls).toEqual(['add demo/s1', 'synced']);
    expect(server.requests.slice(requestsAtStop).map((r) => r.verb)).toEqual(['list', 'watch', 'list', 'watch']); // (the sentinel's history check)
    // stopping is not a failure: the only log line is the sentinel's dropped watch
    expect(log.lines).toHaveLength(1);
  });

  describe('streaming lists (sendInitialEvents)', () => {
    const streaming = (handlers: Parameters<typeof startInformers>[1]['handlers']) =>
      start(handlers, 'node-a', 10, undefined, true);

    it('one watch lists and goes on watching: ADDED for each object, Synced at the initial-events-end bookmark, no list request', async () => {
      server.create(service('s1'));
      server.create(service('s2'));
      server.create(service('headless', undefined, 'None'));
      const rec = streaming({ service: new Recorder() });
      await waitFor('synced', () => rec.has('synced'));
      server.create(service('s3'));
      await waitFor('add s3', () => rec.has('add demo/s3'));
      expect(rec.calls).toEqual(['add demo/s1', 'add demo/s2', 'synced', 'add demo/s3']);
      expect(count('list')).toBe(0);
      const watches = server.requests.filter((r) => r.verb === 'watch');
      expect(watches).toHaveLength(1);
      expect(watches[0]!.query).toMatchObject({
        sendInitialEvents: 'true',
        resourceVersionMatch: 'NotOlderThan',
        allowWatchBookmarks: 'true',
        labelSelector: '!service.kubernetes.io/service-proxy-name',
        fieldSelector: 'spec.clusterIP!=None',
      });
      expect(watches[0]!.query.resourceVersion).toBeUndefined();
      expect(log.lines).toEqual([]);
    });

    it("a watch dropped after the initial events resumes from the bookmark's version, without streaming the list again", async () => {
      server.create(service('s1'));
      const rec = streaming({ service: new Recorder() });
      await waitFor('synced', () => rec.has('synced') && server.openWatches === 1);
      server.dropWatches();
      server.create(service('s2'));
      await waitFor('add s2', () => rec.has('add demo/s2') && server.openWatches === 1);
      const watches = server.requests.filter((r) => r.verb === 'watch');
      expect(watches).toHaveLength(2);
      expect(watches[1]!.query.sendInitialEvents).toBeUndefined();
      expect(watches[1]!.query.resourceVersion).toMatch(/^\d+$/);
      expect(rec.calls).toEqual(['add demo/s1', 'synced', 'add demo/s2']);
    });

    it('after compaction (410) streams the list again and reports what vanished meanwhile as deletes; Synced once', async () => {
      server.create(service('s1'));
      server.create(service('s2'));
      const rec = streaming({ service: new Recorder() });
      await waitFor('synced', () => rec.has('synced') && server.openWatches === 1);
      server.dropWatches();
      server.delete(svcRef('s2'));
      server.create(service('s3'));
      server.compact();
      await waitFor('the new state', () => rec.has('delete demo/s2') && rec.has('add demo/s3'));
      expect(rec.calls.slice(3).sort()).toEqual(['add demo/s3', 'delete demo/s2']);
      expect(rec.calls.filter((c) => c === 'synced')).toHaveLength(1);
      expect(server.requests.filter((r) => r.verb === 'watch' && r.query.sendInitialEvents === 'true')).toHaveLength(2);
    });

    it('a stream cut before the initial-events-end bookmark reports no delete and no Synced; the retry streams the whole list', async () => {
      // a server of its own: the fake writes a watch's initial events at once, so it cannot be cut between them
      const ev = (type: string, name: string, rv: number, annotations?: Record<string, string>) =>
        JSON.stringify({
          type,
          object: {
            kind: 'Service',
            apiVersion: 'v1',
            metadata: { namespace: NS, name, resourceVersion: String(rv), ...(annotations ? { annotations } : {}) },
            spec: { clusterIP: '10.96.0.10' },
          },
        }) + '\n';
      let watches = 0;
      const cutting = http.createServer((_req, res) => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        if (++watches === 1) {
          res.end(ev('ADDED', 's1', 5)); // the server went away mid-list
          return;
        }
        res.write(
          ev('ADDED', 's1', 5) + ev('ADDED', 's2', 6) + ev('BOOKMARK', '', 7, { 'k8s.io/initial-events-end': 'true' }),
        );
      });
      await new Promise<void>((r) => cutting.listen(0, '127.0.0.1', r));
      try {
        const master = `http://127.0.0.1:${(cutting.address() as AddressInfo).port}`;
        const rec = start({ service: new Recorder() }, 'node-a', 10, undefined, true, master);
        await waitFor('synced', () => rec.has('synced'));
        expect(rec.calls).toEqual(['add demo/s1', 'add demo/s2', 'synced']);
        expect(watches).toBe(2);
      } finally {
        for (const r of running.splice(0)) await r.stop();
        cutting.closeAllConnections();
        await new Promise((r) => cutting.close(r));
      }
    });

    it('an API server without the WatchList feature gate (422) gets paged lists from then on, with one line saying so', async () => {
      await server.close();
      server = new FakeApiServer({ watchList: false });
      await server.listen();
      server.create(service('s1'));
      const rec = streaming({ service: new Recorder() });
      await waitFor('synced', () => rec.has('synced') && server.openWatches === 1);
      server.dropWatches();
      server.compact();
      server.create(service('s2'));
      await waitFor('add s2', () => rec.has('add demo/s2'));
      // one refused streaming watch, then lists only
      expect(server.requests.filter((r) => r.verb === 'watch' && r.query.sendInitialEvents === 'true')).toHaveLength(1);
      expect(count('list')).toBeGreaterThanOrEqual(1);
      expect(log.lines.filter((l) => /does not stream lists/.test(l.message))).toEqual([
        {
          level: 'info',
          message: expect.stringMatching(
            /^services informer: the API server does not stream lists \(.*sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled.*\); listing in pages$/,
          ) as unknown as string,
        },
      ]);
    });
  });
});

describe('watchListClient (KUBE_FEATURE_WatchListClient)', () => {
  const warned: string[] = [];
  const log = { warn: (m: string) => warned.push(m) };
  it("reads strconv.ParseBool's spellings, and keeps the default for anything else, with a warning", () => {
    expect(watchListClient({ KUBE_FEATURE_WatchListClient: 'true' }, log)).toBe(true);
    expect(watchListClient({ KUBE_FEATURE_WatchListClient: 'T' }, log)).toBe(true);
    expect(watchListClient({ KUBE_FEATURE_WatchListClient: '0' }, log)).toBe(false);
    expect(warned).toEqual([]);
    expect(watchListClient({}, log)).toBe(WATCH_LIST_CLIENT_DEFAULT);
    expect(watchListClient({ KUBE_FEATURE_WatchListClient: 'yes' }, log)).toBe(WATCH_LIST_CLIENT_DEFAULT);
    expect(warned).toEqual([expect.stringMatching(/^KUBE_FEATURE_WatchListClient="yes" is not a boolean/)]);
  });
});

describe('listPageSize (KUBE_IPVS_LIST_PAGE_SIZE)', () => {
  it('reads a positive integer, and keeps the default for anything else, with a warning', () => {
    const warned: string[] = [];
    const log = { warn: (m: string) => warned.push(m) };
    expect(listPageSize({ KUBE_IPVS_LIST_PAGE_SIZE: '100' }, log)).toBe(100);
    expect(listPageSize({}, log)).toBe(LIST_PAGE_SIZE);
    expect(warned).toEqual([]);
    for (const bad of ['0', '-5', '1e3', '', ' 100', '12345678'])
      expect(listPageSize({ KUBE_IPVS_LIST_PAGE_SIZE: bad }, log)).toBe(LIST_PAGE_SIZE);
    expect(warned).toHaveLength(6);
    expect(warned[0]).toMatch(/^KUBE_IPVS_LIST_PAGE_SIZE="0" is not a positive integer; lists are paged by 2000$/);
  });
});

describe.each([
  {
    variable: 'KUBE_IPVS_INTAKE_HOLD_MAX_MS',
    read: intakeHoldMaxMs,
    fallback: INTAKE_HOLD_MAX_MS,
    otherwise: `a sync holds the watches' intake ${INTAKE_HOLD_MAX_MS} ms at most`,
  },
  {
    variable: 'KUBE_IPVS_INTAKE_SLICE_MS',
    read: intakeSliceMs,
    fallback: INTAKE_SLICE_MS,
    otherwise: `a turn of the event loop takes watch events in for ${INTAKE_SLICE_MS} ms at most`,
  },
])('$variable', ({ variable, read, fallback, otherwise }) => {
  it('reads 0 (off) or a positive integer, and keeps the default for anything else, with a warning', () => {
    const warned: string[] = [];
    const log = { warn: (m: string) => warned.push(m) };
    expect(read({}, log)).toBe(fallback);
    expect(read({ [variable]: '0' }, log)).toBe(0);
    expect(read({ [variable]: '20' }, log)).toBe(20);
    expect(warned).toEqual([]);
    expect(read({ [variable]: '-1' }, log)).toBe(fallback);
    expect(read({ [variable]: 'off' }, log)).toBe(fallback);
    expect(warned).toEqual([
      `${variable}="-1" is not a non-negative integer; ${otherwise}`,
      `${variable}="off" is not a non-negative integer; ${otherwise}`,
    ]);
  });
});

describe('informerBackoff (KUBE_IPVS_INFORMER_BACKOFF_MAX_MS)', () => {
  it("caps the backoff (its start too, when lower), and keeps client-go's for anything else, with a warning", () => {
    const warned: string[] = [];
    const log = { warn: (m: string) => warned.push(m) };
    expect(informerBackoff({}, log)).toEqual({ initialMs: 800, maxMs: 30_000 });
    expect(informerBackoff({ KUBE_IPVS_INFORMER_BACKOFF_MAX_MS: '3000' }, log)).toEqual({
      initialMs: 800,
      maxMs: 3000,
    });
    expect(informerBackoff({ KUBE_IPVS_INFORMER_BACKOFF_MAX_MS: '500' }, log)).toEqual({ initialMs: 500, maxMs: 500 });
    expect(warned).toEqual([]);
    expect(informerBackoff({ KUBE_IPVS_INFORMER_BACKOFF_MAX_MS: '3s' }, log)).toBe(INFORMER_BACKOFF);
    expect(warned).toEqual([
      'KUBE_IPVS_INFORMER_BACKOFF_MAX_MS="3s" is not a positive integer; the informers back off up to 30000 ms',
    ]);
  });
});
