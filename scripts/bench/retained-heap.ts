// make bench, on the host: does kube-ipvs's own state grow over endpoint churn? The trackers
// and the proxier over the in-memory fakes (no kernel, no API server, no client-node cache),
// N Services x 10 endpoints, then UPDATES endpoint-slice updates (each moves every endpoint of a
// Service to new addresses; a sync per 1,000), then the drain timeout. The heap is measured after
// forced full GCs (`node --expose-gc`), so it is what is retained, not garbage V8 has yet to
// collect (the VM bench's RSS and heap figures include both). The fakes' own op logs are
// cleared before each measurement. Ratio: against the heap retained after the first sync.
// Usage: node --expose-gc dist/scripts/bench/retained-heap.js [SERVICES] [UPDATES]
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { proxierOverFakes } from '../../testkit/proxier-over-fakes';

const SERVICES = Number(process.argv[2] ?? 10_000);
const UPDATES = Number(process.argv[3] ?? 30_000);
const ENDPOINTS = 10;
const DRAIN_TIMEOUT_MS = 20 * 60_000;

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with node --expose-gc');
  process.exit(2);
}

const octets = (i: number) => `${(i >> 8) & 255}.${i & 255}`;
/** Service i's slice at generation `gen`: every endpoint moves when the generation does */
const sliceOf = (i: number, gen: number): V1EndpointSlice =>
  makeEndpointSlice('default', `s${i}`, `s${i}-1`, (sl) => {
    sl.metadata!.resourceVersion = String(gen + 1);
    sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
    sl.endpoints = Array.from({ length: ENDPOINTS }, (_, j) => ({
      addresses: [`10.${100 + ((j + gen) % 100)}.${octets(i)}`],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: 'node-b',
    }));
  });

async function main(): Promise<void> {
  const t = await proxierOverFakes({ settings: { syncPeriodMs: 3_600_000 } });
  const retainedMb = (): number => {
    t.ipvs.applied.length = 0;
    t.link.calls.length = 0;
    gc!();
    gc!();
    return process.memoryUsage().heapUsed / 2 ** 20;
  };
  const rows: [string, number][] = [];
  const slices: V1EndpointSlice[] = [];
  for (let i = 0; i < SERVICES; i++) {
    const ip = `10.96.${octets(i)}`;
    slices.push(sliceOf(i, 0));
    t.add(
      makeService(
        'default',
        `s${i}`,
        (s) => (s.spec = { clusterIP: ip, clusterIPs: [ip], ports: [svcPort('http', 80)] }),
      ),
      slices[i]!,
    );
  }
  await t.start();
  await t.settle(1_000);
  rows.push(['after the first sync', retainedMb()]);
  const gens = new Array<number>(SERVICES).fill(0);
  for (let u = 1; u <= UPDATES; u++) {
    const i = (u * 7919) % SERVICES;
    const next = sliceOf(i, ++gens[i]!);
    t.replaceSlice(slices[i]!, next);
    slices[i] = next;
    if (u % 1_000 === 0) await t.settle(1_100);
    if (u % 10_000 === 0 || u === UPDATES) rows.push([`after ${u} updates (real servers draining)`, retainedMb()]);
  }
  await t.settle(DRAIN_TIMEOUT_MS);
  const { draining } = t.proxier.counts();
  rows.push([`after the drain timeout (${draining} draining)`, retainedMb()]);

  const base = rows[0]![1];
  console.log(
    `\nretained JS heap of the trackers and the proxier (host, over the fakes; forced GC): ${SERVICES} Services x ${ENDPOINTS} endpoints, ${UPDATES} endpoint-slice updates\n`,
  );
  const w = Math.max(...rows.map(([l]) => l.length));
  console.log(`${'when'.padEnd(w)}  ${'heap MB'.padStart(8)}  ${'vs first sync'.padStart(13)}`);
  console.log('-'.repeat(w + 25));
  for (const [label, v] of rows)
    console.log(`${label.padEnd(w)}  ${v.toFixed(1).padStart(8)}  ${`${(v / base).toFixed(2)}x`.padStart(13)}`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
