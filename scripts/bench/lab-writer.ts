// The kube-proxy bench's writer, on the host beside the lab (scripts/bench/run.sh starts it before
// the VM boots and forwards a guest address to it): the endpoint changes of kube-proxy-peer.ts
// are written from here, natively, as the admin, many in flight (lab-api.ts). From the TCG guest
// the same PUTs took 50 ms of guest CPU each and reached 12 to 44 writes/s, on the CPUs the
// side under test was using, so the side under test set the rate it was offered.
//
// Times: the guest's clock and the host's differ (the guest's starts from QEMU's RTC, whole
// seconds); kube-proxy-peer.ts measures the difference through GET /time (the round trip with
// the least delay of several) and sends it with every request; the trigger time each write
// carries (endpoints.kubernetes.io/last-change-trigger-time, what both sides' network
// programming histograms start from) and every time answered are on the guest's clock.
//
//   node dist/scripts/bench/lab-writer.js LAB_DIR PORT_FILE [PARALLEL]
// listens on a free loopback port, writes {"port":N} to PORT_FILE, serves until SIGTERM:
//   GET  /time                                        {"ms": Date.now()}
//   POST /change {service, gen, endpoints, skewMs}    one PUT: {atMs, answeredMs, status}
//   POST /churn  {rate, seconds, services, endpoints, firstGen, skewMs}
//        one segment (ChurnWrites): PUTs of endpoint-0 replacements across churn-generator's
//        fixed-seed sequence of Services, at most PARALLEL (default 32) in flight; a write
//        that cannot go yet waits, its trigger time is when it is sent; what is not sent by
//        the end is dropped. The kube-apiserver's and etcd's CPU over it, from /proc.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { LabInfo } from '../../testkit/lab-client';
import { churnGen, churnServices } from './churn-generator';
import { LabApi } from './lab-api';
import { cpuSeconds } from './process-memory';
import { labBenchSlice, labBenchSliceName, NAMESPACE } from './lab-bench-objects';

const SLICES = `/apis/discovery.k8s.io/v1/namespaces/${NAMESPACE}/endpointslices`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ChurnWrites {
  readonly targetRate: number;
  readonly seconds: number;
  /** writes sent, answered 2xx, and not */
  readonly sent: number;
  readonly ok: number;
  readonly failed: number;
  /** writes due by the offered rate but never sent: the cap of writes in flight was reached */
  readonly notSent: number;
  readonly achievedRate: number;
  readonly writers: number;
  /** share of the 1 ms ticks at which writes were due and the cap of writes in flight was reached */
  readonly capShare: number;
  readonly writeMeanMs: number;
  /** CPU seconds per second over the segment: kube-apiserver, etcd, this writer; the host's CPUs and 1-min load at the end */
  readonly apiserverCpu?: number;
  readonly etcdCpu?: number;
  readonly writerCpu: number;
  readonly hostCpus: number;
  readonly hostLoad: number;
  /** the last write sent: its Service, change number and trigger time (guest clock) */
  readonly last?: { service: number; gen: number; atMs: number };
}

/** The pid of the process whose command line holds `arg`, if any. */
function pidWith(arg: string): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').includes(arg)) return Number(d);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

function cpuOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    return cpuSeconds(pid).self;
  } catch {
    return undefined;
  }
}

async function churn(
  api: LabApi,
  parallel: number,
  o: { rate: number; seconds: number; services: number; endpoints: number; firstGen: number; skewMs: number },
  pids: { apiserver?: number; etcd?: number },
): Promise<ChurnWrites> {
  const next = churnServices(o.services);
  let sent = 0;
  let ok = 0;
  let failed = 0;
  let inFlight = 0;
  let ticks = 0;
  let capped = 0;
  let writeMsSum = 0;
  let due = 0;
  let last: ChurnWrites['last'];
  const pending = new Set<Promise<void>>();
  const cpu0 = { writer: process.cpuUsage(), apiserver: cpuOf(pids.apiserver), etcd: cpuOf(pids.etcd) };
  const startMs = Date.now();
  const end = startMs + o.seconds * 1000;
  for (let now = startMs; now < end; now = Date.now()) {
    due = Math.floor(((now - startMs) * o.rate) / 1000);
    ticks++;
    if (due > sent && inFlight >= parallel) capped++;
    while (sent < due && inFlight < parallel) {
      const service = next();
      const gen = churnGen(0, o.firstGen + sent);
      const t = Date.now();
      const at = new Date(t + o.skewMs);
      sent++;
      inFlight++;
      last = { service, gen, atMs: at.getTime() };
      const p: Promise<void> = api
        .call('PUT', `${SLICES}/${labBenchSliceName(service)}`, labBenchSlice(service, o.endpoints, gen, at))
        .then(
          (r) => {
            if (r.status >= 200 && r.status < 300) ok++;
            else failed++;
            writeMsSum += Date.now() - t;
          },
          () => {
            failed++;
          },
        )
        .finally(() => {
          inFlight--;
          pending.delete(p);
        });
      pending.add(p);
    }
    await sleep(1);
  }
  await Promise.all(pending);
  const seconds = (Date.now() - startMs) / 1000;
  const w = process.cpuUsage(cpu0.writer);
  const per = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined ? undefined : (b - a) / seconds;
  return {
    targetRate: o.rate,
    seconds,
    sent,
    ok,
    failed,
    notSent: Math.max(0, due - sent),
    achievedRate: ok / seconds,
    writers: parallel,
    capShare: capped / Math.max(1, ticks),
    writeMeanMs: writeMsSum / Math.max(1, ok + failed),
    apiserverCpu: per(cpu0.apiserver, cpuOf(pids.apiserver)),
    etcdCpu: per(cpu0.etcd, cpuOf(pids.etcd)),
    writerCpu: (w.user + w.system) / 1e6 / seconds,
    hostCpus: os.cpus().length,
    hostLoad: os.loadavg()[0]!,
    ...(last ? { last } : {}),
  };
}

function body(req: http.IncomingMessage): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    let s = '';
    req.on('data', (d) => (s += d));
    req.on('end', () => resolve(s ? (JSON.parse(s) as Record<string, number>) : {}));
    req.on('error', reject);
  });
}

async function main(): Promise<void> {
  const [dirArg, portFile, parallelArg = '32'] = process.argv.slice(2);
  if (!dirArg || !portFile) throw new Error('usage: lab-writer.js LAB_DIR PORT_FILE [PARALLEL]');
  const dir = path.resolve(dirArg);
  const parallel = Number(parallelArg);
  const info = JSON.parse(readFileSync(path.join(dir, 'lab.json'), 'utf8')) as LabInfo;
  const api = new LabApi(dir, `https://127.0.0.1:${info.apiservers.a.port}`, parallel);
  // looked up per churn: the bench restarts the API server (a new pid)
  const pids = () => ({
    apiserver: pidWith(`--secure-port=${info.apiservers.a.port}`),
    etcd: pidWith(`--listen-client-urls=http://127.0.0.1:${info.etcd.clientPort}`),
  });
  const server = http.createServer((req, res) => {
    const reply = (code: number, v: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(v));
    };
    void (async () => {
      try {
        if (req.method === 'GET' && req.url === '/time') return reply(200, { ms: Date.now() });
        const b = await body(req);
        if (req.method === 'POST' && req.url === '/change') {
          const t = Date.now();
          const at = new Date(t + b.skewMs!);
          const put = () =>
            api.call(
              'PUT',
              `${SLICES}/${labBenchSliceName(b.service!)}`,
              labBenchSlice(b.service!, b.endpoints!, b.gen!, at),
            );
          // after an API server restart the first write may meet a kept connection the old server closed
          const r = await put().catch(put);
          return reply(200, { atMs: at.getTime(), answeredMs: Date.now() - t, status: r.status });
        }
        if (req.method === 'POST' && req.url === '/churn') {
          return reply(200, await churn(api, parallel, b as Parameters<typeof churn>[2], pids()));
        }
        reply(404, { error: `no ${req.method} ${req.url}` });
      } catch (e) {
        reply(500, { error: (e as Error).message });
      }
    })();
  });
  // a segment's answer comes after it: no time limit on a request
  server.requestTimeout = 0;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  writeFileSync(portFile, JSON.stringify({ port: (server.address() as { port: number }).port }) + '\n');
  const stop = () => server.close(() => void api.close().then(() => process.exit(0)));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((e) => {
  console.error(`lab-writer: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
