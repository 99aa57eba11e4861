// The peer under churn: kube-proxy's IPVS sync loop, as its netlink requests, running back to
// back (ipvs.minSyncPeriod 0, kube-proxy's default) while the same churn generator as the
// daemon's (churn-generator.ts: same rates, same Services in the same order) writes into the
// fake API server.
//
// Each sync, as kube-proxy's syncProxyRules does it:
//  - takes the pending changes (the Services changed since the last sync began, with their
//    write times): kube-proxy's endpointsMap.Update at the start of a sync;
//  - walks the whole table one request at a time: the service dump, then per virtual server
//    GET (syncService), GET again and the dest dump (syncEndpoint), and for a changed one its
//    writes: NEW_DEST per new real server; per removed one what GracefulDeleteRS does (K8S
//    pkg/proxy/ipvs/graceful_termination.go): a dest dump (deleteRsFunc's GetRealServers),
//    then DEL_DEST at once when the real server has no connections (none here: the bench
//    carries no traffic), else SET_DEST to weight 0 for its minute check to delete later.
// Lag per change: its API write -> the end of the first sync that began after it (the
// daemon's kubeproxy_network_programming_duration_seconds counts the same way).
//
// What favours the peer: its intake is the generator's change log (Service, change number,
// write time) over a pipe, not a watch (no JSON, no informer cache); it computes a changed
// Service's real servers straight from the slice the change wrote (its ready endpoints; no
// planner, no per-Service state), where kube-proxy also re-plans every Service each sync; and
// it does none of the iptables/ipset work a kube-proxy sync also does. What it shares with
// the daemon: the generator in the bench process (its own CPU, as beside the daemon), the
// kernel (here in a network namespace of its own: its own table and dest trash) and the guest.
//
// Run as a script (daemon-latency.ts spawns it in a fresh netns after the daemon stopped):
// `peer-churn.js SERVICES ENDPOINTS` loads the bench table (daemon-fixtures.ts plus the
// rollout Service) through our client and prints {"what":"load",...}; then, per segment, reads
// from stdin "start RATE", one "w SERVICE GEN WRITE_MS" per change, "end UPDATES SECONDS
// LAST_WRITE_MS", and prints the segment's PeerChurnResult as one JSON line once every change
// is applied.
import { createInterface } from 'node:readline';
import { Ipvs, IpvsOp } from '../../lib/kernel/ipvs/ipvs';
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { realServerKey, RealServer, virtualServerKey } from '../../lib/model/ipvs';
import { NETWORK_PROGRAMMING_BUCKETS } from '../../lib/daemon/metrics';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { FakeApiServer, FakeObject } from '../../testkit/fake-apiserver';
import { ChurnWrite, ChurnWritten, generateChurn } from './churn-generator';
import { benchObjects, benchSlice, clusterIP } from './daemon-fixtures';
import { compareKernel, DesiredTable, desiredFromApi, TableComparison } from './daemon-oracle';
import { rolloutObjects } from './daemon-rollout';

export interface PeerSyncCounts {
  /** netlink requests that read (dumps and GETs) */
  readonly reads: number;
  readonly writes: number;
}

/** One sync of kube-proxy's pattern over the whole table, writing where `want` (the changed virtual servers) differs. */
export async function peerSync(ipvs: Ipvs, want: DesiredTable): Promise<PeerSyncCounts> {
  let reads = 0;
  let writes = 0;
  const all = await ipvs.listServices();
  reads++;
  for (const vs of all) {
    await ipvs.getService(vs); // syncService
    await ipvs.getService(vs); // syncEndpoint
    const dests = await ipvs.listRealServers(vs);
    reads += 3;
    const w = want.get(virtualServerKey(vs));
    if (!w) continue;
    const have = new Map<string, RealServer>(dests.map((d) => [realServerKey(d), d]));
    for (const k of w.realServers) {
      if (have.has(k)) continue;
      const [address, port] = splitHostPort(k);
      await ipvs.apply({ kind: 'newDest', vs, rs: { af: AF_INET, address, port, fwdMethod: 0, weight: 1 } });
      writes++;
    }
    for (const [k, d] of have) {
      if (w.realServers.has(k)) continue;
      // GracefulDeleteRS: deleteRsFunc dumps the dests again and deletes one without connections
      const now = (await ipvs.listRealServers(vs)).find((x) => realServerKey(x) === k);
      reads++;
      if (!now) continue;
      const rs = { af: d.af, address: d.address, port: d.port };
      if (now.activeConns + now.inactConns === 0) await ipvs.apply({ kind: 'delDest', vs, rs });
      else await ipvs.apply({ kind: 'setDest', vs, rs: { ...rs, fwdMethod: d.fwdMethod, weight: 0 } });
      writes++;
    }
  }
  return { reads, writes };
}

const splitHostPort = (k: string): [string, number] => {
  const at = k.lastIndexOf(':');
  return [k.slice(0, at), Number(k.slice(at + 1))];
};

/** Bench Service i's virtual server key (daemon-fixtures.ts: TCP port 80 on its ClusterIP). */
export const benchVirtualServerKey = (i: number): string => `TCP/${clusterIP(i)}:80`;

/** The real servers a bench slice asks for: its ready endpoints on its ports. */
export function sliceRealServers(slice: FakeObject): Set<string> {
  const out = new Set<string>();
  const ports = (slice.ports as { port: number }[] | undefined) ?? [];
  for (const e of (slice.endpoints as { addresses: string[]; conditions?: { ready?: boolean } }[] | undefined) ?? []) {
    if (e.conditions?.ready === false) continue;
    for (const a of e.addresses) for (const p of ports) out.add(`${a}:${p.port}`);
  }
  return out;
}

export interface PeerChurnResult {
  readonly targetRate: number;
  readonly seconds: number;
  readonly updates: number;
  readonly achievedRate: number;
  /** API write -> end of the sync that applied it, every change; the AtMost figures are kube-proxy's histogram bucket bounds (as the daemon's) */
  readonly lag: {
    count: number;
    meanSeconds: number;
    p99Seconds: number;
    maxSeconds: number;
    p99AtMostSeconds: number;
    maxAtMostSeconds: number;
  };
  readonly syncs: number;
  /** most changed Services one sync wrote for */
  readonly maxBatch: number;
  readonly meanSyncMs: number;
  readonly maxSyncMs: number;
  readonly ipvsReads: number;
  readonly ipvsWrites: number;
  /** from the last write to the end of the sync that applied it */
  readonly settleSeconds: number;
  readonly final: TableComparison;
}

/** The bucket bound at or above `v` (kube-proxy's network programming buckets; Infinity past the last). */
const bucketOf = (v: number) => NETWORK_PROGRAMMING_BUCKETS.find((b) => v <= b) ?? Infinity;

/** kube-proxy's sync loop over one table: the change log goes in through write(), a segment runs the loop until its writes are done and applied. */
export class PeerLoop {
  private pending: ChurnWrite[] = [];
  private wake: (() => void) | undefined;
  /** the newest change number per Service, for the final comparison */
  private readonly latest = new Map<number, number>();

  /** `loaded`: what the table was loaded with */
  constructor(
    private readonly ipvs: Ipvs,
    private readonly endpoints: number,
    private readonly loaded: DesiredTable,
  ) {}

  write(w: ChurnWrite): void {
    this.pending.push(w);
    this.latest.set(w.service, w.gen);
    this.poke();
  }

  private poke(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  /** Syncs back to back until `written` resolves (the generator stopped) and every change is applied. */
  async segment(rate: number, written: Promise<ChurnWritten>): Promise<PeerChurnResult> {
    let writing = true;
    const done = written.then((r) => {
      writing = false;
      this.poke();
      return r;
    });
    const lags: number[] = [];
    const syncMs: number[] = [];
    let maxBatch = 0;
    let ipvsReads = 0;
    let ipvsWrites = 0;
    let lastSyncEnd = Date.now();
    while (writing || this.pending.length > 0) {
      if (this.pending.length === 0) {
        await new Promise<void>((r) => (this.wake = r));
        continue;
      }
      const t0 = Date.now();
      const batch = this.pending;
      this.pending = [];
      // the changed Services' real servers as their newest slices ask
      const want: DesiredTable = new Map();
      for (const w of batch)
        want.set(benchVirtualServerKey(w.service), { scheduler: 'rr', realServers: this.realServersOf(w.service) });
      maxBatch = Math.max(maxBatch, want.size);
      const c = await peerSync(this.ipvs, want);
      lastSyncEnd = Date.now();
      syncMs.push(lastSyncEnd - t0);
      ipvsReads += c.reads;
      ipvsWrites += c.writes;
      for (const w of batch) lags.push((lastSyncEnd - w.atMs) / 1000);
    }
    const w = await done;
    const sorted = [...lags].sort((a, b) => a - b);
    const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
    return {
      targetRate: rate,
      seconds: w.seconds,
      updates: w.updates,
      achievedRate: w.updates / w.seconds,
      lag: {
        count: lags.length,
        meanSeconds: lags.length ? lags.reduce((a, b) => a + b, 0) / lags.length : 0,
        p99Seconds: at(0.99),
        maxSeconds: at(1),
        p99AtMostSeconds: bucketOf(at(0.99)),
        maxAtMostSeconds: bucketOf(at(1)),
      },
      syncs: syncMs.length,
      maxBatch,
      meanSyncMs: syncMs.length ? syncMs.reduce((a, b) => a + b, 0) / syncMs.length : 0,
      maxSyncMs: Math.max(0, ...syncMs),
      ipvsReads,
      ipvsWrites,
      settleSeconds: Math.max(0, (lastSyncEnd - w.lastWriteAtMs) / 1000),
      final: await compareKernel(this.ipvs, this.desired()),
    };
  }

  private realServersOf(service: number): Set<string> {
    return sliceRealServers(benchSlice(service, this.endpoints, this.latest.get(service) ?? 0));
  }

  /** What the table should hold now: the loaded table with every changed Service's newest slice. */
  desired(): DesiredTable {
    const out: DesiredTable = new Map(this.loaded);
    for (const i of this.latest.keys())
      out.set(benchVirtualServerKey(i), { scheduler: 'rr', realServers: this.realServersOf(i) });
    return out;
  }
}

/** The IPVS ops that load what `desired` says (IPv4 TCP virtual servers, masquerading real servers at weight 1). */
export function loadOps(desired: DesiredTable): IpvsOp[] {
  const ops: IpvsOp[] = [];
  for (const [k, v] of desired) {
    const m = /^TCP\/(.+)$/.exec(k);
    if (!m) throw new Error(`the peer loads TCP virtual servers only, not ${k}`);
    const [address, port] = splitHostPort(m[1]!);
    const vs = { af: AF_INET, protocol: IPPROTO_TCP, address, port, fwmark: 0 } as const;
    ops.push({ kind: 'newService', vs: { ...vs, scheduler: v.scheduler } });
    for (const r of v.realServers) {
      const [a, p] = splitHostPort(r);
      ops.push({ kind: 'newDest', vs, rs: { af: AF_INET, address: a, port: p, fwdMethod: 0, weight: 1 } });
    }
  }
  return ops;
}

/** The bench table as daemon-latency.ts's API server starts (bench Services plus the rollout one). */
export function benchTable(services: number, endpoints: number): DesiredTable {
  const server = new FakeApiServer();
  for (const obj of benchObjects(services, endpoints, rolloutObjects())) server.create(obj);
  return desiredFromApi(server);
}

/** One segment in this process: the generator writes into `server` and feeds the loop directly (unit tests). */
export async function runPeerChurn(o: {
  server: FakeApiServer;
  loop: PeerLoop;
  services: number;
  endpoints: number;
  rate: number;
  seconds: number;
  firstGen: number;
}): Promise<PeerChurnResult> {
  return o.loop.segment(o.rate, generateChurn({ ...o, onWrite: (w) => o.loop.write(w) }));
}

async function main(): Promise<void> {
  const [services, endpoints] = process.argv.slice(2).map(Number);
  if (!services || !endpoints)
    throw new Error('usage: peer-churn.js SERVICES ENDPOINTS (then the change log on stdin)');
  const table = benchTable(services, endpoints);
  const ipvs = await openIpvs();
  try {
    const t = Date.now();
    const ops = loadOps(table);
    for (let k = 0; k < ops.length; k += 10_000) {
      const failed = (await ipvs.run(ops.slice(k, k + 10_000))).find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
    }
    console.log(JSON.stringify({ what: 'load', seconds: (Date.now() - t) / 1000, ops: ops.length }));
    const loop = new PeerLoop(ipvs, endpoints, table);
    let segment: Promise<void> = Promise.resolve();
    let end: ((w: ChurnWritten) => void) | undefined;
    for await (const line of createInterface({ input: process.stdin })) {
      const [op, a, b, c] = line.split(' ');
      if (op === 'w') loop.write({ service: Number(a), gen: Number(b), atMs: Number(c) });
      else if (op === 'start') {
        const written = new Promise<ChurnWritten>((r) => (end = r));
        segment = loop.segment(Number(a), written).then((r) => console.log(JSON.stringify({ what: 'churn', ...r })));
      } else if (op === 'end') {
        end?.({ updates: Number(a), seconds: Number(b), lastWriteAtMs: Number(c), startMs: 0 });
        await segment;
      }
    }
  } finally {
    ipvs.close();
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
