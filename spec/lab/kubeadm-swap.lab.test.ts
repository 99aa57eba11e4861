/**
 * manifests/kubeadm/ applied as an operator would (`kubectl apply -k`, the lab's real kubectl)
 * on top of kubeadm's kube-proxy objects in the lab's real API server: the DaemonSet kubeadm
 * creates gets kube-ipvs's image and nothing else changes; kubeadm's ConfigMap (the cluster's
 * real kubeconfig and config) is not written at all.
 */
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { labFromEnv } from '../../testkit/lab-client';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const KUSTOMIZATION = path.join(ROOT, 'manifests', 'kubeadm');
/** kubeadm's DaemonSet as kubeadm renders it (scripts/node/kubeadm/), with kubeadm's own image */
const KUBEADM_DAEMONSET = path.join(ROOT, 'scripts', 'node', 'kubeadm', 'kube-proxy-daemonset.yaml');
const KUBEADM_IMAGE = 'registry.k8s.io/kube-proxy:v1.37.2';

type Obj = Record<string, any>;

describe('manifests/kubeadm/ on a kubeadm cluster', () => {
  const lab = labFromEnv();
  const ns = ['-n', 'kube-system'];
  const getRaw = async (what: string) => (await lab.kubectl(['get', what, ...ns, '-o', 'json'])).stdout;

  beforeAll(async () => {
    await lab.kubectl(['delete', 'daemonset', 'kube-proxy', ...ns, '--ignore-not-found']);
    // kubeadm creates its objects (no last-applied annotation), it does not `kubectl apply` them
    const text = fs.readFileSync(KUBEADM_DAEMONSET, 'utf8').replace(/^(\s*image:\s*)IMAGE$/m, `$1${KUBEADM_IMAGE}`);
    await lab.kubectl(['create', '-f', '-'], text);
  });

  afterAll(async () => {
    await lab.kubectl(['delete', 'daemonset', 'kube-proxy', ...ns, '--ignore-not-found']);
  });

  it("`kubectl apply -k` swaps the DaemonSet's image only; the ConfigMap is byte-for-byte unchanged", async () => {
    const cmBefore = await getRaw('configmap/kube-proxy');
    const dsBefore = JSON.parse(await getRaw('daemonset/kube-proxy')) as Obj;
    expect(dsBefore.spec.template.spec.containers[0].image).toBe(KUBEADM_IMAGE);

    const applied = await lab.kubectl(['apply', '-k', KUSTOMIZATION]);
    expect(applied.stdout.trim()).toBe('daemonset.apps/kube-proxy configured');

    // not written at all: same resourceVersion, managedFields, data
    expect(await getRaw('configmap/kube-proxy')).toBe(cmBefore);
    const dsAfter = JSON.parse(await getRaw('daemonset/kube-proxy')) as Obj;
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(dsAfter.spec.template.spec.containers[0].image).toBe(`localhost/kube-ipvs:${pkg.version}`);
    // every other field of the pod template and the DaemonSet's spec is kubeadm's
    const withImage = (ds: Obj, image: string) => {
      const spec = structuredClone(ds.spec) as Obj;
      spec.template.spec.containers[0].image = image;
      return spec;
    };
    expect(withImage(dsAfter, 'x')).toEqual(withImage(dsBefore, 'x'));
  });

  it('renders to the one partial DaemonSet (kubectl kustomize): no ConfigMap, no RBAC, no full object', async () => {
    const rendered = yaml.loadAll((await lab.kubectl(['kustomize', KUSTOMIZATION])).stdout) as Obj[];
    expect(rendered.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`)).toEqual([
      'DaemonSet/kube-system/kube-proxy',
    ]);
    expect(rendered[0]!.spec.selector).toBeUndefined();
  });

  it('is refused where kubeadm left no DaemonSet, instead of creating a half one', async () => {
    await lab.kubectl(['delete', 'daemonset', 'kube-proxy', ...ns]);
    const r = await lab.kubectl(['apply', '-k', KUSTOMIZATION], undefined, true);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/selector/);
    expect((await lab.kubectl(['get', 'daemonset', ...ns, '-o', 'name'])).stdout.trim()).toBe('');
  });
});
