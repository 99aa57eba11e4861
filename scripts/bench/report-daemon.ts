// Prints the daemon benchmark (scripts/bench/daemon-latency.ts) as tables, one row per table
// size (each size in a fresh VM boot), with the peer measured in the same boot beside ours:
// moby/ipvs's cold load (kube-proxy's library) and kube-proxy's per-sync netlink pattern
// replayed through our client.
import { readFileSync } from 'node:fs';

interface Row {
  services: number;
  endpoints: number;
  what: string;
  [k: string]: unknown;
}

const rows: Row[] = readFileSync(process.argv[2]!, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Row);
const sizes = [...new Set(rows.map((r) => `${r.services}x${r.endpoints}`))];
const of = (size: string, what: string) => rows.find((r) => `${r.services}x${r.endpoints}` === size && r.what === what);
const allOf = (size: string, what: string) =>
  rows.filter((r) => `${r.services}x${r.endpoints}` === size && r.what === what);
const num = (r: Row | undefined, k: string): number | undefined =>
  r && typeof r[k] === 'number' ? (r[k] as number) : undefined;
const s = (v: number | undefined, digits = 1) => (v === undefined ? '-' : `${v.toFixed(digits)} s`);
const ms = (v: number | undefined) => (v === undefined ? '-' : `${v.toFixed(0)} ms`);
const mb = (v: number | undefined) => (v === undefined ? '-' : `${(v / 1048576).toFixed(0)} MB`);
const n = (v: unknown) => (v === undefined || v === null ? '-' : String(v));
/** "3: 4.1-5.4 s" of a list of seconds; '-' when absent (a run from before the repeats) */
const range = (v: unknown) =>
  Array.isArray(v) && v.length > 0 ? `${v.length}: ${Math.min(...v).toFixed(1)}-${Math.max(...v).toFixed(1)} s` : '-';
const phase = (r: Row | undefined, p: string): number | undefined => {
  const v = (r?.phasesMs as Record<string, number> | undefined)?.[p];
  return v === undefined ? undefined : v / 1000;
};
const ratio = (a: number | undefined, b: number | undefined, digits = 2) =>
  a === undefined || !b ? '-' : `${(a / b).toFixed(digits)}x`;

function table(title: string, header: string[], body: string[][]): void {
  const w = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  console.log(`\n${title}\n`);
  console.log(header.map((h, i) => (i === 0 ? h.padEnd(w[i]!) : h.padStart(w[i]!))).join('  '));
  console.log('-'.repeat(w.reduce((a, b) => a + b + 2, -2)));
  for (const r of body) console.log(r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '));
}

table(
  'kube-ipvs daemon: cold start and adopt (process start -> first sync done; of it, process start -> modules loaded ("kube-ipvs starting") -> informers listed ("informers synced")), each size in a fresh VM boot; peer: kube-proxy\'s cold load through moby/ipvs (one request at a time), same boot, fresh netns',
  [
    'services x endpoints',
    'cold start',
    'loaded',
    'listed',
    'first sync',
    'writes',
    'execs',
    'moby/ipvs load',
    'start/moby',
    'sync/moby',
    'IPVS phase/moby',
    'adopt',
    'adopt sync',
    'writes',
    'reads',
    'execs',
  ],
  sizes.map((size) => {
    const c = of(size, 'cold start');
    const a = of(size, 'adopt');
    const moby = of(size, 'moby/ipvs cold load');
    return [
      size,
      c?.failed ? 'FAILED' : s(num(c, 'seconds')),
      s(num(c, 'startedSeconds')),
      s(num(c, 'listedSeconds')),
      s(num(c, 'syncSeconds')),
      n(c?.ipvsWrites),
      n(c?.execs),
      moby?.skipped ? 'not built' : s(num(moby, 'seconds')),
      ratio(num(c, 'seconds'), num(moby, 'seconds')),
      ratio(num(c, 'syncSeconds'), num(moby, 'seconds')),
      // the same work as moby's load: the first sync's IPVS writes alone (its phase time)
      ratio(phase(c, 'ipvsWrite'), num(moby, 'seconds')),
      a?.failed ? 'FAILED' : s(num(a, 'seconds')),
      s(num(a, 'syncSeconds')),
      n(a?.ipvsWrites),
      n(a?.ipvsReads),
      n(a?.execs),
    ];
  }),
);
for (const r of rows)
  if (typeof r.failed === 'string') console.log(`${r.services}x${r.endpoints} ${r.what}: the sync FAILED: ${r.failed}`);

table(
  "no-change full check (ipvs.syncPeriod; the median of several in a row, with their range) and single endpoint changes (API write -> end of the sync that applied it, one at a time); peer: kube-proxy's per-sync pattern (dump, 2 GETs + 1 dest dump per service) replayed through our client, same table",
  [
    'services x endpoints',
    'full check',
    'checks (min-max)',
    'reads',
    'writes',
    'execs',
    'peer sync',
    'peer reqs',
    'check/peer',
    'changes',
    'p50',
    'p99',
    'max',
    'writes',
    'reads',
    'execs',
    'p50/peer',
  ],
  sizes.map((size) => {
    const f = of(size, 'full check, no change');
    const e = of(size, 'event to kernel');
    const p = of(size, 'kube-proxy pattern, one change');
    const peerS = num(p, 'p50ms') === undefined ? undefined : num(p, 'p50ms')! / 1000;
    return [
      size,
      s(num(f, 'seconds')),
      range(f?.samples),
      n(f?.ipvsReads),
      n(f?.ipvsWrites),
      n(f?.execs),
      s(peerS),
      n(p?.requests),
      ratio(num(f, 'seconds'), peerS, 3),
      n(e?.changes),
      ms(num(e, 'p50ms')),
      ms(num(e, 'p99ms')),
      ms(num(e, 'maxms')),
      n(e?.ipvsWritesPerChange),
      n(e?.ipvsReadsPerChange),
      n(e?.execsPerChange),
      ratio(num(e, 'p50ms'), num(p, 'p50ms'), 4),
    ];
  }),
);

table(
  "churn: endpoint updates across random Services (lag: the daemon's kubeproxy_network_programming_duration_seconds, API write -> end of the applying sync; p99/max as histogram bucket bounds); then the kernel vs the planner's desired state from the API objects",
  [
    'services x endpoints',
    'target/s',
    'achieved/s',
    'updates',
    'lag mean',
    'p99 <=',
    'max <=',
    'syncs',
    'max batch',
    'max pending',
    'metrics late',
    'writes',
    'execs',
    'all applied',
    'matched after',
    'RSS start',
    'RSS end',
    'RSS max',
  ],
  sizes
    .flatMap((size) => allOf(size, 'churn'))
    .map((c) => {
      const size = `${c.services}x${c.endpoints}`;
      const lag = c.lag as { meanSeconds: number; p99AtMostSeconds: number; maxAtMostSeconds: number } | undefined;
      const fin = c.final as { wrong: number; virtualServers: number; draining: number } | undefined;
      return [
        size,
        n(c?.targetRate),
        num(c, 'achievedRate')?.toFixed(0) ?? '-',
        n(c?.updates),
        lag ? s(lag.meanSeconds, 2) : '-',
        lag ? s(lag.p99AtMostSeconds, 2) : '-',
        lag ? s(lag.maxAtMostSeconds, 2) : '-',
        n(c?.syncs),
        n(c?.maxBatch),
        n(c?.maxPending),
        n(c?.metricsRetries),
        n(c?.ipvsWrites),
        n(c?.execs),
        fin ? (fin.wrong === 0 ? `yes (${fin.virtualServers} VS)` : `NO: ${fin.wrong} VS differ`) : '-',
        s(num(c, 'settleSeconds')),
        mb(num(c, 'rssStart')),
        mb(num(c, 'rssEnd')),
        mb(num(c, 'rssMax')),
      ];
    }),
);

type Lag = { meanSeconds: number; p99AtMostSeconds: number; p99Seconds?: number };
const lagOf = (r: Row | undefined) => r?.lag as Lag | undefined;
/** the highest offered rate whose mean lag stayed under 1 s, or "none of R/s" */
const sustained = (segments: Row[]) => {
  const ok = segments.filter((r) => (lagOf(r)?.meanSeconds ?? Infinity) < 1).map((r) => r.targetRate as number);
  return ok.length ? `${Math.max(...ok)}/s` : `none of ${segments.map((r) => r.targetRate).join(', ')}/s`;
};
const peerLoads = sizes.map((size) => of(size, 'peer churn load')).filter(Boolean);
table(
  "churn: kube-ipvs vs kube-proxy's pattern, same boot (one segment per offered rate; lag: API write -> end of the sync that applied it; p99 as kube-proxy's histogram bucket bounds for both, the peer's exact p99 beside; the peer: kube-proxy's sync loop back to back in its own process and netns after the daemon stopped, fed the generator's change log over a pipe, peer-churn.ts)",
  [
    'services x endpoints',
    'offered/s',
    'ours mean',
    'ours p99 <=',
    'ours achieved/s',
    'peer mean',
    'peer p99 <=',
    'peer p99',
    'peer achieved/s',
    'peer/ours mean',
    'ours syncs',
    'peer syncs',
    'peer sync mean',
    'ours writes',
    'peer writes',
    'peer all applied',
  ],
  sizes.flatMap((size) => {
    const ours = allOf(size, 'churn');
    const peer = allOf(size, 'peer churn');
    const rates = [...new Set([...ours, ...peer].map((r) => r.targetRate as number))].sort((a, b) => a - b);
    return rates.map((rate) => {
      const o = ours.find((r) => r.targetRate === rate);
      const p = peer.find((r) => r.targetRate === rate);
      const ol = lagOf(o);
      const pl = lagOf(p);
      const fin = p?.final as { wrong: number } | undefined;
      return [
        size,
        String(rate),
        ol ? s(ol.meanSeconds, 2) : '-',
        ol ? s(ol.p99AtMostSeconds, 2) : '-',
        num(o, 'achievedRate')?.toFixed(0) ?? '-',
        pl ? s(pl.meanSeconds, 2) : '-',
        pl ? s(pl.p99AtMostSeconds, 2) : '-',
        pl?.p99Seconds === undefined ? '-' : s(pl.p99Seconds, 2),
        num(p, 'achievedRate')?.toFixed(0) ?? '-',
        ratio(pl?.meanSeconds, ol?.meanSeconds),
        n(o?.syncs),
        n(p?.syncs),
        ms(num(p, 'meanSyncMs')),
        n(o?.ipvsWrites),
        n(p?.ipvsWrites),
        fin ? (fin.wrong === 0 ? 'yes' : `NO: ${fin.wrong} VS differ`) : '-',
      ];
    });
  }),
);
for (const size of sizes) {
  const ours = allOf(size, 'churn');
  const peer = allOf(size, 'peer churn');
  if (ours.length + peer.length === 0) continue;
  // the peer's floor: one sync of its pattern, however few changes, walks the whole table
  const one = num(of(size, 'kube-proxy pattern, one change'), 'p50ms');
  const floor = one === undefined ? '' : ` (one sync of its pattern for one change: ${s(one / 1000, 2)})`;
  console.log(
    `${size}: highest offered rate with mean lag < 1 s: kube-ipvs ${ours.length ? sustained(ours) : '-'}, kube-proxy's pattern ${peer.length ? sustained(peer) : '-'}${floor}`,
  );
}
for (const l of peerLoads)
  console.log(
    `${l!.services}x${l!.endpoints}: the peer's table loaded in its netns in ${s(num(l, 'seconds'))} (${n(l!.ops)} ops, batched)`,
  );

// ipsets then iptables run beside ipvsRead, ipvsWrite and addresses (their own times); netfilterWait is
// what the sync then waited for them
const PHASES = [
  'node',
  'plan',
  'ipvsRead',
  'ipvsWrite',
  'addresses',
  'ipsets',
  'iptables',
  'netfilterWait',
  'healthCheck',
  'draining',
  'conntrack',
];
table(
  "where the cold-start sync and the no-change full check spend their time (the daemon's SyncResult.phasesMs, logged with every sync)",
  ['services x endpoints', 'sync', ...PHASES],
  sizes.flatMap((size) =>
    (['cold start', 'adopt', 'full check, no change'] as const).map((what) => {
      const phases = of(size, what)?.phasesMs as Record<string, number> | undefined;
      return [size, what, ...PHASES.map((p) => (phases?.[p] === undefined ? '-' : ms(phases[p])))];
    }),
  ),
);

table(
  'rolling update of a 100-endpoint Service (maxSurge 25%, maxUnavailable 25%: each step 25 pods terminating, 25 new ready; the next step the terminating ones gone); a step ends when the kernel serves exactly the ready pods',
  ['services x endpoints', 'steps', 'step max', 'total', 'writes', 'execs'],
  sizes.map((size) => {
    const r = of(size, 'rolling update');
    return [
      size,
      n(r?.steps),
      ms(r ? Math.max(...(r.stepMs as number[])) : undefined),
      ms(num(r, 'totalMs')),
      n(r?.ipvsWrites),
      n(r?.execs),
    ];
  }),
);

table(
  'memory of the daemon process: VmRSS and JS heap used (nodejs_heap_size_used_bytes) right after the cold start, after it idle for a while (settled), and after the churn (its last segment)',
  [
    'services x endpoints',
    'RSS after start',
    'heap after start',
    'settled after',
    'RSS settled',
    'heap settled',
    'RSS after churn',
    'heap after churn',
    'RSS after adopt',
  ],
  sizes.map((size) => {
    const c = of(size, 'cold start');
    const st = of(size, 'settled');
    // after the last churn segment
    const ch = allOf(size, 'churn').at(-1);
    const a = of(size, 'adopt');
    return [
      size,
      mb(num(c, 'rss')),
      mb(num(c, 'heap')),
      s(num(st, 'afterSeconds')),
      mb(num(st, 'rss')),
      mb(num(st, 'heap')),
      mb(num(ch, 'rssEnd')),
      mb(num(ch, 'heapEnd')),
      mb(num(a, 'rss')),
    ];
  }),
);
