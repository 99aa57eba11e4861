// manifests/: what an operator applies. kubeadm/ (the image swap on a kubeadm cluster) against
// kubeadm's own DaemonSet; new-cluster/ (every object, for a cluster without kube-proxy) parsed as
// Kubernetes would read it, then checked against the code that runs it: the DaemonSet's command through the real flag parser, the
// ConfigMap's config.conf through the real config loader (no warnings), the probes against the
// health server's port, the image against the name `make image` gives it.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { HEALTHZ_PORT } from '../lib/config/decode-config';
import { loadProxyConfig } from '../lib/config/load-config';
import { parseProxyFlags } from '../lib/config/proxy-flags';

const ROOT = path.resolve(__dirname, '..', '..');
const DIR = path.join(ROOT, 'manifests', 'new-cluster');
const KUBEADM_DIR = path.join(ROOT, 'manifests', 'kubeadm');

type Obj = Record<string, any>;

function loadManifests(): Obj[] {
  const docs: Obj[] = [];
  for (const f of readdirSync(DIR)
    .filter((n) => n.endsWith('.yaml'))
    .sort()) {
    for (const d of yaml.loadAll(readFileSync(path.join(DIR, f), 'utf8'))) if (d) docs.push(d as Obj);
  }
  return docs;
}

const docs = loadManifests();
const one = (kind: string): Obj => {
  const found = docs.filter((d) => d.kind === kind);
  expect(found).toHaveLength(1);
  return found[0]!;
};
const ds = () => one('DaemonSet');
const container = () => ds().spec.template.spec.containers[0] as Obj;
const cm = () => one('ConfigMap');
const mountOf = (volume: string): Obj | undefined => (container().volumeMounts as Obj[]).find((m) => m.name === volume);
const volume = (name: string): Obj | undefined =>
  (ds().spec.template.spec.volumes as Obj[]).find((v) => v.name === name);

/** The ConfigMap's files as the DaemonSet mounts them: path in the container -> content. */
function mountedConfigMap(): Map<string, string> {
  const vol = (ds().spec.template.spec.volumes as Obj[]).find((v) => v.configMap?.name === cm().metadata.name);
  expect(vol).toBeDefined();
  const at = mountOf(vol!.name)!.mountPath as string;
  return new Map(Object.entries(cm().data as Record<string, string>).map(([k, v]) => [path.posix.join(at, k), v]));
}

describe('manifests/new-cluster/', () => {
  it('holds the ServiceAccount, the system:node-proxier binding, the ConfigMap, its Role and RoleBinding and the DaemonSet, all in kube-system', () => {
    expect(docs.map((d) => d.kind).sort()).toEqual([
      'ClusterRoleBinding',
      'ConfigMap',
      'DaemonSet',
      'Role',
      'RoleBinding',
      'ServiceAccount',
    ]);
    const sa = one('ServiceAccount');
    expect(sa.metadata).toMatchObject({ name: 'kube-proxy', namespace: 'kube-system' });
    expect(one('ClusterRoleBinding')).toMatchObject({
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node-proxier' },
      subjects: [{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace }],
    });
    expect(ds().spec.template.spec.serviceAccountName).toBe(sa.metadata.name);
    for (const d of docs.filter((x) => x.kind !== 'ClusterRoleBinding'))
      expect(d.metadata.namespace).toBe('kube-system');
  });

  it("carries kubeadm's kube-proxy Role and RoleBinding: bootstrap tokens may get the kube-proxy ConfigMap, nothing more", () => {
    // cmd/kubeadm/app/phases/addons/proxy/proxy.go createClusterRoleBindings
    const role = one('Role');
    expect(role).toEqual({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'kube-proxy', namespace: 'kube-system' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: [cm().metadata.name], verbs: ['get'] }],
    });
    expect(cm().metadata.name).toBe('kube-proxy');
    expect(one('RoleBinding')).toEqual({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'kube-proxy', namespace: 'kube-system' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata.name },
      // kubeadm's constants.NodeBootstrapTokenAuthGroup
      subjects: [
        {
          apiGroup: 'rbac.authorization.k8s.io',
          kind: 'Group',
          name: 'system:bootstrappers:kubeadm:default-node-token',
        },
      ],
    });
  });

  it("replaces kubeadm's kube-proxy DaemonSet in place: same name, selector and container name", () => {
    expect(ds().metadata.name).toBe('kube-proxy');
    expect(ds().spec.selector).toEqual({ matchLabels: { 'k8s-app': 'kube-proxy' } });
    expect(ds().spec.template.metadata.labels).toEqual({ 'k8s-app': 'kube-proxy' });
    expect(ds().spec.updateStrategy).toEqual({ type: 'RollingUpdate' });
    expect(container().name).toBe('kube-proxy');
  });

  it('runs the image `make image` builds', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(container().image).toBe(`localhost/kube-ipvs:${pkg.version}`);
    expect(container().imagePullPolicy).toBe('IfNotPresent');
  });

  it("the command is kube-proxy's, and our flag parser accepts every flag in it", () => {
    const [bin, ...args] = container().command as string[];
    expect(bin).toBe('/usr/local/bin/kube-ipvs');
    const flags = parseProxyFlags(args);
    expect(flags.configFile).toBe('/var/lib/kube-proxy/config.conf');
    expect(flags.given.get('--hostname-override')).toBe('$(NODE_NAME)');
    // $(NODE_NAME) is expanded by the kubelet from the pod's node name
    expect(container().env).toEqual([{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }]);
  });

  it("kubeadm's own command differs only in the binary, which the image carries under both names", () => {
    // cmd/kubeadm/app/phases/addons/proxy/manifests.go: `kubectl set image` alone runs it
    const kubeadm = [
      '/usr/local/bin/kube-proxy',
      '--config=/var/lib/kube-proxy/config.conf',
      '--hostname-override=$(NODE_NAME)',
    ];
    expect((container().command as string[]).slice(1)).toEqual(kubeadm.slice(1));
    const stage = readFileSync(path.join(ROOT, 'scripts', 'image', 'stage-app.sh'), 'utf8');
    expect(stage).toContain(`ln -s kube-ipvs "$STAGE${kubeadm[0]}"`);
    expect(stage).toContain(`"$STAGE${container().command[0]}"`);
  });

  it("the ConfigMap's config.conf, read where the DaemonSet mounts it, loads without a warning in ipvs mode", async () => {
    const files = mountedConfigMap();
    const flags = parseProxyFlags((container().command as string[]).slice(1));
    const read = async (p: string) => {
      const text = files.get(p);
      if (text === undefined) throw Object.assign(new Error(`no ${p} in the ConfigMap mount`), { code: 'ENOENT' });
      return text;
    };
    const loaded = await loadProxyConfig(flags, read);
    expect(loaded.warnings).toEqual([]);
    expect(loaded.config.mode).toBe('ipvs');
    expect(loaded.config.hostnameOverride).toBe('$(NODE_NAME)');
    // the kubeconfig it names is the ConfigMap's other key, using the pod's ServiceAccount
    const kubeconfig = yaml.load(await read(loaded.config.clientConnection.kubeconfig)) as Obj;
    expect(kubeconfig.users[0].user).toEqual({ tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' });
    expect(kubeconfig.clusters[0].cluster['certificate-authority']).toBe(
      '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt',
    );
  });

  it('is privileged on the host network, with the xtables lock shared and /lib/modules read-only', () => {
    const pod = ds().spec.template.spec;
    expect(pod.hostNetwork).toBe(true);
    expect(container().securityContext).toEqual({ privileged: true });
    expect(volume('xtables-lock')).toEqual({
      name: 'xtables-lock',
      hostPath: { path: '/run/xtables.lock', type: 'FileOrCreate' },
    });
    expect(mountOf('xtables-lock')).toMatchObject({ mountPath: '/run/xtables.lock', readOnly: false });
    expect(volume('lib-modules')).toEqual({ name: 'lib-modules', hostPath: { path: '/lib/modules' } });
    expect(mountOf('lib-modules')).toMatchObject({ mountPath: '/lib/modules', readOnly: true });
  });

  it('requests the memory and CPU the daemon uses (DEVELOPERS.md bench: RSS ~140 MB at 1k Services, ~234 MB at 10k), with no memory limit (issue 25 item 12)', () => {
    const bytes = (q: string): number => {
      const m = /^(\d+)(Ki|Mi|Gi|k|M|G)?$/.exec(q);
      if (!m) throw new Error(`quantity ${q}`);
      const unit: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, k: 1e3, M: 1e6, G: 1e9 };
      return Number(m[1]) * unit[m[2] ?? '']!;
    };
    const millicores = (q: string): number => (q.endsWith('m') ? Number(q.slice(0, -1)) : Number(q) * 1000);
    const resources = container().resources as Obj | undefined;
    expect(resources?.requests).toBeDefined();
    const memory = bytes(String(resources!.requests.memory));
    // a node of 10k Services fits its request after start; not far beyond it
    expect(memory).toBeGreaterThanOrEqual(234e6);
    expect(memory).toBeLessThanOrEqual(512 * 1024 ** 2);
    expect(millicores(String(resources!.requests.cpu))).toBeGreaterThan(0);
    // a memory limit would OOM-kill the node's proxy under churn (328 MB after churn at 10k);
    // kube-proxy's DaemonSet sets none either
    expect(resources!.limits?.memory).toBeUndefined();
  });

  it('runs on every Linux node, tainted or not, as system-node-critical', () => {
    const pod = ds().spec.template.spec;
    expect(pod.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(pod.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
    expect(pod.priorityClassName).toBe('system-node-critical');
  });

  it('probes /livez (liveness) and /healthz (readiness) on the port the health server listens on', async () => {
    const flags = parseProxyFlags((container().command as string[]).slice(1));
    const files = mountedConfigMap();
    const { config } = await loadProxyConfig(flags, async (p) => files.get(p)!);
    const port = Number(config.healthzBindAddress.split(':').pop());
    expect(port).toBe(HEALTHZ_PORT);
    expect(container().livenessProbe.httpGet).toEqual({ path: '/livez', port });
    expect(container().readinessProbe.httpGet).toEqual({ path: '/healthz', port });
  });
});

describe('manifests/kubeadm/', () => {
  const kustomization = yaml.load(readFileSync(path.join(KUBEADM_DIR, 'kustomization.yaml'), 'utf8')) as Obj;
  const resources = (kustomization.resources as string[]).map(
    (f) => yaml.load(readFileSync(path.join(KUBEADM_DIR, f), 'utf8')) as Obj,
  );
  // kubeadm's DaemonSet as kubeadm renders it (the lab test applies the kustomization over it)
  const kubeadmDs = yaml.load(
    readFileSync(path.join(ROOT, 'scripts', 'node', 'kubeadm', 'kube-proxy-daemonset.yaml'), 'utf8'),
  ) as Obj;

  it('is a kustomization of one resource, the DaemonSet: no ConfigMap, ServiceAccount or RBAC to overwrite', () => {
    expect(kustomization).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization' });
    expect(Object.keys(kustomization).sort()).toEqual(['apiVersion', 'kind', 'resources']);
    expect(resources.map((r) => `${r.kind}/${r.metadata.namespace}/${r.metadata.name}`)).toEqual([
      `DaemonSet/${kubeadmDs.metadata.namespace}/${kubeadmDs.metadata.name}`,
    ]);
  });

  it("names kubeadm's container and sets its image to new-cluster/'s, and nothing else", () => {
    const partial = resources[0]!;
    const kubeadmContainer = kubeadmDs.spec.template.spec.containers[0] as Obj;
    expect(partial).toEqual({
      apiVersion: kubeadmDs.apiVersion,
      kind: 'DaemonSet',
      metadata: { name: kubeadmDs.metadata.name, namespace: kubeadmDs.metadata.namespace },
      spec: { template: { spec: { containers: [{ name: kubeadmContainer.name, image: container().image }] } } },
    });
  });
});
