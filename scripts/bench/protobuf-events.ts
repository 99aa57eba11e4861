// The intake bench's protobuf rows (issue 28): the same EndpointSlice watch events as
// kube-apiserver sends them to a client that asks for application/vnd.kubernetes.protobuf
// (client-go's default for built-in types, kube-proxy's), and what decoding them costs in
// Node. The decoder is protobufjs's, generated at load from the API's own .proto files
// (k8s.io/api and k8s.io/apimachinery at the lab's pinned version, from the Go module cache
// scripts/k8s/build.sh fills); no wire code is written here.
//
// A watch frame is what the server's length-delimited framer writes: a 4-byte big-endian
// length, then a metav1.WatchEvent whose object.raw is the serializer's envelope, the magic
// "k8s\0" and a runtime.Unknown (typeMeta, raw: the EndpointSlice's own encoding).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import protobuf from 'protobufjs';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { prunedObject } from '../../lib/k8s/prune';

const ROOT = path.join(__dirname, '..', '..', '..');
/** the Go module cache scripts/k8s/build.sh fills */
const GOMOD = path.join(ROOT, '.k8s', 'gomod');
/** the serializer's prefix before a runtime.Unknown (k8s.io/apimachinery/pkg/runtime/serializer/protobuf) */
const MAGIC = Buffer.from('k8s\0', 'latin1');

/** k8s.io/api's version in the lab's go.mod (apimachinery's is the same) */
function pinnedApiVersion(): string {
  const mod = readFileSync(path.join(ROOT, 'scripts', 'k8s', 'go.mod'), 'utf8');
  const m = /^\s*k8s\.io\/api (v\S+)/m.exec(mod);
  if (!m) throw new Error('scripts/k8s/go.mod names no k8s.io/api version');
  return m[1]!;
}

type Obj = Record<string, unknown>;
type Time = { seconds: number; nanos: number };

/** The EndpointSlice and envelope types, loaded from the .proto files. */
export class ProtobufEvents {
  private readonly slice: protobuf.Type;
  private readonly unknown: protobuf.Type;
  private readonly watchEvent: protobuf.Type;

  constructor() {
    const version = pinnedApiVersion();
    const root = new protobuf.Root();
    // imports are named as in the Go tree: k8s.io/api/... and k8s.io/apimachinery/...
    root.resolvePath = (_origin, target) => {
      const m = /^k8s\.io\/(api|apimachinery)\/(.*)$/.exec(target);
      return m ? path.join(GOMOD, 'k8s.io', `${m[1]}@${version}`, m[2]!) : target;
    };
    root.loadSync(
      [
        'k8s.io/api/discovery/v1/generated.proto',
        'k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto',
        'k8s.io/apimachinery/pkg/runtime/generated.proto',
      ],
      { keepCase: true },
    );
    root.resolveAll();
    this.slice = root.lookupType('k8s.io.api.discovery.v1.EndpointSlice');
    this.unknown = root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown');
    this.watchEvent = root.lookupType('k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent');
  }

  /** A watch event's JSON line (as the fake API server sent it) as the server's protobuf frame. */
  frame(line: string): Buffer {
    const ev = JSON.parse(line) as { type: string; object: V1EndpointSlice };
    const o = ev.object as unknown as Obj;
    const md = { ...(o.metadata as Obj) };
    md.creationTimestamp = toTime(md.creationTimestamp);
    if (Array.isArray(md.managedFields))
      md.managedFields = (md.managedFields as Obj[]).map((f) => ({
        ...f,
        time: toTime(f.time),
        // FieldsV1 is its JSON text as bytes (field Raw)
        ...(f.fieldsV1 ? { fieldsV1: { Raw: Buffer.from(JSON.stringify(f.fieldsV1)) } } : {}),
      }));
    const raw = this.slice.encode(this.slice.fromObject({ ...o, metadata: md })).finish();
    const envelope = this.unknown
      .encode({ typeMeta: { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice' }, raw, contentType: '' })
      .finish();
    const body = this.watchEvent.encode({ type: ev.type, object: { raw: Buffer.concat([MAGIC, envelope]) } }).finish();
    const length = Buffer.alloc(4);
    length.writeUInt32BE(body.length);
    return Buffer.concat([length, body]);
  }

  /** A frame decoded to protobufjs's message objects (fields unset read their defaults). */
  decode(frame: Buffer): { type: string; object: protobuf.Message } {
    const ev = this.watchEvent.decode(frame.subarray(4)) as unknown as { type: string; object: { raw: Uint8Array } };
    const raw = ev.object.raw;
    if (Buffer.compare(raw.subarray(0, 4), MAGIC) !== 0) throw new Error('not a protobuf-encoded object');
    const envelope = this.unknown.decode(raw.subarray(4)) as unknown as { raw: Uint8Array };
    return { type: ev.type, object: this.slice.decode(envelope.raw) };
  }

  /**
   * A decoded slice as the informers keep it, in the JSON shape the converters read: pruned
   * first (no managedFields: lib/k8s/prune.ts drops them from JSON objects too, and here they
   * are not even copied), then only the fields set (an unset `ready` must stay unknown, not
   * false), times as RFC 3339.
   */
  toPrunedJsonShape(m: protobuf.Message): V1EndpointSlice {
    const meta = (m as unknown as { metadata?: { managedFields?: unknown[] } }).metadata;
    if (meta?.managedFields?.length) meta.managedFields = [];
    const o = this.slice.toObject(m, { longs: Number }) as Obj;
    const md = o.metadata as Obj | undefined;
    if (md?.creationTimestamp) md.creationTimestamp = fromTime(md.creationTimestamp as Time);
    return prunedObject(o as unknown as V1EndpointSlice);
  }
}

function toTime(v: unknown): Time | undefined {
  if (typeof v !== 'string') return undefined;
  return { seconds: Math.floor(Date.parse(v) / 1000), nanos: 0 };
}

function fromTime(t: Time): string {
  return new Date(Number(t.seconds) * 1000).toISOString().replace('.000Z', 'Z');
}
