// Prints the kube-proxy bench (scripts/bench/kube-proxy-peer.ts) as one table: a row per measure
// and size, kube-ipvs beside the real kube-proxy (IPVS mode) measured in the same boot against
// the same API server, their ratio, and the target for that ratio; with the results of
// several boots in the file (BENCH_PEER_BOOTS), the medians over them. A boot with kube-proxy in
// nftables mode as a side (kube-proxy-nft) adds its column and kube-ipvs's ratio to it, and the
// datapath rows (datapath.ts) for every side.
//
//   node dist/scripts/bench/report-kube-proxy.js RESULTS.jsonl
import { readFileSync } from 'node:fs';
import { MAPPING_KINDS, median, MemoryRollup } from './process-memory';
import type { LoggedSync } from './sync-log';

interface Row {
  services: number;
  endpoints: number;
  side?: string;
  what: string;
  [k: string]: unknown;
}

// results of several boots may be appended to one file (one `conditions` line opens each boot
// of a size): each measure is taken per boot, and the table shows the medians
const rows: Row[] = readFileSync(process.argv[2]!, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Row)
  .filter((r) => r.bench === 'kube-proxy');
const sizeOf = (r: Row) => `${r.services}x${r.endpoints}`;
const bootsSeen = new Map<string, number>();
for (const r of rows) {
  if (r.what === 'conditions') bootsSeen.set(sizeOf(r), (bootsSeen.get(sizeOf(r)) ?? 0) + 1);
  r.boot = `${sizeOf(r)}#${bootsSeen.get(sizeOf(r)) ?? 0}`;
}
const sizes = [...new Set(rows.filter((r) => r.what !== 'load').map(sizeOf))];
/** each boot of a size ("1000x10#2"), in file order */
const bootsOf = (size: string) =>
  [...new Set(rows.filter((r) => sizeOf(r) === size && r.what !== 'load').map((r) => r.boot as string))].filter((b) =>
    rows.some((r) => r.boot === b && r.side !== undefined),
  );
/** one boot's rows of a side and kind ("z" is a boot key) */
const pick = (boot: string, side: string, what: string) =>
  rows.filter((r) => r.boot === boot && r.side === side && r.what === what);
const num = (r: Row | undefined, k: string): number | undefined =>
  r && typeof r[k] === 'number' ? (r[k] as number) : undefined;

const heapAfterChurn = (size: string, side: string) =>
  (pick(size, side, 'after churn, settled')[0] ?? pick(size, side, 'after churn')[0])?.heap as
    Record<string, number> | undefined;
const heapOf = (size: string, side: string, v8: string, go: string): number | undefined => {
  const h = heapAfterChurn(size, side);
  return h?.[v8] ?? h?.[go];
};

type Fmt = (v: number) => string;
const sec: Fmt = (v) => `${v.toFixed(v < 10 ? 2 : 1)} s`;
const ms: Fmt = (v) => `${v.toFixed(0)} ms`;
const mb: Fmt = (v) => `${(v / 1048576).toFixed(0)} MB`;
const perS: Fmt = (v) => `${v.toFixed(0)}/s`;
const cpu: Fmt = (v) => `${v.toFixed(2)} s`;
const ms1: Fmt = (v) => `${v.toFixed(1)} ms`;

/** One measure: each side's value, how to print it, and the most kube-ipvs/kube-proxy the issue allows (undefined: no target). */
interface Measure {
  readonly name: string;
  readonly value: (size: string, side: string) => number | undefined;
  readonly fmt: Fmt;
  readonly target?: (size: string) => number | undefined;
}

/** kube-ipvs's full syncs in the idle window (kube-proxy-peer.ts syncsIn); undefined for kube-proxy */
const fullIdleSyncs = (z: string, s: string) =>
  (pick(z, s, 'idle')[0]?.idleSyncs as LoggedSync[] | undefined)?.filter((x) => x.full);
const mean = (xs: number[] | undefined) =>
  xs && xs.length > 0 ? xs.reduce((a, b) => a + b, 0) / xs.length : undefined;
const half = () => 0.5;
const one = () => 1;
type Kinds = Record<string, MemoryRollup>;
/** the three moments memory is read at (kube-proxy-peer.ts): smaps_rollup and the breakdown by kind of mapping */
const MOMENTS: {
  label: string;
  rollup: (z: string, s: string) => MemoryRollup | undefined;
  kinds: (z: string, s: string) => Kinds | undefined;
}[] = [
  {
    label: 'after start',
    rollup: (z, s) => pick(z, s, 'idle')[0]?.rollupAfterStart as MemoryRollup | undefined,
    kinds: (z, s) => pick(z, s, 'idle')[0]?.kindsAfterStart as Kinds | undefined,
  },
  {
    label: 'after start, then idle',
    rollup: (z, s) => pick(z, s, 'idle')[0]?.rollupIdle as MemoryRollup | undefined,
    kinds: (z, s) => pick(z, s, 'idle')[0]?.kindsIdle as Kinds | undefined,
  },
  {
    label: 'after churn, settled',
    rollup: (z, s) => pick(z, s, 'after churn, settled')[0]?.rollup as MemoryRollup | undefined,
    kinds: (z, s) => pick(z, s, 'after churn, settled')[0]?.kinds as Kinds | undefined,
  },
];
const churnOf = (size: string, side: string, rate: number) =>
  pick(size, side, 'churn').find((r) => r.targetRate === rate);
const rates = [...new Set(rows.filter((r) => r.what === 'churn').map((r) => r.targetRate as number))].sort(
  (a, b) => a - b,
);
const lag = (r: Row | undefined) =>
  r?.lag as { count: number; meanSeconds: number; p99AtMostSeconds: number } | undefined;

const measures: Measure[] = [
  {
    name: 'first sync (process start -> end of first full sync), median',
    fmt: sec,
    target: half,
    value: (z, s) => median(pick(z, s, 'first sync').map((r) => r.seconds as number)),
  },
  {
    name: 'one change: API write -> new real server in the kernel, median',
    fmt: ms,
    target: half,
    value: (z, s) => num(pick(z, s, 'one change')[0], 'medianMs'),
  },
  {
    name: 'one change: own network_programming_duration, median',
    fmt: ms,
    value: (z, s) => num(pick(z, s, 'one change')[0], 'ownMedianMs'),
  },
  ...rates.flatMap((rate): Measure[] => [
    {
      name: `churn ${rate}/s offered: lag mean (own network_programming_duration)`,
      fmt: sec,
      target: half,
      value: (z, s) => lag(churnOf(z, s, rate))?.meanSeconds,
    },
    {
      name: `churn ${rate}/s offered: lag p99 <= (histogram bucket)`,
      fmt: sec,
      value: (z, s) => lag(churnOf(z, s, rate))?.p99AtMostSeconds,
    },
    {
      name: `churn ${rate}/s offered: last write -> kernel`,
      fmt: sec,
      value: (z, s) => num(churnOf(z, s, rate), 'lastToKernelSeconds'),
    },
    {
      name: `churn ${rate}/s offered: writes the API server took`,
      fmt: perS,
      value: (z, s) => num(churnOf(z, s, rate), 'achievedRate'),
    },
    {
      name: `churn ${rate}/s offered: main thread's longest stall (event loop)`,
      fmt: sec,
      value: (z, s) => num(churnOf(z, s, rate), 'eventLoopLagMaxSeconds'),
    },
  ]),
  {
    name: 'idle CPU per minute (utime+stime)',
    fmt: cpu,
    target: half,
    value: (z, s) => num(pick(z, s, 'idle')[0], 'cpuPerMinute'),
  },
  {
    name: 'idle CPU per minute, of it system (the kernel building its dumps)',
    fmt: cpu,
    value: (z, s) => num(pick(z, s, 'idle')[0], 'cpuSystemPerMinute'),
  },
  {
    name: 'idle CPU per minute, with reaped children (ipset, iptables)',
    fmt: cpu,
    value: (z, s) => num(pick(z, s, 'idle')[0], 'cpuWithChildrenPerMinute'),
  },
  {
    name: 'idle: full syncs in the window (kube-ipvs: each re-reads the kernel, ipvs.syncPeriod)',
    fmt: (v) => v.toFixed(0),
    value: (z, s) => fullIdleSyncs(z, s)?.length,
  },
  {
    name: 'idle: a full sync, mean duration',
    fmt: ms,
    value: (z, s) => mean(fullIdleSyncs(z, s)?.map((x) => x.durationMs)),
  },
  {
    name: 'after an API server restart: a change -> new real server in the kernel',
    fmt: ms,
    value: (z, s) => num(pick(z, s, 'apiserver restart')[0], 'kernelMs'),
  },
  {
    name: 'RSS after start',
    fmt: mb,
    target: one,
    value: (z, s) => num(pick(z, s, 'idle')[0], 'rssAfterStart'),
  },
  {
    // the same process at the end of the idle window (settle + idle, no change meanwhile)
    name: 'RSS after start, then idle (settle + idle window)',
    fmt: mb,
    target: one,
    value: (z, s) => num(pick(z, s, 'idle')[0], 'rssIdle'),
  },
  {
    name: 'RSS at the end of the churn (its last sync)',
    fmt: mb,
    value: (z, s) => num(pick(z, s, 'after churn')[0], 'rss'),
  },
  {
    name: 'RSS after churn, after the settle time',
    fmt: mb,
    target: one,
    value: (z, s) => num(pick(z, s, 'after churn, settled')[0], 'rss'),
  },
  ...MOMENTS.flatMap(({ label, rollup }): Measure[] => [
    { name: `PSS ${label}`, fmt: mb, value: (z, s) => rollup(z, s)?.pss },
    { name: `anonymous (smaps_rollup) ${label}`, fmt: mb, value: (z, s) => rollup(z, s)?.anon },
  ]),
  {
    // V8's heapUsed counts garbage not yet collected too; Go's heap_inuse counts spans in use
    name: 'after churn, settled: heap in use (V8 used / Go heap_inuse)',
    fmt: mb,
    value: (z, s) => heapOf(z, s, 'heapUsed', 'goHeapInuse'),
  },
  {
    name: 'after churn, settled: heap held from the OS (V8 committed / Go heap_sys - released)',
    fmt: mb,
    value: (z, s) => {
      const h = heapAfterChurn(z, s);
      if (!h) return undefined;
      if (h.heapTotal !== undefined) return h.heapTotal;
      return h.goHeapInuse !== undefined && h.goHeapIdle !== undefined && h.goHeapReleased !== undefined
        ? h.goHeapInuse + h.goHeapIdle - h.goHeapReleased
        : undefined;
    },
  },
  {
    name: 'after churn, settled: outside the heap (V8 external: Buffers)',
    fmt: mb,
    value: (z, s) => heapAfterChurn(z, s)?.external,
  },
  ...datapathMeasures(),
];

/** The datapath rows (datapath.ts): the same client through each side's ClusterIP. */
function datapathMeasures(): Measure[] {
  const dp = (z: string, s: string, k: string) => num(pick(z, s, 'datapath')[0], k);
  return [
    { name: 'datapath: new TCP connections/s through a ClusterIP', fmt: perS, value: (z, s) => dp(z, s, 'perSecond') },
    { name: 'datapath: connect latency p50', fmt: ms1, value: (z, s) => dp(z, s, 'connectP50Ms') },
    { name: 'datapath: connect latency p99', fmt: ms1, value: (z, s) => dp(z, s, 'connectP99Ms') },
  ];
}
/** kube-proxy in nftables mode (kube-proxy-peer.ts's third side), when a boot ran it */
const NFT = 'kube-proxy-nft';
const withNft = rows.some((r) => r.side === NFT);

const header = ['services x endpoints', 'measure', 'kube-ipvs', 'kube-proxy', 'ratio', 'of boots', 'target', 'met'];
if (withNft) header.push('kube-proxy nft', 'ratio to nft');
const body: string[][] = [];
const defined = (xs: (number | undefined)[]): number[] => xs.filter((x): x is number => x !== undefined);
for (const size of sizes) {
  const boots = bootsOf(size);
  for (const m of measures) {
    // medians over the boots; the ratio is the median of each boot's own ratio (the sides of one
    // boot share its host load), with their range when there are several
    const ours = median(defined(boots.map((b) => m.value(b, 'kube-ipvs'))));
    const theirs = median(defined(boots.map((b) => m.value(b, 'kube-proxy'))));
    const nft = withNft ? median(defined(boots.map((b) => m.value(b, NFT)))) : undefined;
    if (ours === undefined && theirs === undefined && nft === undefined) continue;
    const ratios = defined(
      boots.map((b) => {
        const o = m.value(b, 'kube-ipvs');
        const t = m.value(b, 'kube-proxy');
        return o !== undefined && t ? o / t : undefined;
      }),
    );
    const ratio = median(ratios);
    const target = m.target?.(size);
    const range = ratios.length > 1 ? ` (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})` : '';
    body.push([
      size,
      m.name,
      ours === undefined ? '-' : m.fmt(ours),
      theirs === undefined ? '-' : m.fmt(theirs),
      ratio === undefined ? '-' : `${ratio.toFixed(2)}x${range}`,
      String(ratios.length || defined(boots.map((b) => m.value(b, 'kube-ipvs'))).length),
      target === undefined ? '' : `<= ${target}x`,
      target === undefined || ratio === undefined ? '' : ratio <= target ? 'yes' : 'NO',
      ...(withNft ? nftCells(boots, m, nft) : []),
    ]);
  }
}
/** the nftables-mode side's value and kube-ipvs's ratio to it (the median of each boot's) */
function nftCells(boots: readonly string[], m: Measure, nft: number | undefined): string[] {
  const ratios = defined(
    boots.map((b) => {
      const o = m.value(b, 'kube-ipvs');
      const t = m.value(b, NFT);
      return o !== undefined && t ? o / t : undefined;
    }),
  );
  const ratio = median(ratios);
  const range = ratios.length > 1 ? ` (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})` : '';
  return [nft === undefined ? '-' : m.fmt(nft), ratio === undefined ? '-' : `${ratio.toFixed(2)}x${range}`];
}
const w = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
const line = (r: string[]) => r.map((c, i) => (i <= 1 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ');
console.log(
  "\nkube-ipvs vs the real kube-proxy --proxy-mode=ipvs: per VM boot, one side after the other, each in a network namespace of its own, same objects and the same real kube-apiserver (the lab); medians over the boots, the ratio the median of each boot's ratio (range in brackets)\n",
);
console.log(line(header));
console.log('-'.repeat(w.reduce((a, b) => a + b + 2, -2)));
for (const r of body) console.log(line(r));

/** Prints `body` under `header`, the first `left` columns left-aligned. */
function table(title: string, head: string[], rowsOut: string[][], left: number): void {
  if (!rowsOut.length) return;
  const cw = head.map((h, i) => Math.max(h.length, ...rowsOut.map((r) => r[i]!.length)));
  const cl = (r: string[]) => r.map((c, i) => (i < left ? c.padEnd(cw[i]!) : c.padStart(cw[i]!))).join('  ');
  console.log(`\n${title}\n`);
  console.log(cl(head));
  console.log('-'.repeat(cw.reduce((a, b) => a + b + 2, -2)));
  for (const r of rowsOut) console.log(cl(r));
}

// where each side's resident memory is (/proc/PID/smaps by kind of mapping), medians over the boots
const kindRows: string[][] = [];
const mbOrDash = (v: number | undefined) => (v === undefined ? '-' : `${(v / 1048576).toFixed(1)} MB`);
for (const size of sizes) {
  for (const moment of MOMENTS) {
    const per = (side: string, kind: string, k: keyof MemoryRollup) =>
      median(defined(bootsOf(size).map((b) => moment.kinds(b, side)?.[kind]?.[k])));
    if (per('kube-ipvs', 'executable', 'rss') === undefined && per('kube-proxy', 'executable', 'rss') === undefined)
      continue;
    for (const kind of [...MAPPING_KINDS, 'total']) {
      const get = (side: string, k: keyof MemoryRollup) =>
        kind === 'total'
          ? median(
              defined(
                bootsOf(size).map((b) => {
                  const all = moment.kinds(b, side);
                  return all ? Object.values(all).reduce((a, x) => a + x[k], 0) : undefined;
                }),
              ),
            )
          : per(side, kind, k);
      kindRows.push([
        size,
        moment.label,
        kind,
        ...(['kube-ipvs', 'kube-proxy'] as const).flatMap((side) =>
          (['rss', 'pss', 'anon'] as const).map((k) => mbOrDash(get(side, k))),
        ),
      ]);
    }
  }
}
table(
  'resident memory by kind of mapping (/proc/PID/smaps; medians over the boots): RSS, PSS and the anonymous part of each',
  ['services x endpoints', 'moment', 'mapping', 'kube-ipvs RSS', 'PSS', 'anon', 'kube-proxy RSS', 'PSS', 'anon'],
  kindRows,
  3,
);

// kube-ipvs's variants (BENCH_PEER_VARIANTS) against the default kube-ipvs of the same boot
const variantNames = [
  ...new Set(rows.map((r) => r.side).filter((s): s is string => !!s && s.startsWith('kube-ipvs+'))),
];
const variantMeasures = measures.filter((m) =>
  /^(first sync|one change: API|churn .*lag mean|churn .*longest stall|idle CPU per minute \(|RSS|PSS|anonymous)/.test(
    m.name,
  ),
);
const variantRows: string[][] = [];
for (const size of sizes) {
  const boots = bootsOf(size);
  for (const v of variantNames) {
    const spec = rows.find((r) => r.what === 'conditions' && (r.variants as Record<string, unknown> | undefined)?.[v])
      ?.variants as Record<string, { flags: string[]; env: Record<string, string> }> | undefined;
    const how = spec?.[v]
      ? [...spec[v].flags, ...Object.entries(spec[v].env).map(([k, x]) => `${k}=${x}`)].join(' ')
      : v;
    for (const m of variantMeasures) {
      const theirs = median(defined(boots.map((b) => m.value(b, v))));
      const ours = median(defined(boots.map((b) => m.value(b, 'kube-ipvs'))));
      if (theirs === undefined) continue;
      const ratios = defined(
        boots.map((b) => {
          const o = m.value(b, v);
          const d = m.value(b, 'kube-ipvs');
          return o !== undefined && d ? o / d : undefined;
        }),
      );
      const ratio = median(ratios);
      const kp = median(defined(boots.map((b) => m.value(b, 'kube-proxy'))));
      variantRows.push([
        size,
        how,
        m.name,
        ours === undefined ? '-' : m.fmt(ours),
        m.fmt(theirs),
        ratio === undefined ? '-' : `${ratio.toFixed(2)}x`,
        kp === undefined ? '-' : `${(theirs / kp).toFixed(2)}x`,
      ]);
    }
  }
}
table(
  "kube-ipvs's variants (BENCH_PEER_VARIANTS: node flags or environment) against the default kube-ipvs of the same boot",
  ['services x endpoints', 'variant', 'measure', 'default', 'variant', 'variant/default', 'variant/kube-proxy'],
  variantRows,
  3,
);

// where kube-ipvs's idle CPU went: its periodic full syncs' phases (mean ms per boot)
for (const size of sizes.flatMap(bootsOf)) {
  const full = fullIdleSyncs(size, 'kube-ipvs');
  if (!full?.length) continue;
  const phases = [...new Set(full.flatMap((x) => Object.keys(x.phasesMs)))];
  const perPhase = phases
    .map((ph) => [ph, mean(full.map((x) => x.phasesMs[ph] ?? 0))!] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([ph, v]) => `${ph} ${v.toFixed(0)}`);
  console.log(
    `${size}, kube-ipvs's ${full.length} full syncs in the idle window, mean ms per phase: ${perPhase.join(', ')}`,
  );
}

// what bounded the churn's writes (lab-writer.ts, on the host): the cap of writes in flight, the
// API server's answer time, and the kube-apiserver's, etcd's and the writer's CPU on the host
const f2 = (v: unknown) => (typeof v === 'number' ? v.toFixed(2) : '-');
for (const size of sizes.flatMap(bootsOf)) {
  for (const side of ['kube-ipvs', 'kube-proxy', NFT]) {
    const segs = pick(size, side, 'churn');
    if (!segs.length) continue;
    console.log(`${size}, beside ${side}, churn writes from the host:`);
    for (const r of segs) {
      console.log(
        `  ${r.targetRate}/s offered: ${(r.achievedRate as number).toFixed(0)}/s taken (${r.ok} ok, ${r.failed} failed, ${r.notSent} not sent), ` +
          `${r.writers} in flight at ${((r.capShare as number) * 100).toFixed(0)}% of ticks, answered in ${(r.writeMeanMs as number).toFixed(0)} ms mean; ` +
          `CPU s/s: kube-apiserver ${f2(r.apiserverCpu)}, etcd ${f2(r.etcdCpu)}, writer ${f2(r.writerCpu)}; host ${r.hostCpus} CPUs, load ${f2(r.hostLoad)}`,
      );
    }
  }
}
// what each side cost the API server (api-cost.ts), per phase: the kept start, the idle window,
// and the churn per 1,000 writes it applied
const kb = (v: number) => `${(v / 1024).toFixed(0)} KB`;
const apiHeader = [
  'services x endpoints',
  'phase',
  'side',
  'requests',
  'by verb',
  'connections',
  'list/get bytes',
  'watch event bytes',
];
const apiBody: string[][] = [];
for (const size of sizes.flatMap(bootsOf)) {
  for (const phase of ['start', 'idle', 'churn', 'apiserver restart']) {
    // the restart's baseline: the same restart with no proxy (its bytes are the server's own)
    for (const side of phase === 'apiserver restart'
      ? ['no proxy', 'kube-ipvs', 'kube-proxy', NFT]
      : ['kube-ipvs', 'kube-proxy', NFT]) {
      const all =
        side === 'no proxy'
          ? rows.filter((r) => r.boot === size && r.what === 'api' && r.phase === 'apiserver restart, no proxy')
          : pick(size, side, 'api').filter((r) => r.phase === phase);
      const r = all[all.length - 1]; // the kept start
      if (!r) continue;
      const per = phase === 'churn' && (r.writes as number) > 0 ? 1000 / (r.writes as number) : 1;
      const label =
        phase === 'churn'
          ? 'churn, per 1,000 writes'
          : phase === 'idle'
            ? `idle ${(r.seconds as number).toFixed(0)} s`
            : phase === 'apiserver restart'
              ? `API server restart, ${(r.seconds as number).toFixed(0)} s`
              : 'start to first sync';
      const verbs = Object.entries(r.requests as Record<string, number>)
        .sort()
        .map(([v, n]) => `${v} ${(n * per).toFixed(phase === 'churn' ? 1 : 0)}`)
        .join(', ');
      apiBody.push([
        size,
        label,
        side,
        ((r.requestsTotal as number) * per).toFixed(phase === 'churn' ? 1 : 0),
        verbs || '-',
        ((r.connections as number) * per).toFixed(phase === 'churn' ? 1 : 0),
        kb((r.listBytes as number) * per),
        kb((r.watchEventBytes as number) * per),
      ]);
    }
  }
}
if (apiBody.length) {
  const aw = apiHeader.map((h, i) => Math.max(h.length, ...apiBody.map((r) => r[i]!.length)));
  const aline = (r: string[]) =>
    r.map((c, i) => (i <= 2 || i === 4 ? c.padEnd(aw[i]!) : c.padStart(aw[i]!))).join('  ');
  console.log(
    "\nwhat each side cost the API server (audit log by User-Agent; TCP connections = SYNs from its namespace; bytes server-wide, from kube-apiserver's metrics)\n",
  );
  console.log(aline(apiHeader));
  console.log('-'.repeat(aw.reduce((a, b) => a + b + 2, -2)));
  for (const r of apiBody) console.log(aline(r));
}
for (const l of rows.filter((r) => r.what === 'load')) {
  console.log(
    `${l.services}x${l.endpoints} load on the host: ${l.created} created, ${l.deleted} deleted, ${l.resized} rewritten in ${(l.seconds as number).toFixed(1)} s (${(l.perSecond as number).toFixed(0)} writes/s)`,
  );
}
