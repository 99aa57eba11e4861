// make bench, daemon scenarios (inside one fresh VM boot per size): the fake API server (in
// this process; the daemon lists and watches it over HTTP) holds N Services x E endpoints (daemon-fixtures.ts) plus one 100-endpoint Service for the
// rolling update; the real `kube-ipvs` process runs against it. In order:
//  1. the peer's cold load: kube-proxy's pattern through moby/ipvs (scripts/bench/peer), in a
//     network namespace of its own (a fresh IPVS table), deleted afterwards;
//  2. cold start: process start to the first sync done (writes, reads, execs, RSS, JS heap);
//  3. single endpoint changes one after another through the API, each timed from the API
//     write to the end of the daemon sync that applied it (its "sync done" log line);
//  4. the periodic full check on an unchanged node (a live syncPeriod change triggers one);
//  5. a rolling update of the 100-endpoint Service (daemon-rollout.ts);
//  6. churn: endpoint updates across random Services (churn-generator.ts, a fixed seed), one
//     segment of BENCH_CHURN_SECONDS per offered rate in BENCH_CHURN_RATES (default
//     "100 300 1000"/s), each followed by the kernel checked against the planner's desired
//     state (daemon-churn.ts);
//  7. adopt: the daemon restarted against the same API state and kernel table;
//  8. the peer's per-sync pattern replayed through our netlink client on the same table: dump
//     every service, GET each service twice, dump each one's real servers, one request in
//     flight at a time (what kube-proxy does for any change, however small, and every sync).
//  9. the peer under churn: kube-proxy's sync loop (step 8's reads, then its writes for the
//     changed Services: NEW_DEST, and GracefulDeleteRS's dest dump + DEL_DEST) back to back
//     in a process of its own in a fresh network namespace (its own table, loaded there
//     first, and its own dest trash), while the same generator runs the same segments here
//     and hands it each change over a pipe (peer-churn.ts); lag per change from its API
//     write to the end of the peer sync that applied it (BENCH_PEER_CHURN=0 skips).
// Prints JSON lines; scripts/bench/report-daemon.ts turns them into tables.
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { FakeApiServer, kubeconfigFor } from '../../testkit/fake-apiserver';
import { LogLine, LoggedProcess, logLineTimeMs, startKubeIpvs } from '../../testkit/processes';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { benchObjects, benchSlice, clusterIP } from './daemon-fixtures';
import { generateChurn } from './churn-generator';
import { runChurn } from './daemon-churn';
import { rolloutObjects, runRollout } from './daemon-rollout';
import { metric, rssBytes, scrape } from './process-memory';

const [servicesArg = '1000', endpointsArg = '10', changesArg = '1000'] = process.argv.slice(2);
const SERVICES = Number(servicesArg);
const ENDPOINTS = Number(endpointsArg);
const CHANGES = Number(changesArg);
/** seconds of writes per offered rate */
const CHURN_SECONDS = Number(process.env.BENCH_CHURN_SECONDS ?? 30);
/** offered churn rates (updates/s), one segment each, for the daemon and then the peer (BENCH_CHURN_RATE: one rate) */
const CHURN_RATES = (process.env.BENCH_CHURN_RATES ?? process.env.BENCH_CHURN_RATE ?? '100 300 1000')
  .split(/[\s,]+/)
  .filter(Boolean)
  .map(Number);
/** BENCH_PEER_CHURN=0 skips the peer's churn */
const PEER_CHURN = process.env.BENCH_PEER_CHURN !== '0';
const MOBY_IPVS = process.env.BENCH_MOBY_IPVS ?? path.resolve(__dirname, 'peer', 'moby-ipvs-load');
const PEER_RUNS = Number(process.env.BENCH_PEER_RUNS ?? 5);
/** no-change full checks in a row (the median is reported) */
const CHECKS = Math.max(1, Number(process.env.BENCH_CHECKS ?? 3));
/** "cold": stop after the cold start (for profiling it: BENCH_DAEMON_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=DIR") */
const ONLY = process.env.BENCH_ONLY ?? '';
/** idle seconds after the cold start before memory is read again */
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_SECONDS ?? 30);
const DAEMON_ENV: NodeJS.ProcessEnv = process.env.BENCH_DAEMON_NODE_OPTIONS
  ? { NODE_OPTIONS: process.env.BENCH_DAEMON_NODE_OPTIONS }
  : {};
const PORT = 16444;
const METRICS = 'http://127.0.0.1:10259/metrics';

function record(what: string, value: Record<string, unknown>): void {
  const line = JSON.stringify({ bench: 'daemon', services: SERVICES, endpoints: ENDPOINTS, what, ...value });
  console.log(line);
  if (process.env.BENCH_OUT) appendFileSync(process.env.BENCH_OUT, line + '\n');
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const isSync = (l: LogLine) => l.message === 'sync done';

/** The error of the sync whose "sync done" line is `done`, when it failed (its "sync failed" line comes first). */
function failureOf(daemon: LoggedProcess, done: LogLine): string | undefined {
  for (let k = daemon.lines.lastIndexOf(done) - 1; k >= 0; k--) {
    const l = daemon.lines[k]!;
    if (isSync(l)) return undefined;
    if (typeof l.message === 'string' && l.message.startsWith('sync failed')) return l.message;
  }
  return undefined;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The daemon's VmRSS and, from one scrape, its JS heap used and total and its external memory. */
const memoryOf = (daemon: LoggedProcess, m: Awaited<ReturnType<typeof scrape>>) => ({
  rss: rssBytes(daemon.child.pid!),
  heap: metric(m, 'nodejs_heap_size_used_bytes'),
  heapTotal: metric(m, 'nodejs_heap_size_total_bytes'),
  external: metric(m, 'nodejs_external_memory_bytes'),
});

/** kube-proxy's cold load through moby/ipvs, in a fresh network namespace (its own IPVS table). */
function peerColdLoad(gets: boolean): void {
  if (!existsSync(MOBY_IPVS)) {
    record('moby/ipvs cold load', {
      skipped: `${MOBY_IPVS} not built (scripts/bench/run.sh builds it when golang-go and golang-github-docker-docker-dev are installed)`,
    });
    return;
  }
  const ns = 'bench-peer';
  const sh = (args: string[]) => {
    const r = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8', timeout: 3_600_000 });
    if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr || r.error}`);
    return r.stdout;
  };
  sh(['ip', 'netns', 'add', ns]);
  try {
    // a namespace whose loopback is down has no local routing table: NEW_DEST is EINVAL
    sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    const out = JSON.parse(
      sh(['ip', 'netns', 'exec', ns, MOBY_IPVS, ...(gets ? ['-gets'] : []), String(SERVICES), String(ENDPOINTS)]),
    ) as { seconds: number; requests: number };
    record(gets ? 'moby/ipvs cold load, kube-proxy reads' : 'moby/ipvs cold load', {
      seconds: out.seconds,
      requests: out.requests,
    });
  } finally {
    sh(['ip', 'netns', 'del', ns]);
  }
}

async function waitNoDraining(): Promise<void> {
  const until = Date.now() + 120_000;
  while (Date.now() < until && metric(await scrape(METRICS), 'kube_ipvs_draining_real_servers') > 0) await sleep(1000);
}

async function main(): Promise<void> {
  peerColdLoad(false);
  if (process.env.BENCH_PEER_GETS === '1') peerColdLoad(true);
  // the namespace's table is freed by the kernel's netns cleanup work: let it finish first
  await sleep(3000);

  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-daemon-'));
  const server = new FakeApiServer();
  for (const o of benchObjects(SERVICES, ENDPOINTS, rolloutObjects())) server.create(o);
  writeFileSync(path.join(dir, 'kubeconfig'), kubeconfigFor(await server.listen(PORT)));
  const cfg = path.join(dir, 'config.conf');
  writeFileSync(
    cfg,
    [
      'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
      'kind: KubeProxyConfiguration',
      'mode: ipvs',
      `clientConnection: {kubeconfig: ${path.join(dir, 'kubeconfig')}}`,
      'hostnameOverride: node-a',
      'clusterCIDR: 10.244.0.0/16',
      'healthzBindAddress: 127.0.0.1:10266',
      'metricsBindAddress: 127.0.0.1:10259',
      'ipvs: {syncPeriod: 1h}',
      '',
    ].join('\n'),
  );
  // the start-up phases, from the spawn: Node up and the modules loaded ("kube-ipvs starting"),
  // the Service and EndpointSlice lists done ("informers synced"), the first sync done
  const start = async (
    what: string,
  ): Promise<{
    daemon: LoggedProcess;
    first: LogLine;
    seconds: number;
    phases: Record<string, number | undefined>;
  }> => {
    const t0 = Date.now();
    const daemon = startKubeIpvs(['--config', cfg, '--v=2'], DAEMON_ENV);
    const first = await daemon.waitFor(isSync, what, 0, 3_600_000);
    const line = (message: string) =>
      daemon.lines.find(
        (x) => x.message === message || (typeof x.message === 'string' && x.message.startsWith(`${message}:`)),
      );
    const at = (l: LogLine | undefined) => (l ? (logLineTimeMs(l) - t0) / 1000 : undefined);
    const starting = line('kube-ipvs starting');
    // startedSinceStartMs: the same moment on the daemon's own clock (performance.now(), from
    // its process start): the rest of startedSeconds is the spawn and Node's exec
    const phases = {
      startedSeconds: at(starting),
      startedSinceStartMs: starting?.sinceStartMs as number | undefined,
      listedSeconds: at(line('informers synced')),
    };
    return { daemon, first, seconds: (logLineTimeMs(first) - t0) / 1000, phases };
  };
  const syncFigures = (l: LogLine) => ({
    syncSeconds: (l.durationMs as number) / 1000,
    ipvsWrites: l.ipvsWrites,
    ipvsReads: l.ipvsReads,
    execs: l.execs,
    linkOps: l.linkOps,
    phasesMs: l.phasesMs,
  });

  const cold = await start('the cold-start sync');
  let daemon = cold.daemon;
  const m0 = await scrape(METRICS);
  const coldFailure = failureOf(daemon, cold.first);
  record('cold start', {
    seconds: cold.seconds,
    ...cold.phases,
    ...syncFigures(cold.first),
    ...memoryOf(daemon, m0),
    ...(coldFailure ? { failed: coldFailure } : {}),
  });
  // a failed sync is retried as a full one; the figures below would measure the retries
  if (coldFailure) throw new Error(`the cold-start sync failed: ${coldFailure}`);
  // the same process idle for a while: what an operator's `kubectl top` sees between syncs
  // (the figures above include the cold start's garbage, not yet collected)
  await sleep(SETTLE_SECONDS * 1000);
  const m1 = await scrape(METRICS);
  record('settled', { afterSeconds: SETTLE_SECONDS, ...memoryOf(daemon, m1) });
  if (ONLY === 'cold') {
    await daemon.kill('SIGTERM');
    await server.close();
    return;
  }

  const latencies: number[] = [];
  const writes = new Set<number>();
  const reads = new Set<number>();
  const execs = new Set<number>();
  for (let n = 1; n <= CHANGES; n++) {
    const i = (n * 7919) % SERVICES;
    const from = daemon.lines.length;
    const t = Date.now();
    server.update(benchSlice(i, ENDPOINTS, n));
    // the sync that re-planned the changed Service: a drain check's own sync (replanned 0)
    // may delete drained real servers in between, and is not the change's
    const done = await daemon.waitFor(
      (l) => isSync(l) && (l.replanned as number) > 0 && (l.ipvsWrites as number) > 0,
      `change ${n}`,
      from,
      600_000,
    );
    const failed = failureOf(daemon, done);
    if (failed) throw new Error(`the sync that applied change ${n} failed: ${failed}`);
    latencies.push(logLineTimeMs(done) - t);
    writes.add(done.ipvsWrites as number);
    reads.add(done.ipvsReads as number);
    execs.add(done.execs as number);
  }
  const set = (s: Set<number>) => [...s].sort((a, b) => a - b).join('/');
  record('event to kernel', {
    changes: CHANGES,
    p50ms: pct(latencies, 50),
    p99ms: pct(latencies, 99),
    maxms: Math.max(...latencies),
    ipvsWritesPerChange: set(writes),
    ipvsReadsPerChange: set(reads),
    execsPerChange: set(execs),
  });

  // the periodic full check (drift repair) on an unchanged node: a live config change to
  // syncPeriod makes the next sync a full one
  // (after the changes' replaced real servers, draining at weight 0, are deleted 15 s later)
  // BENCH_CHECKS of them (each a new syncPeriod, 59m, 58m, ...): one boot's checks vary less
  // than boots do; the median is reported, with its phases, and every sample
  await waitNoDraining();
  const checks: Record<string, unknown>[] = [];
  for (let k = 1; k <= CHECKS; k++) {
    const from = daemon.lines.length;
    writeFileSync(cfg, readFileSync(cfg, 'utf8').replace(/syncPeriod: \w+/, `syncPeriod: ${60 - k}m`));
    checks.push(await daemon.waitFor((l) => isSync(l) && l.full === true, `full check ${k}`, from, 1_800_000));
  }
  const byTime = [...checks].sort((a, b) => (a.durationMs as number) - (b.durationMs as number));
  const check = byTime[(byTime.length - 1) >> 1]!;
  record('full check, no change', {
    seconds: (check.durationMs as number) / 1000,
    samples: checks.map((c) => (c.durationMs as number) / 1000),
    ipvsReads: check.ipvsReads,
    ipvsWrites: Math.max(...checks.map((c) => c.ipvsWrites as number)),
    execs: Math.max(...checks.map((c) => c.execs as number)),
    linkOps: check.linkOps,
    phasesMs: check.phasesMs,
  });

  // the rollout's write count is its own
  await waitNoDraining();
  const ipvs = await openIpvs();
  record('rolling update', { ...(await runRollout(server, daemon, ipvs)) });

  // one churn segment per offered rate, in the order given (each waits for the kernel to match)
  let gen = CHANGES + 1;
  for (const rate of CHURN_RATES) {
    const churn = await runChurn({
      server,
      daemon,
      ipvs,
      metricsUrl: METRICS,
      services: SERVICES,
      endpoints: ENDPOINTS,
      rate,
      seconds: CHURN_SECONDS,
      firstGen: gen,
    });
    gen += churn.updates;
    record('churn', { ...churn });
  }
  // the daemon's own lines so far (every sync's phases), for a look at where the churn went
  if (process.env.BENCH_DAEMON_LOG) writeFileSync(process.env.BENCH_DAEMON_LOG, daemon.text.join('\n') + '\n');

  // adopt: a restart against the same API state and the same kernel table
  await daemon.kill('SIGTERM');
  const adopt = await start('the adopting sync');
  daemon = adopt.daemon;
  const adoptFailure = failureOf(daemon, adopt.first);
  record('adopt', {
    seconds: adopt.seconds,
    ...syncFigures(adopt.first),
    rss: rssBytes(daemon.child.pid!),
    ...(adoptFailure ? { failed: adoptFailure } : {}),
  });
  await daemon.kill('SIGTERM');

  // the peer: kube-proxy's per-sync netlink pattern, same table (with one change applied)
  const peer: number[] = [];
  let requests = 0;
  for (let n = 0; n < PEER_RUNS; n++) {
    requests = 0;
    const t = process.hrtime.bigint();
    const all = await ipvs.listServices();
    requests++;
    for (const vs of all) {
      await ipvs.getService(vs); // syncService
      await ipvs.getService(vs); // syncEndpoint
      await ipvs.listRealServers(vs);
      requests += 3;
    }
    const vs = { af: AF_INET, protocol: IPPROTO_TCP, address: clusterIP(n), port: 80, fwmark: 0 } as const;
    await ipvs.apply({
      kind: 'newDest',
      vs,
      rs: { af: AF_INET, address: `10.201.0.${n + 1}`, port: 8080, fwdMethod: 0, weight: 1 },
    });
    requests++;
    peer.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  ipvs.close();
  record('kube-proxy pattern, one change', {
    runs: peer.length,
    p50ms: pct(peer, 50),
    maxms: Math.max(...peer),
    requests,
  });

  if (PEER_CHURN) await peerChurn(server, CHANGES + 1);
  await server.close();
}

/**
 * kube-proxy's sync loop under the same churn (peer-churn.ts), after the daemon has stopped
 * (same boot): the generator writes into this process's fake API server, as for the daemon,
 * and hands each change (Service, number, write time) to the peer over a pipe; the peer runs
 * in a fresh network namespace: its own IPVS table, loaded there first, and its own dest
 * trash, empty as the daemon's was before its churn.
 */
async function peerChurn(server: FakeApiServer, firstGen: number): Promise<void> {
  const ns = 'bench-peer-churn';
  const sh = (args: string[]) => {
    const r = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr || r.error}`);
  };
  sh(['ip', 'netns', 'add', ns]);
  try {
    // a namespace whose loopback is down has no local routing table: NEW_DEST is EINVAL
    sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        ns,
        process.execPath,
        path.join(__dirname, 'peer-churn.js'),
        String(SERVICES),
        String(ENDPOINTS),
      ],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const next = async (): Promise<Record<string, unknown>> => {
      const l = await Promise.race([
        lines.next(),
        exited.then((code) => {
          throw new Error(`peer-churn.js exited (${code})`);
        }),
      ]);
      if (l.done) throw new Error('peer-churn.js ended its output');
      return JSON.parse(l.value) as Record<string, unknown>;
    };
    const { what: _load, ...load } = await next();
    record('peer churn load', load);
    let gen = firstGen;
    for (const rate of CHURN_RATES) {
      child.stdin!.write(`start ${rate}\n`);
      const w = await generateChurn({
        server,
        services: SERVICES,
        endpoints: ENDPOINTS,
        rate,
        seconds: CHURN_SECONDS,
        firstGen: gen,
        onWrite: (c) => child.stdin!.write(`w ${c.service} ${c.gen} ${c.atMs}\n`),
      });
      child.stdin!.write(`end ${w.updates} ${w.seconds} ${w.lastWriteAtMs}\n`);
      const { what: _churn, ...r } = await next();
      record('peer churn', r);
      gen += w.updates;
    }
    child.stdin!.end();
    const code = await exited;
    if (code !== 0) throw new Error(`peer-churn.js: exit ${code}`);
  } finally {
    sh(['ip', 'netns', 'del', ns]);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
