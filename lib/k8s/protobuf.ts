/**
 * Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf), what client-go asks for
 * by default and kube-proxy's clientConnection.contentType names: about half the bytes of the
 * JSON the API server would send for the same objects (scripts/bench/intake.ts).
 *
 * - An object or list is the magic "k8s\0", then a runtime.Unknown: typeMeta (apiVersion,
 *   kind), raw (the object's own message).
 * - A watch (Content-Type ...;stream=watch) is frames: a 4-byte big-endian length, then a
 *   metav1.WatchEvent whose object.raw is such an envelope.
 *
 * The decoders are protobufjs's, built from lib/k8s/k8s-api-protobuf.json, which
 * scripts/k8s/gen-protobuf.ts generates from the API's own .proto files. Decoded objects are
 * handed on in the JSON shape the converters read: times as RFC 3339, an IntOrString as a
 * number or a string, a Quantity as its string; managedFields are dropped before the copy (as
 * prune.ts drops them from JSON objects). A field the server set is kept even when it is the
 * Go zero value (the wire does not tell a nil pointer from an unset one apart otherwise: an
 * endpoint's `ready: false` must stay false).
 */
import protobuf from 'protobufjs/light';
import generated from './k8s-api-protobuf.json';
import { prunedObject } from './prune';

// int64 fields decode to numbers, as toObject's `longs: Number` returns them anyway. protobufjs
// otherwise takes the `long` package if require() finds it at run time: the repository has it,
// the bundle in the image does not, and the two would decode by different paths.
protobuf.util.Long = null as unknown as typeof protobuf.util.Long;
protobuf.configure();

/** The content type of Kubernetes' protobuf encoding. */
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

/** The serializer's prefix before a runtime.Unknown (k8s.io/apimachinery/pkg/runtime/serializer/protobuf). */
const MAGIC = [0x6b, 0x38, 0x73, 0x00];

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';

/** Whether a Content-Type header names Kubernetes' protobuf encoding (a watch's carries ;stream=watch). */
export function isProtobuf(contentType: string | null | undefined): boolean {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase() === PROTOBUF_CONTENT_TYPE;
}

/** A body or frame that is not what the API server's protobuf serializer writes. */
export class ProtobufDecodeError extends Error {
  override readonly name = 'ProtobufDecodeError';
}

type Obj = Record<string, unknown>;
type Seconds = { seconds?: number | { toNumber(): number }; nanos?: number };

const seconds = (t: Seconds): number => (typeof t.seconds === 'object' ? t.seconds.toNumber() : (t.seconds ?? 0));

/** metav1.Time as encoding/json writes it: RFC 3339 to the second. */
function rfc3339(t: Seconds): string {
  return new Date(seconds(t) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// the JSON forms of the types whose JSON is not their message's (their MarshalJSON), of those
// the descriptor reaches outside managedFields (dropped before the copy: no FieldsV1 here)
const WRAPPERS: Record<string, (m: Obj) => unknown> = {
  [`.${META}.Time`]: (m) => rfc3339(m as Seconds),
  '.k8s.io.apimachinery.pkg.util.intstr.IntOrString': (m) =>
    Number(m.type ?? 0) === 1 ? String(m.strVal ?? '') : Number(m.intVal ?? 0),
  '.k8s.io.apimachinery.pkg.api.resource.Quantity': (m) => String(m.string ?? ''),
};
for (const [name, toJson] of Object.entries(WRAPPERS))
  (protobuf.wrappers as Record<string, protobuf.IWrapper>)[name] = {
    fromObject(this: protobuf.Type, o: Obj) {
      return this.fromObject(o);
    },
    toObject(this: protobuf.Type, m: protobuf.Message) {
      return toJson(m as unknown as Obj) as Obj;
    },
  };

const root = protobuf.Root.fromJSON(generated.descriptor as protobuf.INamespace);
const unknownType = root.lookupType('k8s.io.apimachinery.pkg.runtime.Unknown');
const watchEventType = root.lookupType(`${META}.WatchEvent`);

/** The message type of each apiVersion/kind the daemon decodes. */
const KINDS: ReadonlyMap<string, protobuf.Type> = new Map(
  [
    ['v1', 'Service', 'k8s.io.api.core.v1.Service'],
    ['v1', 'ServiceList', 'k8s.io.api.core.v1.ServiceList'],
    ['v1', 'Node', 'k8s.io.api.core.v1.Node'],
    ['v1', 'NodeList', 'k8s.io.api.core.v1.NodeList'],
    ['v1', 'Status', `${META}.Status`],
    ['meta.k8s.io/v1', 'Status', `${META}.Status`],
    ['discovery.k8s.io/v1', 'EndpointSlice', 'k8s.io.api.discovery.v1.EndpointSlice'],
    ['discovery.k8s.io/v1', 'EndpointSliceList', 'k8s.io.api.discovery.v1.EndpointSliceList'],
  ].map(([apiVersion, kind, type]) => [`${apiVersion}/${kind}`, root.lookupType(type!)]),
);

const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, bytes: String };

/** Drops managedFields from an object's (or a list's items') metadata before the copy. */
function dropManagedFields(m: Obj): void {
  const md = m.metadata as { managedFields?: unknown[] } | undefined;
  if (md?.managedFields?.length) md.managedFields = [];
  if (Array.isArray(m.items)) for (const item of m.items as Obj[]) dropManagedFields(item);
}

/**
 * An object or list as the API server's protobuf serializer writes it (magic, runtime.Unknown),
 * in the JSON shape, with apiVersion and kind set; throws ProtobufDecodeError for anything else.
 */
export function decodeObject(bytes: Uint8Array): Obj {
  if (bytes.length < 4 || MAGIC.some((b, i) => bytes[i] !== b))
    throw new ProtobufDecodeError('not a Kubernetes protobuf object (no "k8s\\0" prefix)');
  let envelope: { typeMeta?: { apiVersion?: string; kind?: string }; raw?: Uint8Array };
  try {
    envelope = unknownType.decode(bytes.subarray(4)) as typeof envelope;
  } catch (e) {
    throw new ProtobufDecodeError(`runtime.Unknown: ${(e as Error).message}`);
  }
  const apiVersion = envelope.typeMeta?.apiVersion ?? '';
  const kind = envelope.typeMeta?.kind ?? '';
  const type = KINDS.get(`${apiVersion}/${kind}`);
  if (!type) throw new ProtobufDecodeError(`no protobuf decoder for ${apiVersion} ${kind}`);
  let message: protobuf.Message;
  try {
    message = type.decode(envelope.raw ?? new Uint8Array());
  } catch (e) {
    throw new ProtobufDecodeError(`${apiVersion} ${kind}: ${(e as Error).message}`);
  }
  dropManagedFields(message as unknown as Obj);
  const o = type.toObject(message, TO_OBJECT);
  // a list's items are pruned each (kubectl's last-applied copy is per object)
  if (Array.isArray(o.items)) o.items = (o.items as Obj[]).map(prunedObject);
  return prunedObject({ apiVersion, kind, ...o });
}

/** One watch event decoded: its type and object (JSON shape, pruned). */
export interface DecodedWatchEvent {
  readonly type: string;
  readonly object: Obj;
}

/** A watch frame's WatchEvent (the bytes after its length). */
export function decodeWatchEvent(frame: Uint8Array): DecodedWatchEvent {
  let ev: { type?: string; object?: { raw?: Uint8Array } };
  try {
    ev = watchEventType.decode(frame) as typeof ev;
  } catch (e) {
    throw new ProtobufDecodeError(`WatchEvent: ${(e as Error).message}`);
  }
  return { type: ev.type ?? '', object: decodeObject(ev.object?.raw ?? new Uint8Array()) };
}

/**
 * The largest watch event taken, a protobuf frame (after its length) or a JSON line (before
 * its newline): 16 MiB, client-go's own (apimachinery's streaming decoder, maxBytes; past it
 * ErrObjectTooLarge ends the watch). Real events stay far below: kube-apiserver takes objects
 * of at most 3 MiB (MaxRequestBodyBytes) and etcd stores values of at most 1.5 MiB.
 */
export const WATCH_EVENT_MAX_BYTES = 16 * 2 ** 20;

/**
 * Splits a watch body into its length-delimited frames as the chunks come: push each chunk,
 * get back the frames it completed.
 */
export class WatchFrames {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  push(chunk: Uint8Array): Uint8Array[] {
    this.pending.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    this.pendingBytes += chunk.byteLength;
    const frames: Uint8Array[] = [];
    while (this.pendingBytes >= 4) {
      // chunks are joined only once a frame is whole (or its length prefix is split): a large
      // frame arriving in many chunks is copied once, not once per chunk
      if (this.pending[0]!.length < 4) this.join();
      const length = this.pending[0]!.readUInt32BE(0);
      // refused on its length alone: nothing of it is buffered
      if (length > WATCH_EVENT_MAX_BYTES)
        throw new ProtobufDecodeError(
          `a watch frame of ${length} bytes, more than the ${WATCH_EVENT_MAX_BYTES} an event may have`,
        );
      if (this.pendingBytes < 4 + length) break;
      this.join();
      const buf = this.pending[0]!;
      frames.push(buf.subarray(4, 4 + length));
      const rest = buf.subarray(4 + length);
      this.pending = rest.length > 0 ? [rest] : [];
      this.pendingBytes = rest.length;
    }
    return frames;
  }

  /** Bytes of an unfinished frame left at the end. */
  get leftover(): number {
    return this.pendingBytes;
  }

  private join(): void {
    if (this.pending.length > 1) this.pending = [Buffer.concat(this.pending, this.pendingBytes)];
  }
}
