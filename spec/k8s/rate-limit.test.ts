/**
 * Issue 25 item 7: clientConnection.qps/burst (--kube-api-qps, --kube-api-burst) are honoured
 * by client-go's token bucket on every request start, instead of accepted and ignored.
 */
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { TokenBucketRateLimiter } from '../../lib/k8s/rate-limit';
import { listRaw } from '../../lib/k8s/raw-list';
import { FakeApiServer } from '../../testkit/fake-apiserver';
import { FakeClock, flushPromises } from '../../testkit/fake-clock';
import { waitFor } from '../../testkit/wait-for';

describe('TokenBucketRateLimiter (client-go flowcontrol)', () => {
  it('burst at once, then one per 1/qps s, in arrival order', async () => {
    const clock = new FakeClock(0);
    const bucket = new TokenBucketRateLimiter(5, 10, clock);
    const passed: number[] = [];
    for (let i = 0; i < 13; i++) void bucket.wait().then(() => passed.push(i));
    await flushPromises();
    expect(passed).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await clock.advance(199);
    expect(passed).toHaveLength(10);
    await clock.advance(1);
    expect(passed).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await clock.advance(400);
    expect(passed).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    // idle time refills up to burst, not beyond
    await clock.advance(60_000);
    for (let i = 0; i < 11; i++) void bucket.wait().then(() => passed.push(100 + i));
    await flushPromises();
    expect(passed.filter((p) => p >= 100)).toHaveLength(10);
  });

  it('refuses a bucket that would never fill', () => {
    expect(() => new TokenBucketRateLimiter(0, 10)).toThrow(RangeError);
  });
});

describe('kubeconfig qps/burst', () => {
  let server: FakeApiServer;
  beforeEach(async () => {
    server = new FakeApiServer();
    await server.listen();
  });
  afterEach(() => server.close());

  it('qps 5 burst 10: the kubeconfig gets the bucket, and 12 lists at once reach the server 10 at once, the rest at 5 a second', async () => {
    const kc = loadKubeConfig({ master: server.url, qps: 5, burst: 10 } as Parameters<typeof loadKubeConfig>[0]);
    expect(kc.rateLimiter).toMatchObject({ qps: 5, burst: 10 });
    // the same bucket on a fake clock, so the test waits for states, not for time
    const clock = new FakeClock(0);
    kc.rateLimiter = new TokenBucketRateLimiter(5, 10, clock);
    const lists = () => server.requests.filter((r) => r.verb === 'list').length;
    const all = Array.from({ length: 12 }, () =>
      listRaw(kc, '/api/v1/services').then(
        () => 'ok',
        (e: Error) => e.message,
      ),
    );
    await waitFor('ten lists', () => lists() === 10);
    await new Promise((r) => setTimeout(r, 50));
    expect(lists()).toBe(10);
    await clock.advance(200);
    await waitFor('the eleventh list', () => lists() === 11);
    await clock.advance(200);
    expect(await Promise.all(all)).toEqual(Array(12).fill('ok'));
  });

  it('no qps: no limit (a kubeconfig for the CLI, tests)', async () => {
    const kc = loadKubeConfig({ master: server.url });
    await Promise.all(Array.from({ length: 30 }, () => listRaw(kc, '/api/v1/services')));
    expect(server.requests.filter((r) => r.verb === 'list')).toHaveLength(30);
  });
});
