import { EventRecorder } from '../../lib/k8s/event-recorder';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { FakeApiServer, FakeObject } from '../../lib/testing/fake-apiserver';

describe('EventRecorder', () => {
  let server: FakeApiServer;
  let now: number;
  let debug: string[];
  let recorder: EventRecorder;
  const svc = { kind: 'Service', namespace: 'demo', name: 'web', uid: 'u-1', apiVersion: 'v1' };

  beforeEach(async () => {
    server = new FakeApiServer();
    await server.listen();
    now = Date.parse('2026-01-02T03:04:05Z');
    debug = [];
    recorder = new EventRecorder(loadKubeConfig({ master: server.url }), { nodeName: 'node-a', log: { debug: (m: string) => debug.push(m) }, clock: () => now });
  });
  afterEach(() => server.close());

  const events = (ns = 'demo'): FakeObject[] => server.list('v1', 'Event', ns);

  it('posts a core/v1 Warning Event about the object, from kube-ipvs on this node', async () => {
    await recorder.warn(svc, 'InvalidPort', 'port 70000 out of range');
    expect(events()).toEqual([
      expect.objectContaining({
        metadata: expect.objectContaining({ namespace: 'demo', name: expect.stringMatching(/^web\.[0-9a-f]+$/) }),
        involvedObject: { kind: 'Service', namespace: 'demo', name: 'web', uid: 'u-1', apiVersion: 'v1' },
        type: 'Warning',
        reason: 'InvalidPort',
        message: 'port 70000 out of range',
        count: 1,
        firstTimestamp: '2026-01-02T03:04:05.000Z',
        source: { component: 'kube-ipvs', host: 'node-a' },
        reportingComponent: 'kube-ipvs',
        reportingInstance: 'node-a',
      }),
    ]);
    expect(debug).toEqual([]);
  });

  it('within 10 minutes the same warning bumps count and lastTimestamp instead of posting again', async () => {
    await recorder.warn(svc, 'InvalidPort', 'm');
    now += 60_000;
    await recorder.warn(svc, 'InvalidPort', 'm');
    now += 60_000;
    await recorder.warn(svc, 'InvalidPort', 'm');
    const [ev] = events();
    expect(events()).toHaveLength(1);
    expect(ev).toMatchObject({ count: 3, lastTimestamp: '2026-01-02T03:06:05.000Z', firstTimestamp: '2026-01-02T03:04:05.000Z' });
    await recorder.warn(svc, 'InvalidPort', 'another message');
    await recorder.warn({ ...svc, name: 'db' }, 'InvalidPort', 'm');
    expect(events()).toHaveLength(3);
    expect(server.requests.filter((r) => r.verb === 'patch')).toHaveLength(2);
  });

  it('posts again once the window has passed since the last occurrence', async () => {
    await recorder.warn(svc, 'R', 'm');
    now += 10 * 60_000;
    await recorder.warn(svc, 'R', 'm');
    expect(events().map((e) => e.count)).toEqual([1, 1]);
  });

  it('Events about cluster-scoped objects go to "default"', async () => {
    await recorder.warn({ kind: 'Node', name: 'node-a' }, 'R', 'm');
    expect(events('default')).toHaveLength(1);
  });

  it('a failure to post resolves, is logged at debug only, and the next warning posts again', async () => {
    const url = server.url;
    await server.close();
    await expect(recorder.warn(svc, 'R', 'm')).resolves.toBeUndefined();
    expect(debug).toHaveLength(1);
    expect(debug[0]).toMatch(/^event demo\/web\.[0-9a-f]+ about Service demo\/web \(R\): post failed: /);
    await server.listen(Number(new URL(url).port));
    await recorder.warn(svc, 'R', 'm');
    expect(events()).toHaveLength(1);
  });
});
