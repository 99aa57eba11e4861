/**
 * The tests' side of the lab (scripts/lab/lab.ts): a real etcd and kube-apiserver on the host,
 * reached from the host on loopback and from the VM guest through QEMU's user network, where
 * each API server has an address of its own (LAB_GUEST_IPS) on the same port as on the host.
 * `KUBE_IPVS_LAB` names the lab's control API (host:port as this process reaches it):
 * scripts/test-all.sh and `make vm` set it after `lab up`, scripts/vm/run.sh passes it on.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Agent, fetch } from 'undici';
import type { KubeConfig } from '@kubernetes/client-node';
import { inNs, run, tryRun } from './netns';
import { SERVICE_ACCOUNT_DIR, shippedKubeconfig } from './processes';

/** Where the guest reaches each API server (and, on a's address, the control API). */
export const LAB_GUEST_IPS = { a: '10.0.2.100', b: '10.0.2.101' } as const;
export type ApiserverName = keyof typeof LAB_GUEST_IPS;
/** the unix socket in the lab's folder where scripts/node/ proxies the API servers' connections to a kubelet */
export const CLUSTER_EGRESS_SOCKET = 'cluster-egress.sock';

export interface LabInfo {
  pid: number;
  dir: string;
  /** scripts/k8s/build.sh's stamp: the k8s.io/kubernetes and etcd versions */
  version: string;
  controlPort: number;
  etcd: { clientPort: number; peerPort: number };
  apiservers: Record<ApiserverName, { port: number }>;
  guest: typeof LAB_GUEST_IPS;
  ready: boolean;
  startedMs?: number;
}

/** One audit event (audit.k8s.io/v1, level Metadata). */
export interface AuditEvent {
  /** one request's events (one per stage) share it */
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[] };
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string; subresource?: string };
  responseStatus?: { code?: number; reason?: string; message?: string };
  userAgent?: string;
  sourceIPs?: string[];
  /** RFC 3339 with microseconds: when the server received the request, and when it reached this stage */
  requestReceivedTimestamp?: string;
  stageTimestamp?: string;
}

export interface KubectlResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** The guest runs inside QEMU (scripts/vm/run.sh sets IPVSVM=1). */
const inGuest = () => process.env.IPVSVM === '1';

export class LabClient {
  private infoCache: LabInfo | undefined;
  /**
   * A connection per call: in the guest every connection is a socat of QEMU's guestfwd, and a
   * kept-alive one the control server closed as it idled was reused ("other side closed")
   */
  private readonly dispatcher = new Agent({ pipelining: 0, headersTimeout: 0, bodyTimeout: 0 });

  constructor(readonly control: string) {}

  private async call(method: string, p: string, body?: unknown): Promise<string> {
    const r = await fetch(`http://${this.control}${p}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
      signal: AbortSignal.timeout(600_000),
      dispatcher: this.dispatcher,
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`lab ${method} ${p}: HTTP ${r.status}: ${text}`);
    return text;
  }

  async info(): Promise<LabInfo> {
    this.infoCache ??= JSON.parse(await this.call('GET', '/info')) as LabInfo;
    return this.infoCache;
  }

  ca(): Promise<string> {
    return this.call('GET', '/ca.crt');
  }

  /** API server `name` as this process reaches it. */
  async server(name: ApiserverName = 'a'): Promise<string> {
    const info = await this.info();
    return `https://${inGuest() ? LAB_GUEST_IPS[name] : '127.0.0.1'}:${info.apiservers[name].port}`;
  }

  /** kubectl as the cluster admin, run on the host (natively); throws unless it exits 0, when `allowFail` is not set. */
  async kubectl(args: readonly string[], stdin?: string, allowFail = false): Promise<KubectlResult> {
    const r = JSON.parse(await this.call('POST', '/kubectl', { args, stdin })) as KubectlResult;
    if (r.status !== 0 && !allowFail) throw new Error(`kubectl ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
    return r;
  }

  /** `kubectl apply -f -` of the objects (server-side defaulting and validation apply). */
  async apply(objects: readonly unknown[]): Promise<void> {
    await this.kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  }

  async getJson<T = Record<string, unknown>>(args: readonly string[]): Promise<T> {
    return JSON.parse((await this.kubectl(['get', ...args, '-o', 'json'])).stdout) as T;
  }

  async stopApiserver(name: ApiserverName): Promise<void> {
    await this.call('POST', `/apiserver/${name}/stop`);
  }

  /** Starts API server `name` and waits until its /readyz answers 200. */
  async startApiserver(name: ApiserverName): Promise<void> {
    await this.call('POST', `/apiserver/${name}/start`);
  }

  /** Compacts etcd at its current revision; returns it. */
  async compact(): Promise<number> {
    return (JSON.parse(await this.call('POST', '/etcd/compact')) as { revision: number }).revision;
  }

  /** The audit log's current end, to read what comes after it with `audit(mark)`. */
  async auditMark(): Promise<number> {
    return (JSON.parse(await this.call('GET', `/audit?offset=${Number.MAX_SAFE_INTEGER}`)) as { next: number }).next;
  }

  /** Audit events written since byte `offset` of the log (0: all). */
  async audit(offset = 0): Promise<AuditEvent[]> {
    const { lines } = JSON.parse(await this.call('GET', `/audit?offset=${offset}`)) as { lines: string[] };
    return lines.map((l) => JSON.parse(l) as AuditEvent);
  }

  /**
   * A bound service-account token from the TokenRequest API (`kubectl create token`), as the
   * kubelet asks for a pod's projected token; bound to Secret `boundSecret` when given, so
   * deleting that Secret revokes it.
   */
  async createToken(
    namespace: string,
    serviceAccount: string,
    o: { duration?: string; boundSecret?: string } = {},
  ): Promise<string> {
    const args = ['create', 'token', serviceAccount, '-n', namespace, `--duration=${o.duration ?? '10m'}`];
    if (o.boundSecret) args.push('--bound-object-kind=Secret', `--bound-object-name=${o.boundSecret}`);
    return (await this.kubectl(args)).stdout.trim();
  }
}

/** The lab named by KUBE_IPVS_LAB; a clear error when no lab is up. */
export function labFromEnv(): LabClient {
  const control = process.env.KUBE_IPVS_LAB;
  if (!control) {
    throw new Error(
      'KUBE_IPVS_LAB is not set: this test needs the real control plane (make lab-up, or make test / make vm, which start it)',
    );
  }
  return new LabClient(control);
}

/**
 * Writes `files` into `dir` as the kubelet's atomic writer lays out a projected volume: the
 * data in a timestamped `..<time>` folder, `..data` a symlink to it, and each file name a
 * symlink into `..data`. A second call swaps `..data` in one rename (the rotation a pod sees)
 * and removes the previous folder.
 */
export function writeProjectedVolume(dir: string, files: Record<string, string>): void {
  fs.mkdirSync(dir, { recursive: true });
  const stamp = `..${new Date().toISOString().replace(/[-:]/g, '_').replace('T', '_').replace('Z', '')}${process.hrtime.bigint() % 1000000n}`;
  const data = path.join(dir, stamp);
  fs.mkdirSync(data);
  for (const [name, content] of Object.entries(files))
    fs.writeFileSync(path.join(data, name), content, { mode: 0o644 });
  let previous: string | undefined;
  try {
    previous = fs.readlinkSync(path.join(dir, '..data'));
  } catch {
    previous = undefined;
  }
  fs.symlinkSync(stamp, path.join(dir, '..data_tmp'));
  fs.renameSync(path.join(dir, '..data_tmp'), path.join(dir, '..data'));
  for (const name of Object.keys(files)) {
    if (!fs.existsSync(path.join(dir, name))) fs.symlinkSync(path.join('..data', name), path.join(dir, name));
  }
  if (previous && previous !== stamp) fs.rmSync(path.join(dir, previous), { recursive: true, force: true });
}

/**
 * In the guest: routes a network namespace (a node) to the lab's API servers: a veth pair to
 * the guest's root namespace, which forwards and masquerades it out of eth0 (QEMU's user
 * network; only the forwarded addresses answer). `ns` '' is this process's own namespace (a VM
 * test file's), else a named one (ip netns); `slot` 0..63 picks the /30 of 169.254.123.0/24
 * the pair uses, one per node namespace connected at a time.
 */
export function connectToLab(ns = '', slot = 0): void {
  if (!inGuest()) return;
  const node = (...argv: string[]) => inNs(ns, argv);
  const root = (...argv: string[]) => ({ cmd: 'nsenter', args: ['--net=/proc/1/ns/net', '--', ...argv] });
  const sh = ({ cmd, args }: { cmd: string; args: string[] }) => run(cmd, args);
  const peer = `lab-${process.pid}-${slot}`.slice(0, 15);
  const rootAddr = `169.254.123.${slot * 4 + 1}`;
  const nodeAddr = `169.254.123.${slot * 4 + 2}`;
  for (const { cmd, args } of [node('ip', 'link', 'del', 'lab0'), root('ip', 'link', 'del', peer)]) tryRun(cmd, args);
  sh(node('ip', 'link', 'add', 'lab0', 'type', 'veth', 'peer', 'name', peer, 'netns', '1'));
  sh(root('ip', 'addr', 'add', `${rootAddr}/30`, 'dev', peer));
  sh(root('ip', 'link', 'set', peer, 'up'));
  sh(root('sysctl', '-qw', 'net.ipv4.ip_forward=1'));
  sh(
    root(
      'sh',
      '-c',
      'iptables -t nat -C POSTROUTING -o eth0 -j MASQUERADE 2>/dev/null || iptables -t nat -A POSTROUTING -o eth0 -j MASQUERADE',
    ),
  );
  sh(node('ip', 'addr', 'add', `${nodeAddr}/30`, 'dev', 'lab0'));
  sh(node('ip', 'link', 'set', 'lab0', 'up'));
  sh(node('ip', 'route', 'add', '10.0.2.0/24', 'via', rootAddr, 'dev', 'lab0'));
}

/**
 * kube-proxy's identity as kubeadm's DaemonSet pod gets it from the kubelet: a bound token of
 * kube-system/kube-proxy from the TokenRequest API (bound to Secret `boundSecret` when given)
 * and the lab's CA in the projected volume at SERVICE_ACCOUNT_DIR, and kubeadm's
 * kubeconfig.conf (reading them from there) pointed at API server a, written to DIR/kubeconfig.
 * Returns the kubeconfig's path.
 */
export async function kubeProxyIdentity(
  lab: LabClient,
  dir: string,
  o: { duration?: string; boundSecret?: string } = {},
): Promise<string> {
  const token = await lab.createToken('kube-system', 'kube-proxy', o);
  writeProjectedVolume(SERVICE_ACCOUNT_DIR, { token, 'ca.crt': await lab.ca(), namespace: 'kube-system' });
  const file = path.join(dir, 'kubeconfig');
  fs.writeFileSync(file, shippedKubeconfig(await lab.server('a')));
  return file;
}

/**
 * `kc` loaded with one cluster at `server` (trusting `ca`, PEM) and one user (a kubeconfig
 * `user` entry: token, client certificate data, ...), as its current context.
 */
export function loadClusterUser<T extends KubeConfig>(kc: T, server: string, ca: string, user: object): T {
  kc.loadFromString(
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server, 'certificate-authority-data': Buffer.from(ca).toString('base64') } }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'c',
    }),
  );
  return kc;
}
