/**
 * Issue 25 item 7: clientConnection.qps/burst (--kube-api-qps, --kube-api-burst) are honoured
 * by client-go's token bucket on every request start, instead of accepted and ignored.
 */
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { TokenBucketRateLimiter } from '../../lib/k8s/rate-limit';
import { listRaw } from '../../lib/k8s/raw-list';
import { FakeApiServer } from '../../testkit/fake-apiserver';
import { FakeClock, flushPromises } from '../../testkit/fake-clock';

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

  it('qps 5 burst 10: 12 lists at once reach the server 10 at once, the rest at 5 a second', async () => {
    const kc = loadKubeConfig({ master: server.url, qps: 5, burst: 10 } as Parameters<typeof loadKubeConfig>[0]);
    const lists = () => server.requests.filter((r) => r.verb === 'list').length;
    const all = Array.from({ length: 12 }, () => listRaw(kc, '/api/v1/services'));
    await new Promise((r) => setTimeout(r, 100));
    expect(lists()).toBe(10);
    await Promise.all(all);
    expect(lists()).toBe(12);
  });

  it('no qps: no limit (a kubeconfig for the CLI, tests)', async () => {
    const kc = loadKubeConfig({ master: server.url });
    await Promise.all(Array.from({ length: 30 }, () => listRaw(kc, '/api/v1/services')));
    expect(server.requests.filter((r) => r.verb === 'list')).toHaveLength(30);
  });
});
