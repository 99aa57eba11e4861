/**
 * The lab itself (scripts/lab/lab.ts), on the host: the API server is the release
 * scripts/k8s/go.mod pins, and kubeadm's kube-proxy objects grant what kubeadm's grant.
 */
import fs from 'node:fs';
import path from 'node:path';
import { labFromEnv } from '../../testkit/lab-client';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SA = 'system:serviceaccount:kube-system:kube-proxy';

describe('the lab', () => {
  const lab = labFromEnv();

  it('serves the pinned k8s.io/kubernetes release, stamped', async () => {
    const pinned = /k8s\.io\/kubernetes (v\d+\.\d+\.\d+)/.exec(
      fs.readFileSync(path.join(ROOT, 'scripts', 'k8s', 'go.mod'), 'utf8'),
    )![1];
    const version = JSON.parse((await lab.kubectl(['get', '--raw', '/version'])).stdout) as { gitVersion: string };
    expect(version.gitVersion).toBe(pinned);
    expect((await lab.info()).version).toContain(`k8s.io/kubernetes ${pinned}`);
  });

  it("kubeadm's kube-proxy identity: list/watch Services, EndpointSlices and Nodes, create Events; nothing else", async () => {
    const can = async (...args: string[]) =>
      (await lab.kubectl(['auth', 'can-i', ...args, `--as=${SA}`], undefined, true)).stdout.trim();
    for (const r of ['services', 'endpointslices.discovery.k8s.io', 'nodes']) {
      expect(`${r} ${await can('list', r)} ${await can('watch', r)}`).toBe(`${r} yes yes`);
    }
    expect(await can('create', 'events.events.k8s.io')).toBe('yes');
    expect(await can('patch', 'events')).toBe('yes');
    expect(await can('create', 'services')).toBe('no');
    expect(await can('list', 'secrets')).toBe('no');
    expect(await can('get', 'configmaps/kube-proxy', '-n', 'kube-system')).toBe('no');
  });

  it("the kube-proxy ConfigMap is manifests/new-cluster/configmap.yaml's, its kubeconfig pointed at the lab", async () => {
    const cm = await lab.getJson<{ data: Record<string, string> }>(['configmap', 'kube-proxy', '-n', 'kube-system']);
    const info = await lab.info();
    expect(cm.data['kubeconfig.conf']).toContain(`server: https://${info.guest.a}:${info.apiservers.a.port}`);
    expect(cm.data['config.conf']).toContain('mode: ipvs');
    expect(cm.data['kubeconfig.conf']).toContain('tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token');
  });
});
