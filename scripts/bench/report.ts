// Prints `make bench` results as a table with ratios against a peer: the row's own peer timed
// in the same boot (peerSeconds), else the ipvsadm side's same step (its own fresh boot).
import { readFileSync } from 'node:fs';

interface Row {
  side: string;
  what: string;
  services: number;
  dests: number;
  seconds: number;
  /** the peer timed in the same boot, when the row has its own */
  peer?: string;
  peerSeconds?: number;
}

const rows: Row[] = readFileSync(process.argv[2]!, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Row);
const peer = (what: string): number | undefined => rows.find((r) => r.side === 'ipvsadm' && r.what === what)?.seconds;
const label: Record<string, string> = {
  ipvsadm: 'ipvsadm 1.31 (-R / -Sn)',
  ours: 'kube-ipvs client (run / listAll)',
  cli: 'kube-ipvs ipvsadm (-R / -Sn)',
};
const first = rows[0];
if (first)
  console.log(`\nIPVS table: ${first.services} services x ${first.dests} real servers, each side in a fresh VM boot\n`);
console.log(`${'side'.padEnd(34)} ${'step'.padEnd(10)} ${'seconds'.padStart(9)} ${'vs peer'.padStart(11)}`);
console.log('-'.repeat(67));
for (const r of rows) {
  if (r.what.endsWith('-identical-to-ipvsadm')) {
    const opt = r.what.startsWith('dump') ? '-Sn' : '-Ln';
    console.log(
      `${(label[r.side] ?? r.side).padEnd(34)} ${opt} output byte-identical to ipvsadm: ${r.seconds ? 'yes' : 'NO'}`,
    );
    continue;
  }
  const p = r.peerSeconds ?? peer(r.what);
  const ratio = p ? `${(r.seconds / p).toFixed(2)}x` : '-';
  const beside = r.peerSeconds !== undefined ? `  (${r.peer} ${r.peerSeconds.toFixed(2)} s, same boot)` : '';
  console.log(
    `${(label[r.side] ?? r.side).padEnd(34)} ${r.what.padEnd(10)} ${r.seconds.toFixed(2).padStart(9)} ${ratio.padStart(11)}${beside}`,
  );
}
