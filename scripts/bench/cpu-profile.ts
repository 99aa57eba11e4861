// Reads a V8 .cpuprofile (node --cpu-prof) and prints where the CPU went inside one window of
// it: self time per function, and time per frame of ours (dist/lib, inclusive: a frame counts
// once per sample however deep it recurs). The window is in the profile's clock (CLOCK_MONOTONIC
// microseconds, what process.hrtime gives any process on the same machine), as
// kube-proxy-peer.ts records it for the idle window when BENCH_PEER_CPU_PROFILE is set.
//
//   node dist/scripts/bench/cpu-profile.js PROFILE [FROM_US TO_US] [TOP]
import { readFileSync } from 'node:fs';

interface CallFrame {
  readonly functionName: string;
  readonly url: string;
  readonly lineNumber: number;
}
interface ProfileNode {
  readonly id: number;
  readonly callFrame: CallFrame;
  readonly children?: readonly number[];
}
export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface WindowSummary {
  /** microseconds sampled in the window, idle and garbage collection included */
  readonly totalUs: number;
  /** microseconds not in "(idle)": what the process spent on the CPU */
  readonly busyUs: number;
  /** self time per function, busiest first */
  readonly self: readonly { readonly frame: string; readonly us: number }[];
  /** inclusive time per frame of ours (url under lib/), busiest first */
  readonly ours: readonly { readonly frame: string; readonly us: number }[];
}

const IDLE = '(idle)';

function frameName(f: CallFrame): string {
  const file = f.url.replace(/^file:\/\//, '').replace(/^.*\/(dist\/|node_modules\/)/, '$1');
  return `${f.functionName || '(anonymous)'} ${file ? `${file}:${f.lineNumber + 1}` : ''}`.trim();
}

/** Sums the samples of `profile` taken in [fromUs, toUs) (the whole profile without bounds). */
export function summarizeWindow(profile: CpuProfile, fromUs = -Infinity, toUs = Infinity): WindowSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const ours = new Map<string, number>();
  let t = profile.startTime;
  let totalUs = 0;
  let busyUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    // a sample stands for the time until the next one
    const us = profile.timeDeltas[i + 1] ?? 0;
    if (t < fromUs || t >= toUs || us <= 0) continue;
    const leaf = byId.get(profile.samples[i]!)!;
    totalUs += us;
    if (leaf.callFrame.functionName === IDLE) continue;
    busyUs += us;
    const name = frameName(leaf.callFrame);
    self.set(name, (self.get(name) ?? 0) + us);
    const seen = new Set<string>();
    for (let id: number | undefined = leaf.id; id !== undefined; id = parent.get(id)) {
      const f = byId.get(id)!.callFrame;
      if (!/\/dist\/lib\//.test(f.url)) continue;
      const n = frameName(f);
      if (seen.has(n)) continue;
      seen.add(n);
      ours.set(n, (ours.get(n) ?? 0) + us);
    }
  }
  const sorted = (m: Map<string, number>) =>
    [...m].map(([frame, us]) => ({ frame, us })).sort((a, b) => b.us - a.us || a.frame.localeCompare(b.frame));
  return { totalUs, busyUs, self: sorted(self), ours: sorted(ours) };
}

function main(): void {
  const [file, from, to, top = '25'] = process.argv.slice(2);
  if (!file) throw new Error('usage: cpu-profile.js PROFILE [FROM_US TO_US] [TOP]');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const s = summarizeWindow(profile, from ? Number(from) : undefined, to ? Number(to) : undefined);
  const n = Number(top);
  const ms = (us: number) => (us / 1000).toFixed(0).padStart(8);
  const pct = (us: number) => `${((100 * us) / Math.max(1, s.busyUs)).toFixed(1)}%`.padStart(7);
  console.log(`window ${(s.totalUs / 1e6).toFixed(1)} s, on the CPU ${(s.busyUs / 1e6).toFixed(2)} s`);
  console.log(`\n${'self ms'.padStart(8)} ${'busy'.padStart(7)}  function`);
  for (const r of s.self.slice(0, n)) console.log(`${ms(r.us)} ${pct(r.us)}  ${r.frame}`);
  console.log(`\n${'incl ms'.padStart(8)} ${'busy'.padStart(7)}  function of ours (dist/lib)`);
  for (const r of s.ours.slice(0, n)) console.log(`${ms(r.us)} ${pct(r.us)}  ${r.frame}`);
}

if (require.main === module) main();
