// The peer under churn: kube-proxy's IPVS sync loop, as its netlink requests, running back to
// back (ipvs.minSyncPeriod 0, kube-proxy's default) while the same churn generator as the
// daemon's (churn-generator.ts: same rate, same Services in the same order) writes into a fake
// API server in this process.
//
// Each sync, as kube-proxy's syncProxyRules does it:
//  - takes the pending changes (the Services changed since the last sync began, with their
//    write times): kube-proxy's endpointsMap.Update at the start of a sync;
//  - plans the changed Services from the API objects as they are then (daemon-oracle.ts
//    desiredForService: kube-ipvs's own planner, one Service at a time);
//  - walks the whole table one request at a time: the service dump, then per virtual server
//    GET (syncService), GET again and the dest dump (syncEndpoint), and for a changed one its
//    writes: NEW_DEST per new real server; per removed one what GracefulDeleteRS does (K8S
//    pkg/proxy/ipvs/graceful_termination.go): a dest dump (deleteRsFunc's GetRealServers),
//    then DEL_DEST at once when the real server has no connections (none here: the bench
//    carries no traffic), else SET_DEST to weight 0 for the minute check to delete later.
// Lag per change: its API write -> the end of the first sync that began after it (the
// daemon's kubeproxy_network_programming_duration_seconds counts the same way).
//
// What favours the peer: its intake is a callback from the generator (no watch, no JSON, no
// informer cache), it plans only the changed Services (kube-proxy re-plans every Service each
// sync, but writes only for the changed ones, as here), and it does none of the iptables/ipset
// work a kube-proxy sync also does. What it shares with the daemon: the kernel (its own netns
// here, with its own dest trash) and the guest's CPU (the generator runs in this process, as
// it runs beside the daemon in the bench process).
//
// Run as a script (daemon-latency.ts does, inside a fresh network namespace, after the daemon
// has stopped): `peer-churn.js SERVICES ENDPOINTS FIRSTGEN SECONDS RATE...` loads the bench
// table (daemon-fixtures.ts plus the rollout Service) through our client, then runs one churn
// segment per rate; prints one JSON line for the load and one per rate.
import { Ipvs, IpvsOp } from '../../lib/kernel/ipvs/ipvs';
import { openIpvs } from '../../lib/kernel/ipvs/ipvs-netlink';
import { realServerKey, RealServer, virtualServerKey } from '../../lib/model/ipvs';
import { NETWORK_PROGRAMMING_BUCKETS } from '../../lib/daemon/metrics';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { FakeApiServer } from '../../testkit/fake-apiserver';
import { ChurnWrite, generateChurn } from './churn-generator';
import { benchObjects, benchServiceName } from './daemon-fixtures';
import { compareKernel, DesiredTable, desiredForService, desiredFromApi, TableComparison } from './daemon-oracle';
import { rolloutObjects } from './daemon-rollout';

export interface PeerSyncCounts {
  /** netlink requests that read (dumps and GETs) */
  readonly reads: number;
  readonly writes: number;
}

/** One sync of kube-proxy's pattern over the whole table, writing for the `changed` Services. */
export async function peerSync(ipvs: Ipvs, server: FakeApiServer, changed: ReadonlySet<number>): Promise<PeerSyncCounts> {
  // the changed Services as the API has them when the sync begins
  const want: DesiredTable = new Map();
  for (const i of changed) for (const [k, v] of desiredForService(server, benchServiceName(i))) want.set(k, v);
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

export interface PeerChurnOptions {
  readonly server: FakeApiServer;
  readonly ipvs: Ipvs;
  readonly services: number;
  readonly endpoints: number;
  readonly rate: number;
  readonly seconds: number;
  readonly firstGen: number;
}

export interface PeerChurnResult {
  readonly targetRate: number;
  readonly seconds: number;
  readonly updates: number;
  readonly achievedRate: number;
  /** API write -> end of the sync that applied it, every change; the AtMost figures are kube-proxy's histogram bucket bounds (as the daemon's) */
  readonly lag: { count: number; meanSeconds: number; p99Seconds: number; maxSeconds: number; p99AtMostSeconds: number; maxAtMostSeconds: number };
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

export async function runPeerChurn(o: PeerChurnOptions): Promise<PeerChurnResult> {
  const pending: ChurnWrite[] = [];
  let wake: (() => void) | undefined;
  let writing = true;
  const poke = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const generated = generateChurn({
    ...o,
    onWrite: (w) => {
      pending.push(w);
      poke();
    },
  }).then((r) => {
    writing = false;
    poke();
    return r;
  });

  const lags: number[] = [];
  const syncMs: number[] = [];
  let maxBatch = 0;
  let ipvsReads = 0;
  let ipvsWrites = 0;
  let lastSyncEnd = Date.now();
  while (writing || pending.length > 0) {
    if (pending.length === 0) {
      await new Promise<void>((r) => (wake = r));
      continue;
    }
    const batch = pending.splice(0);
    const changed = new Set(batch.map((w) => w.service));
    maxBatch = Math.max(maxBatch, changed.size);
    const t0 = Date.now();
    const c = await peerSync(o.ipvs, o.server, changed);
    lastSyncEnd = Date.now();
    syncMs.push(lastSyncEnd - t0);
    ipvsReads += c.reads;
    ipvsWrites += c.writes;
    for (const w of batch) lags.push((lastSyncEnd - w.atMs) / 1000);
  }
  const written = await generated;
  const sorted = [...lags].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
  return {
    targetRate: o.rate,
    seconds: written.seconds,
    updates: written.updates,
    achievedRate: written.updates / written.seconds,
    lag: {
      count: lags.length,
      meanSeconds: lags.length ? lags.reduce((a, b) => a + b, 0) / lags.length : 0,
      p99Seconds: at(0.99), maxSeconds: at(1), p99AtMostSeconds: bucketOf(at(0.99)), maxAtMostSeconds: bucketOf(at(1)),
    },
    syncs: syncMs.length,
    maxBatch,
    meanSyncMs: syncMs.length ? syncMs.reduce((a, b) => a + b, 0) / syncMs.length : 0,
    maxSyncMs: Math.max(0, ...syncMs),
    ipvsReads,
    ipvsWrites,
    settleSeconds: Math.max(0, (lastSyncEnd - written.lastWriteAtMs) / 1000),
    final: await compareKernel(o.ipvs, desiredFromApi(o.server)),
  };
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

async function main(): Promise<void> {
  const [services, endpoints, firstGen, seconds, ...rates] = process.argv.slice(2).map(Number);
  if (!services || !endpoints || firstGen === undefined || !seconds || rates.length === 0) {
    throw new Error('usage: peer-churn.js SERVICES ENDPOINTS FIRSTGEN SECONDS RATE...');
  }
  const server = new FakeApiServer();
  for (const obj of benchObjects(services, endpoints, rolloutObjects())) server.create(obj);
  const ipvs = await openIpvs();
  try {
    const t = Date.now();
    const ops = loadOps(desiredFromApi(server));
    for (let k = 0; k < ops.length; k += 10_000) {
      const failed = (await ipvs.run(ops.slice(k, k + 10_000))).find((r) => !r.ok);
      if (failed && !failed.ok) throw failed.error;
    }
    console.log(JSON.stringify({ what: 'load', seconds: (Date.now() - t) / 1000, ops: ops.length }));
    let gen = firstGen;
    for (const rate of rates) {
      const r = await runPeerChurn({ server, ipvs, services, endpoints, rate: rate!, seconds, firstGen: gen });
      gen += r.updates;
      console.log(JSON.stringify({ what: 'churn', ...r }));
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
