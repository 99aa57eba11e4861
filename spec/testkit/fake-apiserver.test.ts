/**
 * The fake API server over plain fetch: list, selectors, watch from a resourceVersion, 410
 * after compaction, bookmarks, writes and selector moves, control endpoints.
 * Addresses: services 10.96.0.0/16 (names only matter here).
 */
import { FakeApiServer, FakeObject } from '../../testkit/fake-apiserver';
import { openWatch, WatchStream } from '../../testkit/watch-stream';
import { waitFor } from '../../testkit/wait-for';

function service(ns: string, name: string, labels?: Record<string, string>): FakeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: ns, name, ...(labels ? { labels } : {}) },
    spec: { clusterIP: '10.96.0.10' },
  };
}

interface ListBody {
  kind: string;
  apiVersion: string;
  metadata: { resourceVersion: string };
  items: FakeObject[];
}

describe('FakeApiServer', () => {
  let server: FakeApiServer;
  let base: string;
  const watches: WatchStream[] = [];

  beforeEach(async () => {
    server = new FakeApiServer({ bookmarkIntervalMs: 20 });
    base = await server.listen();
  });
  afterEach(async () => {
    for (const w of watches.splice(0)) w.close();
    await server.close();
  });

  async function get<T>(path: string): Promise<{ status: number; body: T }> {
    const res = await fetch(base + path);
    return { status: res.status, body: (await res.json()) as T };
  }
  async function send(
    method: string,
    path: string,
    body?: unknown,
    contentType = 'application/json',
  ): Promise<{ status: number; body: FakeObject & { reason?: string; code?: number } }> {
    const res = await fetch(base + path, {
      method,
      headers: { 'Content-Type': contentType },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as FakeObject & { reason?: string } };
  }
  async function watch(path: string): Promise<WatchStream> {
    const w = await openWatch(base + path);
    watches.push(w);
    return w;
  }
  const names = (w: WatchStream): string[] => w.events.map((e) => `${e.type} ${e.object.metadata.name ?? ''}`);

  describe('list', () => {
    it('answers an XList with the current resourceVersion and items without kind/apiVersion', async () => {
      server.create(service('a', 's1'));
      server.create(service('b', 's2'));
      const { status, body } = await get<ListBody>('/api/v1/services');
      expect(status).toBe(200);
      expect(body.kind).toBe('ServiceList');
      expect(body.apiVersion).toBe('v1');
      expect(body.metadata.resourceVersion).toBe(server.resourceVersion);
      expect(body.items.map((i) => i.metadata.name)).toEqual(['s1', 's2']);
      for (const item of body.items) {
        expect(item.kind).toBeUndefined();
        expect(item.apiVersion).toBeUndefined();
        expect(item.metadata.uid).toEqual(expect.any(String));
      }
    });

    it('serves the namespaced path, group paths and cluster-scoped nodes', async () => {
      server.create(service('a', 's1'));
      server.create(service('b', 's2'));
      server.create({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { namespace: 'b', name: 's2-x' },
        addressType: 'IPv4',
        endpoints: [],
      });
      server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', namespace: 'ignored' } });
      expect((await get<ListBody>('/api/v1/namespaces/b/services')).body.items.map((i) => i.metadata.name)).toEqual([
        's2',
      ]);
      const slices = (await get<ListBody>('/apis/discovery.k8s.io/v1/endpointslices')).body;
      expect(slices.kind).toBe('EndpointSliceList');
      expect(slices.apiVersion).toBe('discovery.k8s.io/v1');
      expect(slices.items.map((i) => i.metadata.name)).toEqual(['s2-x']);
      const nodes = (await get<ListBody>('/api/v1/nodes')).body.items;
      expect(nodes.map((n) => [n.metadata.name, n.metadata.namespace])).toEqual([['n1', undefined]]);
      expect((await get('/api/v1/namespaces/a/nodes')).status).toBe(404);
    });

    it('filters by label and field selector, and rejects a bad selector with 400', async () => {
      server.create(service('a', 's1', { app: 'web' }));
      server.create(service('a', 's2', { app: 'db', 'service.kubernetes.io/headless': '' }));
      server.create(service('a', 's3'));
      const sel = encodeURIComponent('!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless');
      expect(
        (await get<ListBody>(`/api/v1/services?labelSelector=${sel}`)).body.items.map((i) => i.metadata.name),
      ).toEqual(['s1', 's3']);
      expect(
        (await get<ListBody>(`/api/v1/services?labelSelector=app%20in%20(web,db)`)).body.items.map(
          (i) => i.metadata.name,
        ),
      ).toEqual(['s1', 's2']);
      expect(
        (await get<ListBody>(`/api/v1/services?fieldSelector=metadata.name%3Ds3`)).body.items.map(
          (i) => i.metadata.name,
        ),
      ).toEqual(['s3']);
      const bad = await get<{ code: number; reason: string; message: string }>(
        `/api/v1/services?fieldSelector=spec.type%3DNodePort`,
      );
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({
        code: 400,
        reason: 'BadRequest',
        message: 'field label not supported: spec.type',
      });
    });

    it('answers discovery and /version', async () => {
      expect((await get<{ versions: string[] }>('/api')).body.versions).toEqual(['v1']);
      const groups = (await get<{ groups: { name: string }[] }>('/apis')).body.groups.map((g) => g.name);
      expect(groups).toEqual(['discovery.k8s.io', 'events.k8s.io']);
      expect((await get<{ gitVersion: string }>('/version')).body.gitVersion).toMatch(/^v1\./);
    });
  });

  describe('writes', () => {
    it('POST creates (201) with a new resourceVersion, and refuses a duplicate with 409 AlreadyExists', async () => {
      const before = Number(server.resourceVersion);
      const created = await send('POST', '/api/v1/namespaces/a/services', service('a', 's1'));
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({
        kind: 'Service',
        apiVersion: 'v1',
        metadata: { name: 's1', namespace: 'a', resourceVersion: String(before + 1) },
      });
      const dup = await send('POST', '/api/v1/namespaces/a/services', service('a', 's1'));
      expect(dup.status).toBe(409);
      expect(dup.body.reason).toBe('AlreadyExists');
      const otherNs = await send('POST', '/api/v1/namespaces/b/services', service('a', 's9'));
      expect(otherNs.status).toBe(400);
    });

    it('PUT replaces, 404 when missing, 409 Conflict on a stale resourceVersion', async () => {
      const s = server.create(service('a', 's1'));
      const put = await send('PUT', '/api/v1/namespaces/a/services/s1', { ...s, spec: { clusterIP: '10.96.0.11' } });
      expect(put.status).toBe(200);
      expect(put.body.spec).toEqual({ clusterIP: '10.96.0.11' });
      expect(put.body.metadata.uid).toBe(s.metadata.uid);
      expect(Number(put.body.metadata.resourceVersion)).toBeGreaterThan(Number(s.metadata.resourceVersion));
      expect((await send('PUT', '/api/v1/namespaces/a/services/s1', s)).status).toBe(409);
      expect((await send('PUT', '/api/v1/namespaces/a/services/nope', service('a', 'nope'))).status).toBe(404);
    });

    it('PATCH applies a JSON merge patch (null deletes) and refuses JSON Patch with 415', async () => {
      server.create({ ...service('a', 's1', { app: 'web', old: 'x' }) });
      const p = await send(
        'PATCH',
        '/api/v1/namespaces/a/services/s1',
        { metadata: { labels: { old: null, new: 'y' } } },
        'application/merge-patch+json',
      );
      expect(p.status).toBe(200);
      expect(p.body.metadata.labels).toEqual({ app: 'web', new: 'y' });
      expect(p.body.spec).toEqual({ clusterIP: '10.96.0.10' });
      expect((await send('PATCH', '/api/v1/namespaces/a/services/s1', [], 'application/json-patch+json')).status).toBe(
        415,
      );
    });

    it('DELETE answers the object and removes it; 404 after', async () => {
      server.create(service('a', 's1'));
      const d = await send('DELETE', '/api/v1/namespaces/a/services/s1');
      expect(d.status).toBe(200);
      expect(d.body.metadata.name).toBe('s1');
      expect(server.get({ apiVersion: 'v1', kind: 'Service', namespace: 'a', name: 's1' })).toBeUndefined();
      expect((await send('DELETE', '/api/v1/namespaces/a/services/s1')).status).toBe(404);
      expect((await get('/api/v1/namespaces/a/services/s1')).status).toBe(404);
    });
  });

  describe('watch', () => {
    it('replays the history after the given resourceVersion, then streams live changes', async () => {
      server.create(service('a', 's0'));
      const from = server.resourceVersion;
      server.create(service('a', 's1'));
      server.patch(
        { apiVersion: 'v1', kind: 'Service', namespace: 'a', name: 's1' },
        { spec: { clusterIP: '10.96.0.12' } },
      );
      server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } }); // another resource: not in this stream
      server.delete({ apiVersion: 'v1', kind: 'Service', namespace: 'a', name: 's0' });
      const w = await watch(`/api/v1/services?watch=true&resourceVersion=${from}`);
      expect(w.status).toBe(200);
      await waitFor('3 replayed events', () => w.events.length >= 3);
      server.create(service('b', 's2'));
      await waitFor('the live event', () => w.events.length >= 4);
      expect(names(w)).toEqual(['ADDED s1', 'MODIFIED s1', 'DELETED s0', 'ADDED s2']);
      expect(w.events.every((e) => e.object.kind === 'Service' && e.object.apiVersion === 'v1')).toBe(true);
      const rvs = w.events.map((e) => Number(e.object.metadata.resourceVersion));
      expect(rvs).toEqual([...rvs].sort((x, y) => x - y));
      expect(rvs[rvs.length - 1]).toBe(Number(server.resourceVersion));
    });

    it('without a resourceVersion starts with a synthetic ADDED per existing object of the namespace', async () => {
      server.create(service('a', 's1'));
      server.create(service('b', 's2'));
      const w = await watch(`/api/v1/namespaces/a/services?watch=1`);
      await waitFor('one ADDED', () => w.events.length >= 1);
      server.create(service('b', 's3'));
      server.create(service('a', 's4'));
      await waitFor('the live ADDED', () => w.events.length >= 2);
      expect(names(w)).toEqual(['ADDED s1', 'ADDED s4']);
    });

    it('answers a compacted resourceVersion with 200, one ERROR Status 410 Expired, then ends', async () => {
      server.create(service('a', 's1'));
      const old = server.resourceVersion;
      server.create(service('a', 's2'));
      server.compact();
      const w = await watch(`/api/v1/services?watch=true&resourceVersion=${Number(old) - 1}`);
      expect(w.status).toBe(200);
      await waitFor('the end of the stream', () => w.ended());
      expect(w.events).toEqual([
        {
          type: 'ERROR',
          object: expect.objectContaining({ kind: 'Status', code: 410, reason: 'Expired', status: 'Failure' }),
        },
      ]);
      // the current version is still watchable after compaction
      const ok = await watch(`/api/v1/services?watch=true&resourceVersion=${server.resourceVersion}`);
      server.create(service('a', 's3'));
      await waitFor('an ADDED', () => ok.events.length >= 1);
      expect(names(ok)).toEqual(['ADDED s3']);
    });

    it('answers a watch from a resourceVersion newer than the current one 200 and sends only what comes after it, as kube-apiserver v1.37', async () => {
      const ahead = Number(server.resourceVersion) + 2;
      const w = await watch(`/api/v1/services?watch=true&resourceVersion=${ahead}`);
      server.create(service('a', 's1'));
      server.create(service('a', 's2'));
      server.create(service('a', 's3'));
      await waitFor('the one change after the version', () => w.events.length >= 1);
      expect(names(w)).toEqual(['ADDED s3']);
    });

    it('sends BOOKMARKs with the current resourceVersion only to watches that allow them, with or without timeoutSeconds', async () => {
      const plain = await watch(`/api/v1/services?watch=true&resourceVersion=${server.resourceVersion}`);
      const withBookmarks = await watch(
        `/api/v1/services?watch=true&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=${server.resourceVersion}`,
      );
      // kube-apiserver gives a watch without timeoutSeconds a deadline of its own: bookmarked too
      const noTimeout = await watch(
        `/api/v1/services?watch=true&allowWatchBookmarks=true&resourceVersion=${server.resourceVersion}`,
      );
      server.create(service('a', 's1'));
      await waitFor('two bookmarks', () => withBookmarks.events.filter((e) => e.type === 'BOOKMARK').length >= 2);
      await waitFor('the ADDED on the plain watch', () => plain.events.length >= 1);
      const bm = withBookmarks.events.filter((e) => e.type === 'BOOKMARK')[1];
      expect(bm?.object).toEqual({
        kind: 'Service',
        apiVersion: 'v1',
        metadata: { resourceVersion: server.resourceVersion },
      });
      expect(names(plain)).toEqual(['ADDED s1']);
      await waitFor('a bookmark without timeoutSeconds', () => noTimeout.events.some((e) => e.type === 'BOOKMARK'));
      expect(noTimeout.events[0]?.type).toBe('ADDED');
      expect(plain.events.map((e) => e.type)).toEqual(['ADDED']);
    });

    it("bookmarks a watch only once the version passed its own, and once 2 s before its deadline (kube-apiserver's cache_watcher)", async () => {
      const q = 'watch=true&allowWatchBookmarks=true&timeoutSeconds=3';
      const quiet = await watch(`/api/v1/services?${q}&resourceVersion=${server.resourceVersion}`);
      await new Promise((r) => setTimeout(r, 200)); // ten bookmark intervals with nothing newer
      expect(quiet.events).toEqual([]);
      quiet.close();

      const slow = new FakeApiServer({ bookmarkIntervalMs: 60_000 });
      const slowBase = await slow.listen();
      try {
        slow.create(service('a', 's0')); // a version above "0": no initial events
        const w = await openWatch(`${slowBase}/api/v1/services?${q}&resourceVersion=${slow.resourceVersion}`);
        watches.push(w);
        const opened = Date.now();
        slow.create(service('a', 's1', { app: 'web' }));
        await waitFor('the ADDED', () => w.events.length === 1);
        // (the waits are generous for a loaded machine: a stream that ends without the bookmark,
        // at 3 s, still fails the first)
        await waitFor('the bookmark before the deadline', () => w.events.length === 2 || w.ended(), 10_000);
        const at = Date.now() - opened;
        expect(w.events.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK']);
        expect(at).toBeGreaterThanOrEqual(900);
        await waitFor('the end', () => w.ended(), 10_000);
        expect(w.events).toHaveLength(2);
      } finally {
        await slow.close();
      }
    });

    it('ends the stream cleanly after timeoutSeconds', async () => {
      const w = await watch(`/api/v1/services?watch=true&timeoutSeconds=1&resourceVersion=${server.resourceVersion}`);
      await waitFor('the stream to end', () => w.ended());
      expect(server.openWatches).toBe(0);
    });

    it('shows an object moved into / out of the selector as ADDED / DELETED (old object, new version)', async () => {
      server.create(service('a', 's1', { app: 'web' }));
      const w = await watch(
        `/api/v1/services?watch=true&labelSelector=app%3Dweb&resourceVersion=${server.resourceVersion}`,
      );
      const ref = { apiVersion: 'v1', kind: 'Service', namespace: 'a', name: 's1' };
      server.patch(ref, { metadata: { labels: { app: 'db' } } });
      const outRv = server.resourceVersion;
      server.patch(ref, { spec: { clusterIP: '10.96.0.99' } }); // outside the selector: unseen
      server.patch(ref, { metadata: { labels: { app: 'web' } } });
      server.patch(ref, { spec: { clusterIP: '10.96.0.98' } });
      await waitFor('3 events', () => w.events.length >= 3);
      expect(names(w)).toEqual(['DELETED s1', 'ADDED s1', 'MODIFIED s1']);
      const deleted = w.events[0]!.object as unknown as FakeObject;
      expect(deleted.metadata.labels).toEqual({ app: 'web' });
      expect(deleted.metadata.resourceVersion).toBe(outRv);
    });

    it('field selector on nodes delivers only the named node', async () => {
      const w = await watch(`/api/v1/nodes?watch=true&fieldSelector=metadata.name%3Dn2`);
      for (const n of ['n1', 'n2', 'n3']) server.create({ apiVersion: 'v1', kind: 'Node', metadata: { name: n } });
      server.delete({ apiVersion: 'v1', kind: 'Node', name: 'n2' });
      await waitFor('2 events', () => w.events.length >= 2);
      expect(names(w)).toEqual(['ADDED n2', 'DELETED n2']);
    });
  });

  describe('control', () => {
    it('forgets a watch whose client went away', async () => {
      const w = await watch(`/api/v1/services?watch=true`);
      await waitFor('the watch to register', () => server.openWatches === 1);
      w.close();
      await waitFor('the watch to be forgotten', () => server.openWatches === 0);
    });

    it('dropWatches breaks open watches', async () => {
      const w = await watch(`/api/v1/services?watch=true`);
      await waitFor('the watch to register', () => server.openWatches === 1);
      server.dropWatches();
      await waitFor('the stream to break', () => w.ended());
      expect(server.openWatches).toBe(0);
    });

    it('the same control over HTTP: /fake/compact, /fake/drop-watches, /fake/stats', async () => {
      server.create(service('a', 's1'));
      const old = Number(server.resourceVersion) - 1;
      const w = await watch(`/api/v1/services?watch=true`);
      await waitFor('the watch to register', () => server.openWatches === 1);
      expect((await fetch(`${base}/fake/drop-watches`, { method: 'POST' })).status).toBe(200);
      await waitFor('the stream to break', () => w.ended());
      expect((await fetch(`${base}/fake/compact`, { method: 'POST' })).status).toBe(200);
      const expired = await watch(`/api/v1/services?watch=true&resourceVersion=${old}`);
      await waitFor('the end of the stream', () => expired.ended());
      expect(expired.events[0]?.object.code).toBe(410);
      const stats = (
        await get<{
          resourceVersion: string;
          objects: Record<string, number>;
          requests: Record<string, number>;
          openWatches: number;
        }>('/fake/stats')
      ).body;
      expect(stats).toMatchObject({ resourceVersion: server.resourceVersion, openWatches: 0 });
      expect(stats.objects['v1/services']).toBe(1);
      expect(stats.requests.watch).toBe(2);
      expect(server.requests.filter((r) => r.verb === 'watch' && r.resource === 'v1/services')).toHaveLength(2);
      expect((await fetch(`${base}/fake/nope`, { method: 'POST' })).status).toBe(404);
      // reset-history: the version rewinds to the newest kept object's, history is gone
      const s4 = server.create(service('a', 's4'));
      server.delete({ apiVersion: 'v1', kind: 'Service', namespace: 'a', name: 's1' });
      const before = Number(server.resourceVersion);
      const reset = (await (await fetch(`${base}/fake/reset-history`, { method: 'POST' })).json()) as {
        resourceVersion: string;
        history: number;
      };
      expect(reset).toMatchObject({ resourceVersion: s4.metadata.resourceVersion, history: 0 });
      expect(Number(reset.resourceVersion)).toBeLessThan(before);
      // a watch from the lost version is answered 200 and waits (kube-apiserver v1.37)
      expect(
        (await fetch(`${base}/api/v1/services?watch=true&resourceVersion=${before}&timeoutSeconds=1`)).status,
      ).toBe(200);
    });

    it('restart({loseHistory}) reopens on the same port; old versions get 410, newer ones wait', async () => {
      server.create(service('a', 's1'));
      const early = server.resourceVersion;
      server.create(service('a', 's2'));
      server.delete({ apiVersion: 'v1', kind: 'Service', namespace: 'a', name: 's2' });
      const late = server.resourceVersion;
      const w = await watch(`/api/v1/services?watch=true&resourceVersion=${late}`);
      await waitFor('the watch to register', () => server.openWatches === 1);
      await server.restart({ loseHistory: true });
      await waitFor('the watch to break', () => w.ended());
      expect(server.url).toBe(base);
      expect((await get<ListBody>('/api/v1/services')).body.items.map((i) => i.metadata.name)).toEqual(['s1']);
      expect((await fetch(`${base}/api/v1/services?watch=true&resourceVersion=${late}&timeoutSeconds=1`)).status).toBe(
        200,
      );
      const expired = await watch(`/api/v1/services?watch=true&resourceVersion=${Number(early) - 1}`);
      await waitFor('the end of the stream', () => expired.ended());
      expect(expired.events.map((e) => e.object.code)).toEqual([410]);
    });
  });
});
