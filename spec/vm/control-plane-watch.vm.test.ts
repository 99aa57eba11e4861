// Watch realities against the REAL control plane (the lab: etcd and kube-apiserver on the
// host, scripts/lab/lab.ts; issue 24 part 3). The real `kube-ipvs --config FILE` process in
// this file's network namespace talks to API server a with kubeadm's kubeconfig.conf from
// manifests/new-cluster/configmap.yaml (only `server:` replaced), authenticating as
// system:serviceaccount:kube-system:kube-proxy with a bound token from a projected volume laid
// out as the kubelet's atomic writer does. The test changes the world under it: API server a
// restarted while changes go through API server b (same etcd), etcd compacted under a resumed
// watch, 250 Services listed in pages of 100, the token rotated and the old one revoked, the
// ClusterRoleBinding kubeadm:node-proxier deleted and restored. The kernel is read with
// ipvsadm, real traffic goes from a client pod to backend pods, and the API server's audit log
// says what the daemon asked and what it was answered.
//
// No kube-controller-manager runs: ClusterIPs are the API server's (read back, never
// hard-coded), EndpointSlices are written here. The daemon sees every Service of the lab (other
// files' too, and default/kubernetes): assertions are on this file's VIPs only.
//
// Addresses: pods 10.244.0.0/16 (pod N is 10.244.N.2 behind gateway 10.244.N.1), Services
// from the lab's 10.96.0.0/16.
import { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import {
  AuditEvent,
  connectToLab,
  kubeProxyIdentity,
  LabClient,
  labFromEnv,
  writeProjectedVolume,
} from '../../testkit/lab-client';
import { labNode, labService, labSlice } from '../../testkit/lab-objects';
import {
  e2eProxyConfig,
  LoggedProcess,
  LogLine,
  SERVICE_ACCOUNT_DIR as SA_DIR,
  startKubeIpvs,
} from '../../testkit/processes';
import { connect, deletePod, makePod, run, startEchoServer, tryRun } from '../../testkit/netns';
import { eventually } from '../../testkit/wait-for';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CRB_MANIFEST = path.join(ROOT, 'manifests', 'new-cluster', 'cluster-role-binding.yaml');
const SA_USER = 'system:serviceaccount:kube-system:kube-proxy';

const NS = 'cpw';
const BULK_NS = 'cpw-bulk';
// pages of 100 (KUBE_IPVS_LIST_PAGE_SIZE; the daemon's default is 2,000): 250 Services page as
// 2,000 would against the default, at an eighth of the API server's and the guest's work
const PAGE = 100;
const BULK = 250;
// the informers' backoff capped at 2 s (KUBE_IPVS_INFORMER_BACKOFF_MAX_MS; the daemon's is
// client-go's 30 s, jittered up to 60): what the daemon does while the API server is gone or
// refuses it, and after, is the same; the file waited minutes for retries at the cap
const BACKOFF_MAX_MS = 2000;
const NODE = 'cpw-node';
const NODE_IP = '192.0.2.1';
const P1 = { name: 'cpw-p1', ip: '10.244.1.2', gw: '10.244.1.1' };
const P2 = { name: 'cpw-p2', ip: '10.244.2.2', gw: '10.244.2.1' };
const CLIENT = { name: 'cpw-c', ip: '10.244.3.2', gw: '10.244.3.1' };
const SECRET1 = 'cpw-s1';
const SECRET2 = 'cpw-s2';
/** the test's own requests to the API server say so: they are not the daemon's */
const PROBE_AGENT = 'kube-ipvs-e2e-probe';

// ---- objects ----

/** A selectorless ClusterIP Service: port 80 -> 8080; the API server allocates its ClusterIP. */
const service = (name: string, ns = NS) => labService(ns, name, { type: 'ClusterIP' });
/** The EndpointSlice an e2e controller would write for Service `svc`: `ips` ready on port 8080. */
const slice = (svc: string, ips: readonly string[]) =>
  labSlice(
    NS,
    svc,
    `${svc}-1`,
    ips.map((ip) => ({ ip, node: NODE })),
  );
const node = labNode(NODE, [NODE_IP]);

// ---- kernel views ----

/** `ipvsadm -Sn` as sorted lines. */
function ipvsRules(): string[] {
  return run('ipvsadm', ['-Sn']).split('\n').filter(Boolean).sort();
}
/** The lines of `vips` only (other files' Services are in the lab too). */
function linesOf(vips: readonly string[]): string[] {
  const set = new Set(vips.map((v) => `${v}:80`));
  return ipvsRules().filter((l) => set.has(l.split(' ')[2]!));
}
/** A real server at weight 0: its endpoint was removed while connections to it were open. */
const isDraining = (line: string) => /^-a .* -w 0$/.test(line);
/** every real server rulesOf saw draining */
const seenDraining = new Set<string>();
/**
 * linesOf without the real servers draining at weight 0: an endpoint removed while the test's
 * own connections to it sit in IPVS's TIME_WAIT drains for up to 2 minutes (graceful
 * termination, as kube-proxy's); waiting that out cost each change 2 minutes, and the last test
 * checks that they went
 */
const rulesOf = (vips: readonly string[]) =>
  linesOf(vips).filter((l) => {
    if (isDraining(l)) seenDraining.add(l);
    return !isDraining(l);
  });
const vsLine = (vip: string) => `-A -t ${vip}:80 -s rr`;
const rsLine = (vip: string, ip: string) => `-a -t ${vip}:80 -r ${ip}:8080 -m -w 1`;

/** A Service's table as kube-proxy makes it: one virtual server, a real server per endpoint. */
const tableOf = (vip: string, ips: readonly string[]) => [vsLine(vip), ...ips.map((ip) => rsLine(vip, ip))];

// ---- the audit log ----

/** Each request once (its last stage: a watch still open has only ResponseStarted). */
function requests(events: readonly AuditEvent[]): AuditEvent[] {
  const byId = new Map<string, AuditEvent>();
  for (const e of events) byId.set(id(e), e);
  return [...byId.values()];
}
const id = (e: AuditEvent) => (e as AuditEvent & { auditID: string }).auditID;
const code = (e: AuditEvent) => e.responseStatus?.code ?? 0;
const isList = (e: AuditEvent, p: string) =>
  e.verb === 'list' && e.requestURI.startsWith(`${p}?`) && !/[?&]watch=(true|1)/.test(e.requestURI);
const query = (e: AuditEvent) => new URL(e.requestURI, 'https://x').searchParams;

describe('kube-ipvs against the real kube-apiserver: restarts, compaction, paging, token rotation, RBAC', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-cpw-'));
  let lab: LabClient;
  let ca: string;
  /** API server b as the host reaches it (kubectl runs on the host) */
  let hostB: string;
  let daemon: LoggedProcess;
  /** the daemon's User-Agent, read from its authenticated requests: names its refused ones too */
  const daemonAgents = new Set<string>();
  /** the audit log's end before the daemon started */
  let startMark = 0;
  const children: ChildProcess[] = [];
  /** Service name -> ClusterIP as the API server allocated it */
  const vip: Record<string, string> = {};

  const kubectlB = (args: readonly string[], stdin?: string) => lab.kubectl(['--server', hostB, ...args], stdin);
  const applyB = (objects: readonly unknown[]) =>
    kubectlB(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  async function clusterIP(name: string): Promise<string> {
    const svc = await lab.getJson<{ spec: { clusterIP: string } }>(['-n', NS, 'service', name]);
    vip[name] = svc.spec.clusterIP;
    return vip[name]!;
  }
  /** the audit log's end when API server a last answered /readyz 200 after a start */
  let readyMark = 0;
  async function startA(): Promise<void> {
    await lab.startApiserver('a');
    readyMark = await lab.auditMark();
  }
  async function restartA(): Promise<void> {
    await lab.stopApiserver('a');
    await startA();
  }
  /** The daemon's requests since `mark`, each once. */
  async function daemonRequests(mark: number): Promise<AuditEvent[]> {
    const all = requests(await lab.audit(mark));
    for (const e of all)
      if (e.user.username === SA_USER && e.userAgent && e.userAgent !== PROBE_AGENT) daemonAgents.add(e.userAgent);
    const mine = (e: AuditEvent) =>
      e.user.username === SA_USER || (e.userAgent !== undefined && daemonAgents.has(e.userAgent));
    // the test's own probe of the old token is not the daemon's (the daemon reads cluster-wide)
    return all.filter(
      (e) => e.userAgent !== PROBE_AGENT && !e.requestURI.startsWith(`/api/v1/namespaces/${NS}/`) && mine(e),
    );
  }
  /**
   * The daemon's requests since `mark` that API server a received before it was ready
   * (`readyMark`): a starting kube-apiserver already serves its port while its RBAC and
   * service-account caches fill, and may refuse a request (403) that it grants once ready.
   */
  async function beforeReady(mark: number): Promise<Set<string>> {
    const all = await lab.audit(mark);
    const late = await lab.audit(readyMark);
    const early = new Set(all.slice(0, all.length - late.length).map(id));
    for (const e of late) early.delete(id(e));
    return early;
  }
  /** Non-2xx answers to the daemon since `mark`, except a's before it was ready and a resumed watch's 410. */
  async function failuresAfterReady(mark: number): Promise<string[]> {
    const early = await beforeReady(mark);
    const reqs = await daemonRequests(mark);
    const startup = reqs.filter((e) => early.has(id(e)) && (code(e) < 200 || code(e) >= 300));
    if (startup.length)
      console.log(
        `answered before a was ready: ${startup.map((e) => `${e.verb} ${e.objectRef?.resource} ${code(e)}`).join(', ')}`,
      );
    return reqs
      .filter((e) => !early.has(id(e)) && (code(e) < 200 || code(e) >= 300) && code(e) !== 410)
      .map((e) => `${e.user.username} ${e.verb} ${e.requestURI} ${code(e)}`);
  }
  const idx = () => daemon.lines.length;
  const linesSince = (from: number, pred: (l: LogLine) => boolean) => daemon.lines.slice(from).filter(pred);
  const healthz = async (p: string) => (await fetch(`http://127.0.0.1:10256${p}`)).status;

  beforeAll(async () => {
    connectToLab();
    lab = labFromEnv();
    await lab.startApiserver('b');
    hostB = `https://127.0.0.1:${(await lab.info()).apiservers.b.port}`;
    ca = await lab.ca();
    for (const ns of [NS, BULK_NS]) await lab.kubectl(['create', 'namespace', ns], undefined, true);
    await lab.kubectl(['-n', 'kube-system', 'create', 'secret', 'generic', SECRET1]);
    await lab.apply([node]);
    await kubeProxyIdentity(lab, dir, { duration: '1h', boundSecret: SECRET1 });
    fs.writeFileSync(
      path.join(dir, 'config.conf'),
      e2eProxyConfig({ dir, node: NODE, ipvs: ['scheduler: rr', 'syncPeriod: 1m'] }),
    );

    for (const p of [P1, P2, CLIENT]) makePod(p.name, p.ip, p.gw);
    children.push(await startEchoServer(P1.name, 'p1', P1.ip, 8080));
    children.push(await startEchoServer(P2.name, 'p2', P2.ip, 8080));

    await lab.apply([service('web'), service('other'), service('gone')]);
    await lab.apply([slice('web', [P1.ip]), slice('other', [P2.ip]), slice('gone', [P1.ip, P2.ip])]);
    for (const s of ['web', 'other', 'gone']) await clusterIP(s);
    startMark = await lab.auditMark();
    daemon = startKubeIpvs(['--config', path.join(dir, 'config.conf'), '--v=2'], {
      KUBE_IPVS_LIST_PAGE_SIZE: String(PAGE),
      KUBE_IPVS_INFORMER_BACKOFF_MAX_MS: String(BACKOFF_MAX_MS),
    });
  }, 600_000);

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    for (const c of children) c.kill('SIGKILL');
    for (const p of [P1, P2, CLIENT]) deletePod(p.name);
    tryRun('ipvsadm', ['-C']);
    if (lab) {
      await lab.kubectl(['apply', '-f', '-'], fs.readFileSync(CRB_MANIFEST, 'utf8'), true);
      await lab.startApiserver('a').catch(() => undefined);
      await lab.kubectl(['-n', NS, 'delete', 'services,endpointslices', '--all', '--wait=false'], undefined, true);
      await lab.kubectl(['-n', BULK_NS, 'delete', 'services', '--all', '--wait=false'], undefined, true);
      await lab.kubectl(
        ['-n', 'kube-system', 'delete', 'secret', SECRET1, SECRET2, '--ignore-not-found'],
        undefined,
        true,
      );
      await lab.kubectl(['delete', 'node', NODE, '--ignore-not-found'], undefined, true);
    }
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(SA_DIR, { recursive: true, force: true });
  }, 600_000);

  it('programs the Services from the real API server; traffic flows', async () => {
    // generous: on a loaded host the guest takes minutes to load the daemon's modules
    await daemon.waitFor((l) => l.message === 'sync done', 'the first sync', 0, 400_000);
    const want = [
      ...tableOf(vip.web!, [P1.ip]),
      ...tableOf(vip.other!, [P2.ip]),
      ...tableOf(vip.gone!, [P1.ip, P2.ip]),
    ].sort();
    await eventually(
      'the three Services',
      () => rulesOf([vip.web!, vip.other!, vip.gone!]),
      (r) => JSON.stringify(r) === JSON.stringify(want),
    );
    expect(connect(CLIENT.name, vip.web!, 80).reply).toBe(`p1 client=${CLIENT.ip}`);
    expect(connect(CLIENT.name, vip.other!, 80).reply).toBe(`p2 client=${CLIENT.ip}`);
    // the daemon authenticated as kube-proxy's service account and was answered 2xx
    const reqs = await daemonRequests(startMark);
    expect(reqs.length).toBeGreaterThan(0);
    expect(reqs.filter((e) => code(e) >= 300).map((e) => `${e.verb} ${e.requestURI} ${code(e)}`)).toEqual([]);
  }, 600_000);

  it('API server a restarted: nothing programmed is lost while it is down; what changed meanwhile through b is programmed after', async () => {
    const mine = () => rulesOf([vip.web!, vip.other!, vip.gone!]);
    const before = mine();
    const from = idx();
    await lab.stopApiserver('a');
    // through b (same etcd): a Service added, one deleted, an endpoint changed
    await applyB([service('added')]);
    await applyB([slice('added', [P1.ip])]);
    await kubectlB(['-n', NS, 'delete', 'service', 'gone']);
    await kubectlB(['-n', NS, 'delete', 'endpointslice', 'gone-1']);
    await applyB([slice('web', [P2.ip])]);
    const addedSvc = await lab.kubectl([
      '--server',
      hostB,
      '-n',
      NS,
      'get',
      'service',
      'added',
      '-o',
      'jsonpath={.spec.clusterIP}',
    ]);
    vip.added = addedSvc.stdout.trim();
    // the daemon notices that a is gone (its watches end, reconnecting fails) and keeps the table
    await eventually(
      'the daemon failing to reach a',
      () => linesSince(from, (l) => /informer failed/.test(String(l.message))).length,
      (n) => n > 0,
    );
    expect(mine()).toEqual(before);
    expect(rulesOf([vip.added])).toEqual([]);
    expect(connect(CLIENT.name, vip.web!, 80).reply).toBe(`p1 client=${CLIENT.ip}`);
    expect(connect(CLIENT.name, vip.gone!, 80).outcome).toBe('ok');

    const mark = await lab.auditMark();
    await startA();
    const want = [
      ...tableOf(vip.web!, [P2.ip]),
      ...tableOf(vip.other!, [P2.ip]),
      ...tableOf(vip.added, [P1.ip]),
    ].sort();
    await eventually(
      'the changes made through b',
      () => rulesOf([vip.web!, vip.other!, vip.gone!, vip.added!]),
      (r) => JSON.stringify(r) === JSON.stringify(want),
      300_000,
    );
    expect(connect(CLIENT.name, vip.web!, 80).reply).toBe(`p2 client=${CLIENT.ip}`);
    expect(connect(CLIENT.name, vip.added, 80).reply).toBe(`p1 client=${CLIENT.ip}`);
    // a restarted API server's watch cache starts at etcd's current revision: the daemon's
    // resumed watch is answered 410 and it relists (as client-go's reflector would)
    const reqs = await daemonRequests(mark);
    const relisted = linesSince(from, (l) =>
      /informer: watch from resourceVersion \d+ expired \(410 Gone/.test(String(l.message)),
    );
    console.log(
      `after a's restart: ${relisted.length} informer(s) relisted after 410; ${reqs.filter((e) => isList(e, '/api/v1/services')).length} Service list(s)`,
    );
    expect(await failuresAfterReady(mark)).toEqual([]);
  }, 900_000);

  it('etcd compacted under the resumed watch: 410, the daemon relists, objects deleted meanwhile leave the table', async () => {
    const from = idx();
    await lab.stopApiserver('a');
    await kubectlB(['-n', NS, 'delete', 'service', 'added']);
    await kubectlB(['-n', NS, 'delete', 'endpointslice', 'added-1']);
    await applyB([slice('other', [P1.ip, P2.ip])]);
    const revision = await lab.compact();
    expect(revision).toBeGreaterThan(0);
    const mark = await lab.auditMark();
    await startA();
    const want = [...tableOf(vip.web!, [P2.ip]), ...tableOf(vip.other!, [P1.ip, P2.ip])].sort();
    await eventually(
      'the relisted state',
      () => rulesOf([vip.web!, vip.other!, vip.added!]),
      (r) => JSON.stringify(r) === JSON.stringify(want),
      300_000,
    );
    // the relist, in the daemon's log and in the audit log: a list of Services after a's start
    const relisted = linesSince(from, (l) =>
      /^services informer: watch from resourceVersion \d+ expired \(410 Gone: .*\); relisting$/.test(String(l.message)),
    );
    expect(relisted.length).toBeGreaterThanOrEqual(1);
    const reqs = await daemonRequests(mark);
    expect(reqs.filter((e) => isList(e, '/api/v1/services')).length).toBeGreaterThanOrEqual(1);
    expect(await failuresAfterReady(mark)).toEqual([]);
    expect(connect(CLIENT.name, vip.other!, 80).outcome).toBe('ok');
  }, 900_000);

  it(`lists ${BULK} Services in pages of ${PAGE} (audit: limit and continue, all 2xx), programs them all, and removes them when deleted`, async () => {
    // created while a is down, then etcd compacted: a's return makes the daemon relist them all
    await lab.stopApiserver('a');
    const items = Array.from({ length: BULK }, (_, i) => service(`bulk-${i}`, BULK_NS));
    await kubectlB(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    const bulk = (
      await lab.kubectl([
        '--server',
        hostB,
        '-n',
        BULK_NS,
        'get',
        'services',
        '-o',
        'jsonpath={.items[*].spec.clusterIP}',
      ])
    ).stdout
      .trim()
      .split(/\s+/);
    expect(bulk).toHaveLength(BULK);
    await lab.compact();
    const mark = await lab.auditMark();
    await startA();
    const bulkSet = new Set(bulk.map((v) => `${v}:80`));
    const bulkVs = () => ipvsRules().filter((l) => l.startsWith('-A ') && bulkSet.has(l.split(' ')[2]!)).length;
    await eventually(`all ${BULK} programmed`, bulkVs, (n) => n === BULK, 600_000);
    expect(rulesOf(bulk.slice(0, 3))).toEqual(bulk.slice(0, 3).map(vsLine).sort());

    // (a page of one after a lost connection is the informer's history check, not the relist)
    const all = (await daemonRequests(mark)).filter((e) => isList(e, '/api/v1/services'));
    const checks = all.filter((e) => query(e).get('limit') === '1');
    // a 403 from a before it was ready is its RBAC cache filling (see beforeReady), not the daemon's
    const early = await beforeReady(mark);
    expect(checks.filter((e) => code(e) !== 200 && !(early.has(id(e)) && code(e) === 403))).toEqual([]);
    const lists = all.filter((e) => query(e).get('limit') !== '1');
    // one relist after a's return: a first page without a continue token, then the rest with
    const pages = lists.map((e) => ({
      limit: query(e).get('limit'),
      cont: query(e).get('continue') ?? '',
      code: code(e),
    }));
    console.log(
      `Service list requests after a's return: ${JSON.stringify(pages.map((p) => ({ ...p, cont: p.cont ? `${p.cont.slice(0, 12)}...` : '' })))}`,
    );
    expect(pages.every((p) => p.limit === String(PAGE))).toBe(true);
    expect(await failuresAfterReady(mark)).toEqual([]);
    const firsts = pages.filter((p) => p.cont === '').length;
    expect(firsts).toBeGreaterThanOrEqual(1);
    // the lab holds at least BULK + 4 Services: at least ceil((BULK + 4) / PAGE) pages per list
    const continued = Math.ceil((BULK + 4) / PAGE) - 1;
    expect(continued).toBeGreaterThanOrEqual(1);
    expect(pages.filter((p) => p.cont !== '').length).toBeGreaterThanOrEqual(continued * firsts);

    // (one kubectl deletes one Service per request, and on a loaded host a long run of them
    // outlasts its timeout: eight at once, an eighth of the names each)
    const names = items.map((o) => (o.metadata as { name: string }).name);
    const chunks = Array.from({ length: 8 }, (_, k) => names.filter((_n, i) => i % 8 === k));
    await Promise.all(chunks.map((c) => lab.kubectl(['-n', BULK_NS, 'delete', 'services', '--wait=false', ...c])));
    await eventually('the bulk Services gone', bulkVs, (n) => n === 0, 600_000);
    expect(rulesOf([vip.web!])).toEqual(tableOf(vip.web!, [P2.ip]).sort());
  }, 1_500_000);

  it('the token rotated and the old one revoked (401): after new connections the daemon keeps working, as kube-proxy, with at most one retried 401 per request', async () => {
    const oldToken = fs.readFileSync(path.join(SA_DIR, 'token'), 'utf8').trim();
    await lab.kubectl(['-n', 'kube-system', 'create', 'secret', 'generic', SECRET2]);
    const token = await lab.createToken('kube-system', 'kube-proxy', { duration: '1h', boundSecret: SECRET2 });
    writeProjectedVolume(SA_DIR, { token, 'ca.crt': ca, namespace: 'kube-system' });
    const mark = await lab.auditMark();
    await lab.kubectl(['-n', 'kube-system', 'delete', 'secret', SECRET1]);
    // the API server caches a token's authentication for a few seconds: wait until it refuses it
    const dispatcher = new Agent({ connect: { ca } });
    const a = await lab.server('a');
    const withOld = async () =>
      (
        await undiciFetch(`${a}/api/v1/namespaces/${NS}/services`, {
          headers: { authorization: `Bearer ${oldToken}`, 'user-agent': PROBE_AGENT },
          dispatcher,
        })
      ).status;
    await eventually('the old token refused', withOld, (s) => s === 401, 120_000);
    await dispatcher.close();
    // new connections: the watches reconnect and must authenticate again
    await restartA();
    await lab.apply([service('rotated')]);
    await lab.apply([slice('rotated', [P1.ip])]);
    const rotated = await clusterIP('rotated');
    await eventually(
      'the Service created after the rotation',
      () => rulesOf([rotated]),
      (r) => JSON.stringify(r) === JSON.stringify(tableOf(rotated, [P1.ip]).sort()),
      300_000,
    );
    expect(connect(CLIENT.name, rotated, 80).reply).toBe(`p1 client=${CLIENT.ip}`);

    const early = await beforeReady(mark);
    const reqs = (await daemonRequests(mark)).filter((e) => !(early.has(id(e)) && code(e) === 403));
    const refused = reqs.filter((e) => code(e) === 401);
    const rest = reqs.filter((e) => code(e) !== 401);
    console.log(
      `after the rotation: ${reqs.length} daemon requests, ${refused.length} answered 401: ${refused.map((e) => `${e.verb} ${e.requestURI}`).join(', ')}`,
    );
    // every request that was not refused is kube-proxy's and 2xx (a 410 of a resumed watch aside)
    expect(
      rest
        .filter((e) => e.user.username !== SA_USER || ((code(e) < 200 || code(e) >= 300) && code(e) !== 410))
        .map((e) => `${e.user.username} ${e.verb} ${e.requestURI} ${code(e)}`),
    ).toEqual([]);
    // each 401 is one request sent with the old token before the file was re-read: the same
    // request follows at once, authenticated, and succeeds; never two 401s for one request
    const uris = refused.map((e) => e.requestURI);
    expect(new Set(uris).size).toBe(uris.length);
    for (const e of refused) {
      expect(rest.some((r) => r.requestURI === e.requestURI && code(r) >= 200 && code(r) < 300)).toBe(true);
    }
    // at most one per informer (services, endpointslices, nodes) racing the first re-read
    expect(refused.length).toBeLessThanOrEqual(3);
    // and no refusal line: the retry succeeded
    expect(daemon.lines.filter((l) => /refused the credentials/.test(String(l.message)))).toEqual([]);
  }, 900_000);

  it('the ClusterRoleBinding deleted: 403, one refusal line, the table stays and traffic flows, /healthz 200 as kube-proxy; restored: the daemon resumes', async () => {
    const mine = [vip.web!, vip.other!, vip.rotated!];
    const before = rulesOf(mine);
    const from = idx();
    await lab.kubectl(['delete', 'clusterrolebinding', 'kubeadm:node-proxier']);
    const mark = await lab.auditMark();
    // the open watches were authorized when they started: a restart makes them ask again
    await restartA();
    await lab.apply([service('forbidden')]);
    await lab.apply([slice('forbidden', [P2.ip])]);
    const forbidden = await clusterIP('forbidden');
    const refusal = await daemon.waitFor(
      (l) => /denied the request \(403 Forbidden\)/.test(String(l.message)),
      'the refusal line',
      from,
      300_000,
    );
    expect(refusal).toMatchObject({ level: 'error', code: 403, user: expect.any(String) });
    expect(String(refusal.message)).toMatch(/system:serviceaccount:kube-system:kube-proxy|cannot list|cannot watch/);
    // several refused requests (every informer, retried with backoff) ...
    await eventually(
      'refused requests in the audit log',
      async () => (await daemonRequests(mark)).filter((e) => code(e) === 403).length,
      (n) => n >= 4,
      300_000,
    );
    // ... and one line for all of them
    expect(linesSince(from, (l) => l.level === 'error' && /Forbidden|forbidden/.test(String(l.message)))).toHaveLength(
      1,
    );
    // nothing programmed is lost, traffic flows, and the forbidden-time Service is not seen yet
    expect(rulesOf(mine)).toEqual(before);
    expect(rulesOf([forbidden])).toEqual([]);
    expect(connect(CLIENT.name, vip.web!, 80).reply).toBe(`p2 client=${CLIENT.ip}`);
    // kube-proxy's /healthz depends on its sync loop (pkg/proxy/healthcheck: healthy unless a
    // queued change waited 2 x syncPeriod) and the node's eligibility only; no change reaches
    // the daemon while forbidden, so its sync loop is healthy: 200, as kube-proxy's, however
    // long the watches stay refused (issue 39 item 7: load balancers probe it, and a
    // control-plane outage must not drain the node). An informer with no open watch for over
    // 2 x syncPeriod is named in the body, and in kube_ipvs_informer_not_watching_seconds.
    // /livez stays 200 (a restart mends no RBAC).
    const h = await fetch('http://127.0.0.1:10256/healthz');
    const body = (await h.json()) as { notWatching?: Record<string, string> };
    expect(h.status).toBe(200);
    for (const resource of Object.keys(body.notWatching ?? {}))
      expect(['services', 'endpointslices', 'nodes']).toContain(resource);
    expect(await healthz('/livez')).toBe(200);

    await lab.kubectl(['apply', '-f', '-'], fs.readFileSync(CRB_MANIFEST, 'utf8'));
    await eventually(
      'the Service created while forbidden',
      () => rulesOf([forbidden]),
      (r) => JSON.stringify(r) === JSON.stringify(tableOf(forbidden, [P2.ip]).sort()),
      300_000,
    );
    expect(connect(CLIENT.name, forbidden, 80).reply).toBe(`p2 client=${CLIENT.ip}`);
    expect(rulesOf(mine)).toEqual(before);
    const reqs = await daemonRequests(mark);
    console.log(`while forbidden: ${reqs.filter((e) => code(e) === 403).length} requests answered 403`);
    // still the one line: the refusal that ended was not logged again
    expect(linesSince(from, (l) => l.level === 'error' && /Forbidden|forbidden/.test(String(l.message)))).toHaveLength(
      1,
    );
  }, 900_000);

  it('the real servers left draining at weight 0 (their endpoints removed while the test had connections to them) are deleted once those connections are gone', async () => {
    // checked last, when IPVS's TIME_WAIT (2 minutes) of the earliest connections has passed,
    // so the file does not wait it out after each change (rulesOf leaves weight 0 out)
    const draining = () => linesOf(Object.values(vip)).filter(isDraining);
    console.log(`seen draining: ${JSON.stringify([...seenDraining])}; at the end: ${JSON.stringify(draining())}`);
    // the API server's restart moved web from p1 to p2 after a connection to p1
    expect([...seenDraining]).toContain(`-a -t ${vip.web}:80 -r ${P1.ip}:8080 -m -w 0`);
    await eventually('no real server of this file left at weight 0', draining, (d) => d.length === 0, 300_000);
  }, 400_000);
});
