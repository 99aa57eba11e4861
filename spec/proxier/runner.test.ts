import { BoundedFrequencyRunner } from '../../lib/proxier/runner';
import { FakeClock } from '../../testkit/fake-clock';

function setup(minIntervalMs: number, maxIntervalMs: number, runMs = 0) {
  const clock = new FakeClock(0);
  const starts: number[] = [];
  /** per `ended` call: the time, and whether a run was still in progress */
  const ends: [number, boolean][] = [];
  const runner: BoundedFrequencyRunner = new BoundedFrequencyRunner(
    () => {
      starts.push(clock.now());
      return runMs === 0 ? Promise.resolve() : new Promise<void>((r) => clock.setTimer(r, runMs));
    },
    { minIntervalMs, maxIntervalMs, burst: 2, clock, ended: () => ends.push([clock.now(), runner.inProgress]) },
  );
  return { clock, runner, starts, ends };
}

describe('BoundedFrequencyRunner', () => {
  it('runs at once on start, then every maxInterval', async () => {
    const { clock, runner, starts } = setup(0, 30_000);
    runner.start();
    await clock.advance(95_000);
    expect(starts).toEqual([0, 30_000, 60_000, 90_000]);
  });

  it('with minInterval 0 every request runs immediately', async () => {
    const { clock, runner, starts } = setup(0, 30_000);
    runner.start();
    await clock.advance(1000);
    runner.run();
    await clock.advance(1);
    runner.run();
    await clock.advance(1);
    expect(starts).toEqual([0, 1000, 1001]);
  });

  it('bounds a burst of requests by minInterval after the burst tokens', async () => {
    const { clock, runner, starts } = setup(1000, 30_000);
    runner.start(); // uses one token at t=0
    await clock.advance(0);
    for (let i = 0; i < 1000; i++) {
      runner.run();
      await clock.advance(1);
    }
    await clock.advance(3000);
    // t=0 (token 1), t=0+ (token 2), then one per second: ~1000 requests -> a handful of runs
    expect(starts.length).toBeGreaterThanOrEqual(3);
    expect(starts.length).toBeLessThanOrEqual(6);
    for (let i = 2; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(999);
    // none lost: the last request (t≈1000) is followed by a run after it
    expect(starts[starts.length - 1]!).toBeGreaterThanOrEqual(1000);
  });

  it('coalesces requests made during a run into exactly one more run', async () => {
    const { clock, runner, starts } = setup(0, 30_000, 500);
    runner.start();
    await clock.advance(100);
    runner.run();
    runner.run();
    runner.run();
    await clock.advance(2000);
    expect(starts).toEqual([0, 500]);
  });

  it('tells `ended` after each run, once it is no longer in progress (and before the coalesced one)', async () => {
    const { clock, runner, starts, ends } = setup(0, 30_000, 500);
    runner.start();
    await clock.advance(100);
    runner.run();
    await clock.advance(2000);
    expect(starts).toEqual([0, 500]);
    expect(ends).toEqual([
      [500, false],
      [1000, false],
    ]);
  });

  it('retryAfter brings the next run forward, never later', async () => {
    const { clock, runner, starts } = setup(0, 30_000);
    runner.start();
    await clock.advance(0);
    runner.retryAfter(5000);
    runner.retryAfter(20_000);
    await clock.advance(6000);
    expect(starts).toEqual([0, 5000]);
  });

  it('stop cancels the loop', async () => {
    const { clock, runner, starts } = setup(0, 30_000);
    runner.start();
    await clock.advance(0);
    runner.stop();
    runner.run();
    await clock.advance(100_000);
    expect(starts).toEqual([0]);
  });
});
