/**
 * e2e — Kubernetes' own tests against the one-node cluster (scripts/node/cluster.ts): once with the
 * real kube-proxy in IPVS mode as kubeadm's DaemonSet runs it, once with kube-ipvs swapped in the way
 * an operator does it (`kubectl -n kube-system set image daemonset/kube-proxy kube-proxy=IMAGE`),
 * and the swap's cost under traffic both ways (a client pod: 50 new requests a second to a ClusterIP
 * and long-lived connections through it).
 *
 *   node dist/scripts/node/e2e.js DIR [--focus RE] [--skip RE] [--procs N] [--proxies kube-proxy,kube-ipvs] [--no-swap]
 *
 * Prints a table (test, kube-proxy, kube-ipvs, seconds) and the swap's counts; writes them and each
 * run's JUnit report under DIR/e2e/. The framework's timeouts are its own (no flag changes them but
 * the startup waits, left as they are); no test is changed.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { clientScript } from '../../testkit/swap-traffic';
import { ClusterInfo, KUBE_PROXY_IMAGE, mustKubectl } from './cluster';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const NODE_BIN = path.join(ROOT, '.k8s', 'node', 'bin');
type Proxy = 'kube-proxy' | 'kube-ipvs';
/**
 * The selection: every `[sig-network] Services` test, the `Networking Granular Checks` (pod to
 * pod, node to pod, pod and node to Service, on one node) and kube-proxy's URLs. Issue 38's anchor
 * is Cilium's `[sig-network]` run with its skip list; ours is DEFAULT_SKIP, each with why.
 */
export const DEFAULT_FOCUS = String.raw`\[sig-network\] (Services |Networking Granular Checks|Networking should check kube-proxy urls)`;
export const DEFAULT_SKIP: readonly [string, string][] = [
  [String.raw`\[Serial\]`, 'serial tests change the whole cluster; run alone with --procs 1 --focus'],
  [String.raw`\[Disruptive\]`, 'restarts or breaks control-plane components'],
  [String.raw`\[Feature:`, 'needs a feature gate or an optional component this cluster does not enable'],
  [String.raw`\[Flaky\]`, 'marked flaky upstream'],
  [String.raw`\[Slow\]`, 'over 5 minutes each upstream; longer still under TCG'],
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface CaseResult {
  name: string;
  status: 'passed' | 'failed' | 'skipped' | string;
  seconds: number;
  message: string;
}

/** The JUnit report ginkgo v2 writes (one testcase per spec; status as an attribute). */
export function parseJunit(xml: string): CaseResult[] {
  const out: CaseResult[] = [];
  const unescape = (s: string) =>
    s
      .replace(/&#x([0-9a-fA-F]+);/g, (_, h: string) => String.fromCodePoint(parseInt(h, 16)))
      .replace(/&#(\d+);/g, (_, d: string) => String.fromCodePoint(Number(d)))
      .replace(/&quot;/g, '"')
      .replace(/&apos;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&');
  for (const m of xml.matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attrs = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((a) => [a[1]!, unescape(a[2]!)]));
    // the specs only ("[It] <text> [labels]"), not the suite's own setup and report nodes
    const spec = /^\[It\] (.*?)(?: \[[^\]]*\])?$/.exec(attrs.name ?? '');
    if (!spec) continue;
    const body = m[3] ?? '';
    const msg = /<(?:failure|skipped|error)\b[^>]*message="([^"]*)"/.exec(body);
    out.push({
      name: spec[1]!,
      status: attrs.status ?? (/<failure|<error/.test(body) ? 'failed' : /<skipped/.test(body) ? 'skipped' : 'passed'),
      seconds: Number(attrs.time ?? 0),
      message: msg ? unescape(msg[1]!) : '',
    });
  }
  return out;
}

function kubeIpvsImage(): string {
  return fs.readFileSync(path.join(ROOT, 'dist', 'image', 'image-name'), 'utf8').trim();
}

/** kubeadm's DaemonSet with `image`, rolled out (the new pod Ready on the node). */
async function setProxyImage(info: ClusterInfo, image: string): Promise<number> {
  const t0 = Date.now();
  await mustKubectl(info.kubeconfig, [
    '-n',
    'kube-system',
    'set',
    'image',
    'daemonset/kube-proxy',
    `kube-proxy=${image}`,
  ]);
  await mustKubectl(info.kubeconfig, [
    '-n',
    'kube-system',
    'rollout',
    'status',
    'daemonset/kube-proxy',
    '--timeout=15m',
  ]);
  return (Date.now() - t0) / 1000;
}

async function proxyImageNow(info: ClusterInfo): Promise<string> {
  return (
    await mustKubectl(info.kubeconfig, [
      '-n',
      'kube-system',
      'get',
      'ds',
      'kube-proxy',
      '-o',
      'jsonpath={.spec.template.spec.containers[0].image}',
    ])
  ).trim();
}

/** One run of e2e.test under ginkgo's parallel runner; its JUnit results. */
async function runE2e(
  info: ClusterInfo,
  dir: string,
  focus: string,
  skip: string,
  procs: number,
): Promise<CaseResult[]> {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const args = [
    `--procs=${procs}`,
    '--no-color',
    `--timeout=3h`,
    `--focus=${focus}`,
    `--skip=${skip}`,
    `--junit-report=${path.join(dir, 'junit.xml')}`,
    path.join(NODE_BIN, 'e2e.test'),
    '--',
    `--kubeconfig=${info.kubeconfig}`,
    '--provider=local',
    '--num-nodes=1',
    `--report-dir=${dir}`,
    '--disable-log-dump',
    // kubectl for the tests that run it, the lab's
    `--kubectl-path=${info.kubectl}`,
  ];
  const log = fs.openSync(path.join(dir, 'e2e.log'), 'w');
  const child = spawn(path.join(NODE_BIN, 'ginkgo'), args, { cwd: dir, stdio: ['ignore', log, log] });
  fs.closeSync(log);
  const code = await new Promise<number>((r) => child.on('exit', (c) => r(c ?? 1)));
  const junit = path.join(dir, 'junit.xml');
  if (!fs.existsSync(junit)) throw new Error(`e2e.test wrote no report (exit ${code}): see ${dir}/e2e.log`);
  return parseJunit(fs.readFileSync(junit, 'utf8'));
}

/** The swap's traffic, parsed from the client pod's log: as testkit/swap-traffic.ts counts it on the netns lab. */
interface TrafficCounts {
  ok: number;
  failed: string[];
  broken: string[];
  pongs: number;
}

const TRAFFIC_NS = 'swap-traffic';

function trafficObjects(image: string): string {
  const server = `require('http').createServer((q,s)=>s.end(require('os').hostname()+'\\n')).listen(8080);require('net').createServer((c)=>c.pipe(c)).listen(9000);`;
  return `apiVersion: v1
kind: Namespace
metadata: {name: ${TRAFFIC_NS}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: backend, namespace: ${TRAFFIC_NS}}
spec:
  replicas: 2
  selector: {matchLabels: {app: backend}}
  template:
    metadata: {labels: {app: backend}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: backend
        image: ${image}
        imagePullPolicy: Never
        command: [/usr/local/bin/node, -e, ${JSON.stringify(server)}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 2}
---
apiVersion: v1
kind: Service
metadata: {name: backend, namespace: ${TRAFFIC_NS}}
spec:
  selector: {app: backend}
  ports:
  - {name: http, port: 80, targetPort: 8080}
  - {name: echo, port: 9000, targetPort: 9000}
`;
}

function clientPod(image: string, clusterIp: string): string {
  const script = clientScript(
    [
      { kind: 'requests', addr: clusterIp, port: 80 },
      { kind: 'tcp', addr: clusterIp, port: 9000, count: 4 },
    ],
    20,
    500,
  );
  return `apiVersion: v1
kind: Pod
metadata: {name: client, namespace: ${TRAFFIC_NS}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: client
    image: ${image}
    imagePullPolicy: Never
    command: [/usr/local/bin/node, -e, ${JSON.stringify(script)}]
`;
}

/** Counts the client's lines from `kubectl logs -f` as they come. */
class TrafficLog {
  counts: TrafficCounts = { ok: 0, failed: [], broken: [], pongs: 0 };
  private child: ReturnType<typeof spawn> | undefined;
  start(info: ClusterInfo): void {
    this.child = spawn(
      info.kubectl,
      ['--kubeconfig', info.kubeconfig, '-n', TRAFFIC_NS, 'logs', '-f', '--since=1s', 'client'],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    let buf = '';
    this.child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      const lines = buf.split('\n');
      buf = lines.pop()!;
      for (const l of lines) {
        const [kind] = l.split(' ');
        if (kind === 'ok') this.counts.ok++;
        else if (kind === 'fail') this.counts.failed.push(l);
        else if (kind === 'pong') this.counts.pongs++;
        else if (kind === 'broken') this.counts.broken.push(l);
      }
    });
  }
  snapshot(): TrafficCounts {
    return { ...this.counts, failed: [...this.counts.failed], broken: [...this.counts.broken] };
  }
  stop(): void {
    this.child?.kill();
  }
}

interface SwapResult {
  direction: string;
  rolloutSeconds: number;
  during: TrafficCounts;
  after: TrafficCounts;
}

/** Swaps the DaemonSet's image under the client's traffic: counts during the rollout and for `afterMs` after it. */
async function swapUnderTraffic(
  info: ClusterInfo,
  traffic: TrafficLog,
  to: string,
  direction: string,
  afterMs = 30_000,
): Promise<SwapResult> {
  const before = traffic.snapshot();
  const rolloutSeconds = await setProxyImage(info, to);
  const mid = traffic.snapshot();
  await sleep(afterMs);
  return { direction, rolloutSeconds, during: diff(mid, before), after: diff(traffic.snapshot(), mid) };
}

function diff(later: TrafficCounts, earlier: TrafficCounts): TrafficCounts {
  return {
    ok: later.ok - earlier.ok,
    failed: later.failed.slice(earlier.failed.length),
    broken: later.broken.slice(earlier.broken.length),
    pongs: later.pongs - earlier.pongs,
  };
}

async function startTraffic(info: ClusterInfo): Promise<TrafficLog> {
  const image = kubeIpvsImage();
  await mustKubectl(info.kubeconfig, ['apply', '-f', '-'], trafficObjects(image));
  await mustKubectl(info.kubeconfig, ['-n', TRAFFIC_NS, 'rollout', 'status', 'deploy/backend', '--timeout=10m']);
  const ip = (
    await mustKubectl(info.kubeconfig, ['-n', TRAFFIC_NS, 'get', 'svc', 'backend', '-o', 'jsonpath={.spec.clusterIP}'])
  ).trim();
  await mustKubectl(info.kubeconfig, ['apply', '-f', '-'], clientPod(image, ip));
  await mustKubectl(info.kubeconfig, [
    '-n',
    TRAFFIC_NS,
    'wait',
    '--for=condition=Ready',
    'pod/client',
    '--timeout=10m',
  ]);
  const log = new TrafficLog();
  log.start(info);
  // the traffic flows before the swap begins
  const t0 = Date.now();
  while (log.counts.ok < 100) {
    if (Date.now() - t0 > 120_000)
      throw new Error(
        `the client pod served ${log.counts.ok} requests in 120 s: ${JSON.stringify(log.counts).slice(0, 400)}`,
      );
    await sleep(1000);
  }
  return log;
}

/** A swap's line in the report, then its first 20 failed requests and broken connections. */
function swapReport(s: SwapResult): string[] {
  const bad = [...s.during.failed, ...s.during.broken, ...s.after.failed, ...s.after.broken];
  return [
    `swap ${s.direction}: rollout ${s.rolloutSeconds.toFixed(0)} s; during: ${formatCounts(s.during)}; 30 s after: ${formatCounts(s.after)}`,
    ...bad.slice(0, 20).map((l) => `  ${l}`),
  ];
}

function formatCounts(c: TrafficCounts): string {
  return `${c.ok} ok, ${c.failed.length} failed, ${c.broken.length} broken connections, ${c.pongs} echoes`;
}

/** a reason fit for a table cell: one line, at most 120 characters */
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim().slice(0, 120);

/** The tests that pass with kube-proxy and do not with kube-ipvs (the target: none). */
export function regressions(kubeProxy: readonly CaseResult[], kubeIpvs: readonly CaseResult[]): string[] {
  return kubeProxy
    .filter((r) => r.status === 'passed' && kubeIpvs.find((k) => k.name === r.name)?.status !== 'passed')
    .map((r) => r.name);
}

export function resultTable(results: Map<Proxy, CaseResult[]>): string[] {
  const proxies = [...results.keys()];
  const names = new Set<string>();
  for (const rs of results.values())
    for (const r of rs) if (r.status !== 'skipped' || r.message !== 'skipped') names.add(r.name);
  const lines = [`| test | ${proxies.join(' | ')} | seconds |`, `|---|${proxies.map(() => '---|').join('')}---|`];
  const cell = (r: CaseResult | undefined) =>
    !r
      ? 'not run'
      : r.status === 'skipped'
        ? `skipped${r.message && r.message !== 'skipped' ? `: ${oneLine(r.message)}` : ''}`
        : r.status === 'failed'
          ? `failed: ${oneLine(r.message)}`
          : r.status;
  for (const name of [...names].sort()) {
    const row = proxies.map((p) => results.get(p)!.find((r) => r.name === name));
    const secs = row.map((r) => (r ? r.seconds.toFixed(0) : '-')).join(' / ');
    lines.push(`| ${name.replace(/\|/g, '\\|')} | ${row.map(cell).join(' | ')} | ${secs} |`);
  }
  for (const p of proxies) {
    const rs = results.get(p)!;
    const n = (s: string) => rs.filter((r) => r.status === s && (s !== 'skipped' || r.message !== 'skipped')).length;
    lines.push(`${p}: ${n('passed')} passed, ${n('failed')} failed, ${n('skipped')} skipped`);
  }
  return lines;
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      focus: { type: 'string', default: DEFAULT_FOCUS },
      skip: { type: 'string', default: DEFAULT_SKIP.map(([re]) => re).join('|') },
      procs: { type: 'string', default: '3' },
      proxies: { type: 'string', default: 'kube-proxy,kube-ipvs' },
      'no-swap': { type: 'boolean', default: false },
      // a proxy's results from an earlier run in the same folder (its junit.xml), for the table
      reuse: { type: 'string', default: '' },
    },
  });
  const dir = path.resolve(positionals[0] ?? '.lab/node');
  const info = JSON.parse(fs.readFileSync(path.join(dir, 'cluster.json'), 'utf8')) as ClusterInfo;
  const out = path.join(dir, 'e2e');
  fs.mkdirSync(out, { recursive: true });
  const images: Record<Proxy, string> = { 'kube-proxy': KUBE_PROXY_IMAGE, 'kube-ipvs': kubeIpvsImage() };
  const proxies = values.proxies!.split(',') as Proxy[];
  const results = new Map<Proxy, CaseResult[]>();
  const swaps: SwapResult[] = [];
  const report: string[] = [];
  const say = (l: string) => {
    console.log(l);
    report.push(l);
  };
  let traffic: TrafficLog | undefined;
  for (const p of values.reuse ? (values.reuse.split(',') as Proxy[]) : []) {
    results.set(p, parseJunit(fs.readFileSync(path.join(out, p, 'junit.xml'), 'utf8')));
    say(`e2e with ${p}: from the earlier run in ${path.join(out, p)}`);
  }
  for (const p of proxies) {
    if ((await proxyImageNow(info)) !== images[p]) {
      if (!values['no-swap']) {
        traffic ??= await startTraffic(info);
        const s = await swapUnderTraffic(
          info,
          traffic,
          images[p],
          `${p === 'kube-ipvs' ? 'kube-proxy -> kube-ipvs' : 'kube-ipvs -> kube-proxy'}`,
        );
        swaps.push(s);
        swapReport(s).forEach(say);
      } else await setProxyImage(info, images[p]);
    }
    const t0 = Date.now();
    results.set(p, await runE2e(info, path.join(out, p), values.focus!, values.skip!, Number(values.procs)));
    say(`e2e with ${p} (${images[p]}): ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  }
  // and back, as an operator's rollback
  if (!values['no-swap'] && proxies.includes('kube-ipvs') && (await proxyImageNow(info)) === images['kube-ipvs']) {
    traffic ??= await startTraffic(info);
    const s = await swapUnderTraffic(info, traffic, images['kube-proxy'], 'kube-ipvs -> kube-proxy');
    swaps.push(s);
    swapReport(s).forEach(say);
  }
  traffic?.stop();
  for (const l of resultTable(results)) say(l);
  say(`skipped by selection (--skip): ${DEFAULT_SKIP.map(([re, why]) => `${re}: ${why}`).join('; ')}`);
  fs.writeFileSync(path.join(out, 'report.md'), report.join('\n') + '\n');
  fs.writeFileSync(path.join(out, 'swaps.json'), JSON.stringify(swaps, null, 2));
  // the target: every test that passes with kube-proxy passes with kube-ipvs
  const kp = results.get('kube-proxy');
  const ki = results.get('kube-ipvs');
  if (kp && ki) {
    const lost = regressions(kp, ki);
    for (const name of lost) say(`REGRESSION: passes with kube-proxy, not with kube-ipvs: ${name}`);
    return lost.length === 0 ? 0 : 1;
  }
  return 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (e: Error) => {
      console.error(e.stack ?? e.message);
      process.exit(1);
    },
  );
}
