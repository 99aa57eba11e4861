// kube-ipvs's `sync done` log lines (lib/proxier/proxier.ts endRun) as the benches read them:
// one record per sync, its kind, duration, phases and counts (a field the line lacks reads 0).
import type { LogLine } from '../../testkit/processes';

/** One sync, from its `sync done` line. */
export interface LoggedSync {
  readonly full: boolean;
  readonly durationMs: number;
  readonly phasesMs: Record<string, number>;
  readonly replanned: number;
  readonly ipvsWrites: number;
  readonly ipvsReads: number;
  readonly execs: number;
}

const num = (l: LogLine, k: string): number => (typeof l[k] === 'number' ? l[k] : 0);

/** The syncs logged in `lines`, in order. */
export function syncsIn(lines: readonly LogLine[]): LoggedSync[] {
  return lines
    .filter((l) => l.message === 'sync done')
    .map((l) => ({
      full: l.full === true,
      durationMs: num(l, 'durationMs'),
      phasesMs: typeof l.phasesMs === 'object' && l.phasesMs !== null ? (l.phasesMs as Record<string, number>) : {},
      replanned: num(l, 'replanned'),
      ipvsWrites: num(l, 'ipvsWrites'),
      ipvsReads: num(l, 'ipvsReads'),
      execs: num(l, 'execs'),
    }));
}

/** The sum of `key` over `syncs`. */
export const total = (syncs: readonly LoggedSync[], key: 'ipvsWrites' | 'ipvsReads' | 'execs'): number =>
  syncs.reduce((n, s) => n + s[key], 0);
