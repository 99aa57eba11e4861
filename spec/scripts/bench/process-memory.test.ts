import { histogramDelta, rssBytes, Scrape, sumSeries } from '../../../scripts/bench/process-memory';

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
