// make bench, issue 28: what one node costs the API server per hour of steady state, kube-ipvs
// and the real kube-proxy (IPVS mode, .k8s/bin) side by side: both started at once in the same
// VM boot, each in a network namespace of its own (lab slots 1 and 2), against the lab's real
// kube-apiserver + etcd holding the objects run.sh loaded (lab-load.ts), with the server's
// default watch timeouts and nothing written to the objects. Once both have synced their caches
// and SETTLE_SECONDS more have passed (the rest of their first syncs, their first Events), the
// window of STEADY_SECONDS (default an hour) begins. Per side over the window (api-cost.ts):
//  - requests by verb (the audit log, by User-Agent): watch restarts, relists, Events;
//  - connections opened to the server (SYNs from the side's namespace; each a TLS handshake);
//  - the bytes it received from the server (every packet from the server's address and port
//    into its namespace): the byte count that holds with both sides running at once, where the
//    server's own size metrics cannot tell them apart.
// Both sides run through the same window, so neither is measured in a quieter hour than the other.
// Prints JSON lines; report-kube-proxy.ts prints them as a table.
//
//   node dist/scripts/bench/steady-state.js SERVICES ENDPOINTS   (in the VM, KUBE_IPVS_LAB set)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { kubeProxyIdentity, labFromEnv } from '../../testkit/lab-client';
import { tryRun } from '../../testkit/netns';
import { benchNodeNamespace, cachesSynced, recordLine } from './bench-node';
import { ApiCostMeter } from './api-cost';
import {
  e2eProxyConfig,
  LoggedProcess,
  SERVICE_ACCOUNT_DIR,
  startKubeIpvs,
  startKubeProxy,
} from '../../testkit/processes';
import { NODE_NAME } from './lab-bench-objects';

type Side = 'kube-proxy' | 'kube-ipvs';

const [servicesArg = '1000', endpointsArg = '10'] = process.argv.slice(2);
const env = (name: string, fallback: string) => process.env[name] || fallback;
const STEADY_SECONDS = Number(env('BENCH_STEADY_SECONDS', '3600'));
const SETTLE_SECONDS = Number(env('BENCH_STEADY_SETTLE_SECONDS', '60'));
const SYNC_TIMEOUT_MS = Number(env('BENCH_STEADY_TIMEOUT_SECONDS', '1800')) * 1000;
const SIDES: readonly Side[] = ['kube-proxy', 'kube-ipvs'];
const nsOf = (side: Side) => `ss-${side === 'kube-ipvs' ? 'ipvs' : 'kp'}`;
const slotOf = (side: Side) => (side === 'kube-proxy' ? 1 : 2);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function record(side: Side | undefined, what: string, value: Record<string, unknown>): void {
  const size = { services: Number(servicesArg), endpoints: Number(endpointsArg) };
  recordLine({ bench: 'steady', ...size, ...(side ? { side } : {}), what, ...value });
}

async function main(): Promise<void> {
  const lab = labFromEnv();
  const server = await lab.server('a');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-steady-'));
  await kubeProxyIdentity(lab, dir, { duration: '6h' });
  const cfg = path.join(dir, 'proxy.conf');
  // each in a namespace of its own: the same loopback addresses do not collide
  writeFileSync(
    cfg,
    e2eProxyConfig({
      dir,
      node: NODE_NAME,
      ipvs: ['syncPeriod: 30s'],
      forKubeProxy: true,
      metrics: '127.0.0.1:10249',
      healthz: '127.0.0.1:10256',
    }),
  );
  record(undefined, 'conditions', {
    lab: (await lab.info()).version,
    cpus: os.cpus().length,
    steadySeconds: STEADY_SECONDS,
    settleSeconds: SETTLE_SECONDS,
  });
  const meters = new Map<Side, ApiCostMeter>();
  const procs: LoggedProcess[] = [];
  try {
    for (const side of SIDES) {
      benchNodeNamespace(nsOf(side), slotOf(side));
      const meter = new ApiCostMeter(lab, nsOf(side), server, `${side}/`);
      meter.install();
      meters.set(side, meter);
    }
    console.error(`>> kube-proxy and kube-ipvs started at once: ${servicesArg} x ${endpointsArg}`);
    const starts = await Promise.all(SIDES.map((side) => meters.get(side)!.mark()));
    const t0 = Date.now();
    const started = SIDES.map((side) =>
      side === 'kube-proxy'
        ? startKubeProxy([`--config=${cfg}`, '--v=1', '--logging-format=json'], nsOf(side))
        : startKubeIpvs(['--config', cfg, '--v=1'], {}, nsOf(side)),
    );
    procs.push(...started);
    await Promise.all(SIDES.map((side, i) => cachesSynced(side, started[i]!, SYNC_TIMEOUT_MS)));
    await sleep(SETTLE_SECONDS * 1000);
    for (const [i, side] of SIDES.entries())
      record(side, 'api', {
        phase: 'start and settle',
        seconds: (Date.now() - t0) / 1000,
        ...(await meters.get(side)!.since(starts[i]!)),
      });

    console.error(`>> steady state for ${STEADY_SECONDS} s`);
    const marks = await Promise.all(SIDES.map((side) => meters.get(side)!.mark()));
    const w0 = Date.now();
    await sleep(STEADY_SECONDS * 1000);
    for (const [i, side] of SIDES.entries()) {
      const p = started[i]!;
      if (p.child.exitCode !== null || p.child.signalCode !== null)
        throw new Error(`${side} exited during the steady state:\n${p.text.slice(-15).join('\n')}`);
    }
    const seconds = (Date.now() - w0) / 1000;
    for (const [i, side] of SIDES.entries())
      record(side, 'api', { phase: 'steady state', seconds, ...(await meters.get(side)!.since(marks[i]!)) });
  } finally {
    await Promise.all(procs.map((p) => p.kill('SIGKILL').catch(() => undefined)));
    for (const side of SIDES) tryRun('ip', ['netns', 'del', nsOf(side)]);
    rmSync(dir, { recursive: true, force: true });
    rmSync(SERVICE_ACCOUNT_DIR, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
