// The relist storm (issue 39 item 5): what each proxy asks of an overloaded API server. One run
// against a lab's real kube-apiserver + etcd (scripts/lab/lab.ts, its own folder), on the host:
//  - the real kube-proxy (.k8s/bin/kube-proxy, iptables mode: the informers are the same in
//    every mode, and this host's kernel has no IPVS) in a network namespace of its own, reached
//    through a veth;
//  - kube-ipvs's informers as the daemon starts them (the daemon's kubeconfig loading: protobuf,
//    qps 5 burst 10, and startInformers with its options, handlers that do nothing; the whole
//    daemon needs IPVS), from this tree's dist/lib, and with BENCH_STORM_BEFORE=DIR (a dist/lib
//    of another commit, e.g. a worktree of the one before the fix) from there too;
// each as its own ServiceAccount (kube-proxy's; bench-kipvs and bench-kipvs-before bound to the
// same ClusterRole system:node-proxier), all through one TCP relay to the API server.
//
// The overload: API Priority and Fairness (kube-apiserver's default filter) with a
// PriorityLevelConfiguration of no seats at all (nominalConcurrencyShares 0, nothing lent or
// borrowed, limitResponse Reject: the "jail" the v1 API allows) and a FlowSchema sending these
// ServiceAccounts there. APF still runs a request on a level with no seats when nothing else
// runs there (queueset.go canAccommodateSeatsLocked: a request wider than the limit goes when
// nothing executes), so one more ServiceAccount of the same level, the bench's occupant, keeps
// a list of 600 KB of ConfigMaps executing: it reads none of the answer over HTTP/2 (16 KiB
// stream window), so the server's handler stays blocked on its write until its 60 s request
// timeout, and the occupant asks again (every 250 ms while 429'd). From then on every
// request of the sides is answered 429 with Retry-After: 1, as an API server out of seats
// answers it (the few that slip in between two occupants are the "answered 200" column).
// `--max-requests-inflight` alone does not do it: with APF on, the inflight flags only size
// APF's total, which a quiet client never exhausts; with APF off, the max-in-flight filter
// exempts long-running requests, so no watch is ever 429'd.
// Two phases, one after the other: every request of the sides 429'd, then only their watches
// (the FlowSchema's rule names verb watch; lists are served: the issue's "every watch answered
// 429"). Each starts once every side has synced and its watches are open: the FlowSchema is
// applied and the relay drops every connection (what an API server restart or a load
// balancer's failover does); from then on, BENCH_STORM_MINUTES (default 5) minutes of
// requests are counted from the lab's audit log (every request, 429s included: the audit
// filter runs before APF), per side, by verb and minute. Then the FlowSchema is deleted and
// the time until each side has its Service and EndpointSlice watches open again is measured.
//
//   node dist/scripts/bench/relist-storm.js                 (as root: the netns, the veth)
//   node dist/scripts/bench/relist-storm.js informers --lib DIR --kubeconfig FILE --node NAME
//                                                           (one kube-ipvs side; the bench runs it)
// BENCH_STORM_LAB (default .lab/relist-storm): the lab's folder; it is stopped at the end unless
// BENCH_STORM_KEEP_LAB=1.
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import path from 'node:path';
import { AuditEvent, LabClient, LabInfo } from '../../testkit/lab-client';
import { run, tryRun } from '../../testkit/netns';
import { sleep } from '../../testkit/member';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const BIN = path.join(ROOT, '.k8s', 'bin');
const NS = 'kipvs-storm';
const HOST_IF = 'kstorm-h';
const NS_IF = 'kstorm-n';
const HOST_ADDR = '169.254.77.1';
const NS_ADDR = '169.254.77.2';
const NAMESPACE = 'bench-storm';
const SERVICES = 20;
/** the occupant's ServiceAccount and namespace (its list of ConfigMaps keeps the level's one request running) */
const OCCUPANT = 'bench-storm-occupant';

interface Side {
  readonly name: string;
  readonly serviceAccount: string;
  readonly node: string;
  child?: ChildProcess;
}

const userOf = (sa: string) => `system:serviceaccount:kube-system:${sa}`;

/** A TCP relay to the API server whose connections can all be dropped at once. */
class Relay {
  private readonly sockets = new Set<net.Socket>();
  private readonly servers: net.Server[] = [];
  port = 0;

  constructor(private readonly target: number) {}

  async listen(hosts: readonly string[]): Promise<void> {
    for (const host of hosts) {
      const server = net.createServer((client) => {
        const upstream = net.connect(this.target, '127.0.0.1');
        for (const s of [client, upstream]) {
          this.sockets.add(s);
          s.on('close', () => this.sockets.delete(s));
          s.on('error', () => s.destroy());
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      await new Promise<void>((r) => server.listen(this.port, host, r));
      this.port = (server.address() as net.AddressInfo).port;
      this.servers.push(server);
    }
  }

  dropAll(): number {
    const n = this.sockets.size;
    for (const s of this.sockets) s.destroy();
    return n;
  }

  close(): void {
    this.dropAll();
    for (const s of this.servers) s.close();
  }
}

function kubeconfig(server: string, ca: string, token: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'lab',
        // the server certificate names "kubernetes"; the relay's address is not among its IPs
        cluster: {
          server,
          'certificate-authority-data': Buffer.from(ca).toString('base64'),
          'tls-server-name': 'kubernetes',
        },
      },
    ],
    users: [{ name: 'u', user: { token } }],
    contexts: [{ name: 'lab', context: { cluster: 'lab', user: 'u' } }],
    'current-context': 'lab',
  });
}

/** The objects: the Services and their slices, the sides' Nodes, ServiceAccounts and binding. */
function objects(sides: readonly Side[]): object[] {
  const out: object[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }];
  for (let i = 0; i < SERVICES; i++) {
    const name = `storm-${i}`;
    out.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { namespace: NAMESPACE, name },
      spec: { ports: [{ port: 80, protocol: 'TCP' }] },
    });
    out.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { namespace: NAMESPACE, name, labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      ports: [{ port: 8080, protocol: 'TCP' }],
      endpoints: [1, 2, 3].map((k) => ({ addresses: [`10.244.${i}.${k}`], conditions: { ready: true } })),
    });
  }
  for (const s of sides) {
    out.push({
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: s.node, labels: { 'kubernetes.io/hostname': s.node } },
    });
    if (s.serviceAccount !== 'kube-proxy')
      out.push({
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { namespace: 'kube-system', name: s.serviceAccount },
      });
  }
  out.push(
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: OCCUPANT } },
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { namespace: OCCUPANT, name: 'occupant' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: OCCUPANT },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: OCCUPANT },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: OCCUPANT },
      subjects: [{ kind: 'ServiceAccount', namespace: OCCUPANT, name: 'occupant' }],
    },
    ...Array.from({ length: 30 }, (_, i) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { namespace: OCCUPANT, name: `pad-${i}` },
      data: { pad: 'x'.repeat(20_000) },
    })),
  );
  out.push({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'bench-storm:node-proxier' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node-proxier' },
    subjects: sides
      .filter((s) => s.serviceAccount !== 'kube-proxy')
      .map((s) => ({ kind: 'ServiceAccount', namespace: 'kube-system', name: s.serviceAccount })),
  });
  return out;
}

/** APF: a priority level with no seats that rejects, and a FlowSchema sending the sides there. */
function overload(sides: readonly Side[], verbs: readonly string[]): object[] {
  return [
    {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'PriorityLevelConfiguration',
      metadata: { name: 'bench-storm-jail' },
      spec: {
        type: 'Limited',
        limited: {
          nominalConcurrencyShares: 0,
          lendablePercent: 0,
          borrowingLimitPercent: 0,
          limitResponse: { type: 'Reject' },
        },
      },
    },
    {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      kind: 'FlowSchema',
      metadata: { name: 'bench-storm-jail' },
      spec: {
        priorityLevelConfiguration: { name: 'bench-storm-jail' },
        matchingPrecedence: 10,
        distinguisherMethod: { type: 'ByUser' },
        rules: [
          {
            subjects: sides.map((s) => ({
              kind: 'ServiceAccount',
              serviceAccount: { namespace: 'kube-system', name: s.serviceAccount },
            })),
            resourceRules: [{ verbs, apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }],
          },
          {
            subjects: [{ kind: 'ServiceAccount', serviceAccount: { namespace: OCCUPANT, name: 'occupant' } }],
            resourceRules: [{ verbs: ['list'], apiGroups: [''], resources: ['configmaps'], namespaces: [OCCUPANT] }],
          },
        ],
      },
    },
  ];
}

/**
 * The jail's occupant: a list it never reads (HTTP/2, a 16 KiB stream window), so it stays
 * executing in the level until the server's request timeout; asked again at once when it
 * ends, every 250 ms while 429'd. Returns stop(), which tells how many lists it held.
 */
function occupy(url: string, ca: string, token: string): () => { held: number; refused: number } {
  let stopped = false;
  let held = 0;
  let refused = 0;
  let session: http2.ClientHttp2Session | undefined;
  const attempt = () => {
    if (stopped) return;
    const s = http2.connect(url, { ca, servername: 'kubernetes', settings: { initialWindowSize: 16_384 } });
    session = s;
    s.on('error', () => undefined);
    const req = s.request({ ':path': `/api/v1/namespaces/${OCCUPANT}/configmaps`, authorization: `Bearer ${token}` });
    req.on('error', () => undefined);
    let again = 0;
    req.on('response', (h) => {
      if (h[':status'] === 200) {
        held++;
        req.pause(); // nothing read: the server's write waits for the window
      } else {
        refused++;
        again = 250;
        req.close();
      }
    });
    req.on('close', () => {
      s.close();
      setTimeout(attempt, again);
    });
  };
  attempt();
  return () => {
    stopped = true;
    session?.destroy();
    return { held, refused };
  };
}

/** The audit log's events from byte `offset` on (whole lines). */
function auditFrom(file: string, offset: number): AuditEvent[] {
  const text = fs.readFileSync(file).subarray(offset).toString('utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditEvent);
}

/** One request per auditID: its first event (ResponseStarted for a watch answered 200, else ResponseComplete). */
interface Request {
  readonly user: string;
  readonly verb: string;
  readonly resource: string;
  readonly code: number;
  readonly atMs: number;
  /** a list's limit (kube-ipvs's history check after a lost connection lists 1) */
  readonly limit: string;
}

function requests(events: readonly AuditEvent[]): Request[] {
  const seen = new Map<string, Request>();
  for (const e of events) {
    if (seen.has(e.auditID) || (e.stage !== 'ResponseStarted' && e.stage !== 'ResponseComplete')) continue;
    seen.set(e.auditID, {
      user: e.user.username,
      verb: e.verb,
      resource: e.objectRef?.resource ?? e.requestURI,
      code: e.responseStatus?.code ?? 0,
      atMs: Date.parse(e.requestReceivedTimestamp ?? e.stageTimestamp ?? ''),
      limit: new URL(e.requestURI, 'https://x').searchParams.get('limit') ?? '',
    });
  }
  return [...seen.values()];
}

/** Whether `user` has a watch of `resource` answered 200 in `events` (at or after `sinceMs`). */
const watching = (reqs: readonly Request[], user: string, resource: string, sinceMs = 0) =>
  reqs.some(
    (r) => r.user === user && r.verb === 'watch' && r.resource === resource && r.code === 200 && r.atMs >= sinceMs,
  );

async function bench(): Promise<number> {
  const minutes = Number(process.env.BENCH_STORM_MINUTES ?? 5);
  const labDir = path.resolve(ROOT, process.env.BENCH_STORM_LAB ?? '.lab/relist-storm');
  const before = process.env.BENCH_STORM_BEFORE;
  const sides: Side[] = [
    { name: 'kube-proxy', serviceAccount: 'kube-proxy', node: 'storm-kube-proxy' },
    { name: 'kube-ipvs', serviceAccount: 'bench-kipvs', node: 'storm-kube-ipvs' },
    ...(before
      ? [{ name: 'kube-ipvs before', serviceAccount: 'bench-kipvs-before', node: 'storm-kube-ipvs-before' }]
      : []),
  ];
  const up = spawnSync(process.execPath, [path.join(ROOT, 'dist/scripts/lab/lab.js'), 'up', labDir], {
    encoding: 'utf8',
  });
  if (up.status !== 0) throw new Error(`lab up failed: ${up.stderr}`);
  const info = JSON.parse(up.stdout.trim().split('\n').pop()!) as LabInfo;
  const lab = new LabClient(`127.0.0.1:${info.controlPort}`);
  const auditLog = path.join(labDir, 'audit.log');
  const work = path.join(labDir, 'storm');
  fs.mkdirSync(work, { recursive: true });
  const relay = new Relay(info.apiservers.a.port);
  const cleanups: (() => void | Promise<void>)[] = [];
  try {
    await lab.kubectl(['delete', 'flowschema,prioritylevelconfiguration', 'bench-storm-jail', '--ignore-not-found']);
    await lab.apply(objects(sides));
    const ca = await lab.ca();
    // the kube-proxy side's namespace, its veth to the relay
    tryRun('ip', ['netns', 'del', NS]);
    tryRun('ip', ['link', 'del', HOST_IF]);
    run('ip', ['netns', 'add', NS]);
    cleanups.push(() => void tryRun('ip', ['netns', 'del', NS]));
    run('ip', ['link', 'add', HOST_IF, 'type', 'veth', 'peer', 'name', NS_IF, 'netns', NS]);
    cleanups.push(() => void tryRun('ip', ['link', 'del', HOST_IF]));
    run('ip', ['addr', 'add', `${HOST_ADDR}/30`, 'dev', HOST_IF]);
    run('ip', ['link', 'set', HOST_IF, 'up']);
    for (const args of [
      ['addr', 'add', `${NS_ADDR}/30`, 'dev', NS_IF],
      ['link', 'set', NS_IF, 'up'],
      ['link', 'set', 'lo', 'up'],
    ])
      run('ip', ['netns', 'exec', NS, 'ip', ...args]);
    await relay.listen(['127.0.0.1', HOST_ADDR]);
    cleanups.push(() => relay.close());

    for (const side of sides) {
      const dir = path.join(work, side.serviceAccount);
      fs.mkdirSync(dir, { recursive: true });
      const token = await lab.createToken('kube-system', side.serviceAccount, { duration: '3h' });
      const kc = path.join(dir, 'kubeconfig');
      const host = side.name === 'kube-proxy' ? HOST_ADDR : '127.0.0.1';
      fs.writeFileSync(kc, kubeconfig(`https://${host}:${relay.port}`, ca, token));
      const log = fs.openSync(path.join(dir, 'log'), 'w');
      if (side.name === 'kube-proxy') {
        const config = path.join(dir, 'config.yaml');
        fs.writeFileSync(
          config,
          [
            'apiVersion: kubeproxy.config.k8s.io/v1alpha1',
            'kind: KubeProxyConfiguration',
            'mode: iptables',
            'clientConnection:',
            `  kubeconfig: ${kc}`,
            `hostnameOverride: ${side.node}`,
            'clusterCIDR: 10.244.0.0/16',
            `healthzBindAddress: ${NS_ADDR}:10256`,
            `metricsBindAddress: ${NS_ADDR}:10249`,
            'conntrack:',
            '  maxPerCore: 0',
            '  tcpEstablishedTimeout: 0s',
            '  tcpCloseWaitTimeout: 0s',
            '',
          ].join('\n'),
        );
        side.child = spawn('ip', ['netns', 'exec', NS, path.join(BIN, 'kube-proxy'), '--config', config, '--v=2'], {
          stdio: ['ignore', log, log],
        });
      } else {
        const lib = side.name === 'kube-ipvs' ? path.join(ROOT, 'dist/lib') : path.resolve(before!);
        side.child = spawn(
          process.execPath,
          [__filename, 'informers', '--lib', lib, '--kubeconfig', kc, '--node', side.node],
          { stdio: ['ignore', log, log] },
        );
      }
      fs.closeSync(log);
      const child = side.child;
      cleanups.push(async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, sleep(10_000)]);
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      });
    }

    // every side synced, its watches open
    const startMark = 0;
    for (let waited = 0; ; waited += 1000) {
      const reqs = requests(auditFrom(auditLog, startMark));
      const pending = sides.filter(
        (s) => !['services', 'endpointslices'].every((r) => watching(reqs, userOf(s.serviceAccount), r)),
      );
      if (pending.length === 0) break;
      for (const s of sides)
        if (s.child!.exitCode !== null) throw new Error(`${s.name} exited (${s.child!.exitCode}): see ${work}`);
      if (waited > 120_000) throw new Error(`not watching after 2 minutes: ${pending.map((s) => s.name).join(', ')}`);
      await sleep(1000);
    }
    const occupantToken = await lab.createToken(OCCUPANT, 'occupant', { duration: '3h' });
    const phases = [
      { title: 'every request answered 429', verbs: ['*'] },
      { title: 'every watch answered 429, lists allowed', verbs: ['watch'] },
    ];
    for (const phase of phases) {
      console.error(
        `>> every side watching; APF (no seats) for ${phase.verbs.join(',')}, then every connection dropped`,
      );
      await lab.apply(overload(sides, phase.verbs));
      // the API server's APF configuration controller takes the objects from its informer
      await sleep(5000);
      const stopOccupant = occupy(`https://127.0.0.1:${info.apiservers.a.port}`, ca, occupantToken);
      cleanups.push(() => void stopOccupant());
      await sleep(2000);
      const mark = fs.statSync(auditLog).size;
      const t0 = Date.now();
      console.error(`>> dropped ${relay.dropAll()} connections; counting for ${minutes} min`);
      await sleep(minutes * 60_000);
      const overloaded = requests(auditFrom(auditLog, mark)).filter(
        (r) => r.atMs >= t0 && r.atMs < t0 + minutes * 60_000,
      );
      const occupant = stopOccupant();
      console.error(`>> the occupant held ${occupant.held} lists (${occupant.refused} of its asks 429'd)`);

      console.error('>> the overload removed; waiting for each side to watch again');
      const recoverMark = fs.statSync(auditLog).size;
      await lab.kubectl(['delete', 'flowschema,prioritylevelconfiguration', 'bench-storm-jail']);
      const t1 = Date.now();
      const recovered = new Map<string, number>();
      while (recovered.size < sides.length && Date.now() - t1 < 180_000) {
        const reqs = requests(auditFrom(auditLog, recoverMark));
        for (const s of sides) {
          if (recovered.has(s.name)) continue;
          const user = userOf(s.serviceAccount);
          const at = ['services', 'endpointslices'].map((r) =>
            Math.min(
              ...reqs
                .filter((q) => q.user === user && q.verb === 'watch' && q.resource === r && q.code === 200)
                .map((q) => q.atMs),
            ),
          );
          if (at.every(Number.isFinite)) recovered.set(s.name, Math.max(...at) - t1);
        }
        await sleep(1000);
      }
      report(phase.title, sides, overloaded, t0, minutes, recovered);
      // the occupant's last list ends at its timeout: the next phase starts with the level empty
      await sleep(5000);
    }
    return 0;
  } finally {
    for (const c of cleanups.reverse()) await c();
    if (process.env.BENCH_STORM_KEEP_LAB !== '1')
      spawnSync(process.execPath, [path.join(ROOT, 'dist/scripts/lab/lab.js'), 'down', labDir]);
  }
}

function report(
  title: string,
  sides: readonly Side[],
  reqs: readonly Request[],
  t0: number,
  minutes: number,
  recovered: ReadonlyMap<string, number>,
): void {
  const lines: string[] = [];
  const row = (cells: readonly (string | number)[]) => lines.push(`| ${cells.join(' | ')} |`);
  lines.push(`Requests per node, ${title} (${minutes} min after the drop):`, '');
  row([
    'side',
    'LIST/min',
    'WATCH/min',
    'other/min',
    'total/min',
    'LIST',
    'of them a list of 1',
    'WATCH',
    'answered 200',
    'first 60 s: LIST, WATCH',
    'watching again after',
  ]);
  row(Array(11).fill('---'));
  for (const s of sides) {
    const mine = reqs.filter((r) => r.user === userOf(s.serviceAccount));
    const count = (verb: string, within = Infinity) =>
      mine.filter((r) => r.verb === verb && r.atMs - t0 < within).length;
    const other = mine.filter((r) => r.verb !== 'list' && r.verb !== 'watch').length;
    const back = recovered.get(s.name);
    row([
      s.name,
      (count('list') / minutes).toFixed(1),
      (count('watch') / minutes).toFixed(1),
      (other / minutes).toFixed(1),
      (mine.length / minutes).toFixed(1),
      count('list'),
      mine.filter((r) => r.verb === 'list' && r.limit === '1').length,
      count('watch'),
      mine.filter((r) => r.code === 200).length,
      `${count('list', 60_000)}, ${count('watch', 60_000)}`,
      back === undefined ? 'not within 180 s' : `${(back / 1000).toFixed(1)} s`,
    ]);
  }
  lines.push('', 'By minute (LIST/WATCH), and by resource over the whole window:', '');
  row(['side', ...Array.from({ length: minutes }, (_, m) => `min ${m + 1}`), 'by resource (LIST/WATCH)']);
  row(Array(minutes + 2).fill('---'));
  for (const s of sides) {
    const mine = reqs.filter((r) => r.user === userOf(s.serviceAccount));
    const minute = (m: number, verb: string) =>
      mine.filter((r) => r.verb === verb && r.atMs - t0 >= m * 60_000 && r.atMs - t0 < (m + 1) * 60_000).length;
    const resources = [...new Set(mine.map((r) => r.resource))].sort();
    row([
      s.name,
      ...Array.from({ length: minutes }, (_, m) => `${minute(m, 'list')}/${minute(m, 'watch')}`),
      resources
        .map(
          (res) =>
            `${res} ${mine.filter((r) => r.resource === res && r.verb === 'list').length}/${mine.filter((r) => r.resource === res && r.verb === 'watch').length}`,
        )
        .join(', '),
    ]);
  }
  const codes = [...new Set(reqs.map((r) => r.code))].sort();
  lines.push('', `status codes seen: ${codes.join(', ')}`, '');
  console.log(lines.join('\n'));
}

/** One kube-ipvs side: its informers as the daemon starts them, from the dist/lib at `--lib`. */
async function informersSide(argv: readonly string[]): Promise<void> {
  const arg = (name: string) => {
    const i = argv.indexOf(`--${name}`);
    if (i < 0 || !argv[i + 1]) throw new Error(`informers: --${name} is required`);
    return argv[i + 1]!;
  };
  const lib = arg('lib');
  const informers = require(path.join(lib, 'k8s/informers.js')) as typeof import('../../lib/k8s/informers');
  const apiConfig = require(path.join(lib, 'daemon/api-config.js')) as typeof import('../../lib/daemon/api-config');
  const logs = require(path.join(lib, 'log.js')) as typeof import('../../lib/log');
  // kube-proxy's clientConnection defaults, as the daemon's config decode gives them
  const config = {
    clientConnection: {
      kubeconfig: arg('kubeconfig'),
      qps: 5,
      burst: 10,
      contentType: 'application/vnd.kubernetes.protobuf',
    },
  } as unknown as Parameters<typeof apiConfig.loadDaemonKubeConfig>[0];
  const kc = apiConfig.loadDaemonKubeConfig(config, { version: '0.0.0-bench', platform: 'linux/amd64' });
  const log = logs.componentLog('informers');
  const nothing = new Proxy({}, { get: () => () => undefined });
  const running = informers.startInformers(kc, {
    nodeName: arg('node'),
    log,
    streamingLists: informers.watchListClient(process.env, log),
    firstListSpreadMs: informers.FIRST_LIST_SPREAD_MS,
    handlers: { service: nothing as never, endpointSlice: nothing as never, node: nothing as never },
  });
  await new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()));
  await running.stop();
  process.exit(0);
}

if (require.main === module) {
  const argv = process.argv.slice(2);
  (argv[0] === 'informers' ? informersSide(argv.slice(1)).then(() => 0) : bench()).then(
    (code) => process.exit(code),
    (e) => {
      console.error(`relist-storm: ${(e as Error).stack ?? e}`);
      process.exit(1);
    },
  );
}
