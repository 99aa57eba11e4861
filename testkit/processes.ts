// Test helpers that run kube-ipvs and the fake API server as real processes (the way a node
// runs them) and read the daemon's JSON log lines as data.
import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { Agent, fetch as undiciFetch } from 'undici';
import { KUBE_IPVS_NODE_FLAGS } from '../lib/cli/node-flags';
import { inNs } from './netns';

const ROOT = path.resolve(__dirname, '..', '..');
/** the one-file bundle the image ships (scripts/bundle.ts), built from dist/lib by `make build` */
export const KUBE_IPVS_BIN = path.join(ROOT, 'dist', 'bundle', 'kube-ipvs.js');
export const FAKE_APISERVER_BIN = path.join(ROOT, 'dist', 'scripts', 'fake-apiserver.js');

/** One JSON log line of the daemon (winston's json format). */
export type LogLine = Record<string, unknown> & { message?: string; level?: string };

interface Waiter {
  pred: (l: LogLine) => boolean;
  from: number;
  resolve: (l: LogLine) => void;
  fail: (e: Error) => void;
}

/** A child process whose stdout/stderr lines are kept; JSON lines are parsed. */
export class LoggedProcess {
  readonly lines: LogLine[] = [];
  readonly text: string[] = [];
  readonly exited: Promise<number | null>;
  private waiters: Waiter[] = [];

  constructor(
    readonly child: ChildProcess,
    readonly name: string,
  ) {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.text.push(line);
        if (process.env.KUBE_IPVS_TEST_ECHO) process.stderr.write(`[${name}] ${line}\n`);
        let parsed: LogLine | undefined;
        try {
          parsed = line.startsWith('{') ? (JSON.parse(line) as LogLine) : undefined;
        } catch {
          parsed = undefined;
        }
        // klog JSON says msg; the tests read message
        if (parsed && parsed.message === undefined && typeof parsed.msg === 'string') parsed.message = parsed.msg;
        if (parsed) this.push(parsed);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    this.exited = new Promise((resolve) =>
      child.on('exit', (code, signal) => {
        // nobody waits for a line from a process that is gone
        for (const w of this.waiters)
          w.fail(
            new Error(
              `${name} exited (${code ?? signal}) before the awaited log line; last lines:\n${this.text.slice(-15).join('\n')}`,
            ),
          );
        this.waiters = [];
        resolve(code);
      }),
    );
  }

  private push(l: LogLine): void {
    this.lines.push(l);
    const idx = this.lines.length - 1;
    this.waiters = this.waiters.filter((w) => {
      if (idx >= w.from && w.pred(l)) {
        w.resolve(l);
        return false;
      }
      return true;
    });
  }

  /** The first log line at index >= `from` matching `pred` (waits for it, bounded). */
  waitFor(pred: (l: LogLine) => boolean, what: string, from = 0, timeoutMs = 120_000): Promise<LogLine> {
    for (let i = from; i < this.lines.length; i++) if (pred(this.lines[i]!)) return Promise.resolve(this.lines[i]!);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(
          new Error(
            `${this.name}: no log line for ${what} within ${timeoutMs} ms; last lines:\n${this.text.slice(-15).join('\n')}`,
          ),
        );
      }, timeoutMs);
      const waiter: Waiter = {
        pred,
        from,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
        fail: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** Kills the process and waits for it to exit. */
  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    return this.exited;
  }
}

/**
 * Starts the daemon as the image does (KUBE_IPVS_NODE_FLAGS), in namespace `ns` ('' = this one;
 * `ip netns exec` execs it: same pid); `nodeFlags` go to node after those (a later V8 flag wins:
 * the benchmarks try other values that way).
 */
export function startKubeIpvs(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  ns = '',
  nodeFlags: readonly string[] = [],
): LoggedProcess {
  // JSON lines, so the test reads every field (the proxy's default is klog text)
  const format = args.some((a) => a.startsWith('--logging-format')) ? [] : ['--logging-format=json'];
  const { cmd, args: argv } = inNs(ns, [
    process.execPath,
    ...KUBE_IPVS_NODE_FLAGS,
    ...nodeFlags,
    KUBE_IPVS_BIN,
    ...format,
    ...args,
  ]);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  return new LoggedProcess(child, 'kube-ipvs');
}

/** The real kube-proxy (.k8s/bin, built by scripts/k8s/build.sh), run in namespace `ns` ('' = this one). */
export const KUBE_PROXY_BIN = path.join(ROOT, '.k8s', 'bin', 'kube-proxy');
export function startKubeProxy(args: readonly string[], ns = ''): LoggedProcess {
  const { cmd, args: argv } = inNs(ns, [KUBE_PROXY_BIN, ...args]);
  return new LoggedProcess(spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] }), 'kube-proxy');
}

/**
 * The fake API server over plain http on 127.0.0.1:`port`, serving `fixtures` (written to
 * DIR/fixtures.json), with the kubeconfig that reaches it at DIR/kubeconfig (e2eProxyConfig's);
 * in network namespace `ns` ('' = this one).
 */
export async function startFixtureApiServer(
  dir: string,
  port: number,
  fixtures: readonly unknown[],
  ns = '',
): Promise<LoggedProcess> {
  fs.writeFileSync(path.join(dir, 'fixtures.json'), JSON.stringify(fixtures));
  return startFakeApiServer(
    [
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--fixtures',
      path.join(dir, 'fixtures.json'),
      '--kubeconfig-out',
      path.join(dir, 'kubeconfig'),
    ],
    ns,
  );
}

/** Starts the fake API server in namespace `ns` ('' = this one); resolves once it prints that it listens. */
export async function startFakeApiServer(args: readonly string[], ns = ''): Promise<LoggedProcess> {
  const { cmd, args: argv } = inNs(ns, [process.execPath, FAKE_APISERVER_BIN, ...args]);
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  const p = new LoggedProcess(child, 'fake-apiserver');
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fake API server did not start: ${p.text.join('\n')}`)), 120_000);
    const check = () => {
      if (p.text.some((l) => l.includes('listening on'))) {
        clearTimeout(timer);
        resolve();
        return true;
      }
      return false;
    };
    child.stdout?.on('data', () => check());
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`fake API server exited ${code}: ${p.text.join('\n')}`));
    });
  });
  return p;
}

/** Minimal REST client for the fake API server (create/replace/patch/delete); `token` and `ca` for its secure mode. */
export class ApiClient {
  private readonly dispatcher: Agent | undefined;

  constructor(
    readonly base: string,
    private readonly security: { token?: string; ca?: string } = {},
  ) {
    this.dispatcher = security.ca ? new Agent({ connect: { ca: security.ca } }) : undefined;
  }

  async request(method: string, p: string, body?: unknown, contentType = 'application/json'): Promise<unknown> {
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': contentType };
    if (this.security.token) headers.authorization = `Bearer ${this.security.token}`;
    const send = () =>
      undiciFetch(this.base + p, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        ...(this.dispatcher ? { dispatcher: this.dispatcher } : {}),
      });
    let r: Awaited<ReturnType<typeof undiciFetch>>;
    try {
      r = await send();
    } catch (e) {
      // a kept-alive connection the server closed (its 5 s keep-alive timeout) as it was reused:
      // undici's "other side closed" (UND_ERR_SOCKET), or ECONNRESET when the reset came first
      // (seen in the TCG guest); the request never reached the server, so sending it again is safe
      const code = ((e as { cause?: unknown }).cause as { code?: unknown } | undefined)?.code;
      if (code !== 'UND_ERR_SOCKET' && code !== 'ECONNRESET') throw e;
      r = await send();
    }
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${p}: HTTP ${r.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  }

  create(collection: string, obj: unknown): Promise<unknown> {
    return this.request('POST', collection, obj);
  }
  replace(item: string, obj: unknown): Promise<unknown> {
    return this.request('PUT', item, obj);
  }
  patch(item: string, patch: unknown): Promise<unknown> {
    return this.request('PATCH', item, patch, 'application/merge-patch+json');
  }
  delete(item: string): Promise<unknown> {
    return this.request('DELETE', item);
  }
  get(item: string): Promise<unknown> {
    return this.request('GET', item);
  }
}

/**
 * The end-to-end daemons' KubeProxyConfiguration: node `node`, the fake API server's kubeconfig
 * in `dir`, cluster 10.244.0.0/16, NodePorts on 192.0.2.0/24, and the given `ipvs:` lines.
 */
export function e2eProxyConfig(o: {
  dir: string;
  node: string;
  ipvs: readonly string[];
  healthz?: string;
  metrics?: string;
  /** default 10.244.0.0/16 */
  clusterCIDR?: string;
  /** default [192.0.2.0/24] */
  nodePortAddresses?: readonly string[];
  /**
   * the real kube-proxy reads this file too (spec/vm/kube-proxy-*): it also needs the TCP
   * conntrack timeouts left alone, which a network namespace cannot set
   */
  forKubeProxy?: boolean;
  /** default ipvs; '' is kubeadm's (kube-proxy then runs iptables) */
  mode?: string;
}): string {
  return [
    'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
    'kind: KubeProxyConfiguration',
    `mode: ${JSON.stringify(o.mode ?? 'ipvs')}`,
    'clientConnection:',
    `  kubeconfig: ${path.join(o.dir, 'kubeconfig')}`,
    `hostnameOverride: ${o.node}`,
    `clusterCIDR: ${o.clusterCIDR ?? '10.244.0.0/16'}`,
    `nodePortAddresses: [${(o.nodePortAddresses ?? ['192.0.2.0/24']).map((c) => (c.includes(':') ? JSON.stringify(c) : c)).join(', ')}]`,
    `healthzBindAddress: ${o.healthz ?? '127.0.0.1:10256'}`,
    `metricsBindAddress: ${o.metrics ?? '127.0.0.1:10249'}`,
    // each VM test file runs in a network namespace of its own, where the kernel keeps
    // nf_conntrack_max read-only: leave it alone, as kind's kube-proxy config does for the
    // same reason (spec/vm/node-settings.vm.test.ts proves the setting in the host's namespace)
    'conntrack:',
    '  maxPerCore: 0',
    ...(o.forKubeProxy ? ['  tcpEstablishedTimeout: 0s', '  tcpCloseWaitTimeout: 0s'] : []),
    'ipvs:',
    ...o.ipvs.map((l) => `  ${l}`),
    '',
  ].join('\n');
}

/** Where the kubelet projects a pod's service-account token, CA and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const CONFIGMAP = path.join(ROOT, 'manifests', 'new-cluster', 'configmap.yaml');

/** kubeadm's kubeconfig.conf from the shipped ConfigMap (manifests/new-cluster/configmap.yaml), pointed at `server`. */
export function shippedKubeconfig(server: string): string {
  const cm = yaml.load(fs.readFileSync(CONFIGMAP, 'utf8')) as { data: Record<string, string> };
  const text = cm.data['kubeconfig.conf']!;
  const replaced = withServer(text, server);
  if (replaced === text) throw new Error(`${CONFIGMAP}: kubeconfig.conf has no server line`);
  return replaced;
}

/** A kubeconfig's (the first) `server:` line set to `server`. */
export function withServer(kubeconfig: string, server: string): string {
  return kubeconfig.replace(/^(\s*server:\s*).*$/m, `$1${server}`);
}

/** When the daemon wrote a JSON log line, in ms since the epoch (klog's `ts` is in seconds). */
export function logLineTimeMs(l: LogLine): number {
  return typeof l.ts === 'number' ? l.ts * 1000 : Date.parse(String(l.timestamp));
}
