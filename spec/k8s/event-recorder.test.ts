import { AGGREGATED_PREFIX, EventRecorder, EventRecorderOptions, MAX_REMEMBERED } from '../../lib/k8s/event-recorder';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { FakeApiServer, FakeObject } from '../../testkit/fake-apiserver';
import { waitFor } from '../../testkit/wait-for';

describe('EventRecorder', () => {
  let server: FakeApiServer;
  let now: number;
  let debug: string[];
  let recorder: EventRecorder;
  const svc = { kind: 'Service', namespace: 'demo', name: 'web', uid: 'u-1', apiVersion: 'v1' };

  beforeEach(async () => {
    server = new FakeApiServer();
    await server.listen();
    now = Date.parse('2026-01-02T03:04:05Z');
    debug = [];
    recorder = new EventRecorder(loadKubeConfig({ master: server.url }), {
      nodeName: 'node-a',
      log: { debug: (m: string) => debug.push(m) },
      clock: () => now,
    });
  });
  afterEach(() => server.close());

  const events = (ns = 'demo'): FakeObject[] => server.list('v1', 'Event', ns);

  it('posts a core/v1 Warning Event about the object, from kube-ipvs on this node', async () => {
    await recorder.warn(svc, 'InvalidPort', 'port 70000 out of range');
    expect(events()).toEqual([
      expect.objectContaining({
        metadata: expect.objectContaining({ namespace: 'demo', name: expect.stringMatching(/^web\.[0-9a-f]+$/) }),
        involvedObject: { kind: 'Service', namespace: 'demo', name: 'web', uid: 'u-1', apiVersion: 'v1' },
        type: 'Warning',
        reason: 'InvalidPort',
        message: 'port 70000 out of range',
        count: 1,
        firstTimestamp: '2026-01-02T03:04:05.000Z',
        source: { component: 'kube-ipvs', host: 'node-a' },
        reportingComponent: 'kube-ipvs',
        reportingInstance: 'node-a',
      }),
    ]);
    expect(debug).toEqual([]);
  });

  it('within 10 minutes the same warning bumps count and lastTimestamp instead of posting again', async () => {
    await recorder.warn(svc, 'InvalidPort', 'm');
    now += 60_000;
    await recorder.warn(svc, 'InvalidPort', 'm');
    now += 60_000;
    await recorder.warn(svc, 'InvalidPort', 'm');
    const [ev] = events();
    expect(events()).toHaveLength(1);
    expect(ev).toMatchObject({
      count: 3,
      lastTimestamp: '2026-01-02T03:06:05.000Z',
      firstTimestamp: '2026-01-02T03:04:05.000Z',
    });
    await recorder.warn(svc, 'InvalidPort', 'another message');
    await recorder.warn({ ...svc, name: 'db' }, 'InvalidPort', 'm');
    expect(events()).toHaveLength(3);
    expect(server.requests.filter((r) => r.verb === 'patch')).toHaveLength(2);
  });

  it('posts again once the window has passed since the last occurrence', async () => {
    await recorder.warn(svc, 'R', 'm');
    now += 10 * 60_000;
    await recorder.warn(svc, 'R', 'm');
    expect(events().map((e) => e.count)).toEqual([1, 1]);
  });

  it('Events about cluster-scoped objects go to "default"', async () => {
    await recorder.warn({ kind: 'Node', name: 'node-a' }, 'R', 'm');
    expect(events('default')).toHaveLength(1);
  });

  it('a refused post resolves, is logged at debug only and not tried again (an answer is final, as client-go\'s "will not retry")', async () => {
    const guarded = new FakeApiServer({ auth: { tokens: ['admin'] } });
    await guarded.listen();
    try {
      const r = new EventRecorder(loadKubeConfig({ master: guarded.url }), {
        nodeName: 'node-a',
        log: { debug: (m: string) => debug.push(m) },
        clock: () => now,
      });
      await expect(r.warn(svc, 'R', 'm')).resolves.toBeUndefined();
      expect(guarded.requests.filter((q) => q.method === 'POST')).toHaveLength(1);
      expect(debug).toHaveLength(1);
      expect(debug[0]).toMatch(
        /^event demo\/web\.[0-9a-f]+ about Service demo\/web \(R\): post failed: HTTP 401: Unauthorized/,
      );
    } finally {
      await guarded.close();
    }
  });

  describe('bounded like client-go (EventCorrelator), on a fake clock', () => {
    let timers: { at: number; fn: () => void }[];
    const make = (o: Partial<EventRecorderOptions> = {}) => {
      timers = [];
      return new EventRecorder(loadKubeConfig({ master: server.url }), {
        nodeName: 'node-a',
        log: { debug: (m: string) => debug.push(m) },
        clock: () => now,
        setTimer: (fn, ms) => timers.push({ at: now + ms, fn }),
        ...o,
      });
    };
    /** moves the fake clock, firing the recorder's due timers */
    const advance = (ms: number) => {
      now += ms;
      for (const t of timers.splice(0).sort((a, b) => a.at - b.at)) {
        if (t.at <= now) t.fn();
        else timers.push(t);
      }
    };
    const UNBOUNDED = { burst: 1e6, refillEveryMs: 1 };

    it("a post that got no answer is tried again as client-go's recordToSink: the first wait random within 10 s, then 10 s apart; it lands once the server is back", async () => {
      const r = make({ retry: { random: () => 0.25 } });
      const url = server.url;
      await server.close();
      let settled = false;
      const p = r.warn(svc, 'R', 'm').then(() => (settled = true));
      await waitFor('the first try failed', () => timers.length === 1);
      expect(timers[0]!.at - now).toBe(2_500);
      advance(2_500);
      await waitFor('the second try failed', () => timers.length === 1);
      expect(timers[0]!.at - now).toBe(10_000);
      await server.listen(Number(new URL(url).port));
      advance(9_999);
      expect(timers).toHaveLength(1);
      expect(settled).toBe(false);
      advance(1);
      await p;
      expect(events()).toEqual([expect.objectContaining({ reason: 'R', message: 'm', count: 1 })]);
      expect(debug.map((d) => d.replace(/\(.*\)/, '(...)'))).toEqual([
        expect.stringMatching(
          /^POST \/api\/v1\/namespaces\/demo\/events: no answer \(\.\.\.\); try 2 of 12 in 2500 ms$/,
        ),
        expect.stringMatching(
          /^POST \/api\/v1\/namespaces\/demo\/events: no answer \(\.\.\.\); try 3 of 12 in 10000 ms$/,
        ),
      ]);
    });

    it("gives up after 12 tries (client-go's maxTriesPerEvent) with one debug line; the next warning posts anew", async () => {
      const r = make({ retry: { random: () => 0 } });
      const url = server.url;
      await server.close();
      let settled = false;
      const p = r.warn(svc, 'R', 'm').then(() => (settled = true));
      for (let waits = 0; waits < 11; waits++) {
        await waitFor(`wait ${waits + 1}`, () => timers.length === 1);
        advance(10_000);
      }
      await p;
      expect(settled).toBe(true);
      expect(timers).toHaveLength(0);
      expect(debug.filter((d) => d.includes('no answer'))).toHaveLength(11);
      expect(debug[debug.length - 1]).toMatch(
        /^event demo\/web\.[0-9a-f]+ about Service demo\/web \(R\): post failed: /,
      );
      await server.listen(Number(new URL(url).port));
      await r.warn(svc, 'R', 'm');
      expect(events()).toEqual([expect.objectContaining({ count: 1 })]);
    });

    it('spam filter per object and reason: 25 requests, then one per 5 minutes; the dropped ones still count', async () => {
      const r = make({ global: UNBOUNDED });
      for (let i = 0; i < 30; i++) await r.warn(svc, 'InvalidPort', 'm');
      // 1 create + 24 patches; 5 dropped
      expect(server.requests.filter((q) => q.verb === 'create' || q.verb === 'patch')).toHaveLength(25);
      expect(events()).toEqual([expect.objectContaining({ count: 25 })]);
      expect(r.dropped).toBe(5);
      // another reason about the same object has its own bucket
      await r.warn(svc, 'OtherReason', 'm');
      expect(events()).toHaveLength(2);
      // 5 minutes later one more token: the patch carries every occurrence
      now += 5 * 60_000 - 1;
      await r.warn(svc, 'InvalidPort', 'm');
      expect(r.dropped).toBe(6);
      now += 1;
      await r.warn(svc, 'InvalidPort', 'm');
      expect(events().find((e) => e.reason === 'InvalidPort')).toMatchObject({ count: 32 });
    });

    it('aggregation: the 10th different message about one object and reason within 10 minutes becomes one combined Event that counts', async () => {
      const r = make({ global: UNBOUNDED });
      for (let i = 1; i <= 12; i++) await r.warn(svc, 'InvalidField', `field ${i} is bad`);
      const evs = events();
      expect(evs).toHaveLength(10);
      expect(
        evs
          .filter((e) => !String(e.message).startsWith(AGGREGATED_PREFIX))
          .map((e) => e.message)
          .sort(),
      ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) => `field ${i} is bad`).sort());
      expect(evs.filter((e) => String(e.message).startsWith(AGGREGATED_PREFIX))).toEqual([
        expect.objectContaining({ message: `${AGGREGATED_PREFIX}field 10 is bad`, count: 3 }),
      ]);
      // other objects are not aggregated with it
      await r.warn({ ...svc, name: 'db' }, 'InvalidField', 'field 1 is bad');
      expect(events().filter((e) => (e.involvedObject as { name: string }).name === 'db')).toEqual([
        expect.objectContaining({ message: 'field 1 is bad' }),
      ]);
    });

    it('a global token bucket and a cap on requests in flight: 500 objects make 25 requests at once, at most 4 in flight, the rest as tokens come', async () => {
      const r = make({ global: { burst: 25, refillEveryMs: 1000 }, maxInFlight: 4 });
      // counts the recorder's requests while they are in flight (its one way out, apiRequest)
      const sender = r as unknown as { send: (...a: unknown[]) => Promise<void> };
      const real = sender.send.bind(r);
      let inFlight = 0;
      let most = 0;
      jest.spyOn(sender, 'send').mockImplementation(async (...a: unknown[]) => {
        most = Math.max(most, ++inFlight);
        try {
          return await real(...a);
        } finally {
          inFlight--;
        }
      });
      let resolved = 0;
      const all = Array.from({ length: 500 }, (_, i) =>
        r.warn({ ...svc, name: `svc-${i}` }, 'InvalidField', 'bad').then(() => resolved++),
      );
      const creates = () => server.requests.filter((q) => q.verb === 'create').length;
      while (creates() < 25 || r.queued > 475) await new Promise((res) => setTimeout(res, 5));
      await new Promise((res) => setTimeout(res, 50));
      expect(creates()).toBe(25);
      expect(r.queued).toBe(475);
      expect(most).toBeLessThanOrEqual(4);
      expect(most).toBeGreaterThan(1);
      // ten seconds later, ten more
      for (let i = 0; i < 10; i++) {
        advance(1000);
        while (creates() < 26 + i) await new Promise((res) => setTimeout(res, 5));
      }
      await new Promise((res) => setTimeout(res, 50));
      expect(creates()).toBe(35);
      expect(resolved).toBe(35);
      // the rest drain as tokens come
      while (r.queued > 0 || resolved < 500) {
        advance(1000);
        await new Promise((res) => setTimeout(res, 1));
      }
      await Promise.all(all);
      expect(events()).toHaveLength(500);
      expect(most).toBeLessThanOrEqual(4);
    });

    /** the characters the recorder holds in its caches (keys and remembered messages) */
    const heldChars = (r: EventRecorder): number => {
      const inner = r as unknown as {
        posted: Map<string, unknown>;
        similar: Map<string, { messages: Set<string> }>;
        spam: Map<string, unknown>;
      };
      let n = 0;
      for (const k of inner.posted.keys()) n += k.length;
      for (const k of inner.spam.keys()) n += k.length;
      for (const [k, v] of inner.similar) {
        n += k.length;
        for (const m of v.messages) n += m.length;
      }
      return n;
    };

    it("one Service updated once a second with a different 100 KB refused value holds a bounded amount, not 100 MB (issue 25: client-go's PopAny)", async () => {
      const r = make({ global: UNBOUNDED, spam: UNBOUNDED });
      for (let i = 0; i < 1000; i++) {
        await r.warn(
          svc,
          'InvalidField',
          `kube-ipvs ignored metadata.annotations[x] '${String(i).padStart(4, '0')}${'a'.repeat(100_000)}': bad`,
        );
        now += 1000;
      }
      // at most maxSimilar messages of at most 1 KB each, plus keys built from them
      expect(heldChars(r)).toBeLessThan(64 * 1024);
      // still one combined Event that counts, as before
      const combined = events().filter((e) => String(e.message).startsWith(AGGREGATED_PREFIX));
      expect(combined).toEqual([expect.objectContaining({ count: 991 })]);
    });

    it('at the cap (4,096 objects, each with 10 different 1 KB messages) the caches hold digests, not the messages (issue 39 item 8)', async () => {
      // one POST per object (a spam bucket of 1, one more token 5 minutes later), each answered
      // at once without HTTP
      const r = make({ global: UNBOUNDED, spam: { burst: 1, refillEveryMs: 5 * 60_000 } });
      const sent: string[] = [];
      jest
        .spyOn(r as unknown as { send: (method: string) => Promise<void> }, 'send')
        .mockImplementation(async (method: string) => void sent.push(method));
      const ref = (o: number) => ({ ...svc, name: `svc-${String(o).padStart(4, '0')}`, uid: `uid-${o}` });
      const message = (o: number, m: number) => `${o}: field ${m} is bad: '${'v'.repeat(2000)}'`;
      for (let o = 0; o < MAX_REMEMBERED; o++)
        for (let m = 0; m < 10; m++) await r.warn(ref(o), 'InvalidField', message(o, m));
      expect(sent).toHaveLength(MAX_REMEMBERED);
      const inner = r as unknown as { posted: Map<string, unknown>; similar: Map<string, unknown> };
      expect([inner.posted.size, inner.similar.size]).toEqual([MAX_REMEMBERED, MAX_REMEMBERED]);
      // holding the messages, this was ~40 million characters (4,096 x 9 x 1 KB and the keys)
      expect(heldChars(r)).toBeLessThan(MAX_REMEMBERED * 512);
      // one object more forgets the oldest; it is still deduplicated at the cap (a PATCH), and
      // the oldest object's first message again is a new Event
      await r.warn(ref(MAX_REMEMBERED), 'InvalidField', message(MAX_REMEMBERED, 0));
      now += 5 * 60_000;
      await r.warn(ref(MAX_REMEMBERED), 'InvalidField', message(MAX_REMEMBERED, 0));
      await r.warn(ref(0), 'InvalidField', message(0, 0));
      expect(sent.slice(MAX_REMEMBERED)).toEqual(['POST', 'PATCH', 'POST']);
      expect(inner.posted.size).toBe(MAX_REMEMBERED);
    });

    it("an Event message is at most 1024 bytes (the API's note limit; kube-scheduler truncates the same way), cut on a character", async () => {
      const r = make({ global: UNBOUNDED });
      await r.warn(svc, 'InvalidField', `x${'\u00e9'.repeat(5000)}`);
      const [ev] = events();
      const message = String(ev!.message);
      expect(Buffer.byteLength(message)).toBeLessThanOrEqual(1024);
      expect(message).toMatch(/^x\u00e9+ \.\.\.$/);
      expect(message).not.toContain('\ufffd');
    });

    it('a full queue drops (debug line), never grows without bound', async () => {
      const r = make({ global: { burst: 1, refillEveryMs: 1000 }, maxQueued: 3 });
      const all = Array.from({ length: 10 }, (_, i) => r.warn({ ...svc, name: `svc-${i}` }, 'R', 'm'));
      expect(r.queued).toBe(3);
      expect(r.dropped).toBe(6);
      expect(debug.filter((m) => /not sent: queue full/.test(m))).toHaveLength(6);
      for (let i = 0; i < 3; i++) advance(1000);
      await Promise.all(all);
      expect(events()).toHaveLength(4);
    });
  });
});
