/**
 * `kube-ipvs service list` as text, cilium service list's shape: one row per frontend, its
 * backends one per line under the Backend column. Pure.
 */
import { Affinity, Backend, FrontendRow, ServiceListResponse } from '../../model/views';

const HEADER = ['ID', 'Frontend', 'Service Type', 'Service', 'Scheduler', 'Affinity', 'Backend'] as const;
const GAP = '   ';

/** "ClientIP 10800s" or "None". */
export function formatAffinity(a: Affinity): string {
  return a.kind === 'ClientIP' ? `ClientIP ${a.timeoutSeconds}s` : 'None';
}

/** One backend line: "1 => 10.0.0.5:80 (active, weight 1)". */
export function formatBackend(b: Backend, i: number): string {
  return `${i + 1} => ${b.address} (${b.state}, weight ${b.weight})`;
}

function columns(f: FrontendRow): string[] {
  return [String(f.id), f.frontend, f.type ?? '-', f.service ?? '-', f.scheduler, formatAffinity(f.affinity)];
}

/** The service list as a table, one row per frontend and a line per backend. */
export function formatServiceList(r: ServiceListResponse): string {
  const rows = r.frontends.map(columns);
  const widths = HEADER.slice(0, -1).map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const pad = (cells: readonly string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(GAP) + GAP;
  const blank = pad(widths.map(() => ''));
  let out = `${pad(HEADER.slice(0, -1))}${HEADER[HEADER.length - 1]}\n`;
  r.frontends.forEach((f, n) => {
    const backends = f.backends.length > 0 ? f.backends.map(formatBackend) : ['(no backends)'];
    out += `${pad(rows[n]!)}${backends[0]}\n`;
    for (const b of backends.slice(1)) out += `${blank}${b}\n`;
  });
  const refused = r.refused ?? [];
  if (refused.length > 0) {
    out += `\nRefused frontends (not programmed):\n`;
    for (const f of refused) out += `  ${f.service} ${f.field} ${f.value}: ${f.reason}: ${f.message}\n`;
  }
  return out;
}
