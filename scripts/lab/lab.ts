/**
 * lab — a real Kubernetes control plane for the tests, as kubeadm sets one up: etcd and
 * kube-apiserver (built from the release pinned in scripts/k8s/go.mod by scripts/k8s/build.sh)
 * running natively on this host's loopback, TLS with a CA of the lab's own, service-account
 * signing keys, `--authorization-mode=Node,RBAC`, an audit log of every request, and kubeadm's
 * kube-proxy objects applied with kubectl (manifests/new-cluster/). The VM reaches it through QEMU's user
 * network (scripts/vm/run.sh -f), each guest address forwarded to one loopback port here.
 *
 *   node dist/scripts/lab/lab.js up DIR     start (or find running) the lab in DIR; prints its JSON
 *   node dist/scripts/lab/lab.js down DIR   stop it (nothing running: nothing to do)
 *   node dist/scripts/lab/lab.js status DIR
 *
 * `up` starts a supervisor (`serve`, detached, log in DIR/lab.log) that owns etcd and the API
 * servers and answers a small control API on loopback (testkit/lab-client.ts speaks it):
 * run kubectl as the cluster admin, stop and start an API server, compact etcd, read the audit
 * log. Ports are picked free at start, so two labs (two DIRs) never share one.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { makeTestPki } from '../../testkit/test-pki';
import { run } from '../../testkit/netns';
import { withServer } from '../../testkit/processes';
import { freePort } from '../../testkit/ports';
import { alive, Member, sleep } from '../../testkit/member';
import { CLUSTER_EGRESS_SOCKET, LabInfo, LAB_GUEST_IPS } from '../../testkit/lab-client';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const BIN = path.join(ROOT, '.k8s', 'bin');
const MANIFESTS = path.join(ROOT, 'manifests', 'new-cluster');
/** kubeadm's objects for kube-proxy, applied as they ship (the ConfigMap's server set to the lab's) */
const KUBEADM_OBJECTS = [
  'service-account.yaml',
  'cluster-role-binding.yaml',
  'role.yaml',
  'role-binding.yaml',
  'configmap.yaml',
];
const SERVICE_CIDRS = '10.96.0.0/16,fd00:10:96::/112';
const READY_TIMEOUT_MS = 180_000;
/**
 * How long a stopped kube-apiserver may take to exit before it is killed. Its graceful
 * termination (listeners closed, watches ended, audit flushed) is logged within 0.1 s of the
 * SIGTERM; with the VM's clients connected (through QEMU's guestfwd) it then did not exit until
 * the 30 s SIGKILL, every stop, while with none it exits in about 1 s. The clients see the same
 * either way: their watches ended and their new connections refused from the SIGTERM on.
 */
const APISERVER_STOP_GRACE_MS = 5_000;

type ApiserverName = keyof typeof LAB_GUEST_IPS;

function readInfo(dir: string): LabInfo | undefined {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, 'lab.json'), 'utf8')) as LabInfo;
  } catch {
    return undefined;
  }
}

/** GET over the control API; undefined when nothing answers. */
function controlGet(port: number, p: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(res.statusCode === 200 ? body : undefined));
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
  });
}

class Lab {
  readonly pki;
  readonly etcd: Member;
  readonly apiservers = new Map<ApiserverName, Member>();
  readonly adminConf: string;
  readonly auditLog: string;

  constructor(
    readonly dir: string,
    readonly info: LabInfo,
  ) {
    this.pki = makeTestPki(path.join(dir, 'pki'), {
      ips: ['127.0.0.1', ...Object.values(LAB_GUEST_IPS), '10.96.0.1'],
      names: [
        'localhost',
        'kubernetes',
        'kubernetes.default',
        'kubernetes.default.svc',
        'kubernetes.default.svc.cluster.local',
      ],
      clientName: 'kubernetes-admin',
      clientOrganization: 'system:masters',
      caName: 'kube-ipvs-lab-ca',
      serverName: 'kube-apiserver',
    });
    const sa = path.join(dir, 'pki', 'sa.key');
    if (!fs.existsSync(sa)) {
      run('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', sa]);
      run('openssl', ['ec', '-in', sa, '-pubout', '-out', path.join(dir, 'pki', 'sa.pub')]);
    }
    this.auditLog = path.join(dir, 'audit.log');
    fs.writeFileSync(
      path.join(dir, 'audit-policy.yaml'),
      // every request with its user, verb, resource and response code (no bodies)
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n',
    );
    fs.writeFileSync(
      path.join(dir, 'egress-selector.yaml'),
      [
        'apiVersion: apiserver.k8s.io/v1beta1',
        'kind: EgressSelectorConfiguration',
        'egressSelections:',
        '- name: cluster',
        '  connection:',
        '    proxyProtocol: HTTPConnect',
        `    transport: {uds: {udsName: ${path.join(dir, CLUSTER_EGRESS_SOCKET)}}}`,
        '',
      ].join('\n'),
    );
    const e = info.etcd;
    this.etcd = new Member(
      'etcd',
      path.join(BIN, 'etcd'),
      [
        '--name=lab',
        `--data-dir=${path.join(dir, 'etcd')}`,
        `--listen-client-urls=http://127.0.0.1:${e.clientPort}`,
        `--advertise-client-urls=http://127.0.0.1:${e.clientPort}`,
        `--listen-peer-urls=http://127.0.0.1:${e.peerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${e.peerPort}`,
        `--initial-cluster=lab=http://127.0.0.1:${e.peerPort}`,
        '--log-level=warn',
      ],
      path.join(dir, 'etcd.log'),
    );
    for (const name of Object.keys(LAB_GUEST_IPS) as ApiserverName[]) {
      const port = info.apiservers[name].port;
      this.apiservers.set(
        name,
        new Member(
          `kube-apiserver-${name}`,
          path.join(BIN, 'kube-apiserver'),
          [
            `--etcd-servers=http://127.0.0.1:${e.clientPort}`,
            '--bind-address=127.0.0.1',
            `--secure-port=${port}`,
            `--advertise-address=${LAB_GUEST_IPS[name]}`,
            `--cert-dir=${path.join(dir, `apiserver-${name}`)}`,
            `--tls-cert-file=${this.pki.serverCertFile}`,
            `--tls-private-key-file=${this.pki.serverKeyFile}`,
            `--client-ca-file=${this.pki.caFile}`,
            '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
            `--service-account-key-file=${path.join(dir, 'pki', 'sa.pub')}`,
            `--service-account-signing-key-file=${sa}`,
            `--service-cluster-ip-range=${SERVICE_CIDRS}`,
            '--authorization-mode=Node,RBAC',
            '--enable-admission-plugins=NodeRestriction',
            '--allow-privileged=true',
            // a node of the lab (scripts/node/) is a VM this host reaches only through a forwarded
            // port: the API server's way to a kubelet (exec, logs, port-forward) is an HTTP CONNECT
            // proxy on a unix socket (the egress selector konnectivity uses), which scripts/node/
            // serves; with no node it is never dialled
            `--egress-selector-config-file=${path.join(dir, 'egress-selector.yaml')}`,
            '--kubelet-preferred-address-types=InternalIP',
            `--kubelet-client-certificate=${this.pki.clientCertFile}`,
            `--kubelet-client-key=${this.pki.clientKeyFile}`,
            `--audit-policy-file=${path.join(dir, 'audit-policy.yaml')}`,
            `--audit-log-path=${this.auditLog}`,
            '--audit-log-maxsize=0',
            '--audit-log-format=json',
            '--profiling=false',
            '--v=1',
          ],
          path.join(dir, `apiserver-${name}.log`),
        ),
      );
    }
    this.adminConf = path.join(dir, 'admin.conf');
    fs.writeFileSync(this.adminConf, this.kubeconfig(`https://127.0.0.1:${info.apiservers.a.port}`));
  }

  kubeconfig(server: string): string {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    return [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: lab',
      '  cluster:',
      `    server: ${server}`,
      `    certificate-authority-data: ${b64(this.pki.ca)}`,
      'users:',
      '- name: kubernetes-admin',
      '  user:',
      `    client-certificate-data: ${b64(this.pki.clientCert)}`,
      `    client-key-data: ${b64(this.pki.clientKey)}`,
      'contexts:',
      '- name: lab',
      '  context: {cluster: lab, user: kubernetes-admin}',
      'current-context: lab',
      '',
    ].join('\n');
  }

  /** GET path on an API server as the admin: status code, or 0 when nothing answers. */
  adminGet(port: number, p: string): Promise<number> {
    return new Promise((resolve) => {
      const req = https.get(
        {
          host: '127.0.0.1',
          port,
          path: p,
          ca: this.pki.ca,
          cert: this.pki.clientCert,
          key: this.pki.clientKey,
          timeout: 5000,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', () => resolve(0));
      req.on('timeout', () => req.destroy());
    });
  }

  async startApiserver(name: ApiserverName): Promise<void> {
    const m = this.apiservers.get(name)!;
    if (!m.running) m.start();
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while ((await this.adminGet(this.info.apiservers[name].port, '/readyz')) !== 200) {
      if (!m.running) throw new Error(`kube-apiserver ${name} exited while starting: see ${m.logFile}`);
      if (Date.now() > deadline)
        throw new Error(`kube-apiserver ${name} not ready after ${READY_TIMEOUT_MS / 1000} s: see ${m.logFile}`);
      await sleep(250);
    }
  }

  async startEtcd(): Promise<void> {
    this.etcd.start();
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (!(await this.etcdHealthy())) {
      if (!this.etcd.running) throw new Error(`etcd exited while starting: see ${this.etcd.logFile}`);
      if (Date.now() > deadline) throw new Error(`etcd not healthy after ${READY_TIMEOUT_MS / 1000} s`);
      await sleep(200);
    }
  }

  private async etcdHealthy(): Promise<boolean> {
    try {
      const r = await fetch(`http://127.0.0.1:${this.info.etcd.clientPort}/health`);
      return r.ok && ((await r.json()) as { health?: string }).health === 'true';
    } catch {
      return false;
    }
  }

  /** etcd's KV API over its JSON gateway (the v3 gRPC methods as POST /v3/...; byte fields base64). */
  private async etcdCall(method: string, body: unknown): Promise<Record<string, unknown>> {
    const r = await fetch(`http://127.0.0.1:${this.info.etcd.clientPort}/v3/${method}`, {
      method: 'POST',
      body: JSON.stringify(body),
    });
    const out = (await r.json()) as Record<string, unknown>;
    if (!r.ok) throw new Error(`etcd ${method}: HTTP ${r.status} ${JSON.stringify(out)}`);
    return out;
  }

  /** Compacts etcd at its current revision (physical: waits until it is done); returns the revision. */
  async compact(): Promise<number> {
    const range = await this.etcdCall('kv/range', { key: Buffer.from('/registry/').toString('base64'), limit: 1 });
    const revision = Number((range.header as { revision: string }).revision);
    await this.etcdCall('kv/compaction', { revision: String(revision), physical: true });
    return revision;
  }

  kubectl(args: readonly string[], stdin?: string): Promise<{ status: number; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
      const child = execFile(
        path.join(BIN, 'kubectl'),
        ['--kubeconfig', this.adminConf, ...args],
        { maxBuffer: 256 << 20, timeout: 300_000 },
        (err, stdout, stderr) => resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
      if (stdin !== undefined) child.stdin!.end(stdin);
      else child.stdin!.end();
    });
  }

  /** kubeadm's kube-proxy objects, applied with kubectl; the ConfigMap's kubeconfig points at API server a as the guest reaches it. */
  async applyKubeadmObjects(): Promise<void> {
    const server = `https://${LAB_GUEST_IPS.a}:${this.info.apiservers.a.port}`;
    const docs = KUBEADM_OBJECTS.map((f) => fs.readFileSync(path.join(MANIFESTS, f), 'utf8')).map((text) =>
      withServer(text, server),
    );
    const r = await this.kubectl(['apply', '-f', '-'], docs.join('\n---\n'));
    if (r.status !== 0) throw new Error(`kubectl apply of kubeadm's objects failed: ${r.stderr}`);
  }

  async stopAll(): Promise<void> {
    for (const m of this.apiservers.values()) await m.stop(APISERVER_STOP_GRACE_MS);
    await this.etcd.stop();
  }
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

/** The control API (loopback, plain HTTP; the guest reaches it through a forwarded port). */
function controlServer(lab: Lab): http.Server {
  // a reply that fails in turn (its headers already sent) ends that connection, not the lab
  return http.createServer((req, res) => void controlRequest(lab, req, res).catch((e: Error) => res.destroy(e)));
}

async function controlRequest(lab: Lab, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://lab');
  const reply = (code: number, body: unknown) => {
    res.writeHead(code, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
  try {
    const m = /^\/apiserver\/([a-z])\/(start|stop)$/.exec(url.pathname);
    if (req.method === 'GET' && url.pathname === '/info') return reply(200, lab.info);
    if (req.method === 'GET' && url.pathname === '/ca.crt') return reply(200, lab.pki.ca);
    if (req.method === 'GET' && url.pathname === '/audit') {
      // the audit log from byte `offset` on (whole lines only), and the offset to ask for next
      // (an offset past the end, as auditMark asks, is the end: the next call starts there)
      const size = fs.existsSync(lab.auditLog) ? fs.statSync(lab.auditLog).size : 0;
      const offset = Math.min(Number(url.searchParams.get('offset') ?? 0), size);
      let text = '';
      if (offset < size) {
        const buf = Buffer.alloc(size - offset);
        const fd = fs.openSync(lab.auditLog, 'r');
        try {
          fs.readSync(fd, buf, 0, buf.length, offset);
        } finally {
          fs.closeSync(fd);
        }
        text = buf.toString('utf8');
      }
      const whole = text.slice(0, text.lastIndexOf('\n') + 1);
      return reply(200, { next: offset + Buffer.byteLength(whole), lines: whole.split('\n').filter(Boolean) });
    }
    if (req.method === 'POST' && url.pathname === '/kubectl') {
      const { args, stdin } = JSON.parse(await readBody(req)) as { args: string[]; stdin?: string };
      return reply(200, await lab.kubectl(args, stdin));
    }
    if (req.method === 'POST' && url.pathname === '/etcd/compact') return reply(200, { revision: await lab.compact() });
    if (req.method === 'POST' && m && lab.apiservers.has(m[1] as ApiserverName)) {
      const name = m[1] as ApiserverName;
      if (m[2] === 'stop') await lab.apiservers.get(name)!.stop(APISERVER_STOP_GRACE_MS);
      else await lab.startApiserver(name);
      return reply(200, { name, running: lab.apiservers.get(name)!.running });
    }
    reply(404, `no ${req.method} ${url.pathname}\n`);
  } catch (e) {
    reply(500, `${(e as Error).message}\n`);
  }
}

async function serve(dir: string): Promise<void> {
  const ports: number[] = [];
  for (let i = 0; i < 5; i++) ports.push(await freePort(ports));
  const [controlPort, clientPort, peerPort, portA, portB] = ports as [number, number, number, number, number];
  const info: LabInfo = {
    pid: process.pid,
    dir,
    version: fs.readFileSync(path.join(BIN, 'VERSION'), 'utf8').trim(),
    controlPort,
    etcd: { clientPort, peerPort },
    apiservers: { a: { port: portA }, b: { port: portB } },
    guest: LAB_GUEST_IPS,
    ready: false,
  };
  const lab = new Lab(dir, info);
  const server = controlServer(lab);
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    server.close();
    await lab.stopAll();
    fs.rmSync(path.join(dir, 'lab.json'), { force: true });
    process.exit(code);
  };
  process.on('SIGTERM', () => void stop(0));
  process.on('SIGINT', () => void stop(0));
  try {
    const t0 = Date.now();
    await lab.startEtcd();
    await lab.startApiserver('a');
    await lab.applyKubeadmObjects();
    await new Promise<void>((r) => server.listen(info.controlPort, '127.0.0.1', r));
    info.ready = true;
    info.startedMs = Date.now() - t0;
    fs.writeFileSync(path.join(dir, 'lab.json.tmp'), JSON.stringify(info, null, 2));
    fs.renameSync(path.join(dir, 'lab.json.tmp'), path.join(dir, 'lab.json'));
    console.log(`lab ready in ${info.startedMs} ms: ${JSON.stringify(info)}`);
  } catch (e) {
    console.error(`lab failed to start: ${(e as Error).message}`);
    fs.writeFileSync(path.join(dir, 'lab.failed'), `${(e as Error).message}\n`);
    await stop(1);
  }
}

async function up(dir: string): Promise<number> {
  fs.mkdirSync(dir, { recursive: true });
  const existing = readInfo(dir);
  if (existing?.ready && alive(existing.pid) && (await controlGet(existing.controlPort, '/info'))) {
    console.log(JSON.stringify(existing));
    return 0;
  }
  if (existing && alive(existing.pid)) process.kill(existing.pid, 'SIGTERM');
  for (const f of ['lab.json', 'lab.failed']) fs.rmSync(path.join(dir, f), { force: true });
  for (const bin of ['etcd', 'kube-apiserver', 'kubectl']) {
    if (!fs.existsSync(path.join(BIN, bin))) {
      console.error(
        `lab: ${path.join(BIN, bin)} is missing: run bash scripts/k8s/build.sh (scripts/install-deps.sh does)`,
      );
      return 2;
    }
  }
  const log = fs.openSync(path.join(dir, 'lab.log'), 'a');
  const child = spawn(process.execPath, [__filename, 'serve', dir], { detached: true, stdio: ['ignore', log, log] });
  child.unref();
  const deadline = Date.now() + 2 * READY_TIMEOUT_MS;
  for (;;) {
    const info = readInfo(dir);
    if (info?.ready) {
      console.log(JSON.stringify(info));
      return 0;
    }
    if (fs.existsSync(path.join(dir, 'lab.failed')) || !alive(child.pid!) || Date.now() > deadline) {
      console.error(
        `lab: did not start; its log (${path.join(dir, 'lab.log')}):\n${fs.readFileSync(path.join(dir, 'lab.log'), 'utf8')}`,
      );
      if (alive(child.pid!)) process.kill(child.pid!, 'SIGTERM');
      return 1;
    }
    await sleep(250);
  }
}

async function down(dir: string): Promise<number> {
  const info = readInfo(dir);
  const pidFile = info?.pid;
  if (pidFile === undefined || !alive(pidFile)) {
    fs.rmSync(path.join(dir, 'lab.json'), { force: true });
    return 0;
  }
  process.kill(pidFile, 'SIGTERM');
  const deadline = Date.now() + 90_000;
  while (alive(pidFile) && Date.now() < deadline) await sleep(200);
  if (alive(pidFile)) process.kill(pidFile, 'SIGKILL');
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [verb, dirArg] = argv;
  if (!dirArg || !['up', 'down', 'status', 'serve'].includes(verb ?? '')) {
    console.error('usage: lab up|down|status DIR');
    return 2;
  }
  const dir = path.resolve(dirArg);
  switch (verb) {
    case 'up':
      return up(dir);
    case 'down':
      return down(dir);
    case 'status': {
      const info = readInfo(dir);
      const answering = info ? await controlGet(info.controlPort, '/info') : undefined;
      console.log(answering ?? 'not running');
      return answering ? 0 : 1;
    }
    default:
      await serve(dir);
      return -1; // serves until a signal
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      if (code >= 0) process.exit(code);
    },
    (e) => {
      console.error(`lab: ${(e as Error).stack ?? e}`);
      process.exit(1);
    },
  );
}
