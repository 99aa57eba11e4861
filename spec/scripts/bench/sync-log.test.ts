// The benches' reader of kube-ipvs's `sync done` lines (scripts/bench/sync-log.ts).
import { syncsIn, total } from '../../../scripts/bench/sync-log';

describe('syncsIn', () => {
  const lines = [
    { message: 'informers synced', sinceStartMs: 900 },
    {
      message: 'sync done',
      full: true,
      durationMs: 520,
      phasesMs: { ipvsRead: 200, node: 180 },
      replanned: 1000,
      ipvsWrites: 0,
      ipvsReads: 1,
      execs: 2,
    },
    { message: 'sync done', full: false, durationMs: 40, replanned: 3, ipvsWrites: 6, ipvsReads: 0, execs: 1 },
    // a line from a daemon that logs no phases and no counts: zeros, not NaN
    { message: 'sync done', durationMs: 7 },
  ];

  test('one record per sync line, in order, other lines left out', () => {
    // a line's record is the line without its message
    const { message: _, ...first } = lines[1]!;
    expect(syncsIn(lines)).toEqual([
      first,
      { full: false, durationMs: 40, phasesMs: {}, replanned: 3, ipvsWrites: 6, ipvsReads: 0, execs: 1 },
      { full: false, durationMs: 7, phasesMs: {}, replanned: 0, ipvsWrites: 0, ipvsReads: 0, execs: 0 },
    ]);
  });

  test('total sums a count over the syncs', () => {
    const syncs = syncsIn(lines);
    expect(total(syncs, 'ipvsWrites')).toBe(6);
    expect(total(syncs, 'execs')).toBe(3);
    expect(total([], 'execs')).toBe(0);
  });
});
