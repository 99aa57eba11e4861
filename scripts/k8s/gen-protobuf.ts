// Generates lib/k8s/k8s-api-protobuf.json: the protobuf descriptor of the API types the
// daemon lists and watches (Service, EndpointSlice, Node, their lists, WatchEvent, Status and
// the serializer's runtime.Unknown envelope), taken from the API's own .proto files
// (k8s.io/api and k8s.io/apimachinery at the version scripts/k8s/go.mod pins, in the Go
// module cache scripts/k8s/build.sh fills) and pruned to the types those reach. protobufjs
// builds its decoders from it at run time (lib/k8s/protobuf.ts); no wire code is written by
// hand. Run after changing the pin: node dist/scripts/k8s/gen-protobuf.js [--check]
// (--check: exit 1 when the committed file differs from what the .proto files give).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import protobuf from 'protobufjs';

const ROOT = path.join(__dirname, '..', '..', '..');
const OUT = path.join(ROOT, 'lib', 'k8s', 'k8s-api-protobuf.json');
/** the Go module cache scripts/k8s/build.sh used (outside the clone), as it wrote it down */
const goModCache = () => readFileSync(path.join(ROOT, '.k8s', 'bin', 'GOMODCACHE'), 'utf8').trim();

/** The message types the daemon decodes; everything they reach comes along. */
export const ROOT_TYPES: readonly string[] = [
  'k8s.io.api.core.v1.Service',
  'k8s.io.api.core.v1.ServiceList',
  'k8s.io.api.core.v1.Node',
  'k8s.io.api.core.v1.NodeList',
  'k8s.io.api.discovery.v1.EndpointSlice',
  'k8s.io.api.discovery.v1.EndpointSliceList',
  'k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Status',
  'k8s.io.apimachinery.pkg.runtime.Unknown',
];

/** k8s.io/api's version in scripts/k8s/go.mod (apimachinery's is the same). */
export function pinnedApiVersion(): string {
  const mod = readFileSync(path.join(ROOT, 'scripts', 'k8s', 'go.mod'), 'utf8');
  const m = /^\s*k8s\.io\/api (v\S+)/m.exec(mod);
  if (!m) throw new Error('scripts/k8s/go.mod names no k8s.io/api version');
  return m[1]!;
}

/** The .proto files of the pinned version, loaded and resolved (imports named as in the Go tree). */
export function loadApiProtos(version = pinnedApiVersion()): protobuf.Root {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => {
    const m = /^k8s\.io\/(api|apimachinery)\/(.*)$/.exec(target);
    return m ? path.join(goModCache(), 'k8s.io', `${m[1]}@${version}`, m[2]!) : target;
  };
  root.loadSync(
    [
      'k8s.io/api/core/v1/generated.proto',
      'k8s.io/api/discovery/v1/generated.proto',
      'k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto',
      'k8s.io/apimachinery/pkg/runtime/generated.proto',
    ],
    { keepCase: true },
  );
  root.resolveAll();
  return root;
}

type Nested = { nested?: Record<string, Nested>; fields?: unknown };

/** The descriptor of `types` and every message type their fields reach, as protobufjs's JSON. */
export function prunedDescriptor(root: protobuf.Root, types: readonly string[]): Nested {
  const keep = new Map<string, protobuf.Type>();
  const visit = (t: protobuf.Type) => {
    const name = t.fullName.slice(1);
    if (keep.has(name)) return;
    keep.set(name, t);
    for (const f of t.fieldsArray) if (f.resolvedType instanceof protobuf.Type) visit(f.resolvedType);
  };
  for (const name of types) visit(root.lookupType(name));
  const out: Nested = { nested: {} };
  for (const name of [...keep.keys()].sort()) {
    const parts = name.split('.');
    let at = out;
    for (const p of parts.slice(0, -1)) at = at.nested![p] ??= { nested: {} };
    const json = keep.get(name)!.toJSON({ keepComments: false }) as Nested & { nested?: unknown };
    delete json.nested; // nested types are emitted on their own when reached
    at.nested![parts[parts.length - 1]!] = json;
  }
  return out;
}

function main(): void {
  const version = pinnedApiVersion();
  const text =
    JSON.stringify(
      {
        generated: `scripts/k8s/gen-protobuf.ts from k8s.io/api and k8s.io/apimachinery ${version}; do not edit`,
        descriptor: prunedDescriptor(loadApiProtos(version), ROOT_TYPES),
      },
      null,
      1,
    ) + '\n';
  if (process.argv.includes('--check')) {
    if (readFileSync(OUT, 'utf8') !== text) {
      console.error(
        `${path.relative(ROOT, OUT)} is not what k8s.io/api ${version}'s .proto files give: run gen-protobuf`,
      );
      process.exit(1);
    }
    return;
  }
  writeFileSync(OUT, text);
  console.log(`${path.relative(ROOT, OUT)}: ${text.length} bytes from k8s.io/api ${version}`);
}

if (require.main === module) main();
