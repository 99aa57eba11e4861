/**
 * Kubernetes' protobuf encoding as the daemon reads it (lib/k8s/protobuf.ts): an object's
 * envelope, the JSON shape handed to the converters (times, IntOrString, managedFields
 * dropped, a false `ready` kept), watch frames split across chunks, and the answers of a
 * server that speaks protobuf to listRaw, apiRequest's error path and ReportingWatch. The
 * bytes here are protobufjs's encoding of the same descriptor; the real kube-apiserver's own
 * bytes are read in spec/lab/protobuf.lab.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs/light';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import generated from '../../lib/k8s/k8s-api-protobuf.json';
import {
  PROTOBUF_CONTENT_TYPE,
  ProtobufDecodeError,
  WATCH_EVENT_MAX_BYTES,
  WatchFrames,
  decodeObject,
  decodeWatchEvent,
  isProtobuf,
} from '../../lib/k8s/protobuf';
import { apiRequest, statusMessage } from '../../lib/k8s/api-request';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { listRaw } from '../../lib/k8s/raw-list';
import { ReportingWatch } from '../../lib/k8s/reporting-watch';
import { informerAccept } from '../../lib/daemon/api-config';

const root = protobuf.Root.fromJSON(generated.descriptor as protobuf.INamespace);
const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const type = (name: string) => root.lookupType(name);
const MAGIC = Buffer.from('k8s\0', 'latin1');

/** The serializer's envelope around `message` of `typeName`. */
function envelope(apiVersion: string, kind: string, typeName: string, message: object): Buffer {
  const raw = type(typeName).encode(type(typeName).fromObject(message)).finish();
  const unknown = type('k8s.io.apimachinery.pkg.runtime.Unknown');
  return Buffer.concat([MAGIC, unknown.encode({ typeMeta: { apiVersion, kind }, raw }).finish()]);
}

/** A watch frame: length, then the WatchEvent. */
function frame(eventType: string, object: Buffer): Buffer {
  const ev = type(`${META}.WatchEvent`);
  const body = ev.encode({ type: eventType, object: { raw: object } }).finish();
  const length = Buffer.alloc(4);
  length.writeUInt32BE(body.length);
  return Buffer.concat([length, body]);
}

const T0 = { seconds: 1_764_000_000, nanos: 0 }; // 2025-11-24T16:00:00Z

const service = (name: string, targetPort: object) => ({
  metadata: {
    name,
    namespace: 'demo',
    resourceVersion: '7',
    creationTimestamp: T0,
    annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big":true}', keep: 'me' },
    managedFields: [
      { manager: 'kubectl', operation: 'Update', time: T0, fieldsV1: { Raw: Buffer.from('{"f:spec":{}}') } },
    ],
  },
  spec: {
    type: 'ClusterIP',
    clusterIP: '10.96.0.10',
    clusterIPs: ['10.96.0.10'],
    ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort }],
  },
});

const slice = {
  metadata: { name: 'web-1', namespace: 'demo', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  endpoints: [
    { addresses: ['10.244.0.5'], conditions: { ready: false, serving: true, terminating: true }, nodeName: 'n1' },
    { addresses: ['10.244.0.6'], conditions: {} },
  ],
  ports: [{ name: 'http', protocol: 'TCP', port: 8080 }],
};

describe('protobuf objects', () => {
  it('a Service: apiVersion and kind from the envelope, times as RFC 3339, IntOrString as number or string, managedFields and the last-applied copy dropped', () => {
    const byNumber = decodeObject(
      envelope('v1', 'Service', 'k8s.io.api.core.v1.Service', service('a', { type: 0, intVal: 8080 })),
    );
    const byName = decodeObject(
      envelope('v1', 'Service', 'k8s.io.api.core.v1.Service', service('b', { type: 1, strVal: 'web' })),
    );
    expect(byNumber).toEqual({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'a',
        namespace: 'demo',
        resourceVersion: '7',
        creationTimestamp: '2025-11-24T16:00:00Z',
        annotations: { keep: 'me' },
      },
      spec: {
        type: 'ClusterIP',
        clusterIP: '10.96.0.10',
        clusterIPs: ['10.96.0.10'],
        ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }],
      },
    });
    expect((byName as unknown as V1Service).spec!.ports![0]!.targetPort).toBe('web');
  });

  it('an EndpointSlice: a false `ready` stays false, an unset one stays unset (the converters read it as unknown)', () => {
    const s = decodeObject(
      envelope('discovery.k8s.io/v1', 'EndpointSlice', 'k8s.io.api.discovery.v1.EndpointSlice', slice),
    ) as unknown as V1EndpointSlice;
    expect(s.endpoints!.map((e) => e.conditions)).toEqual([{ ready: false, serving: true, terminating: true }, {}]);
    expect(s.endpoints![0]!.nodeName).toBe('n1');
    expect(s.endpoints![1]).not.toHaveProperty('nodeName');
  });

  it('a list: items in the JSON shape, with the list metadata (resourceVersion, continue)', () => {
    const list = decodeObject(
      envelope('v1', 'ServiceList', 'k8s.io.api.core.v1.ServiceList', {
        metadata: { resourceVersion: '42', continue: 'next' },
        items: [service('a', { type: 0, intVal: 1 })],
      }),
    ) as {
      metadata: object;
      items: { metadata: { managedFields?: unknown; creationTimestamp: string; annotations?: object } }[];
    };
    expect(list.metadata).toEqual({ resourceVersion: '42', continue: 'next' });
    expect(list.items).toHaveLength(1);
    expect(list.items[0]!.metadata.creationTimestamp).toBe('2025-11-24T16:00:00Z');
    expect(list.items[0]!.metadata).not.toHaveProperty('managedFields');
    // each item pruned: kubectl's last-applied copy gone, the other annotations kept
    expect(list.items[0]!.metadata.annotations).toEqual({ keep: 'me' });
  });

  it("refuses what is not the serializer's: no prefix, a kind it has no decoder for, a truncated message", () => {
    expect(() => decodeObject(Buffer.from('{"kind":"Service"}'))).toThrow(
      new ProtobufDecodeError('not a Kubernetes protobuf object (no "k8s\\0" prefix)'),
    );
    const deployment = envelope('apps/v1', 'Deployment', `${META}.Status`, {});
    expect(() => decodeObject(deployment)).toThrow('no protobuf decoder for apps/v1 Deployment');
    const whole = envelope('v1', 'Service', 'k8s.io.api.core.v1.Service', service('a', { type: 0, intVal: 1 }));
    expect(() => decodeObject(whole.subarray(0, whole.length - 5))).toThrow(ProtobufDecodeError);
  });

  it('a Content-Type names protobuf with or without ;stream=watch', () => {
    expect(isProtobuf(PROTOBUF_CONTENT_TYPE)).toBe(true);
    expect(isProtobuf('application/vnd.kubernetes.protobuf;stream=watch')).toBe(true);
    expect(isProtobuf('application/json')).toBe(false);
    expect(isProtobuf(null)).toBe(false);
  });

  it("the informers' Accept for clientConnection.contentType: protobuf then JSON, or JSON alone", () => {
    expect(informerAccept('application/vnd.kubernetes.protobuf')).toBe(
      'application/vnd.kubernetes.protobuf, application/json',
    );
    expect(informerAccept('application/json')).toBe('application/json');
  });
});

describe('watch frames', () => {
  it('frames split anywhere across chunks (the length prefix too) come out whole and in order', () => {
    const a = frame(
      'ADDED',
      envelope('v1', 'Service', 'k8s.io.api.core.v1.Service', service('a', { type: 0, intVal: 1 })),
    );
    const b = frame(
      'DELETED',
      envelope('v1', 'Service', 'k8s.io.api.core.v1.Service', service('b', { type: 0, intVal: 2 })),
    );
    const all = Buffer.concat([a, b]);
    for (const cuts of [[2], [a.length - 1, a.length + 3], [1, 2, 3, a.length, a.length + 1]]) {
      const frames = new WatchFrames();
      const out: string[] = [];
      let from = 0;
      for (const to of [...cuts, all.length]) {
        for (const f of frames.push(all.subarray(from, to))) {
          const ev = decodeWatchEvent(f);
          out.push(`${ev.type} ${(ev.object as { metadata: { name: string } }).metadata.name}`);
        }
        from = to;
      }
      expect(out).toEqual(['ADDED a', 'DELETED b']);
      expect(frames.leftover).toBe(0);
    }
  });

  it(`a frame of ${WATCH_EVENT_MAX_BYTES} bytes (the cap, client-go's) is taken; one of a byte more is refused on its length alone`, () => {
    const length = (n: number) => {
      const b = Buffer.alloc(4);
      b.writeUInt32BE(n);
      return b;
    };
    const frames = new WatchFrames();
    expect(frames.push(length(WATCH_EVENT_MAX_BYTES))).toEqual([]);
    const [whole] = frames.push(Buffer.alloc(WATCH_EVENT_MAX_BYTES));
    expect(whole?.length).toBe(WATCH_EVENT_MAX_BYTES);
    // nothing of it buffered: the prefix is enough
    expect(() => new WatchFrames().push(length(WATCH_EVENT_MAX_BYTES + 1))).toThrow(
      new ProtobufDecodeError(
        `a watch frame of ${WATCH_EVENT_MAX_BYTES + 1} bytes, more than the ${WATCH_EVENT_MAX_BYTES} an event may have`,
      ),
    );
  });
});

/** A server answering every request with `answer(req, res)`. */
async function serve(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const server = http.createServer(answer);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, url, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('a server that answers in protobuf', () => {
  const accepts: string[] = [];
  const status = envelope('v1', 'Status', `${META}.Status`, {
    status: 'Failure',
    message: 'services is forbidden: User "x" cannot list resource "services"',
    reason: 'Forbidden',
    code: 403,
  });
  const list = envelope('v1', 'ServiceList', 'k8s.io.api.core.v1.ServiceList', {
    metadata: { resourceVersion: '42' },
    items: [service('a', { type: 0, intVal: 8080 })],
  });
  let s: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    s = await serve((req, res) => {
      accepts.push(req.headers.accept ?? '');
      if (req.url!.startsWith('/garbage')) {
        res.writeHead(200, { 'Content-Type': PROTOBUF_CONTENT_TYPE });
        res.end(Buffer.from('not protobuf'));
      } else if (req.url!.startsWith('/forbidden')) {
        res.writeHead(403, { 'Content-Type': PROTOBUF_CONTENT_TYPE });
        res.end(status);
      } else if (/[?&]watch=true/.test(req.url!)) {
        res.writeHead(200, { 'Content-Type': `${PROTOBUF_CONTENT_TYPE};stream=watch` });
        const f = frame(
          'MODIFIED',
          envelope('v1', 'Service', 'k8s.io.api.core.v1.Service', service('a', { type: 0, intVal: 9 })),
        );
        res.write(f.subarray(0, 7));
        setTimeout(() => {
          res.write(f.subarray(7));
          // then bytes that are no frame's: the watch ends with the decode error
          res.end(Buffer.from([0, 0, 0, 3, 0xff, 0xff, 0xff]));
        }, 20);
      } else {
        res.writeHead(200, { 'Content-Type': PROTOBUF_CONTENT_TYPE });
        res.end(list);
      }
    });
  });
  afterAll(() => s.close());

  const kc = () => loadKubeConfig({ master: s.url, accept: informerAccept(PROTOBUF_CONTENT_TYPE) });

  it('listRaw asks for protobuf and reads the list it gets', async () => {
    const l = await listRaw<V1Service>(kc(), '/api/v1/services');
    expect(accepts.at(-1)).toBe('application/vnd.kubernetes.protobuf, application/json');
    expect(l.metadata?.resourceVersion).toBe('42');
    expect(l.items.map((i) => [i.metadata!.name, i.spec!.ports![0]!.targetPort])).toEqual([['a', 8080]]);
  });

  it('an error answered with a protobuf Status gives its message, as a JSON Status does', async () => {
    const res = await apiRequest(kc(), { method: 'GET', path: '/forbidden', accept: PROTOBUF_CONTENT_TYPE });
    expect(res.status).toBe(403);
    expect(statusMessage(res.body)).toBe('services is forbidden: User "x" cannot list resource "services"');
  });

  it('a 200 whose protobuf body does not decode throws the decode error, and is counted as the 200 it was', async () => {
    const codes: string[] = [];
    const k = loadKubeConfig({ master: s.url, observer: (c) => codes.push(c.code) });
    const err = await apiRequest(k, { method: 'GET', path: '/garbage', accept: PROTOBUF_CONTENT_TYPE }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProtobufDecodeError);
    expect(codes).toEqual(['200']);
  });

  it('a request that names no Accept asks for JSON (the Event recorder)', async () => {
    await apiRequest(kc(), { method: 'GET', path: '/api/v1/services' });
    expect(accepts.at(-1)).toBe('application/json');
  });

  it('ReportingWatch reads protobuf frames as events; bytes that are no frame end it with the decode error', async () => {
    const events: string[] = [];
    const ended = new Promise<unknown>(
      (resolve) =>
        void new ReportingWatch(kc(), { connected: () => undefined, stopped: () => false }).watch(
          '/api/v1/services',
          {},
          (phase, obj) => events.push(`${phase} ${JSON.stringify((obj as V1Service).spec!.ports![0]!.targetPort)}`),
          resolve,
        ),
    );
    const err = await ended;
    expect(events).toEqual(['MODIFIED 9']);
    expect(err).toBeInstanceOf(ProtobufDecodeError);
  });
});
