import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import {
  breakdownOf,
  histogramDelta,
  mappingKind,
  mappingsOf,
  residentMemory,
  rollupOf,
  rssBytes,
  Scrape,
  smapsEntries,
  smapsRollup,
  sumSeries,
} from '../../../scripts/bench/process-memory';

describe('histogramDelta', () => {
  const h = (counts: [string, number][], sum: number): Scrape =>
    new Map<string, number>([
      ...counts.map(([le, n]): [string, number] => [`lag_bucket{le="${le}"}`, n]),
      ['lag_sum', sum],
      ['lag_count', counts[counts.length - 1]![1]],
    ]);

  it('counts only what was observed between the scrapes, with the p99 and max bucket bounds', () => {
    const before = h(
      [
        ['0.25', 10],
        ['0.5', 10],
        ['1', 10],
        ['+Inf', 10],
      ],
      1,
    );
    // 200 more: 197 under 0.25 s, 2 under 0.5 s, 1 under 1 s
    const after = h(
      [
        ['0.25', 207],
        ['0.5', 209],
        ['1', 210],
        ['+Inf', 210],
      ],
      31,
    );
    expect(histogramDelta(before, after, 'lag')).toEqual({
      count: 200,
      meanSeconds: 0.15,
      p99AtMostSeconds: 0.5,
      maxAtMostSeconds: 1,
    });
  });

  it('says nothing was observed when the counts did not move', () => {
    const s = h(
      [
        ['0.25', 3],
        ['+Inf', 3],
      ],
      0.3,
    );
    expect(histogramDelta(s, s, 'lag')).toEqual({
      count: 0,
      meanSeconds: 0,
      p99AtMostSeconds: 0.25,
      maxAtMostSeconds: 0.25,
    });
  });

  it("adds up the series of each bucket across other labels (kube-proxy's ip_family)", () => {
    const fam = (f: string, counts: [string, number][], sum: number): [string, number][] => [
      ...counts.map(([le, n]): [string, number] => [`lag_bucket{ip_family="${f}",le="${le}"}`, n]),
      [`lag_sum{ip_family="${f}"}`, sum],
      [`lag_count{ip_family="${f}"}`, counts[counts.length - 1]![1]],
    ];
    const before = new Map([
      ...fam(
        'IPv4',
        [
          ['1', 0],
          ['+Inf', 0],
        ],
        0,
      ),
      ...fam(
        'IPv6',
        [
          ['1', 0],
          ['+Inf', 0],
        ],
        0,
      ),
    ]);
    // IPv4: 3 under 1 s, 1 over; IPv6: 1 under 1 s
    const after = new Map([
      ...fam(
        'IPv4',
        [
          ['1', 3],
          ['+Inf', 4],
        ],
        6,
      ),
      ...fam(
        'IPv6',
        [
          ['1', 1],
          ['+Inf', 1],
        ],
        0.5,
      ),
    ]);
    expect(histogramDelta(before, after, 'lag')).toEqual({
      count: 5,
      meanSeconds: 1.3,
      p99AtMostSeconds: Infinity,
      maxAtMostSeconds: Infinity,
    });
  });

  it('fails naming the series when the histogram is not exposed', () => {
    expect(() => histogramDelta(new Map(), new Map(), 'lag')).toThrow('no lag_count');
  });
});

describe('rssBytes', () => {
  it('reads VmRSS of a live process in bytes', () => {
    expect(rssBytes(process.pid)).toBeGreaterThan(1 << 20);
  });
});

describe('sumSeries', () => {
  const s: Scrape = new Map([
    ['apiserver_response_sizes_sum{resource="services",verb="LIST"}', 100],
    ['apiserver_response_sizes_sum{resource="services",verb="UPDATE"}', 20],
    ['apiserver_response_sizes_sum{resource="",verb="GET"}', 7],
    ['apiserver_response_sizes_count{resource="services",verb="LIST"}', 1],
  ]);

  it('adds every series of the name, whatever its labels; undefined when there is none', () => {
    expect(sumSeries(s, 'apiserver_response_sizes_sum')).toBe(127);
    expect(sumSeries(s, 'apiserver_response_sizes')).toBeUndefined();
  });

  it('or only those whose labels the filter takes', () => {
    expect(
      sumSeries(s, 'apiserver_response_sizes_sum', (l) => /verb="(LIST|GET)"/.test(l) && /resource="services"/.test(l)),
    ).toBe(100);
  });
});

describe('smaps_rollup and the breakdown by mapping', () => {
  const rollup = [
    '55d0c0000000-7ffc00000000 ---p 00000000 00:00 0                          [rollup]',
    'Rss:              102400 kB',
    'Pss:               81920 kB',
    'Pss_Dirty:         60000 kB',
    'Pss_Anon:          60000 kB',
    'Anonymous:         60000 kB',
    'Swap:                  0 kB',
  ].join('\n');

  it('reads Rss, Pss and Anonymous in bytes', () => {
    expect(rollupOf(rollup)).toEqual({ rss: 102400 * 1024, pss: 81920 * 1024, anon: 60000 * 1024 });
  });

  it('refuses a text without them', () => {
    expect(() => rollupOf('Rss: 1 kB\n')).toThrow(/Pss/);
  });

  it('sorts mappings by kind: the executable, shared libraries and addons, brk, anonymous, stack, other', () => {
    const exe = '/usr/bin/node';
    expect(mappingKind('/usr/bin/node', exe)).toBe('executable');
    expect(mappingKind('/usr/bin/node (deleted)', exe)).toBe('executable');
    expect(mappingKind('/usr/lib/x86_64-linux-gnu/libc.so.6', exe)).toBe('shared libraries');
    expect(mappingKind('/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30', exe)).toBe('shared libraries');
    expect(mappingKind('/opt/kube-ipvs/dist/native/malloc_trim.node', exe)).toBe('shared libraries');
    expect(mappingKind('[heap]', exe)).toBe('heap (brk)');
    expect(mappingKind('', exe)).toBe('anonymous mmaps');
    expect(mappingKind('[anon:v8]', exe)).toBe('anonymous mmaps');
    expect(mappingKind('[stack]', exe)).toBe('stack');
    expect(mappingKind('[vdso]', exe)).toBe('other');
    expect(mappingKind('/usr/lib/locale/locale-archive', exe)).toBe('other');
  });

  it('adds up each kind over its mappings', () => {
    const smaps = [
      '00400000-00500000 r-xp 00000000 fd:01 42 /usr/bin/node',
      'Size:               1024 kB',
      'Rss:                 800 kB',
      'Pss:                 400 kB',
      'Anonymous:             0 kB',
      '00600000-00700000 rw-p 00100000 fd:01 42 /usr/bin/node',
      'Rss:                  20 kB',
      'Pss:                  20 kB',
      'Anonymous:            20 kB',
      '01000000-02000000 rw-p 00000000 00:00 0                                  [heap]',
      'Rss:                 300 kB',
      'Pss:                 300 kB',
      'Anonymous:           300 kB',
      '7f0000000000-7f0004000000 rw-p 00000000 00:00 0 ',
      'Rss:                5000 kB',
      'Pss:                5000 kB',
      'Anonymous:          5000 kB',
      '7f1000000000-7f1000100000 r-xp 00000000 fd:01 7 /usr/lib/x86_64-linux-gnu/libc.so.6',
      'Rss:                 900 kB',
      'Pss:                  90 kB',
      'Anonymous:             0 kB',
      '7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]',
      'Rss:                  40 kB',
      'Pss:                  40 kB',
      'Anonymous:            40 kB',
      '7ffc10000000-7ffc10002000 r-xp 00000000 00:00 0                          [vdso]',
      'Rss:                   8 kB',
      'Pss:                   0 kB',
      'Anonymous:             0 kB',
    ].join('\n');
    const k = (kb: number) => kb * 1024;
    const entries = smapsEntries(smaps);
    // the same parse gives the file/brk/anonymous totals ([stack] and [vdso] count as file-backed there)
    expect(mappingsOf(entries)).toEqual({
      fileBytes: k(800 + 20 + 900 + 40 + 8),
      brkHeapBytes: k(300),
      anonBytes: k(5000),
      anonMappings: 1,
      largestAnon: [{ sizeBytes: 0, rssBytes: k(5000) }],
    });
    expect(breakdownOf(entries, '/usr/bin/node')).toEqual({
      executable: { rss: k(820), pss: k(420), anon: k(20) },
      'shared libraries': { rss: k(900), pss: k(90), anon: 0 },
      'heap (brk)': { rss: k(300), pss: k(300), anon: k(300) },
      'anonymous mmaps': { rss: k(5000), pss: k(5000), anon: k(5000) },
      stack: { rss: k(40), pss: k(40), anon: k(40) },
      other: { rss: k(8), pss: 0, anon: 0 },
    });
  });

  // a sleeping child, not this process: jest's own worker moved 17 MB between two reads once
  it("reads a sleeping process's: the kinds add up to its rollup's Rss exactly", async () => {
    const child = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const pid = child.pid!;
      // until it sleeps in nanosleep: exec'd (before, its smaps are node's) and past the dynamic
      // loader (which maps libc after comm already says sleep)
      const asleep = (): boolean =>
        readFileSync(`/proc/${pid}/comm`, 'utf8') === 'sleep\n' &&
        / S /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')) &&
        readFileSync(`/proc/${pid}/maps`, 'utf8').includes('libc');
      for (let i = 0; i < 500 && !asleep(); i++) await new Promise((r) => setTimeout(r, 10));
      expect(asleep()).toBe(true);
      const kinds = residentMemory(pid).kinds;
      const whole = smapsRollup(pid);
      expect(Object.values(kinds).reduce((a, k) => a + k.rss, 0)).toBe(whole.rss);
      expect(kinds.executable.rss).toBeGreaterThan(0);
      expect(whole.pss).toBeLessThanOrEqual(whole.rss);
      expect(whole.anon).toBeLessThanOrEqual(whole.rss);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
