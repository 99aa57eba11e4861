/**
 * The informers when the API server is in trouble (issue 39 items 5, 6 and 8), against a
 * scripted server (every answer chosen by the test) and a FakeClock (the backoff's waits are
 * read from its pending timers and passed by advancing it, never slept):
 * - the backoff is client-go's reflector's (0.8 s doubling to 30 s) and is not reset by a list
 *   that succeeds or a watch that connects, only once a watch has lasted 2 minutes: a watch
 *   refused 403 does not relist 9-10 times in 8 s;
 * - a 429 (an overloaded server) is asked again as it was, a watch from the same version with
 *   no relist, never sooner than its Retry-After (capped);
 * - a watch event that does not decode (a JSON line, a protobuf frame) ends the watch; after
 *   three at one version the informer relists, logs once and counts it;
 * - a JSON watch line and a list body are capped (at the cap taken; past it, a clear error,
 *   then the backoff).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs/light';
import type { KubernetesObject } from '@kubernetes/client-node';
import generated from '../../lib/k8s/k8s-api-protobuf.json';
import {
  DECODE_FAILURES_BEFORE_RELIST,
  RunningInformers,
  ServiceHandler,
  startInformers,
} from '../../lib/k8s/informers';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { PROTOBUF_CONTENT_TYPE, WATCH_EVENT_MAX_BYTES } from '../../lib/k8s/protobuf';
import { ApiKubeConfig } from '../../lib/k8s/api-request';
import { FakeClock } from '../../testkit/fake-clock';
import { waitFor } from '../../testkit/wait-for';

/** One request the scripted server got: list or watch, its resourceVersion, when (fake time). */
interface Seen {
  readonly verb: 'list' | 'watch';
  readonly resourceVersion: string;
  /** a list's limit: 1 for the history check after a lost connection */
  readonly limit: string;
  readonly atMs: number;
}

/** What the scripted server answers: a status and body, or a stream the test writes to. */
type Answer =
  | {
      readonly status: number;
      readonly headers?: Record<string, string>;
      readonly body: string;
      readonly chunks?: number;
    }
  | { readonly stream: (res: http.ServerResponse) => void; readonly contentType?: string }
  /** the connection closed before any answer (an API server going away) */
  | { readonly drop: true };

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

const tooMany = (retryAfter?: string): Answer => ({
  status: 429,
  headers: retryAfter !== undefined ? { 'retry-after': retryAfter } : {},
  body: status(429, 'TooManyRequests', 'Too many requests, please try again later.'),
});
const forbidden: Answer = {
  status: 403,
  body: status(
    403,
    'Forbidden',
    'services is forbidden: User "system:serviceaccount:kube-system:kube-proxy" cannot watch resource "services"',
  ),
};

const svc = (name: string, resourceVersion: string, extra: Record<string, unknown> = {}) => ({
  metadata: { namespace: 'demo', name, resourceVersion, ...extra },
  spec: { clusterIP: '10.96.0.10' },
});
const list = (resourceVersion: string, items: object[]): Answer => ({
  status: 200,
  body: JSON.stringify({ kind: 'ServiceList', apiVersion: 'v1', metadata: { resourceVersion }, items }),
});
const line = (type: string, object: object) =>
  `${JSON.stringify({ type, object: { kind: 'Service', apiVersion: 'v1', ...object } })}\n`;
/** A watch answered 200 that sends `text` and stays open. */
const streaming = (text: string | Buffer, contentType?: string): Answer => ({
  stream: (res) => res.write(text),
  ...(contentType ? { contentType } : {}),
});
/** A watch answered 200 that stays open, silent, until the test ends it. */
const openWatch = (): Answer => ({ stream: () => undefined });

class ScriptedServer {
  readonly seen: Seen[] = [];
  onList: (s: Seen) => Answer = () => list('10', []);
  onWatch: (s: Seen) => Answer = () => openWatch();
  private readonly open = new Set<http.ServerResponse>();
  private readonly server = http.createServer((req, res) => this.answer(req, res));

  constructor(private readonly clock: FakeClock) {}

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Ends every open watch (the server's timeout) as a clean end of the stream. */
  endWatches(): void {
    for (const res of this.open) res.end();
    this.open.clear();
  }

  async close(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  get openWatches(): number {
    return this.open.size;
  }

  /** The requests as "list", "watch 10": what was asked, in order. */
  get asked(): string[] {
    return this.seen.map((s) => (s.verb === 'list' ? 'list' : `watch ${s.resourceVersion}`));
  }

  private answer(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const seen: Seen = {
      verb: url.searchParams.get('watch') === 'true' ? 'watch' : 'list',
      resourceVersion: url.searchParams.get('resourceVersion') ?? '',
      limit: url.searchParams.get('limit') ?? '',
      atMs: this.clock.now(),
    };
    this.seen.push(seen);
    const a = seen.verb === 'watch' ? this.onWatch(seen) : this.onList(seen);
    if ('drop' in a) {
      req.socket.destroy();
      return;
    }
    if ('stream' in a) {
      res.writeHead(200, { 'content-type': a.contentType ?? 'application/json' });
      this.open.add(res);
      res.on('close', () => this.open.delete(res));
      a.stream(res);
      return;
    }
    const body = Buffer.from(a.body);
    if (a.chunks) {
      // no Content-Length: the body as chunks, as a server streaming a large answer sends it
      res.writeHead(a.status, { 'content-type': 'application/json', ...a.headers });
      const size = Math.ceil(body.length / a.chunks);
      for (let i = 0; i < body.length; i += size) res.write(body.subarray(i, i + size));
      res.end();
      return;
    }
    res.writeHead(a.status, { 'content-type': 'application/json', 'content-length': body.length, ...a.headers });
    res.end(body);
  }
}

/** Records handler calls as "add demo/s1", "update demo/s1", "delete demo/s2", "synced". */
class Recorder implements ServiceHandler {
  readonly calls: string[] = [];
  private key = (o: KubernetesObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;
  onServiceAdd = (o: KubernetesObject) => this.calls.push(`add ${this.key(o)}`);
  onServiceUpdate = (_a: KubernetesObject, b: KubernetesObject) => this.calls.push(`update ${this.key(b)}`);
  onServiceDelete = (o: KubernetesObject) => this.calls.push(`delete ${this.key(o)}`);
  onServicesSynced = () => this.calls.push('synced');
  has = (call: string) => this.calls.includes(call);
}

class Log {
  readonly lines: { level: string; message: string }[] = [];
  info = (message: string) => this.lines.push({ level: 'info', message });
  warn = (message: string) => this.lines.push({ level: 'warn', message });
  error = (message: string) => this.lines.push({ level: 'error', message });
  debug = (message: string) => this.lines.push({ level: 'debug', message });
  at = (level: string) => this.lines.filter((l) => l.level === level).map((l) => l.message);
}

describe('informers when the API server is in trouble', () => {
  let clock: FakeClock;
  let server: ScriptedServer;
  let log: Log;
  let rec: Recorder;
  let relists: string[];
  const running: RunningInformers[] = [];

  beforeEach(() => {
    clock = new FakeClock();
    server = new ScriptedServer(clock);
    log = new Log();
    rec = new Recorder();
    relists = [];
  });
  afterEach(async () => {
    for (const r of running.splice(0)) await r.stop();
    await server.close();
  });

  /** Starts the Service informer with client-go's default backoff, no jitter, on the fake clock. */
  async function start(configure: (kc: ApiKubeConfig) => void = () => undefined): Promise<void> {
    const kc = loadKubeConfig({ master: await server.listen() });
    configure(kc);
    running.push(
      startInformers(kc, {
        nodeName: 'node-a',
        handlers: { service: rec },
        log,
        random: () => 0,
        clock,
        onDecodeRelist: (resource) => relists.push(resource),
      }),
    );
  }

  /** Waits for the informer's next restart to be armed, passes it, and returns its delay. */
  async function passBackoff(): Promise<number> {
    await waitFor('a restart armed on the clock', () => clock.pendingTimers().length > 0);
    const delay = clock.pendingTimers()[0]! - clock.now();
    await clock.advance(delay);
    return delay;
  }

  async function passBackoffs(n: number): Promise<number[]> {
    const delays: number[] = [];
    for (let i = 0; i < n; i++) delays.push(await passBackoff());
    return delays;
  }

  describe('the relist storm (item 5)', () => {
    it('a watch refused 403 relists after a backoff the successful lists do not reset: 0.8 s doubling to 30 s, 4 LISTs in the first 8 s', async () => {
      server.onList = () => list('10', [svc('s1', '5')]);
      server.onWatch = () => forbidden;
      await start();
      const delays = await passBackoffs(8);
      expect(delays).toEqual([800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
      await waitFor('the 9th list', () => server.seen.filter((s) => s.verb === 'list').length === 9);
      const lists = server.seen.filter((s) => s.verb === 'list');
      const t0 = lists[0]!.atMs;
      expect(lists.filter((s) => s.atMs - t0 < 8000)).toHaveLength(4);
    });

    it('the backoff is reset once a watch has lasted 2 minutes, not when one connects', async () => {
      server.onList = () => list('10', [svc('s1', '5')]);
      let watches = 0;
      // three refusals, a watch open for a minute, a refusal, a watch open for 2 minutes, a refusal
      server.onWatch = () => ([4, 6].includes(++watches) ? openWatch() : forbidden);
      await start();
      expect(await passBackoffs(3)).toEqual([800, 1600, 3200]);
      await waitFor('the 4th watch open', () => server.openWatches === 1);
      await clock.advance(60_000);
      server.endWatches();
      // the watch connected and lasted a minute: the refusal after it backs off further
      expect(await passBackoff()).toBe(6400);
      await waitFor('the 6th watch open', () => server.openWatches === 1);
      await clock.advance(120_000);
      server.endWatches();
      expect(await passBackoff()).toBe(800);
      await waitFor('the 6th list', () => server.asked.filter((a) => a === 'list').length === 6);
    });

    it('a watch answered 429 is watched again from the same resourceVersion, never relisted, no sooner than its Retry-After', async () => {
      server.onList = () => list('10', [svc('s1', '5')]);
      let watches = 0;
      server.onWatch = () => (++watches <= 5 ? tooMany('2') : openWatch());
      await start();
      const delays = await passBackoffs(5);
      // the backoff (0.8, 1.6, 3.2 s ...), but at least the server's 2 s
      expect(delays).toEqual([2000, 2000, 3200, 6400, 12800]);
      await waitFor('the watch open', () => server.openWatches === 1);
      expect(server.asked).toEqual(['list', ...Array(6).fill('watch 10')]);
      expect(rec.calls).toEqual(['add demo/s1', 'synced']);
      expect(log.at('warn')[0]).toMatch(
        /^services informer failed: HTTP 429 .*; restarting in 2000 ms \(the API server is overloaded: the same request again, no relist\)$/,
      );
    });

    it('a list answered 429 is listed again no sooner than its Retry-After, taken up to 60 s', async () => {
      let lists = 0;
      server.onList = () =>
        ++lists === 1 ? tooMany('3600') : lists === 2 ? tooMany('1') : list('10', [svc('s1', '5')]);
      await start();
      expect(await passBackoffs(2)).toEqual([60_000, 1600]);
      await waitFor('synced', () => rec.has('synced'));
      expect(server.asked).toEqual(['list', 'list', 'list', 'watch 10']);
    });

    it('after the server went away, the history check answered 429 is asked again, with no relist', async () => {
      let lists = 0;
      server.onList = () => (++lists === 1 ? list('10', [svc('s1', '5')]) : tooMany('1'));
      let watches = 0;
      server.onWatch = () => (++watches === 1 ? { drop: true } : openWatch());
      await start();
      // the dropped watch, then the history check (a list of one) 429'd twice, then allowed
      expect(await passBackoffs(2)).toEqual([800, 1600]);
      await waitFor('the third wait armed', () => clock.pendingTimers().length > 0);
      server.onList = () => list('10', [svc('s1', '5')]);
      expect(await passBackoff()).toBe(3200);
      await waitFor('the watch open', () => server.openWatches === 1);
      expect(server.asked).toEqual(['list', 'watch 10', 'list', 'list', 'list', 'watch 10']);
      // each a history check (a list of one), never the full relist
      expect(server.seen.slice(2, 5).map((s) => s.limit)).toEqual(['1', '1', '1']);
      expect(rec.calls).toEqual(['add demo/s1', 'synced']);
    });
  });

  describe('an event that does not decode (item 6)', () => {
    it('an unparsable JSON watch line (a DELETED cut short) is not skipped: the watch ends; after 3 at one version, one relist delivers the delete, logged once and counted', async () => {
      let lists = 0;
      server.onList = () =>
        ++lists === 1 ? list('10', [svc('s1', '5'), svc('s2', '6')]) : list('13', [svc('s1', '11')]);
      const badDelete = line('DELETED', svc('s2', '12')).slice(0, 40) + '\n';
      server.onWatch = (s) =>
        s.resourceVersion === '10'
          ? streaming(line('MODIFIED', svc('s1', '11')) + badDelete)
          : s.resourceVersion === '11'
            ? streaming(badDelete)
            : openWatch();
      await start();
      const delays = await passBackoffs(DECODE_FAILURES_BEFORE_RELIST);
      await waitFor('the delete after the relist', () => rec.has('delete demo/s2'));
      await waitFor('the watch from the relist', () => server.openWatches === 1);
      expect(delays).toEqual([800, 1600, 3200]);
      expect(server.asked).toEqual(['list', 'watch 10', 'watch 11', 'watch 11', 'list', 'watch 13']);
      expect(rec.calls).toEqual(['add demo/s1', 'add demo/s2', 'synced', 'update demo/s1', 'delete demo/s2']);
      expect(relists).toEqual(['services']);
      expect(log.at('warn')).toEqual([
        expect.stringMatching(
          /^services informer: watch events from resourceVersion 11 did not decode 3 times \(WatchDecodeError: a watch line that is not JSON .*\); relisting in 3200 ms$/,
        ),
      ]);
    });

    it('an undecodable protobuf frame: re-watched from its version, then one relist delivers what the event after it changed', async () => {
      let lists = 0;
      server.onList = () =>
        ++lists === 1 ? list('10', [svc('s1', '5'), svc('s2', '6')]) : list('13', [svc('s1', '11')]);
      const garbage = Buffer.from([0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff]);
      const contentType = `${PROTOBUF_CONTENT_TYPE};stream=watch`;
      server.onWatch = (s) =>
        s.resourceVersion === '10'
          ? streaming(
              Buffer.concat([frame('MODIFIED', 's1', '11'), garbage, frame('DELETED', 's2', '12')]),
              contentType,
            )
          : s.resourceVersion === '11'
            ? streaming(Buffer.concat([garbage, frame('DELETED', 's2', '12')]), contentType)
            : openWatch();
      await start((kc) => (kc.accept = `${PROTOBUF_CONTENT_TYPE}, application/json`));
      await passBackoffs(DECODE_FAILURES_BEFORE_RELIST);
      await waitFor('the delete after the relist', () => rec.has('delete demo/s2'));
      await waitFor('the watch from the relist', () => server.openWatches === 1);
      expect(server.asked).toEqual(['list', 'watch 10', 'watch 11', 'watch 11', 'list', 'watch 13']);
      expect(rec.calls).toEqual(['add demo/s1', 'add demo/s2', 'synced', 'update demo/s1', 'delete demo/s2']);
      expect(relists).toEqual(['services']);
      expect(log.at('warn')).toEqual([
        expect.stringMatching(
          /^services informer: watch events from resourceVersion 11 did not decode 3 times \(ProtobufDecodeError: /,
        ),
      ]);
      expect(log.at('debug').filter((m) => /did not decode/.test(m))).toHaveLength(2);
    });
  });

  describe('size caps (item 8)', () => {
    it(`a JSON watch line of ${WATCH_EVENT_MAX_BYTES} bytes is delivered; one byte more ends the watch with a clear error and the backoff, nothing buffered past the cap`, async () => {
      server.onList = () => list('10', [svc('s1', '5')]);
      const padded = (resourceVersion: string, bytes: number) => {
        const bare = line('MODIFIED', svc('s1', resourceVersion, { annotations: { pad: '' } })).length - 1;
        return line('MODIFIED', svc('s1', resourceVersion, { annotations: { pad: 'x'.repeat(bytes - bare) } }));
      };
      const atCap = padded('11', WATCH_EVENT_MAX_BYTES);
      const overCap = padded('12', WATCH_EVENT_MAX_BYTES + 1);
      expect([atCap.length - 1, overCap.length - 1]).toEqual([WATCH_EVENT_MAX_BYTES, WATCH_EVENT_MAX_BYTES + 1]);
      server.onWatch = (s) => (s.resourceVersion === '10' ? streaming(atCap + overCap) : openWatch());
      await start();
      expect(await passBackoff()).toBe(800);
      await waitFor('the watch again', () => server.openWatches === 1);
      expect(rec.calls).toEqual(['add demo/s1', 'synced', 'update demo/s1']);
      // the event at the cap was taken: the watch goes on from its version
      expect(server.asked).toEqual(['list', 'watch 10', 'watch 11']);
      expect(log.at('debug')).toContainEqual(
        expect.stringMatching(
          new RegExp(
            `^services informer: a watch event from resourceVersion 11 did not decode \\(WatchDecodeError: a watch event line longer than ${WATCH_EVENT_MAX_BYTES} bytes, the most an event may have`,
          ),
        ),
      );
    });

    it('a list body at the cap is taken; one byte past it is refused with a clear error and listed again after the backoff', async () => {
      const cap = 4096;
      const sized = (bytes: number) => {
        const body = (list('10', [svc('s1', '5')]) as { body: string }).body;
        return { status: 200, body: body + ' '.repeat(bytes - body.length) };
      };
      let lists = 0;
      server.onList = () => (++lists === 1 ? { ...sized(cap + 1), chunks: 3 } : sized(cap));
      await start((kc) => (kc.maxResponseBytes = cap));
      expect(await passBackoff()).toBe(800);
      await waitFor('synced', () => rec.has('synced'));
      expect(rec.calls).toEqual(['add demo/s1', 'synced']);
      expect(log.at('warn')).toEqual([
        `services informer failed: ResponseTooLargeError: GET /api/v1/services: the answer (HTTP 200) is larger than ${cap} bytes, the most a body may have; not read further; restarting in 800 ms`,
      ]);
    });
  });
});

const root = protobuf.Root.fromJSON(generated.descriptor as protobuf.INamespace);
const pbType = (name: string) => root.lookupType(name);

/** A watch frame of a Service event as kube-apiserver's protobuf serializer writes it. */
function frame(eventType: string, name: string, resourceVersion: string): Buffer {
  const serviceType = pbType('k8s.io.api.core.v1.Service');
  const raw = serviceType
    .encode(
      serviceType.fromObject({
        metadata: { name, namespace: 'demo', resourceVersion },
        spec: { clusterIP: '10.96.0.10' },
      }),
    )
    .finish();
  const unknown = pbType('k8s.io.apimachinery.pkg.runtime.Unknown');
  const object = Buffer.concat([
    Buffer.from('k8s\0', 'latin1'),
    unknown.encode({ typeMeta: { apiVersion: 'v1', kind: 'Service' }, raw }).finish(),
  ]);
  const body = pbType('k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent')
    .encode({ type: eventType, object: { raw: object } })
    .finish();
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  return Buffer.concat([length, body]);
}
