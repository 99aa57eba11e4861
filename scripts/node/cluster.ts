/**
 * cluster — a one-node Kubernetes cluster for the e2e lab (make e2e), every part real and built
 * here: the lab's etcd and kube-apiserver (scripts/lab/), kube-controller-manager and
 * kube-scheduler beside them on this host, and a node in the VM (scripts/node/guest-node.sh):
 * containerd, runc, the CNI bridge and a kubelet registered as system:node:NAME. Then what
 * kubeadm installs: its kube-proxy DaemonSet (the real kube-proxy in IPVS mode, from the lab's
 * ConfigMap) and CoreDNS with the Service kube-dns at 10.96.0.10.
 *
 *   node dist/scripts/node/cluster.js up DIR     start it (a supervisor in the background); prints
 *                                                DIR/cluster.json once the node is Ready and the
 *                                                kube-system pods run
 *   node dist/scripts/node/cluster.js down DIR   stop it all (the VM powers off)
 *
 * The API server reaches the kubelet (exec, logs) through the egress selector the lab configures:
 * an HTTP CONNECT proxy on DIR/lab/cluster-egress.sock that this supervisor serves, which sends
 * every tunnel to the VM's port 10250 through a QEMU host forward (scripts/vm/run.sh -F).
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { alive, Member, sleep } from '../../testkit/member';
import { freePort } from '../../testkit/ports';
import { CLUSTER_EGRESS_SOCKET, LabInfo, LAB_GUEST_IPS } from '../../testkit/lab-client';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const K8S_BIN = path.join(ROOT, '.k8s', 'bin');
const NODE_BIN = path.join(ROOT, '.k8s', 'node', 'bin');
const IMAGES = path.join(ROOT, '.k8s', 'node', 'images');
/** `make image`'s archive: the image an operator swaps in */
const KUBE_IPVS_ARCHIVE = path.join(ROOT, 'dist', 'image', 'kube-ipvs.oci.tar');
export const NODE_NAME = 'node-1';
export const POD_CIDR = '10.244.0.0/24';
const CLUSTER_CIDR = '10.244.0.0/16';
const SERVICE_CIDRS = '10.96.0.0/16,fd00:10:96::/112';
/** the guest's address on QEMU's user network (scripts/vm/build-image.sh) */
const NODE_IP = '10.0.2.15';
/** the node's relay to pods and Services for the API server (guest-relay.ts) */
const RELAY_PORT = 10251;
export const KUBE_PROXY_IMAGE = 'registry.k8s.io/kube-proxy:v1.37.2';
/** minutes under TCG: image import, kubelet start, the first pods (real-node.md measured ~3) */
const READY_TIMEOUT_MS = 20 * 60_000;
/** the VM's own limit; `down` ends it long before */
const VM_TIMEOUT_S = 6 * 3600;

export interface ClusterInfo {
  pid: number;
  dir: string;
  kubeconfig: string;
  kubectl: string;
  lab: LabInfo;
  kubeletHostPort: number;
  /** the host's port forwarded to the node's relay to pods and Services (guest-relay.ts) */
  relayHostPort: number;
  ready: boolean;
  /** seconds from the start to each milestone */
  timings: Record<string, number>;
}

function readInfo(dir: string): ClusterInfo | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'cluster.json'), 'utf8')) as ClusterInfo;
  } catch {
    return undefined;
  }
}

/** kubectl with `kubeconfig`: its status and output. */
export function kubectl(
  kubeconfig: string,
  args: readonly string[],
  stdin?: string,
  timeoutMs = 300_000,
): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      path.join(K8S_BIN, 'kubectl'),
      ['--kubeconfig', kubeconfig, ...args],
      { maxBuffer: 64 << 20, timeout: timeoutMs },
      (err, stdout, stderr) => resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(stdin ?? '');
  });
}

export async function mustKubectl(kubeconfig: string, args: readonly string[], stdin?: string): Promise<string> {
  const r = await kubectl(kubeconfig, args, stdin);
  if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

/** A client certificate signed by the lab's CA (CN = user, O = group), as kubeadm issues each component's. */
function issueClientCert(pki: string, name: string, cn: string, org?: string): { cert: string; key: string } {
  const key = path.join(pki, `${name}.key`);
  const cert = path.join(pki, `${name}.crt`);
  if (!fs.existsSync(cert)) {
    const subj = `${org ? `/O=${org}` : ''}/CN=${cn}`;
    const csr = path.join(pki, `${name}.csr`);
    execFileSync(
      'openssl',
      ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat([
        '-keyout',
        key,
        '-out',
        csr,
        '-subj',
        subj,
      ]),
      { stdio: 'pipe' },
    );
    execFileSync(
      'openssl',
      [
        'x509',
        '-req',
        '-in',
        csr,
        '-CA',
        path.join(pki, 'ca.crt'),
        '-CAkey',
        path.join(pki, 'ca.key'),
        '-CAcreateserial',
        '-days',
        '3650',
        '-extfile',
        path.join(pki, 'client.ext'),
        '-out',
        cert,
      ],
      { stdio: 'pipe' },
    );
  }
  return { cert, key };
}

function kubeconfigFor(server: string, caFile: string, user: string, cert: { cert: string; key: string }): string {
  const b64 = (f: string) => fs.readFileSync(f).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: lab',
    `  cluster: {server: "${server}", certificate-authority-data: ${b64(caFile)}}`,
    'users:',
    `- name: ${user}`,
    `  user: {client-certificate-data: ${b64(cert.cert)}, client-key-data: ${b64(cert.key)}}`,
    'contexts:',
    `- name: lab`,
    `  context: {cluster: lab, user: ${user}}`,
    'current-context: lab',
    '',
  ].join('\n');
}

/**
 * The API servers' way into the cluster: an HTTP CONNECT proxy on a unix socket (the egress
 * selector's HTTPConnect over UDS, as konnectivity serves it). A tunnel to the node's kubelet
 * (exec, logs, port-forward) goes to the VM's forwarded port 10250; one to anything else (a pod
 * or a Service: pods/proxy, services/proxy) goes to the node's relay (guest-relay.ts), which
 * connects there from inside the VM. Anything but CONNECT is refused.
 */
export function egressProxy(socket: string, kubeletHostPort: number, relayHostPort: number): net.Server {
  fs.rmSync(socket, { force: true });
  const server = net.createServer((client) => {
    let head = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      head = Buffer.concat([head, d]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      client.off('data', onData);
      const m = /^CONNECT (\S+) HTTP\/1\.[01]$/.exec(head.subarray(0, head.indexOf('\r\n')).toString());
      if (!m) {
        client.end('HTTP/1.1 405 Method Not Allowed\r\n\r\n');
        return;
      }
      const target = m[1]!;
      const toKubelet = target === `${NODE_IP}:10250` || target === `${NODE_NAME}:10250`;
      const upstream = net.connect(toKubelet ? kubeletHostPort : relayHostPort, '127.0.0.1');
      /** `early`: what the target sent before the tunnel was confirmed (after the relay's ok) */
      const established = (early?: Buffer) => {
        client.write('HTTP/1.1 200 Connection established\r\n\r\n');
        if (early?.length) client.write(early);
        const rest = head.subarray(end + 4);
        if (rest.length) upstream.write(rest);
        client.pipe(upstream).pipe(client);
      };
      if (toKubelet) upstream.once('connect', () => established());
      else {
        upstream.once('connect', () => upstream.write(`${target}\n`));
        // the relay says ok once it reached the target, or closes
        let answer = Buffer.alloc(0);
        let ok = false;
        const onAnswer = (d: Buffer) => {
          answer = Buffer.concat([answer, d]);
          const nl = answer.indexOf('\n');
          if (nl < 0) return;
          upstream.off('data', onAnswer);
          if (answer.subarray(0, nl + 1).toString() !== 'ok\n')
            return void client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
          ok = true;
          established(answer.subarray(nl + 1));
        };
        upstream.on('data', onAnswer);
        // closed before ok: the relay could not reach the target
        upstream.once('close', () => (ok ? client.destroy() : client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n')));
      }
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    };
    client.on('data', onData);
  });
  server.listen(socket);
  return server;
}

function writeNodeState(state: string, pki: string, kubeletConf: string): void {
  fs.mkdirSync(state, { recursive: true });
  for (const f of ['stop', 'started', 'failed']) fs.rmSync(path.join(state, f), { force: true });
  fs.copyFileSync(path.join(pki, 'ca.crt'), path.join(state, 'ca.crt'));
  fs.writeFileSync(path.join(state, 'kubelet.conf'), kubeletConf);
  // the pods' upstream resolver (dnsPolicy Default: CoreDNS forwards to it): QEMU's, which the
  // restricted network never answers; what matters is that it is not a loopback (CoreDNS's loop check)
  fs.writeFileSync(path.join(state, 'resolv.conf'), 'nameserver 10.0.2.3\n');
  fs.writeFileSync(
    path.join(state, 'node.env'),
    Object.entries({ NODE_NAME, POD_CIDR, NODE_IP, BIN: NODE_BIN, IMAGES, KUBE_IPVS_ARCHIVE, RELAY_PORT, ROOT })
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
  );
  fs.writeFileSync(
    path.join(state, 'kubelet.yaml'),
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      'authentication:',
      '  anonymous: {enabled: false}',
      '  webhook: {enabled: true}',
      `  x509: {clientCAFile: ${path.join(state, 'ca.crt')}}`,
      'authorization: {mode: Webhook}',
      // no systemd in the VM; containerd 2.4 reports the same driver through the CRI
      'cgroupDriver: cgroupfs',
      'containerRuntimeEndpoint: unix:///run/containerd/containerd.sock',
      'clusterDNS: [10.96.0.10]',
      'clusterDomain: cluster.local',
      `resolvConf: ${path.join(state, 'resolv.conf')}`,
      'port: 10250',
      'readOnlyPort: 0',
      // the node's disks are tmpfs in RAM: no eviction or image GC from their fill level
      'evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}',
      'imageGCHighThresholdPercent: 100',
      'imageGCLowThresholdPercent: 99',
      'serializeImagePulls: false',
      '',
    ].join('\n'),
  );
}

class Cluster {
  readonly members: Member[] = [];
  proxy: net.Server | undefined;
  vm: ReturnType<typeof spawn> | undefined;
  constructor(readonly dir: string) {}

  async start(info: ClusterInfo): Promise<void> {
    const t0 = Date.now();
    const mark = (what: string) => (info.timings[what] = Math.round((Date.now() - t0) / 100) / 10);
    const labDir = path.join(this.dir, 'lab');
    // a new cluster each time: no etcd data, node or pods left from the last one
    fs.rmSync(labDir, { recursive: true, force: true });
    const out = execFileSync(process.execPath, [path.join(ROOT, 'dist', 'scripts', 'lab', 'lab.js'), 'up', labDir], {
      encoding: 'utf8',
    });
    const lab = JSON.parse(out.trim().split('\n').pop()!) as LabInfo;
    info.lab = lab;
    mark('lab');
    const pki = path.join(labDir, 'pki');
    const caFile = path.join(pki, 'ca.crt');
    const hostServer = `https://127.0.0.1:${lab.apiservers.a.port}`;
    const guestServer = `https://${LAB_GUEST_IPS.a}:${lab.apiservers.a.port}`;
    info.kubeconfig = path.join(labDir, 'admin.conf');

    // kube-controller-manager and kube-scheduler, each with its own identity as kubeadm gives them
    const taken = [
      lab.controlPort,
      lab.apiservers.a.port,
      lab.apiservers.b.port,
      lab.etcd.clientPort,
      lab.etcd.peerPort,
    ];
    const kcmPort = await freePort(taken);
    const schedPort = await freePort([...taken, kcmPort]);
    info.kubeletHostPort = await freePort([...taken, kcmPort, schedPort]);
    info.relayHostPort = await freePort([...taken, kcmPort, schedPort, info.kubeletHostPort]);
    const kcmConf = path.join(this.dir, 'controller-manager.conf');
    fs.writeFileSync(
      kcmConf,
      kubeconfigFor(
        hostServer,
        caFile,
        'system:kube-controller-manager',
        issueClientCert(pki, 'controller-manager', 'system:kube-controller-manager'),
      ),
    );
    const schedConf = path.join(this.dir, 'scheduler.conf');
    fs.writeFileSync(
      schedConf,
      kubeconfigFor(
        hostServer,
        caFile,
        'system:kube-scheduler',
        issueClientCert(pki, 'scheduler', 'system:kube-scheduler'),
      ),
    );
    this.members.push(
      new Member(
        'kube-controller-manager',
        path.join(NODE_BIN, 'kube-controller-manager'),
        [
          `--kubeconfig=${kcmConf}`,
          `--authentication-kubeconfig=${kcmConf}`,
          `--authorization-kubeconfig=${kcmConf}`,
          '--bind-address=127.0.0.1',
          `--secure-port=${kcmPort}`,
          `--client-ca-file=${caFile}`,
          `--requestheader-client-ca-file=${caFile}`,
          `--root-ca-file=${caFile}`,
          `--service-account-private-key-file=${path.join(pki, 'sa.key')}`,
          `--cluster-signing-cert-file=${caFile}`,
          `--cluster-signing-key-file=${path.join(pki, 'ca.key')}`,
          '--use-service-account-credentials=true',
          '--controllers=*,bootstrapsigner,tokencleaner',
          '--allocate-node-cidrs=true',
          `--cluster-cidr=${CLUSTER_CIDR}`,
          `--service-cluster-ip-range=${SERVICE_CIDRS}`,
          '--leader-elect=false',
          '--v=1',
        ],
        path.join(this.dir, 'kube-controller-manager.log'),
      ),
      new Member(
        'kube-scheduler',
        path.join(NODE_BIN, 'kube-scheduler'),
        [
          `--kubeconfig=${schedConf}`,
          `--authentication-kubeconfig=${schedConf}`,
          `--authorization-kubeconfig=${schedConf}`,
          '--bind-address=127.0.0.1',
          `--secure-port=${schedPort}`,
          '--leader-elect=false',
          '--v=1',
        ],
        path.join(this.dir, 'kube-scheduler.log'),
      ),
    );
    for (const m of this.members) m.start();
    this.proxy = egressProxy(path.join(labDir, CLUSTER_EGRESS_SOCKET), info.kubeletHostPort, info.relayHostPort);

    // the node
    const state = path.join(this.dir, 'node');
    writeNodeState(
      state,
      pki,
      kubeconfigFor(
        guestServer,
        caFile,
        `system:node:${NODE_NAME}`,
        issueClientCert(pki, 'kubelet', `system:node:${NODE_NAME}`, 'system:nodes'),
      ),
    );
    const fwd = [`${LAB_GUEST_IPS.a}:${lab.apiservers.a.port}`, `${LAB_GUEST_IPS.b}:${lab.apiservers.b.port}`];
    const vmLog = fs.openSync(path.join(this.dir, 'vm.log'), 'a');
    this.vm = spawn(
      'bash',
      [
        path.join(ROOT, 'scripts', 'vm', 'run.sh'),
        '-t',
        String(VM_TIMEOUT_S),
        '-m',
        process.env.NODE_VM_MEM ?? '6G',
        '-c',
        '2',
        '-R',
        '-w',
        state,
        ...fwd.flatMap((f) => ['-f', f]),
        '-F',
        `${info.kubeletHostPort}:10250`,
        '-F',
        `${info.relayHostPort}:${RELAY_PORT}`,
        '--',
        'bash',
        path.join(ROOT, 'scripts', 'node', 'guest-node.sh'),
        state,
      ],
      { cwd: ROOT, stdio: ['ignore', vmLog, vmLog] },
    );
    fs.closeSync(vmLog);
    const vm = this.vm;
    vm.on('exit', (code) => {
      if (this.vm === vm) this.vm = undefined;
      console.log(`the node's VM exited (${code})`);
    });

    const deadline = Date.now() + READY_TIMEOUT_MS;
    const waitFor = async (what: string, ok: () => Promise<boolean>) => {
      while (!(await ok())) {
        if (!this.vm)
          throw new Error(`the node's VM exited while waiting for ${what}: see ${this.dir}/vm.log and ${state}/`);
        if (fs.existsSync(path.join(state, 'failed')))
          throw new Error(`the node failed: ${fs.readFileSync(path.join(state, 'failed'), 'utf8').trim()}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await sleep(2000);
      }
      mark(what);
      console.log(`${what} after ${info.timings[what]} s`);
    };
    await waitFor('kubelet started', async () => fs.existsSync(path.join(state, 'started')));
    await waitFor('node Ready', async () => {
      const r = await kubectl(info.kubeconfig, [
        'get',
        'node',
        NODE_NAME,
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      return r.stdout.trim() === 'True';
    });
    // what kubeadm installs: its kube-proxy DaemonSet (ServiceAccount, RBAC and ConfigMap the lab applied) and CoreDNS
    const ds = fs
      .readFileSync(path.join(ROOT, 'scripts', 'node', 'kubeadm', 'kube-proxy-daemonset.yaml'), 'utf8')
      .replace('image: IMAGE', `image: ${KUBE_PROXY_IMAGE}`);
    await mustKubectl(info.kubeconfig, ['apply', '-f', '-'], ds);
    await mustKubectl(info.kubeconfig, ['apply', '-f', path.join(ROOT, 'scripts', 'node', 'kubeadm', 'coredns.yaml')]);
    await waitFor('kube-proxy ready', async () => {
      const r = await kubectl(info.kubeconfig, [
        '-n',
        'kube-system',
        'get',
        'ds',
        'kube-proxy',
        '-o',
        'jsonpath={.status.numberReady}',
      ]);
      return r.stdout.trim() === '1';
    });
    await waitFor('CoreDNS ready', async () => {
      const r = await kubectl(info.kubeconfig, [
        '-n',
        'kube-system',
        'get',
        'deploy',
        'coredns',
        '-o',
        'jsonpath={.status.readyReplicas}',
      ]);
      return r.stdout.trim() === '1';
    });
  }

  async stop(): Promise<void> {
    const state = path.join(this.dir, 'node');
    if (this.vm) {
      fs.writeFileSync(path.join(state, 'stop'), '');
      const vm = this.vm;
      const exited = new Promise((r) => vm.once('exit', r));
      const t = setTimeout(() => vm.kill('SIGTERM'), 60_000);
      await exited;
      clearTimeout(t);
    }
    this.proxy?.close();
    for (const m of this.members) await m.stop();
    execFileSync(process.execPath, [
      path.join(ROOT, 'dist', 'scripts', 'lab', 'lab.js'),
      'down',
      path.join(this.dir, 'lab'),
    ]);
  }
}

async function serve(dir: string): Promise<void> {
  const info: ClusterInfo = {
    pid: process.pid,
    dir,
    kubeconfig: '',
    kubectl: path.join(K8S_BIN, 'kubectl'),
    lab: undefined as unknown as LabInfo,
    kubeletHostPort: 0,
    relayHostPort: 0,
    ready: false,
    timings: {},
  };
  const cluster = new Cluster(dir);
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await cluster.stop().catch((e: Error) => console.error(`stopping: ${e.message}`));
    fs.rmSync(path.join(dir, 'cluster.json'), { force: true });
    process.exit(code);
  };
  process.on('SIGTERM', () => void stop(0));
  process.on('SIGINT', () => void stop(0));
  try {
    await cluster.start(info);
    info.ready = true;
    fs.writeFileSync(path.join(dir, 'cluster.json.tmp'), JSON.stringify(info, null, 2));
    fs.renameSync(path.join(dir, 'cluster.json.tmp'), path.join(dir, 'cluster.json'));
    console.log(`cluster ready: ${JSON.stringify(info.timings)}`);
  } catch (e) {
    console.error(`cluster failed to start: ${(e as Error).message}`);
    fs.writeFileSync(path.join(dir, 'cluster.failed'), `${(e as Error).message}\n`);
    await stop(1);
  }
}

async function up(dir: string): Promise<number> {
  fs.mkdirSync(dir, { recursive: true });
  const existing = readInfo(dir);
  if (existing?.ready && alive(existing.pid)) {
    console.log(JSON.stringify(existing));
    return 0;
  }
  for (const bin of [
    path.join(NODE_BIN, 'kubelet'),
    path.join(NODE_BIN, 'kube-controller-manager'),
    path.join(IMAGES, 'pause.oci.tar'),
  ]) {
    if (!fs.existsSync(bin)) {
      console.error(`cluster: ${bin} is missing: run bash scripts/node/build.sh and bash scripts/node/images.sh`);
      return 2;
    }
  }
  for (const f of ['cluster.json', 'cluster.failed']) fs.rmSync(path.join(dir, f), { force: true });
  const log = fs.openSync(path.join(dir, 'cluster.log'), 'a');
  const child = spawn(process.execPath, [__filename, 'serve', dir], { detached: true, stdio: ['ignore', log, log] });
  child.unref();
  for (;;) {
    const info = readInfo(dir);
    if (info?.ready) {
      console.log(JSON.stringify(info));
      return 0;
    }
    if (fs.existsSync(path.join(dir, 'cluster.failed')) || !alive(child.pid!)) {
      console.error(
        `cluster: did not start; its log (${path.join(dir, 'cluster.log')}):\n${fs.readFileSync(path.join(dir, 'cluster.log'), 'utf8')}`,
      );
      return 1;
    }
    await sleep(1000);
  }
}

async function down(dir: string): Promise<number> {
  // the supervisor writes its pid first thing (cluster.json only once the cluster is ready)
  const pidFile = path.join(dir, 'cluster.pid');
  const pid = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : NaN;
  if (!Number.isInteger(pid) || !alive(pid)) return 0;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + 180_000;
  while (alive(pid) && Date.now() < deadline) await sleep(500);
  if (alive(pid)) process.kill(pid, 'SIGKILL');
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [verb, dirArg] = argv;
  if (!dirArg || !['up', 'down', 'serve'].includes(verb ?? '')) {
    console.error('usage: cluster up|down DIR');
    return 2;
  }
  const dir = path.resolve(dirArg);
  if (verb === 'up') return up(dir);
  if (verb === 'down') return down(dir);
  fs.writeFileSync(path.join(dir, 'cluster.pid'), String(process.pid));
  await serve(dir);
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code !== 0 || process.argv[2] !== 'serve') process.exit(code);
    },
    (e: Error) => {
      console.error(e.stack ?? e.message);
      process.exit(1);
    },
  );
}
