// The intake bench's protobuf frames (issue 28): the same EndpointSlice watch events as
// kube-apiserver sends them to a client that asks for application/vnd.kubernetes.protobuf
// (client-go's default for built-in types, kube-proxy's). Encoded with protobufjs from the
// API's own .proto files (scripts/k8s/gen-protobuf.ts's loadApiProtos), apart from the
// daemon's decoder (lib/k8s/protobuf.ts, built from the pruned descriptor).
//
// A watch frame is what the server's length-delimited framer writes: a 4-byte big-endian
// length, then a metav1.WatchEvent whose object.raw is the serializer's envelope, the magic
// "k8s\0" and a runtime.Unknown (typeMeta, raw: the EndpointSlice's own encoding).
import type protobuf from 'protobufjs';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { loadApiProtos } from '../k8s/gen-protobuf';

/** the serializer's prefix before a runtime.Unknown (k8s.io/apimachinery/pkg/runtime/serializer/protobuf) */
const MAGIC = Buffer.from('k8s\0', 'latin1');

type Obj = Record<string, unknown>;
type Time = { seconds: number; nanos: number };

/** The EndpointSlice and envelope types, loaded from the .proto files. */
export class ProtobufEvents {
  private readonly slice: protobuf.Type;
  private readonly unknown: protobuf.Type;
  private readonly watchEvent: protobuf.Type;

  constructor() {
    const root = loadApiProtos();
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
}

function toTime(v: unknown): Time | undefined {
  if (typeof v !== 'string') return undefined;
  return { seconds: Math.floor(Date.parse(v) / 1000), nanos: 0 };
}
