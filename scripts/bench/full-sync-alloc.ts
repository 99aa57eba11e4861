// make bench, on the host: what one periodic full sync allocates at N Services x 10
// endpoints with nothing changed, and where (V8's sampling heap profiler, counting objects
// the collector has since freed). The proxier over the in-memory fakes, reading its table
// back through /proc/net/ip_vs's text as the daemon does (the fake's own text rendering is
// shown apart, as it is not the daemon's). This is the garbage each syncPeriod leaves for
// the collector: what the VM bench's settled RSS rises and falls with.
// Usage: node dist/scripts/bench/full-sync-alloc.js [SERVICES] [SYNCS]
import { Session } from 'node:inspector/promises';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { proxierOverFakes } from '../../testkit/proxier-over-fakes';

const SERVICES = Number(process.argv[2] ?? 10_000);
const SYNCS = Number(process.argv[3] ?? 3);
const ENDPOINTS = 10;
const SYNC_PERIOD_MS = 30_000;

interface SamplingNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: SamplingNode[];
}

const octets = (i: number) => `${(i >> 8) & 255}.${i & 255}`;

/** A frame as "function file:line" (file under dist/ or node_modules/); undefined for a builtin. */
function frameName(n: SamplingNode): string | undefined {
  const f = n.callFrame;
  if (!f.url) return undefined;
  return `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}`;
}

/**
 * Bytes per frame, self sizes summed: a builtin's (String.prototype.split, Map.prototype.set)
 * named with its nearest caller that has a file; a sample with a fake anywhere in its stack
 * is the fakes' (the fake kernel's dump and its rendering of /proc text), under one key.
 */
function byFrame(root: SamplingNode): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (n: SamplingNode, caller: string, inFake: boolean) => {
    const here = frameName(n);
    const fake = inFake || /dist\/testkit\//.test(here ?? '');
    const key = fake ? FAKES : (here ?? `${n.callFrame.functionName || '(anonymous)'} in ${caller}`);
    if (n.selfSize > 0) out.set(key, (out.get(key) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c, here ?? caller, fake);
  };
  walk(root, '(root)', false);
  return out;
}

const FAKES = "the fakes' own (not the daemon's)";

async function main(): Promise<void> {
  const t = await proxierOverFakes({ proc: 'listed', settings: { syncPeriodMs: SYNC_PERIOD_MS } });
  for (let i = 0; i < SERVICES; i++) {
    const ip = `10.96.${octets(i)}`;
    t.add(
      makeService(
        'default',
        `s${i}`,
        (s) => (s.spec = { clusterIP: ip, clusterIPs: [ip], ports: [svcPort('http', 80)] }),
      ),
      makeEndpointSlice('default', `s${i}`, `s${i}-1`, (sl) => {
        sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
        sl.endpoints = Array.from({ length: ENDPOINTS }, (_, j) => ({
          addresses: [`10.${100 + j}.${octets(i)}`],
          conditions: { ready: true, serving: true, terminating: false },
        }));
      }),
    );
  }
  await t.start();
  // one full sync first, so the proxier's caches (the parsed /proc blocks) are warm
  await t.settle(SYNC_PERIOD_MS);
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 4096,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  const before = t.results.length;
  for (let s = 0; s < SYNCS; s++) await t.settle(SYNC_PERIOD_MS);
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as { profile: { head: SamplingNode } };
  session.disconnect();
  const syncs = t.results.length - before;
  const frames = [...byFrame(profile.head)].sort((a, b) => b[1] - a[1]);
  const total = frames.reduce((n, [, b]) => n + b, 0);
  const fake = frames.find(([k]) => k === FAKES)?.[1] ?? 0;
  const mb = (b: number) => (b / syncs / 2 ** 20).toFixed(1).padStart(7);
  console.log(
    `\nallocated per full sync, ${SERVICES} Services x ${ENDPOINTS} endpoints, nothing changed (${syncs} syncs sampled)\n`,
  );
  console.log(`${mb(total)} MB  all`);
  console.log(`${mb(fake)} MB  ${FAKES}`);
  console.log(`${mb(total - fake)} MB  the proxier's, of which:\n`);
  for (const [k, b] of frames.filter(([k]) => k !== FAKES).slice(0, 20)) console.log(`${mb(b)} MB  ${k}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
