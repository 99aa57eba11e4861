import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { proxierOverTwins } from '../../lib/testing/proxier-twins';
import { benchObjects } from './daemon-fixtures';

async function main() {
  const n = Number(process.argv[2] ?? 10000);
  const t = await proxierOverTwins();
  const objs = benchObjects(n, 10, []).filter((o) => o.kind !== 'Node') as unknown as (V1Service | V1EndpointSlice)[];
  let t0 = Date.now();
  t.add(...objs);
  console.log('add', Date.now() - t0);
  t0 = Date.now();
  await t.start();
  console.log('first sync', Date.now() - t0, JSON.stringify(t.proxier.lastResult?.phasesMs));
  t0 = Date.now();
  await t.settle(31_000);
  console.log('full sync', Date.now() - t0, t.proxier.lastResult?.full, JSON.stringify(t.proxier.lastResult?.phasesMs));
}
void main();
