// make bench, kube-ipvs against the real kube-proxy v1.37 in IPVS mode (.k8s/bin/kube-proxy, built
// by scripts/k8s/build.sh), in one VM boot per size, against the lab's real kube-apiserver + etcd
// (scripts/lab/lab.ts) holding the same objects: N selectorless Services x one EndpointSlice of E
// endpoints (lab-bench-objects.ts), loaded on the host before the boot (lab-load.ts). Each side
// runs in a network namespace of its own (a fresh one per start: its own IPVS table, ipsets,
// iptables and kube-ipvs0), routed to the lab (testkit connectToLab), with the same
// KubeProxyConfiguration (e2eProxyConfig forKubeProxy; only its metrics and healthz address,
// the side's own namespace address, differ), the same kube-proxy ServiceAccount token and the
// same node name; one side after the other, never both at once. Per side:
//  1. first sync: process start -> the end of its first full sync, BENCH_PEER_STARTS times
//     (default 3) where cheap (a side whose first start took over BENCH_PEER_CHEAP_SECONDS,
//     default 60, starts once), each in a fresh namespace. kube-ipvs: its
//     `sync done` log line (full: true), stamped when logged. kube-proxy: the value of its gauge
//     kubeproxy_sync_proxy_rules_last_timestamp_seconds, which its IPVS proxier sets to the
//     time (float seconds) at the end of a successful syncProxyRules, after the IPVS writes, the
//     iptables restore and the address cleanup, per IP family; the latest of its families, once
//     each family that queued a sync has one. Exact whatever the scrape period (the gauge holds
//     the time, not the scrape), where its only log line of a sync's end is at --v=4;
//  2. RSS after the start, then CPU over BENCH_PEER_IDLE_SECONDS (default 60) with nothing
//     changing (utime+stime of /proc/PID/stat, and with the children it reaped: ipset and
//     iptables-restore), scaled to a minute;
// Every write comes from lab-writer.ts on the host (BENCH_WRITER: its address as the guest
// reaches it), natively: from this TCG guest a write cost 50 ms of the CPUs the side under
// test uses, and the side set the rate it was offered (12/s beside kube-proxy, 44/s beside
// kube-ipvs); times are on this guest's clock (the writer is told the clocks' difference).
//  3. single endpoint changes (BENCH_PEER_CHANGES, default 10 up to 1,000 Services, else 5),
//     one at a time: a PUT of one EndpointSlice (endpoint 0 replaced, with
//     endpoints.kubernetes.io/last-change-trigger-time set to the write's start, ms precision:
//     both read it as RFC 3339 and observe kubeproxy_network_programming_duration_seconds)
//     timed from the write's start to the new real server at weight > 0 in the side's kernel
//     (ipvs-probe.ts polls that one virtual server in the side's namespace every 5 ms), with
//     the side's own histogram observation of the same change beside it;
//  4. churn: one segment of BENCH_PEER_CHURN_SECONDS (default 20) per rate in
//     BENCH_PEER_CHURN_RATES (default "100 300 1000"/s): the same fixed-seed sequence of
//     Services (churn-generator.ts) for both sides, PUTs from the writer with at most 32 in
//     flight (lab-writer.ts): the achieved rate is what the API server took, with its CPU and
//     etcd's over the segment. Lag: the side's own
//     kubeproxy_network_programming_duration_seconds over the segment (trigger time -> end of
//     the sync that applied it; mean exact, p99 as bucket bound), once it has observed every
//     write; and the last write's real server in the kernel, from that write's start;
//  5. RSS after the churn: at once, and again after BENCH_PEER_SETTLE_SECONDS, with the heap
//     and the resident mappings beside it.
// Memory at each moment (after start, after the idle window, after churn once settled) is RSS,
// and from /proc/PID/smaps_rollup PSS and the anonymous part (a binary or library other
// processes map too counts for its share only in PSS, not at all in the anonymous part), with
// RSS/PSS/anonymous per kind of mapping from /proc/PID/smaps (process-memory.ts residentMemory).
// BENCH_PEER_VARIANTS adds kube-ipvs sides that differ from the default only in node's flags
// or the environment, measured the same way in the same boot right after the default one:
// "LABEL:TOKEN TOKEN;LABEL:..." where a TOKEN starting with "--" is a node flag (after
// KUBE_IPVS_NODE_FLAGS: a later V8 flag wins), "proxy:--FLAG=VALUE" one of kube-ipvs's own
// flags (after --config: it wins over the file) and NAME=VALUE an environment variable, e.g.
// "arena2:MALLOC_ARENA_MAX=2;stgc:--single-threaded-gc"; each is the side "kube-ipvs+LABEL".
// Each phase's cost to the API server (api-cost.ts: requests by verb from the audit log, TCP
// connections opened, bytes the server sent) is recorded too: the kept start (process start ->
// first sync), the idle window (settle + idle), and the churn segments together (issue 28).
// A third side, kube-proxy-nft: the same kube-proxy in nftables mode (the mode upstream tells IPVS
// users to move to; issue 42), measured the same way: its first sync end is the same gauge, and a
// change is seen in its kernel by nft-probe.ts (the Service's chain in table ip kube-proxy naming
// the new endpoint). After the other phases, a datapath row for every side (datapath.ts,
// BENCH_PEER_DATAPATH=0 skips it): new TCP connections per second through one ClusterIP from a
// client namespace to pod namespaces, and their connect latency, the same client for all sides.
// Prints JSON lines; scripts/bench/report-kube-proxy.ts turns them into a table.
//
//   node dist/scripts/bench/kube-proxy-peer.js SERVICES ENDPOINTS   (in the VM, KUBE_IPVS_LAB
//   and BENCH_WRITER set: scripts/bench/run.sh's kube-proxy step)
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { kubeProxyIdentity, labFromEnv } from '../../testkit/lab-client';
import { tryRun } from '../../testkit/netns';
import { benchNodeNamespace, recordLine } from './bench-node';
import {
  e2eProxyConfig,
  LogLine,
  LoggedProcess,
  logLineTimeMs,
  SERVICE_ACCOUNT_DIR,
  startKubeIpvs,
  startKubeProxy,
} from '../../testkit/processes';
import { churnGen } from './churn-generator';
import { endpointIP, replacementIP } from './daemon-fixtures';
import { Agent, fetch } from 'undici';
import { labClusterIP, NODE_NAME } from './lab-bench-objects';
import type { ChurnWrites } from './lab-writer';
import {
  cpuSeconds,
  histogramDelta,
  median,
  perKeyDelta,
  heapBreakdown,
  residentMemory,
  rssBytes,
  smapsRollup,
  Scrape,
  scrape,
  sumSeries,
  threadCpuSeconds,
} from './process-memory';
import { ApiCostMeter, restartApiserver, restartBaseline } from './api-cost';
import { runDatapath } from './datapath';
import { syncsIn } from './sync-log';

/** 'kube-proxy' (IPVS mode), 'kube-proxy-nft' (nftables mode), 'kube-ipvs', or a variant of kube-ipvs: 'kube-ipvs+LABEL' (BENCH_PEER_VARIANTS) */
type Side = string;

const [servicesArg = '1000', endpointsArg = '10'] = process.argv.slice(2);
const SERVICES = Number(servicesArg);
const ENDPOINTS = Number(endpointsArg);
const env = (name: string, fallback: string) => process.env[name] || fallback;
const BASE_SIDES = env('BENCH_PEER_SIDES', 'kube-proxy kube-ipvs').split(/\s+/).filter(Boolean);
/** kube-ipvs's variants: side name -> node flags and environment (BENCH_PEER_VARIANTS) */
const VARIANTS = new Map(
  (process.env.BENCH_PEER_VARIANTS ?? '')
    .split(';')
    .map((v) => v.trim())
    .filter(Boolean)
    .map((v): [Side, { flags: string[]; env: Record<string, string>; args: string[] }] => {
      const [label, ...rest] = v.split(':');
      const all = rest.join(':').split(/\s+/).filter(Boolean);
      // proxy:--FLAG=VALUE: one of kube-ipvs's own (kube-proxy's) flags, after --config
      const args = all.filter((t) => t.startsWith('proxy:')).map((t) => t.slice('proxy:'.length));
      const tokens = all.filter((t) => !t.startsWith('proxy:'));
      const envOf = tokens.filter((t) => !t.startsWith('--')).map((t) => t.split('='));
      if (!label || envOf.some((kv) => kv.length < 2)) throw new Error(`BENCH_PEER_VARIANTS: cannot read "${v}"`);
      return [
        `kube-ipvs+${label}`,
        {
          flags: tokens.filter((t) => t.startsWith('--')),
          env: Object.fromEntries(envOf.map(([k, ...x]) => [k, x.join('=')])),
          args,
        },
      ];
    }),
);
/** the variants run right after the default kube-ipvs (or last when it does not run) */
const SIDES: Side[] = BASE_SIDES.includes('kube-ipvs')
  ? BASE_SIDES.flatMap((s) => (s === 'kube-ipvs' ? [s, ...VARIANTS.keys()] : [s]))
  : [...BASE_SIDES, ...VARIANTS.keys()];
const isKubeIpvs = (side: Side) => side === 'kube-ipvs' || side.startsWith('kube-ipvs+');
const STARTS = Number(env('BENCH_PEER_STARTS', '3'));
const CHEAP_SECONDS = Number(env('BENCH_PEER_CHEAP_SECONDS', '60'));
const CHANGES = Number(env('BENCH_PEER_CHANGES', SERVICES <= 1000 ? '10' : '5'));
const IDLE_SECONDS = Number(env('BENCH_PEER_IDLE_SECONDS', '60'));
// past the first periodic full sync (ipvs.syncPeriod 30 s): that one reads back everything the
// start wrote, so it belongs to the start; idle is the steady state after it, for both sides
const SETTLE_SECONDS = Number(env('BENCH_PEER_SETTLE_SECONDS', '45'));
const CHURN_SECONDS = Number(env('BENCH_PEER_CHURN_SECONDS', '20'));
/** the API server restart phase ("0" skips it), how long the server is down, and the wait after */
const RESTART_APISERVER = env('BENCH_PEER_RESTART_APISERVER', '1') !== '0';
const RESTART_DOWN_SECONDS = Number(env('BENCH_PEER_RESTART_DOWN_SECONDS', '10'));
const RESTART_SETTLE_SECONDS = Number(env('BENCH_PEER_RESTART_SETTLE_SECONDS', '30'));
const CHURN_RATES = env('BENCH_PEER_CHURN_RATES', '100 300 1000')
  .split(/[\s,]+/)
  .filter(Boolean)
  .map(Number);
const WRITER = process.env.BENCH_WRITER ?? '';
/** the datapath phase (datapath.ts; "0" skips it): its window, warm-up and client loops */
const DATAPATH = env('BENCH_PEER_DATAPATH', '1') !== '0';
const DATAPATH_SECONDS = Number(env('BENCH_PEER_DATAPATH_SECONDS', '15'));
const DATAPATH_CONCURRENCY = Number(env('BENCH_PEER_DATAPATH_CONCURRENCY', '8'));
/** a directory: kube-ipvs runs under --cpu-prof and writes its profile there when it stops (cpu-profile.ts reads it) */
const CPU_PROFILE_DIR = process.env.BENCH_PEER_CPU_PROFILE ?? '';
/** kube-ipvs's NODE_OPTIONS: the profiler's, and BENCH_PEER_NODE_OPTIONS (V8 flags to try) */
const KUBE_IPVS_NODE_OPTIONS = [
  CPU_PROFILE_DIR ? `--cpu-prof --cpu-prof-dir=${CPU_PROFILE_DIR}` : '',
  process.env.BENCH_PEER_NODE_OPTIONS ?? '',
]
  .filter(Boolean)
  .join(' ');
/** CLOCK_MONOTONIC in microseconds: the clock of a V8 .cpuprofile written by any process here */
const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
const HISTOGRAM = 'kubeproxy_network_programming_duration_seconds';
/** each side's namespace and its /30 to the lab (connectToLab's slot): its address there serves its metrics */
const SLOTS: Record<Side, number> = {
  'kube-proxy': 1,
  'kube-ipvs': 2,
  'kube-proxy-nft': 3,
  ...Object.fromEntries([...VARIANTS.keys()].map((v, i) => [v, 4 + i])),
};
const slotOf = (side: Side) => {
  const slot = SLOTS[side];
  if (slot === undefined) throw new Error(`no side ${side}`);
  return slot;
};
const nodeAddress = (side: Side) => `169.254.123.${slotOf(side) * 4 + 2}`;
const metricsUrl = (side: Side) => `http://${nodeAddress(side)}:10249/metrics`;
const nsOf = (side: Side) => `bench-${side.replace(/[^A-Za-z0-9-]/g, '-')}`;
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function record(side: Side | undefined, what: string, value: Record<string, unknown>): void {
  recordLine({
    bench: 'kube-proxy',
    services: SERVICES,
    endpoints: ENDPOINTS,
    ...(side ? { side } : {}),
    what,
    ...value,
  });
}

const cpuOf = (pid: number) => cpuSeconds(pid, CLK_TCK);

/** A fresh node namespace for `side` (benchNodeNamespace). */
const freshNamespace = (side: Side) => benchNodeNamespace(nsOf(side), slotOf(side));

/** The side's view of one virtual server's real servers, from inside its namespace (ipvs-probe.ts). */
class Probe {
  private readonly child: ChildProcess;
  private readonly lines: AsyncIterator<string>;
  private id = 0;

  constructor(side: Side) {
    this.child = spawn(
      'ip',
      [
        'netns',
        'exec',
        nsOf(side),
        process.execPath,
        path.join(__dirname, side === 'kube-proxy-nft' ? 'nft-probe.js' : 'ipvs-probe.js'),
        '5',
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    );
    this.lines = createInterface({ input: this.child.stdout! })[Symbol.asyncIterator]();
  }

  /** Asks for real server `rs`:8080 of `vip`:80; resolves with when it was seen (Date.now()), undefined on timeout. */
  wait(vip: string, rs: string, timeoutMs: number): Promise<number | undefined> {
    const id = ++this.id;
    this.child.stdin!.write(`wait ${id} ${vip} 80 ${rs} 8080 ${timeoutMs}\n`);
    return this.lines.next().then((l) => {
      if (l.done) throw new Error('ipvs-probe ended');
      const a = JSON.parse(l.value) as { id: string; seenMs?: number };
      if (Number(a.id) !== id) throw new Error(`ipvs-probe answered ${a.id}, not ${id}`);
      return a.seenMs;
    });
  }

  close(): void {
    this.child.stdin!.end();
  }
}

/** lab-writer.ts on the host, over a connection per call (each is a socat of QEMU's guestfwd). */
class Writer {
  private readonly dispatcher = new Agent({ pipelining: 0, headersTimeout: 0, bodyTimeout: 0 });

  constructor(readonly address: string) {}

  async call<T>(method: 'GET' | 'POST', p: string, body?: unknown): Promise<T> {
    const r = await fetch(`http://${this.address}${p}`, {
      method,
      dispatcher: this.dispatcher,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`writer ${method} ${p}: HTTP ${r.status} ${text}`);
    return JSON.parse(text) as T;
  }

  /** This clock minus the writer's (ms): of several round trips, the one with the least delay (its half is the error bound). */
  async skew(): Promise<{ skewMs: number; errorMs: number }> {
    let best = { skewMs: 0, errorMs: Infinity };
    for (let k = 0; k < 10; k++) {
      const t1 = Date.now();
      const { ms } = await this.call<{ ms: number }>('GET', '/time');
      const t2 = Date.now();
      if ((t2 - t1) / 2 < best.errorMs) best = { skewMs: (t1 + t2) / 2 - ms, errorMs: (t2 - t1) / 2 };
    }
    return best;
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}

// The lab keeps its objects between runs, each slice as the last run's writes left it, and a
// change is seen in the kernel by its new endpoint (replacementIP(gen)): a boot counting from the
// same generation as the last would write, to the same Service, an endpoint already there and see
// it at once (two of five single changes in a reused lab did, "0 ms"). So each boot starts at a
// generation of its own.
let generation = Number(env('BENCH_PEER_FIRST_GEN', String(Math.floor(Math.random() * 60_000))));
const firstGeneration = generation;
const nextGen = () => churnGen(0, generation++);

async function main(): Promise<void> {
  if (!WRITER) throw new Error('BENCH_WRITER (lab-writer.ts on the host, as this guest reaches it) is not set');
  const lab = labFromEnv();
  const writer = new Writer(WRITER);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-kube-proxy-'));
  // kube-proxy's identity as kubeadm's DaemonSet pod has it: both sides read it
  await kubeProxyIdentity(lab, dir, { duration: '6h' });
  record(undefined, 'conditions', {
    lab: (await lab.info()).version,
    cpus: os.cpus().length,
    memoryBytes: os.totalmem(),
    sides: SIDES,
    variants: Object.fromEntries(VARIANTS),
    starts: STARTS,
    changes: CHANGES,
    idleSeconds: IDLE_SECONDS,
    churnSeconds: CHURN_SECONDS,
    churnRates: CHURN_RATES,
    clock: await writer.skew(),
    firstGeneration,
  });
  try {
    const server = await lab.server('a');
    // what a restart of the server costs it with no proxy at all (its own informers), over the
    // same window as the sides' restart phase takes (up 40 s: a change and the settle time)
    if (RESTART_APISERVER)
      record(undefined, 'api', {
        phase: 'apiserver restart, no proxy',
        requests: {},
        requestsTotal: 0,
        connections: 0,
        ...(await restartBaseline(lab, RESTART_DOWN_SECONDS, RESTART_SETTLE_SECONDS + 10)),
      });
    for (const side of SIDES)
      await measure(
        side,
        dir,
        writer,
        // a variant's requests carry kube-ipvs's own User-Agent, either mode's kube-proxy's
        new ApiCostMeter(lab, nsOf(side), server, `${isKubeIpvs(side) ? 'kube-ipvs' : 'kube-proxy'}/`),
        lab,
      );
  } finally {
    await writer.close();
    for (const side of SIDES) tryRun('ip', ['netns', 'del', nsOf(side)]);
    rmSync(dir, { recursive: true, force: true });
    rmSync(SERVICE_ACCOUNT_DIR, { recursive: true, force: true });
  }
}

function start(side: Side, cfg: string): LoggedProcess {
  const variant = VARIANTS.get(side);
  return !isKubeIpvs(side)
    ? startKubeProxy([`--config=${cfg}`, '--v=1'], nsOf(side))
    : startKubeIpvs(
        ['--config', cfg, '--v=1', ...(variant?.args ?? [])],
        { ...(KUBE_IPVS_NODE_OPTIONS ? { NODE_OPTIONS: KUBE_IPVS_NODE_OPTIONS } : {}), ...variant?.env },
        nsOf(side),
        variant?.flags ?? [],
      );
}

/** Scrapes `url`; undefined while nothing answers (the process still starting). */
async function tryScrape(url: string): Promise<Scrape | undefined> {
  try {
    return await scrape(url, 1);
  } catch {
    return undefined;
  }
}

/** When (ms since the epoch) `proc`'s first full sync ended; throws when it failed or the process exited. */
async function firstSyncEnd(side: Side, proc: LoggedProcess): Promise<number> {
  if (isKubeIpvs(side)) {
    const done = await proc.waitFor(
      (l: LogLine) => l.message === 'sync done' && l.full === true,
      'the first full sync',
      0,
      3_600_000,
    );
    const failed = proc.lines
      .slice(0, proc.lines.indexOf(done))
      .find((l) => typeof l.message === 'string' && l.message.startsWith('sync failed'));
    if (failed) throw new Error(`kube-ipvs: a sync failed before the first one done: ${failed.message}`);
    return logLineTimeMs(done);
  }
  const deadline = Date.now() + 3_600_000;
  const family = (k: string) => /ip_family="([^"]+)"/.exec(k)?.[1];
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null)
      throw new Error(`kube-proxy exited before its first sync:\n${proc.text.slice(-15).join('\n')}`);
    const m = await tryScrape(metricsUrl(side));
    if (m) {
      const queued = new Set<string>();
      const done = new Map<string, number>();
      for (const [k, v] of m) {
        if (k.startsWith('kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{')) queued.add(family(k) ?? '');
        if (k.startsWith('kubeproxy_sync_proxy_rules_last_timestamp_seconds{')) done.set(family(k) ?? '', v);
      }
      if (done.size > 0 && [...queued].every((f) => done.has(f))) return Math.max(...done.values()) * 1000;
    }
    await sleep(500);
  }
  throw new Error('kube-proxy: no first sync within an hour');
}

/**
 * One endpoint change of Service `i` (a PUT of its slice from the writer), timed from the
 * write's start to the new real server in the side's kernel, with the side's own histogram
 * observation of it.
 */
async function oneChange(
  side: Side,
  probe: Probe,
  writer: Writer,
  clock: { skewMs: number },
  i: number,
  what: string,
): Promise<{ kernelMs: number; writeMs: number; ownMs: number | undefined }> {
  const gen = nextGen();
  const before = await scrape(metricsUrl(side), 60);
  const seen = probe.wait(labClusterIP(i), replacementIP(gen), 600_000);
  const w = await writer.call<{ atMs: number; answeredMs: number; status: number }>('POST', '/change', {
    service: i,
    gen,
    endpoints: ENDPOINTS,
    skewMs: clock.skewMs,
  });
  if (w.status < 200 || w.status > 299) throw new Error(`${side}: ${what} (svc-${i}): HTTP ${w.status}`);
  const seenMs = await seen;
  if (seenMs === undefined) throw new Error(`${side}: ${what} (svc-${i}) not in the kernel after 600 s`);
  const after = await observed(side, before, 1, 30_000);
  // kube-proxy exposes the histogram only once it has observed something: a first change whose
  // sync had not ended 30 s after the kernel showed it (1,000 x 10 on a loaded host) found none
  const own =
    sumSeries(after, `${HISTOGRAM}_count`) === undefined ? undefined : histogramDelta(before, after, HISTOGRAM);
  return {
    kernelMs: seenMs - w.atMs,
    writeMs: w.answeredMs,
    ownMs: own?.count === 1 ? own.meanSeconds * 1000 : undefined,
  };
}

/** Scrapes until the histogram has observed `count` more than in `before` (or nothing more for `quietMs`); returns that scrape. */
async function observed(side: Side, before: Scrape, count: number, quietMs: number): Promise<Scrape> {
  const total = (s: Scrape) => sumSeries(s, `${HISTOGRAM}_count`) ?? 0;
  let last = -1;
  let since = Date.now();
  for (;;) {
    const now = await scrape(metricsUrl(side), 60);
    const n = total(now) - total(before);
    if (n >= count) return now;
    if (n !== last) {
      last = n;
      since = Date.now();
    } else if (Date.now() - since > quietMs) {
      return now;
    }
    await sleep(250);
  }
}

async function measure(
  side: Side,
  dir: string,
  writer: Writer,
  meter: ApiCostMeter,
  lab: ReturnType<typeof labFromEnv>,
): Promise<void> {
  const cfg = path.join(dir, `${side}.conf`);
  writeFileSync(
    cfg,
    e2eProxyConfig({
      dir,
      node: NODE_NAME,
      ipvs: ['syncPeriod: 30s'],
      forKubeProxy: true,
      metrics: `${nodeAddress(side)}:10249`,
      healthz: `${nodeAddress(side)}:10256`,
      ...(side === 'kube-proxy-nft' ? { mode: 'nftables' } : {}),
    }),
  );
  console.error(`>> ${side}: ${SERVICES} x ${ENDPOINTS}`);

  // 1. first sync, STARTS times, each in a fresh namespace; the last one is kept running
  let proc: LoggedProcess | undefined;
  let starts = STARTS;
  for (let k = 1; k <= starts; k++) {
    freshNamespace(side);
    meter.install();
    const startMark = await meter.mark();
    const t0 = Date.now();
    proc = start(side, cfg);
    const end = await firstSyncEnd(side, proc);
    record(side, 'first sync', { run: k, seconds: (end - t0) / 1000, rss: rssBytes(proc.child.pid!) });
    record(side, 'api', {
      phase: 'start',
      run: k,
      seconds: (Date.now() - t0) / 1000,
      ...(await meter.since(startMark)),
    });
    // not cheap: once
    if (k === 1 && (end - t0) / 1000 > CHEAP_SECONDS) starts = 1;
    if (k < starts) {
      await proc.kill('SIGTERM');
      tryRun('ip', ['netns', 'del', nsOf(side)]);
      // the namespace's IPVS table is freed by the kernel's cleanup work: let it finish
      await sleep(5000);
    }
  }
  const p = proc!;
  const pid = p.child.pid!;
  const probe = new Probe(side);
  try {
    // 2. idle CPU
    const idleMark = await meter.mark();
    const idleStart = Date.now();
    const rssStart = rssBytes(pid);
    const rollupStart = smapsRollup(pid);
    const kindsStart = residentMemory(pid).kinds;
    const heapStart = heapBreakdown(await scrape(metricsUrl(side), 60));
    await sleep(SETTLE_SECONDS * 1000);
    const c0 = cpuOf(pid);
    const threads0 = threadCpuSeconds(pid, CLK_TCK);
    const w0 = Date.now();
    const m0 = monotonicUs();
    const linesBefore = isKubeIpvs(side) ? p.lines.length : 0;
    await sleep(IDLE_SECONDS * 1000);
    const c1 = cpuOf(pid);
    const threads1 = threadCpuSeconds(pid, CLK_TCK);
    const m1 = monotonicUs();
    const minutes = (Date.now() - w0) / 60_000;
    const idleMemory = residentMemory(pid);
    record(side, 'idle', {
      rssAfterStart: rssStart,
      rssIdle: rssBytes(pid),
      rollupAfterStart: rollupStart,
      rollupIdle: smapsRollup(pid),
      kindsAfterStart: kindsStart,
      kindsIdle: idleMemory.kinds,
      heapAfterStart: heapStart,
      heapIdle: heapBreakdown(await scrape(metricsUrl(side), 60)),
      mapsIdle: idleMemory.maps,
      seconds: minutes * 60,
      cpuPerMinute: (c1.self - c0.self) / minutes,
      // system time is the kernel's work on its behalf: building the dumps and /proc text it reads
      cpuSystemPerMinute: (c1.system - c0.system) / minutes,
      cpuWithChildrenPerMinute: (c1.self + c1.children - c0.self - c0.children) / minutes,
      cpuPerMinuteByThread: perKeyDelta(threads0, threads1, 1 / minutes),
      // where kube-ipvs's idle CPU goes: the periodic full syncs (ipvs.syncPeriod) in the window
      ...(isKubeIpvs(side) ? { idleSyncs: syncsIn(p.lines.slice(linesBefore)) } : {}),
      ...(CPU_PROFILE_DIR ? { pid, profileWindowUs: [m0, m1] } : {}),
    });
    record(side, 'api', { phase: 'idle', seconds: (Date.now() - idleStart) / 1000, ...(await meter.since(idleMark)) });

    // 3. single changes, one at a time
    const samples: { kernelMs: number; writeMs: number; ownMs: number | undefined }[] = [];
    const clock = await writer.skew();
    for (let k = 1; k <= CHANGES; k++) {
      samples.push(await oneChange(side, probe, writer, clock, (k * 7919) % SERVICES, `change ${k}`));
      await sleep(1000);
    }
    const kernel = samples.map((s) => s.kernelMs);
    const own = samples.map((s) => s.ownMs).filter((x): x is number => x !== undefined);
    record(side, 'one change', {
      changes: CHANGES,
      clock,
      medianMs: median(kernel),
      minMs: Math.min(...kernel),
      maxMs: Math.max(...kernel),
      ownMedianMs: median(own),
      ownObserved: own.length,
      writeMedianMs: median(samples.map((s) => s.writeMs)),
      samples,
    });

    // 4. churn, one segment per rate
    const churnMark = await meter.mark();
    let churnWrites = 0;
    for (const rate of CHURN_RATES) {
      const clock = await writer.skew();
      const before = await scrape(metricsUrl(side), 60);
      const churnLinesFrom = isKubeIpvs(side) ? p.lines.length : 0;
      const w = await writer.call<ChurnWrites>('POST', '/churn', {
        rate,
        seconds: CHURN_SECONDS,
        services: SERVICES,
        endpoints: ENDPOINTS,
        firstGen: generation,
        skewMs: clock.skewMs,
      });
      generation += w.sent;
      churnWrites += w.ok;
      // the first scrape after the segment: prom-client's event-loop histogram was reset by the
      // scrape before it, so its max is the main thread's longest stall in the segment
      // (kube-ipvs only: client_golang has no such metric)
      const during = await scrape(metricsUrl(side), 60);
      const seenMs = w.last
        ? await probe.wait(labClusterIP(w.last.service), replacementIP(w.last.gen), 900_000)
        : undefined;
      const after = await observed(side, before, w.ok, 30_000);
      // where kube-ipvs's lag went: its syncs from the segment's start until it had seen every write
      const churnSyncs = isKubeIpvs(side) ? syncsIn(p.lines.slice(churnLinesFrom)) : [];
      record(side, 'churn', {
        ...(isKubeIpvs(side) ? { syncs: churnSyncs } : {}),
        ...w,
        clock,
        lastToKernelSeconds: seenMs === undefined || !w.last ? undefined : (seenMs - w.last.atMs) / 1000,
        lag: histogramDelta(before, after, HISTOGRAM),
        eventLoopLagMaxSeconds: sumSeries(during, 'nodejs_eventloop_lag_max_seconds'),
        rss: rssBytes(pid),
      });
    }
    record(side, 'api', { phase: 'churn', writes: churnWrites, ...(await meter.since(churnMark)) });
    // 5. memory after the churn
    record(side, 'after churn', {
      rss: rssBytes(pid),
      heap: heapBreakdown(await scrape(metricsUrl(side), 60)),
      maps: residentMemory(pid).maps,
    });
    // and once the side has had the settle time to give memory back (Go's scavenger, V8's
    // collections): what the process holds after the churn, not during its last sync
    await sleep(SETTLE_SECONDS * 1000);
    const settled = residentMemory(pid);
    record(side, 'after churn, settled', {
      seconds: SETTLE_SECONDS,
      rss: rssBytes(pid),
      rollup: smapsRollup(pid),
      kinds: settled.kinds,
      heap: heapBreakdown(await scrape(metricsUrl(side), 60)),
      maps: settled.maps,
    });

    // 6. the API server restarts (issue 28): down RESTART_DOWN_SECONDS, then up; what the side
    // asks of the new server (relists, new watches) until RESTART_SETTLE_SECONDS after one
    // change made after the restart has reached its kernel. The server's byte counters start
    // again from 0 with the new process.
    if (RESTART_APISERVER) {
      const mark = await meter.mark();
      const t0 = Date.now();
      const readyMs = await restartApiserver(lab, RESTART_DOWN_SECONDS);
      const change = await oneChange(side, probe, writer, await writer.skew(), 4242 % SERVICES, 'change after restart');
      await sleep(RESTART_SETTLE_SECONDS * 1000);
      record(side, 'apiserver restart', { downSeconds: RESTART_DOWN_SECONDS, readyMs, ...change });
      record(side, 'api', {
        phase: 'apiserver restart',
        seconds: (Date.now() - t0) / 1000,
        ...(await meter.since(mark, { serverRestarted: true })),
      });
    }

    // 7. the datapath: one Service's endpoints (endpoint 0 set by a fresh change, so its
    // address is known whatever earlier runs left) as pods, a client beside them
    if (DATAPATH) {
      const i = SERVICES - 1;
      const gen = nextGen();
      const w = await writer.call<{ status: number }>('POST', '/change', {
        service: i,
        gen,
        endpoints: ENDPOINTS,
        skewMs: (await writer.skew()).skewMs,
      });
      if (w.status < 200 || w.status > 299) throw new Error(`${side}: the datapath's change: HTTP ${w.status}`);
      if ((await probe.wait(labClusterIP(i), replacementIP(gen), 600_000)) === undefined)
        throw new Error(`${side}: the datapath's change not in the kernel after 600 s`);
      const endpoints = [
        replacementIP(gen),
        ...Array.from({ length: ENDPOINTS - 1 }, (_, j) => endpointIP(i, j + 1, ENDPOINTS)),
      ];
      // a failure here is the datapath's (its namespaces, its client): recorded, the other sides still run
      const dp = await runDatapath({
        ns: nsOf(side),
        vip: labClusterIP(i),
        port: 80,
        endpoints,
        targetPort: 8080,
        seconds: DATAPATH_SECONDS,
        warmupSeconds: 3,
        concurrency: DATAPATH_CONCURRENCY,
      }).catch((e: Error) => ({ error: e.message }));
      record(side, 'datapath', { vip: labClusterIP(i), pods: endpoints.length, ...dp });
    }
  } finally {
    probe.close();
    await p.kill('SIGTERM');
    tryRun('ip', ['netns', 'del', nsOf(side)]);
    await sleep(5000);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
