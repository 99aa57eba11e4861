// The image `make image` builds (dist/image/kube-ipvs.oci.tar), run the way the kubelet runs
// manifests/new-cluster/daemonset.yaml, inside the VM. make image reads the archive back as a runtime would
// (every digest and diff id) and unpacks its layers into dist/image/rootfs (on the host:
// unpacking 220 MB in the TCG guest takes minutes); this file checks that tree is the
// archive's and runs the DaemonSet's command chrooted into it with the pod's mounts (proc,
// sys, dev, /run/xtables.lock, /lib/modules read-only, the ConfigMap at /var/lib/kube-proxy)
// against the fake API server. The image's own node, iptables and ipset program the kernel the
// host side sees. Then it runs kubeadm's own DaemonSet command line, unchanged
// (/usr/local/bin/kube-proxy, cmd/kubeadm/app/phases/addons/proxy/manifests.go): what
// `kubectl set image ds/kube-proxy kube-proxy=<this image>` starts on a kubeadm node.
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { ApiClient, LoggedProcess, startFakeApiServer } from '../../testkit/processes';
import { connect, deletePod, makePod, run, startEchoServer, tryRun } from '../../testkit/netns';

const REPO = path.resolve(__dirname, '..', '..', '..');
const ARCHIVE = path.join(REPO, 'dist', 'image', 'kube-ipvs.oci.tar');
const ROOTFS = path.join(REPO, 'dist', 'image', 'rootfs');
/** the image config's Env (scripts/image/write-oci-layout.ts) */
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const API_PORT = 16444;
const NODE = 'node-a';
/** kubeadm's kube-proxy DaemonSet's command, as kubeadm writes it */
const KUBEADM_COMMAND = [
  '/usr/local/bin/kube-proxy',
  '--config=/var/lib/kube-proxy/config.conf',
  '--hostname-override=$(NODE_NAME)',
];
const POD = { name: 'imgpod', ip: '10.244.7.2', gw: '10.244.7.1' };

type Obj = Record<string, any>;

function manifest(file: string): Obj {
  return yaml.load(fs.readFileSync(path.join(REPO, 'manifests', 'new-cluster', file), 'utf8')) as Obj;
}

const meta = (namespace: string, name: string, extra: Obj = {}) => ({
  namespace,
  name,
  uid: `uid-${namespace}-${name}`,
  ...extra,
});
const FIXTURES: Obj[] = [
  {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: NODE, uid: 'uid-node-a', labels: { 'kubernetes.io/hostname': NODE } },
    spec: { podCIDR: '10.244.7.0/24', podCIDRs: ['10.244.7.0/24'] },
    status: { addresses: [{ type: 'InternalIP', address: '192.0.2.1' }] },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta('default', 'web'),
    spec: {
      type: 'ClusterIP',
      clusterIP: '10.96.7.10',
      clusterIPs: ['10.96.7.10'],
      ipFamilies: ['IPv4'],
      sessionAffinity: 'None',
      ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
    },
    status: { loadBalancer: {} },
  },
  {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: meta('default', 'web-1', {
      labels: {
        'kubernetes.io/service-name': 'web',
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    }),
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: [
      { addresses: [POD.ip], conditions: { ready: true, serving: true, terminating: false }, nodeName: NODE },
    ],
  },
];

/**
 * argv run chrooted into `root` in a mount namespace of its own with the DaemonSet's mounts
 * (they go away with the process).
 */
function inImage(root: string, configMap: string, argv: readonly string[]): { cmd: string; args: string[] } {
  const mounts = [
    'set -e',
    'mkdir -p "$R/var/lib/kube-proxy"',
    'mount --bind "$C" "$R/var/lib/kube-proxy"',
    'mount -t proc proc "$R/proc"',
    'mount --rbind /sys "$R/sys"',
    'mount --rbind /dev "$R/dev"',
    'touch /run/xtables.lock "$R/run/xtables.lock"',
    'mount --bind /run/xtables.lock "$R/run/xtables.lock"',
    'mkdir -p "$R/lib/modules"',
    'mount --rbind -o ro /lib/modules "$R/lib/modules"',
    'shift 2',
    'exec chroot "$R" "$@"',
  ].join('\n');
  return {
    cmd: 'unshare',
    args: [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      `R="$1" C="$2"\n${mounts}`,
      'sh',
      root,
      configMap,
      ...argv,
    ],
  };
}

function runInImage(root: string, configMap: string, env: NodeJS.ProcessEnv, argv: readonly string[]): string {
  const { cmd, args } = inImage(root, configMap, argv);
  const r = spawnSync(cmd, args, { encoding: 'utf8', env, timeout: 120_000 });
  if (r.status !== 0) throw new Error(`in the image: ${argv.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr}`);
  return r.stdout;
}

/**
 * Polls `f` until `ok`; fails at once, with the daemon's last lines, when the daemon has exited.
 * The bound is generous: the first sync waits for node to load client-node in the TCG guest.
 */
async function eventually<T>(
  what: string,
  f: () => T,
  ok: (v: T) => boolean,
  daemon: LoggedProcess,
  timeoutMs = 500_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last = f();
  while (!ok(last)) {
    const gone = daemon.child.exitCode !== null || daemon.child.signalCode !== null;
    if (gone || Date.now() > end) {
      throw new Error(
        `${what}: ${gone ? 'the daemon exited' : `not reached within ${timeoutMs} ms`}; last value:\n${JSON.stringify(last, null, 1)}\ndaemon:\n${daemon.text.slice(-20).join('\n')}`,
      );
    }
    await new Promise((r) => setTimeout(r, 500));
    last = f();
  }
  return last;
}

// `make test` builds the image first; a missing archive is a failure, never a silent skip
const built = fs.existsSync(ARCHIVE);

// (without the archive the suite below is not declared at all; the test after it fails)
const describeBuilt = built ? describe : (_name: string, _suite: () => void): void => undefined;

describeBuilt('the kube-ipvs image, run as the DaemonSet runs it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-image-'));
  let root: string;
  const cmDir = path.join(dir, 'configmap');
  const ds = manifest('daemonset.yaml');
  const container = ds.spec.template.spec.containers[0] as Obj;
  const cm = manifest('configmap.yaml');
  let image: { name: string; digest: string };
  let env: NodeJS.ProcessEnv;
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;
  let kubeadmDaemon: LoggedProcess | undefined;
  const children: ChildProcess[] = [];
  // the kubelet expands $(VAR) in command from the container's env
  const expand = (command: readonly string[]) =>
    command.map((a) => a.replace(/\$\(([A-Z_]+)\)/g, (_, v: string) => env[v] ?? ''));

  beforeAll(async () => {
    // the root filesystem make image unpacked from this very archive (digests checked there)
    const index = JSON.parse(run('tar', ['--occurrence=1', '-xOf', ARCHIVE, 'index.json'])) as {
      manifests: { digest: string; annotations: Record<string, string> }[];
    };
    image = { name: index.manifests[0]!.annotations['io.containerd.image.name']!, digest: index.manifests[0]!.digest };
    const unpacked = fs.existsSync(`${ROOTFS}.digest`) ? fs.readFileSync(`${ROOTFS}.digest`, 'utf8').trim() : '(none)';
    if (unpacked !== image.digest)
      throw new Error(`${ROOTFS} holds ${unpacked}, the archive ${image.digest}: run make image`);
    root = ROOTFS;

    // the ConfigMap volume: config.conf as shipped, kubeconfig.conf pointing at the fake API server
    fs.mkdirSync(cmDir);
    fs.writeFileSync(path.join(cmDir, 'config.conf'), cm.data['config.conf']);
    fs.writeFileSync(path.join(dir, 'fixtures.json'), JSON.stringify(FIXTURES));
    apiserver = await startFakeApiServer([
      '--port',
      String(API_PORT),
      '--host',
      '127.0.0.1',
      '--fixtures',
      path.join(dir, 'fixtures.json'),
      '--kubeconfig-out',
      path.join(cmDir, 'kubeconfig.conf'),
    ]);
    makePod(POD.name, POD.ip, POD.gw);
    children.push(await startEchoServer(POD.name, 'imgpod', POD.ip, 8080));

    // the container's environment: the image's, then the pod's env (NODE_NAME from spec.nodeName)
    env = { PATH: IMAGE_PATH, NODE_NAME: NODE };
    const { cmd, args } = inImage(root, cmDir, expand(container.command as string[]));
    daemon = new LoggedProcess(spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env }), 'kube-ipvs (image)');
  });

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    await kubeadmDaemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    for (const c of children) c.kill('SIGKILL');
    deletePod(POD.name);
    tryRun('ipvsadm', ['-C']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is the image the DaemonSet names', () => {
    expect(image.name).toBe(container.image);
  });

  it("programs the node's kernel from the image: the Service's virtual server, seen from the host", async () => {
    const rules = await eventually(
      'the virtual server',
      () => tryRun('ipvsadm', ['-Sn']).stdout.split('\n').filter(Boolean).sort(),
      (r) => r.length >= 2,
      daemon,
    );
    expect(rules).toEqual(['-A -t 10.96.7.10:80 -s rr', `-a -t 10.96.7.10:80 -r ${POD.ip}:8080 -m -w 1`]);
    // kube-proxy's default log format (klog text), and the image carries the netlink addon
    // (without it the daemon warns that kernel error messages are off)
    // (the virtual server is there before the sync that made it has written its ipsets and
    // iptables rules and logged its end: wait for the line, then connect)
    const isSyncDone = (l: string) => /^I\d{4} [\d:.]+ +\d+ proxier\] "sync done" full=true /.test(l);
    await eventually(
      'the first "sync done" line, klog text',
      () => daemon.text.filter(isSyncDone),
      (l) => l.length > 0,
      daemon,
    );
    expect(connect('', '10.96.7.10', 80).reply).toMatch(/^imgpod client=/);
    expect(daemon.text.filter((l) => l.includes('extended ack'))).toEqual([]);
  }, 600_000);

  it("the image's iptables, ipset and `kube-ipvs ipvsadm` see the same kernel as the host's tools", async () => {
    await eventually(
      'the KUBE-CLUSTER-IP set',
      () => tryRun('ipset', ['list', 'KUBE-CLUSTER-IP']).stdout,
      (s) => s.includes('10.96.7.10,tcp:80'),
      daemon,
    );
    expect(runInImage(root, cmDir, env, ['ipset', 'list', 'KUBE-CLUSTER-IP'])).toContain('10.96.7.10,tcp:80');
    const nat = runInImage(root, cmDir, env, ['iptables-save', '-t', 'nat']);
    expect(nat).toContain(
      '-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment "Kubernetes service cluster ip + port for masquerade purpose" -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ',
    );
    expect(runInImage(root, cmDir, env, ['/usr/local/bin/kube-ipvs', 'ipvsadm', '-Ln'])).toBe(run('ipvsadm', ['-Ln']));
  });

  it('answers the probes: /livez (liveness) and /healthz (readiness) on their port', async () => {
    for (const probe of [container.livenessProbe, container.readinessProbe]) {
      const r = await fetch(`http://127.0.0.1:${probe.httpGet.port}${probe.httpGet.path}`);
      expect({ path: probe.httpGet.path, status: r.status }).toEqual({ path: probe.httpGet.path, status: 200 });
    }
  });

  it('follows the API server: a Service created now gets its virtual server', async () => {
    const api = new ApiClient(`http://127.0.0.1:${API_PORT}`);
    const svc = structuredClone(FIXTURES[1]!);
    svc.metadata = meta('default', 'added');
    svc.spec = { ...svc.spec, clusterIP: '10.96.7.11', clusterIPs: ['10.96.7.11'] };
    await api.create('/api/v1/namespaces/default/services', svc);
    await eventually(
      'the added Service',
      () => tryRun('ipvsadm', ['-Sn']).stdout,
      (s) => s.includes('-A -t 10.96.7.11:80 -s rr'),
      daemon,
    );
  });

  it('stops on SIGTERM with exit 0, leaving the table in place (no flap across a restart)', async () => {
    expect(await daemon.kill('SIGTERM')).toBe(0);
    expect(run('ipvsadm', ['-Sn'])).toContain('-A -t 10.96.7.10:80 -s rr');
  });

  it('answers `kube-proxy --version` (the same entry point by the name kubeadm runs)', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'opt', 'kube-ipvs', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(runInImage(root, cmDir, env, ['/usr/local/bin/kube-proxy', '--version'])).toBe(
      `kube-ipvs v${pkg.version}\n`,
    );
  });

  it("starts under kubeadm's unmodified DaemonSet command line and programs the kernel", async () => {
    // an empty IPVS table: what is there next comes from this process
    run('ipvsadm', ['-C']);
    const { cmd, args } = inImage(root, cmDir, expand(KUBEADM_COMMAND));
    kubeadmDaemon = new LoggedProcess(
      spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env }),
      'kube-proxy (image, kubeadm command)',
    );
    const want = [
      '-A -t 10.96.7.10:80 -s rr',
      `-a -t 10.96.7.10:80 -r ${POD.ip}:8080 -m -w 1`,
      '-A -t 10.96.7.11:80 -s rr', // the Service added earlier, still in the API server
    ].sort();
    const rules = await eventually(
      'both virtual servers',
      () => tryRun('ipvsadm', ['-Sn']).stdout.split('\n').filter(Boolean).sort(),
      (r) => r.length >= want.length,
      kubeadmDaemon,
    );
    expect(rules).toEqual(want);
    expect(connect('', '10.96.7.10', 80).reply).toMatch(/^imgpod client=/);
    // --hostname-override=$(NODE_NAME) reached the daemon, from the file kubeadm's --config names
    expect(
      kubeadmDaemon.text.filter((l) => l.includes('kube-ipvs starting: node ')).map((l) => /node (\S+),/.exec(l)?.[1]),
    ).toEqual([NODE]);
    expect(await kubeadmDaemon.kill('SIGTERM')).toBe(0);
  }, 600_000);
});

if (!built) {
  describe('the kube-ipvs image', () => {
    it('is built (make image)', () => {
      throw new Error(`${ARCHIVE} is not built: run make image (make test builds it)`);
    });
  });
}
