// Prints the daemon benchmark (scripts/bench/daemon-latency.ts) as a table: per table size,
// cold start, and one endpoint change from API write to kernel, against kube-proxy's sync
// pattern for one change measured in the same VM boot.
import { readFileSync } from 'node:fs';

interface Row {
  services: number;
  endpoints: number;
  what: string;
  [k: string]: unknown;
}

const rows: Row[] = readFileSync(process.argv[2]!, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Row);
const sizes = [...new Set(rows.map((r) => `${r.services}x${r.endpoints}`))];
const fmt = (ms: unknown) => (typeof ms === 'number' ? `${ms.toFixed(0)} ms` : '-');
console.log('\nkube-ipvs daemon: API event -> kernel (1,000 single endpoint changes, one at a time), each size in a fresh VM boot\n');
console.log(`${'services x endpoints'.padEnd(22)} ${'cold start'.padStart(11)} ${'writes'.padStart(8)} ${'full check'.padStart(11)} ${'p50'.padStart(9)} ${'p99'.padStart(9)} ${'max'.padStart(9)} ${'kube-proxy pattern p50'.padStart(23)} ${'p50 ratio'.padStart(10)}`);
console.log('-'.repeat(122));
for (const size of sizes) {
  const of = (what: string) => rows.find((r) => `${r.services}x${r.endpoints}` === size && r.what === what);
  const cold = of('cold start');
  const ev = of('event to kernel');
  const peer = of('kube-proxy pattern, one change');
  const check = of('full check, no change');
  const ratio = ev && peer ? `${((ev.p50ms as number) / (peer.p50ms as number)).toFixed(3)}x` : '-';
  console.log(
    `${size.padEnd(22)} ${(cold ? `${(cold.seconds as number).toFixed(1)} s` : '-').padStart(11)} ${String(cold?.ipvsWrites ?? '-').padStart(8)} ` +
      `${(check ? `${(check.seconds as number).toFixed(1)} s` : '-').padStart(11)} ` +
      `${fmt(ev?.p50ms).padStart(9)} ${fmt(ev?.p99ms).padStart(9)} ${fmt(ev?.maxms).padStart(9)} ${fmt(peer?.p50ms).padStart(23)} ${ratio.padStart(10)}`,
  );
}
