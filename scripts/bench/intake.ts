// Intake cost per watch event (issue 20 item 2), on the host or in the guest: N EndpointSlice
// updates (one endpoint of a Service replaced, with a trigger-time annotation, as the churn bench
// writes them) of a table of SERVICES x ENDPOINTS, received as the daemon receives them.
//
// - "stream": the daemon's own path end to end: the fake API server (testkit/fake-apiserver.ts)
//   runs in a worker thread and streams the watch over loopback HTTP; this thread runs
//   startInformers (list, then watch: apiRequest, line split, JSON.parse, prune, the informer's
//   bookkeeping) with an EndpointSlice handler feeding an EndpointSliceTracker, taking its
//   changes every TAKE_EVERY events as the proxier's syncs would. CPU is this thread's alone
//   (process.threadCpuUsage): the server's thread is not counted; wall time is from the first
//   write to the last event handled (the server writes in batches as it goes).
// - "stream, no tracker": the same, the handler without the tracker: what the HTTP path, the
//   parse and the informer cost alone, the floor any tracker work adds to.
// - The stages, fed the very lines the server sent (its watch events as JSON lines), in this
//   thread: JSON.parse only (the in-run reference every other row is a ratio against), + prune
//   (the watch's line handler), + convertEndpointSlice, + the tracker (onUpdate, changes taken
//   every TAKE_EVERY events; a tracker loaded with the whole table first).
//
// Prints events per CPU-second and per wall second for each, the median of ROUNDS rounds (each
// round new updates), with each row's cost in "parses" (JSON.parse-only events per CPU-second /
// the row's) and the share of the stream's CPU per stage.
// Usage: node dist/scripts/bench/intake.js [SERVICES] [ENDPOINTS] [EVENTS] [ROUNDS]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { KubeConfig, type V1EndpointSlice } from '@kubernetes/client-node';
import { FakeApiServer, kubeconfigFor } from '../../testkit/fake-apiserver';
import { benchObjects, benchSlice, NODE_NAME } from './daemon-fixtures';
import { startInformers } from '../../lib/k8s/informers';
import { prunedObject } from '../../lib/k8s/prune';
import { convertEndpointSlice } from '../../lib/tracker/endpoint-slice-convert';
import { EndpointSliceTracker } from '../../lib/tracker/endpoint-slice-tracker';
import { ProtobufEvents } from './protobuf-events';
import { decodeWatchEvent } from '../../lib/k8s/protobuf';

const TAKE_EVERY = 100;
const STREAM = 'stream: HTTP -> informer -> tracker';
const WRITE_BATCH = 500;

interface ServerData {
  readonly services: number;
  readonly endpoints: number;
}
type ToServer = { go: { first: number; count: number } };
type FromServer = { url: string } | { lines: string[] };

/** The worker: the fake API server with the table's slices; writes `count` updates when told. */
async function serve(d: ServerData): Promise<void> {
  const server = new FakeApiServer({ bookmarkIntervalMs: 3_600_000 });
  for (const o of benchObjects(d.services, d.endpoints))
    if (o.kind === 'EndpointSlice' || o.kind === 'Node') server.create(o);
  const port = parentPort!;
  port.on('message', (m: ToServer) => {
    const lines: string[] = [];
    let u = m.go.first;
    const end = m.go.first + m.go.count;
    const batch = () => {
      for (const stop = Math.min(end, u + WRITE_BATCH); u < stop; u++) {
        const i = (u * 7919) % d.services;
        // change numbers past 65,535 wrap (replacementIP); the client counts every event
        const obj = server.update(benchSlice(i, d.endpoints, ((u - 1) % 65_535) + 1, new Date()));
        lines.push(`{"type":"MODIFIED","object":${JSON.stringify(obj)}}`);
      }
      if (u < end) setImmediate(batch);
      else port.postMessage({ lines } satisfies FromServer);
    };
    batch();
  });
  port.postMessage({ url: await server.listen(0) } satisfies FromServer);
}

interface Measure {
  readonly cpuMs: number;
  readonly wallMs: number;
}

const cpuNow = (): number => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};

function timed(fn: () => void): Measure {
  const c = cpuNow();
  const w = performance.now();
  fn();
  return { cpuMs: cpuNow() - c, wallMs: performance.now() - w };
}

const quiet = {
  info: () => undefined,
  warn: (m: string) => console.error(m),
  error: (m: string) => console.error(m),
  debug: () => undefined,
};

async function main(): Promise<void> {
  const services = Number(process.argv[2] ?? 10_000);
  const endpoints = Number(process.argv[3] ?? 10);
  const events = Number(process.argv[4] ?? 20_000);
  const rounds = Number(process.argv[5] ?? 3);

  const worker = new Worker(__filename, { workerData: { services, endpoints } satisfies ServerData });
  const messages: FromServer[] = [];
  let wake: (() => void) | undefined;
  worker.on('message', (m: FromServer) => {
    messages.push(m);
    wake?.();
  });
  worker.on('error', (e) => {
    console.error(e);
    process.exit(1);
  });
  const next = async <K extends 'url' | 'lines'>(key: K): Promise<Extract<FromServer, Record<K, unknown>>> => {
    for (;;) {
      const i = messages.findIndex((m) => key in m);
      if (i >= 0) return messages.splice(i, 1)[0] as Extract<FromServer, Record<K, unknown>>;
      await new Promise<void>((r) => (wake = r));
    }
  };
  const { url } = await next('url');

  // the daemon's path: informers -> tracker
  const kc = new KubeConfig();
  kc.loadFromString(kubeconfigFor(url));
  const tracker = new EndpointSliceTracker(NODE_NAME);
  let seen = 0;
  let sink = 0;
  /** the floor rounds: the same stream and handler, no tracker */
  let floor = false;
  const none: ReadonlySet<string> = new Set();
  let target = Infinity;
  let onTarget: (() => void) | undefined;
  let synced: () => void = () => undefined;
  const listed = new Promise<void>((r) => (synced = r));
  const triggers: number[] = [];
  const handled = (s: V1EndpointSlice, n: ReadonlySet<string>) => {
    // proxier-wiring.ts's trigger(): the trigger time parsed and noted
    const at = Date.parse(s.metadata?.annotations?.['endpoints.kubernetes.io/last-change-trigger-time'] ?? '');
    if (Number.isFinite(at)) triggers.push(at);
    sink += n.size;
    if (++seen % TAKE_EVERY === 0) {
      tracker.takeChanges();
      triggers.length = 0;
    }
    if (seen >= target) onTarget?.();
  };
  const informers = startInformers(kc, {
    nodeName: NODE_NAME,
    log: quiet,
    handlers: {
      endpointSlice: {
        onEndpointSliceAdd: (s) => handled(s, tracker.onAdd(s)),
        onEndpointSliceUpdate: (o, s) => handled(s, floor ? none : tracker.onUpdate(o, s)),
        onEndpointSliceDelete: (s) => handled(s, tracker.onDelete(s)),
        onEndpointSlicesSynced: () => synced(),
      },
    },
  });
  await listed;
  tracker.takeChanges();

  // the stages' own tracker, loaded with the table
  const stageTracker = new EndpointSliceTracker(NODE_NAME);
  for (let i = 0; i < services; i++)
    stageTracker.onAdd(JSON.parse(JSON.stringify(benchSlice(i, endpoints))) as V1EndpointSlice);
  stageTracker.takeChanges();

  const rows = new Map<string, Measure[]>();
  const note = (label: string, m: Measure) => rows.set(label, [...(rows.get(label) ?? []), m]);
  let lastLines: string[] = [];
  for (let round = 0; round < rounds; round++) {
    const stream = async (label: string, first: number): Promise<string[]> => {
      seen = 0;
      target = events;
      const done = new Promise<void>((r) => (onTarget = r));
      const c0 = cpuNow();
      const w0 = performance.now();
      worker.postMessage({ go: { first, count: events } } satisfies ToServer);
      await done;
      note(label, { cpuMs: cpuNow() - c0, wallMs: performance.now() - w0 });
      return (await next('lines')).lines;
    };
    const lines = await stream(STREAM, 1 + 2 * round * events);
    floor = true;
    await stream('stream, no tracker (the floor)', 1 + (2 * round + 1) * events);
    floor = false;
    if (lines.length !== events) throw new Error(`server sent ${lines.length} lines, expected ${events}`);
    lastLines = lines;

    note(
      'JSON.parse',
      timed(() => {
        for (const l of lines) sink += (JSON.parse(l) as { type: string }).type.length;
      }),
    );
    note(
      '+ prune',
      timed(() => {
        for (const l of lines)
          sink += prunedObject((JSON.parse(l) as { object: V1EndpointSlice }).object).metadata!.name!.length;
      }),
    );
    note(
      '+ convertEndpointSlice',
      timed(() => {
        for (const l of lines)
          sink += convertEndpointSlice(prunedObject((JSON.parse(l) as { object: V1EndpointSlice }).object), NODE_NAME)
            .endpoints.length;
      }),
    );
    note(
      '+ tracker (onUpdate, take per 100)',
      timed(() => {
        let k = 0;
        for (const l of lines) {
          const s = prunedObject((JSON.parse(l) as { object: V1EndpointSlice }).object);
          sink += stageTracker.onUpdate(s, s).size;
          if (++k % TAKE_EVERY === 0) stageTracker.takeChanges();
        }
      }),
    );
  }
  if (sink < 0) console.log(sink);
  await informers.stop();
  await worker.terminate();

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const perCpu = (ms: Measure[]) => median(ms.map((m) => events / (m.cpuMs / 1000)));
  const perWall = (ms: Measure[]) => median(ms.map((m) => events / (m.wallMs / 1000)));
  const parse = perCpu(rows.get('JSON.parse')!);
  const stream = perCpu(rows.get(STREAM)!);
  console.log(
    `\nintake per EndpointSlice watch event (${process.env.BENCH_WHERE ?? 'host'}): ${services} Services x ${endpoints} endpoints, ${events} updates per round, median of ${rounds} rounds; CPU of this thread only\n`,
  );
  const w = Math.max(...[...rows.keys()].map((l) => l.length));
  console.log(
    `${'stage'.padEnd(w)}  ${'events/CPU-s'.padStart(12)}  ${'events/wall-s'.padStart(13)}  ${'µs CPU/event'.padStart(12)}  ${'in parses'.padStart(9)}  ${'of stream'.padStart(9)}`,
  );
  console.log('-'.repeat(w + 66));
  for (const [label, ms] of rows) {
    const r = perCpu(ms);
    console.log(
      `${label.padEnd(w)}  ${r.toFixed(0).padStart(12)}  ${perWall(ms).toFixed(0).padStart(13)}  ${(1e6 / r).toFixed(1).padStart(12)}  ${`${(parse / r).toFixed(2)}x`.padStart(9)}  ${`${((100 * stream) / r).toFixed(0)}%`.padStart(9)}`,
    );
  }
  console.log(
    `\n(in parses: the row's CPU per event over JSON.parse's of the same lines, this run; of stream: the row's CPU per event as a share of the stream's)`,
  );
  if (process.env.BENCH_INTAKE_PROTOBUF !== '0') jsonOrProtobuf(lastLines, rounds);
}

/**
 * The manager entry kube-apiserver keeps on an EndpointSlice the EndpointSlice controller
 * writes (an Update: endpoints and ports are atomic lists, so one key each). The fake API
 * server keeps none; the real one sends it with every event, in either encoding.
 */
function withManagedFields(line: string): string {
  const ev = JSON.parse(line) as { type: string; object: V1EndpointSlice };
  ev.object.metadata!.managedFields = [
    {
      manager: 'kube-controller-manager',
      operation: 'Update',
      apiVersion: 'discovery.k8s.io/v1',
      time: new Date(0).toISOString().replace('.000Z', 'Z') as unknown as Date,
      fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:addressType': {},
        'f:endpoints': {},
        'f:metadata': {
          'f:annotations': { '.': {}, 'f:endpoints.kubernetes.io/last-change-trigger-time': {} },
          'f:labels': { '.': {}, 'f:kubernetes.io/service-name': {} },
        },
        'f:ports': {},
      },
    },
  ];
  return JSON.stringify(ev);
}

/**
 * The same watch events as JSON lines and as protobuf frames (issue 28): bytes per event and
 * CPU per event of each decoding, up to the tracker's input (prune and convertEndpointSlice),
 * as the fake server sends them and with the managedFields entry the real server adds.
 */
function jsonOrProtobuf(fakeLines: readonly string[], rounds: number): void {
  const pb = new ProtobufEvents();
  let sink = 0;
  const variants = [
    { name: 'as the fake sends them', lines: fakeLines },
    { name: 'with managedFields (as kube-apiserver)', lines: fakeLines.map(withManagedFields) },
  ].map((v) => ({ ...v, frames: v.lines.map((l) => pb.frame(l)) }));
  type Variant = (typeof variants)[number];
  const stages: [string, (v: Variant) => void][] = [
    ['JSON.parse', (v) => v.lines.forEach((l) => (sink += (JSON.parse(l) as { type: string }).type.length))],
    [
      'JSON.parse + prune',
      (v) =>
        v.lines.forEach(
          (l) => (sink += prunedObject((JSON.parse(l) as { object: V1EndpointSlice }).object).metadata!.name!.length),
        ),
    ],
    [
      'JSON.parse + prune + convertEndpointSlice',
      (v) =>
        v.lines.forEach(
          (l) =>
            (sink += convertEndpointSlice(
              prunedObject((JSON.parse(l) as { object: V1EndpointSlice }).object),
              NODE_NAME,
            ).endpoints.length),
        ),
    ],
    [
      'protobuf: decodeWatchEvent (JSON shape, pruned)',
      (v) => v.frames.forEach((f) => (sink += decodeWatchEvent(f.subarray(4)).type.length)),
    ],
    [
      'protobuf: decodeWatchEvent + convertEndpointSlice',
      (v) =>
        v.frames.forEach(
          (f) =>
            (sink += convertEndpointSlice(
              decodeWatchEvent(f.subarray(4)).object as unknown as V1EndpointSlice,
              NODE_NAME,
            ).endpoints.length),
        ),
    ],
  ];
  // the converter reads both the same: a frame decodes to what its line parses to
  for (const v of variants) {
    const a = convertEndpointSlice(
      prunedObject((JSON.parse(v.lines[0]!) as { object: V1EndpointSlice }).object),
      NODE_NAME,
    );
    const b = convertEndpointSlice(
      decodeWatchEvent(v.frames[0]!.subarray(4)).object as unknown as V1EndpointSlice,
      NODE_NAME,
    );
    if (JSON.stringify(a) !== JSON.stringify(b))
      throw new Error(`protobuf and JSON convert apart: ${JSON.stringify([a, b])}`);
  }
  const cpu = new Map<string, number[]>();
  for (let round = 0; round < rounds; round++)
    for (const v of variants)
      for (const [label, run] of stages) {
        const key = `${v.name}\0${label}`;
        cpu.set(key, [...(cpu.get(key) ?? []), timed(() => run(v)).cpuMs]);
      }
  if (sink < 0) console.log(sink);
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
  const n = fakeLines.length;
  console.log(
    `\nthe same ${n} events as JSON lines or protobuf frames (median of ${rounds} rounds; CPU of this thread)\n`,
  );
  const w = Math.max(...stages.map(([l]) => l.length));
  for (const v of variants) {
    const jsonBytes = v.lines.reduce((s, l) => s + l.length + 1, 0) / n;
    const pbBytes = v.frames.reduce((s, f) => s + f.length, 0) / n;
    console.log(
      `${v.name}: ${jsonBytes.toFixed(0)} bytes per event as JSON, ${pbBytes.toFixed(0)} as protobuf (${(pbBytes / jsonBytes).toFixed(2)}x)`,
    );
    const parse = median(cpu.get(`${v.name}\0JSON.parse`)!);
    console.log(`  ${'stage'.padEnd(w)}  ${'µs CPU/event'.padStart(12)}  ${'in parses'.padStart(9)}`);
    for (const [label] of stages) {
      const ms = median(cpu.get(`${v.name}\0${label}`)!);
      console.log(
        `  ${label.padEnd(w)}  ${((1000 * ms) / n).toFixed(2).padStart(12)}  ${`${(ms / parse).toFixed(2)}x`.padStart(9)}`,
      );
    }
  }
}

if (isMainThread) {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
} else {
  void serve(workerData as ServerData);
}
