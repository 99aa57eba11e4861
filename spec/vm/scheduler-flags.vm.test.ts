// IPVS scheduler flags end to end: the real daemon (`kube-ipvs --config`) against the fake API
// server process, the real kernel's mh scheduler, and real TCP connections from a client pod to
// ClusterIPs whose three backends are pods (network namespaces routed by the node).
//
// The node says `scheduler: mh` and `schedulerFlags: [mh-fallback, mh-port]` (the kube-ipvs
// extension of KubeProxyConfiguration). Two Services over the same three pods:
//  - `fallback`: no annotation, so the node's flags: mh-fallback,mh-port;
//  - `plain`: `kube-ipvs.io/scheduler-flags: sh-port,mh-port`: the Service's list replaces the
//    node's; sh-port is not a flag of mh (a log line and an Event), so it is kube-proxy's
//    mh-port alone.
// Then the third pod's endpoint becomes terminating (ready false, serving true): kube-ipvs keeps
// its real server at weight 0 while it drains. mh keeps a weight-0 server's slots in its lookup
// table; without mh-fallback a new connection hashed to one finds no destination and fails
// (kubernetes #139497); with mh-fallback the kernel picks the next server. mh-port hashes the
// client's source port too, so one client's connections spread over the table.
// Last, `plain` gets mh-fallback live: one SET_SERVICE, the draining real server (and its
// counters) kept, and its new connections stop failing.
//
// Addresses: pods 10.244.1.2, 10.244.2.2, 10.244.3.2 (clusterCIDR 10.244.0.0/16), the client
// pod 10.244.9.2, Services 10.96.0.40 (plain) and 10.96.0.41 (fallback).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChildProcess, spawn } from 'node:child_process';
import {
  ApiClient,
  e2eProxyConfig,
  LoggedProcess,
  LogLine,
  startFixtureApiServer,
  startKubeIpvs,
} from '../../testkit/processes';
import { eventually } from '../../testkit/wait-for';
import { deletePod, makePod, run, startEchoServer, tryRun } from '../../testkit/netns';

const API_PORT = 16448;
const NODE = 'node-a';
const PODS = [
  { name: 'sfpod1', ip: '10.244.1.2', gw: '10.244.1.1' },
  { name: 'sfpod2', ip: '10.244.2.2', gw: '10.244.2.1' },
  { name: 'sfpod3', ip: '10.244.3.2', gw: '10.244.3.1' },
] as const;
const DRAINED = PODS[2];
const CLIENT = { name: 'sfclient', ip: '10.244.9.2', gw: '10.244.9.1' };
const PLAIN = '10.96.0.40';
const FALLBACK = '10.96.0.41';
/** new connections per Service per round: about a third hash to the drained pod's slots */
const N = 30;

type Obj = Record<string, unknown>;
const meta = (name: string, extra: Obj = {}) => ({ namespace: 'default', name, uid: `uid-${name}`, ...extra });

function service(name: string, clusterIP: string, annotations: Record<string, string>): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(name, { annotations }),
    spec: {
      type: 'ClusterIP',
      clusterIP,
      clusterIPs: [clusterIP],
      ipFamilies: ['IPv4'],
      sessionAffinity: 'None',
      ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
    },
  };
}
function slice(svc: string, drained: boolean): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: meta(`${svc}-1`, { labels: { 'kubernetes.io/service-name': svc } }),
    addressType: 'IPv4',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: PODS.map((p) => ({
      addresses: [p.ip],
      conditions:
        drained && p === DRAINED
          ? { ready: false, serving: true, terminating: true }
          : { ready: true, serving: true, terminating: false },
      nodeName: NODE,
    })),
  };
}
const node: Obj = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE, uid: 'uid-node-a' },
  spec: { podCIDR: '10.244.0.0/16', podCIDRs: ['10.244.0.0/16'] },
  status: { addresses: [{ type: 'InternalIP', address: '192.0.2.1' }] },
};
const plain = (flags: string) => service('plain', PLAIN, { 'kube-ipvs.io/scheduler-flags': flags });
const FIXTURES = [
  node,
  plain('sh-port,mh-port'),
  slice('plain', false),
  service('fallback', FALLBACK, {}),
  slice('fallback', false),
];

const isSync = (l: LogLine) => l.message === 'sync done';

/**
 * `n` new connections, one after another, from the client pod to vip:80 (one node process: a
 * curl per connection cost the TCG guest 1.5 s each): each outcome counted ('refused' is
 * ECONNREFUSED, 'timeout' nothing within 3 s), and which pod answered.
 */
function round(vip: string, n: number): { outcomes: Record<string, number>; pods: Record<string, number> } {
  const script =
    `const http=require('http');const one=()=>new Promise((res)=>{` +
    `const q=http.get({host:${JSON.stringify(vip)},port:80,agent:false,timeout:3000},(r)=>{let b='';` +
    `r.on('data',(d)=>b+=d);r.on('end',()=>res('ok '+b.split(' ')[0]));});` +
    `q.on('timeout',()=>{res('timeout');q.destroy();});` +
    `q.on('error',(e)=>res(e.code==='ECONNREFUSED'?'refused':'error '+e.code));});` +
    `(async()=>{const out=[];for(let i=0;i<${n};i++)out.push(await one());console.log(JSON.stringify(out));})();`;
  const results = JSON.parse(
    run('ip', ['netns', 'exec', CLIENT.name, process.execPath, '-e', script], undefined, 300_000),
  ) as string[];
  const outcomes: Record<string, number> = {};
  const pods: Record<string, number> = {};
  for (const r of results) {
    const [outcome, pod] = r.startsWith('ok ') ? ['ok', r.slice(3)] : [r, undefined];
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
    if (pod !== undefined) pods[pod] = (pods[pod] ?? 0) + 1;
  }
  return { outcomes, pods };
}

/**
 * One connection per VIP from the client pod kept open on the drained pod: new connections
 * (each from another source port, so hashed anew by mh-port) until one is answered by it, then
 * a request on it every second (the echo server closes a keep-alive connection idle for 5 s).
 * An open connection keeps the real server draining at weight 0 (its closed ones leave IPVS's
 * table within a minute, and the drain check would delete it). Prints "held VIP" once, then
 * "answer VIP POD" per reply on the held connection.
 */
function holdDrainedPod(vips: readonly string[]): { child: ChildProcess; out: string[] } {
  const script =
    `const net=require('net');const REQ='GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n';` +
    `const hold=(vip)=>{const s=net.connect(80,vip);let held=false,buf='';` +
    `s.on('data',(d)=>{buf+=d;const m=/(\\S+) client=/.exec(buf);if(!m||!buf.endsWith('\\n'))return;buf='';` +
    `if(held)return console.log('answer '+vip+' '+m[1]);` +
    `if(m[1]!==${JSON.stringify(DRAINED.name)}){s.destroy();return hold(vip);}` +
    `held=true;console.log('held '+vip);setInterval(()=>s.write(REQ),1000);});` +
    `s.on('error',(e)=>{if(held)return console.log('error '+vip+' '+e.code);setTimeout(()=>hold(vip),100);});` +
    `s.on('close',()=>{if(held)console.log('closed '+vip);});s.write(REQ);};` +
    `for(const v of ${JSON.stringify(vips)})hold(v);`;
  const child = spawn('ip', ['netns', 'exec', CLIENT.name, process.execPath, '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: string[] = [];
  child.stdout!.on('data', (d: Buffer) => out.push(...d.toString().split('\n').filter(Boolean)));
  return { child, out };
}

async function until(what: string, check: () => boolean, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`no ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** `ipvsadm -Ln` (the real one): the virtual server's line and its real servers' lines. */
function listed(vip: string): string[] {
  const out = run('ipvsadm', ['-Ln']).split('\n');
  const at = out.findIndex((l) => l.startsWith(`TCP  ${vip}:80 `));
  if (at < 0) return [];
  const end = out.findIndex((l, i) => i > at && !l.startsWith('  ->'));
  return out.slice(at, end < 0 ? undefined : end).map((l) => l.trim().replace(/\s+/g, ' '));
}
/** The drained pod's real server line: "-> 10.244.3.2:8080 Masq <weight> <active> <inactive>". */
const drainedLine = (vip: string) => listed(vip).find((l) => l.startsWith(`-> ${DRAINED.ip}:8080 `));

describe('scheduler flags (daemon, real kernel, real traffic)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-sf-'));
  const api = new ApiClient(`http://127.0.0.1:${API_PORT}`);
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;
  const children: ChildProcess[] = [];
  let holder: { child: ChildProcess; out: string[] };

  beforeAll(async () => {
    for (const p of [...PODS, CLIENT]) makePod(p.name, p.ip, p.gw);
    for (const p of PODS) children.push(await startEchoServer(p.name, p.name, p.ip, 8080));
    apiserver = await startFixtureApiServer(dir, API_PORT, FIXTURES);
    const cfg = path.join(dir, 'config.conf');
    fs.writeFileSync(
      cfg,
      e2eProxyConfig({
        dir,
        node: NODE,
        ipvs: ['scheduler: mh', 'schedulerFlags: [mh-fallback, mh-port]', 'syncPeriod: 10m'],
        healthz: '127.0.0.1:10266',
        metrics: '127.0.0.1:10259',
      }),
    );
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
    await daemon.waitFor(isSync, 'the first sync');
  });

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    for (const c of children) c.kill('SIGKILL');
    for (const p of [...PODS, CLIENT]) deletePod(p.name);
    tryRun('ipvsadm', ['-C']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('ipvsadm -Ln shows each virtual server with its flags as ipvsadm names them', () => {
    expect(listed(FALLBACK)[0]).toBe(`TCP ${FALLBACK}:80 mh (mh-fallback,mh-port)`);
    expect(listed(PLAIN)[0]).toBe(`TCP ${PLAIN}:80 mh (mh-port)`);
    expect(run('ipvsadm', ['-Sn'])).toContain(`-A -t ${FALLBACK}:80 -s mh -b mh-fallback,mh-port`);
  });

  it("the Service's flag its scheduler lacks: a log line and a Warning Event", async () => {
    const line = daemon.lines.find(
      (l) => typeof l.message === 'string' && l.message.includes("kube-ipvs.io/scheduler-flags] 'sh-port'"),
    );
    expect(line?.message).toContain("a flag of the sh scheduler, and this Service's scheduler is mh");
    const found = await eventually(
      "the Service's Event",
      async () =>
        ((await api.get('/api/v1/namespaces/default/events')) as { items: Obj[] }).items.filter(
          (e) => (e.involvedObject as Obj).name === 'plain',
        ),
      (events) => events.length > 0,
      60_000,
    );
    expect(found).toEqual([
      expect.objectContaining({
        type: 'Warning',
        reason: 'InvalidField',
        message: expect.stringContaining("'sh-port': a flag of the sh scheduler"),
      }),
    ]);
  });

  it('before the drain: every new connection is served, by every pod (mh-port spreads one client)', () => {
    for (const vip of [PLAIN, FALLBACK]) {
      const r = round(vip, N);
      console.log(`before the drain, ${vip}: ${JSON.stringify(r)}`);
      expect({ vip, outcomes: r.outcomes }).toEqual({ vip, outcomes: { ok: N } });
      expect({ vip, pods: Object.keys(r.pods).sort() }).toEqual({ vip, pods: PODS.map((p) => p.name) });
    }
  });

  it('a terminating endpoint drains at weight 0: without mh-fallback new connections hashed to it are refused, with it none fail', async () => {
    holder = holdDrainedPod([PLAIN, FALLBACK]);
    children.push(holder.child);
    await until(
      'connection held on the drained pod',
      () => holder.out.filter((l) => l.startsWith('held ')).length === 2,
    );
    const from = daemon.lines.length;
    for (const svc of ['plain', 'fallback'])
      await api.replace(`/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/${svc}-1`, slice(svc, true));
    await daemon.waitFor(
      (l) => isSync(l) && [PLAIN, FALLBACK].every((vip) => drainedLine(vip)?.split(' ')[3] === '0'),
      'the drain',
      from,
    );

    const withFallback = round(FALLBACK, N);
    const without = round(PLAIN, N);
    console.log(`draining ${DRAINED.ip}: mh-port alone ${JSON.stringify(without)}`);
    console.log(`draining ${DRAINED.ip}: mh-fallback,mh-port ${JSON.stringify(withFallback)}`);
    // still there at weight 0 after both rounds (the held connections): every connection
    // above met the draining real server
    for (const vip of [PLAIN, FALLBACK]) expect({ vip, rs: drainedLine(vip)?.split(' ')[3] }).toEqual({ vip, rs: '0' });

    expect(withFallback.outcomes).toEqual({ ok: N });
    expect(withFallback.pods[DRAINED.name]).toBeUndefined();
    // without mh-fallback, what the kernel does with a new connection mh hashes to the weight-0
    // server: no destination (ip_vs_mh), ICMP port unreachable (ip_vs_leave): ECONNREFUSED
    expect(without.outcomes.refused).toBeGreaterThan(0);
    expect(Object.keys(without.outcomes).sort()).toEqual(['ok', 'refused']);
    expect(without.pods[DRAINED.name]).toBeUndefined();
    // the connections open on the drained pod still answer
    const answered = holder.out.length;
    await until('an answer on each held connection', () =>
      [PLAIN, FALLBACK].every((vip) => holder.out.slice(answered).includes(`answer ${vip} ${DRAINED.name}`)),
    );
  });

  it('mh-fallback given live is one SET_SERVICE: the draining real server and the held connection stay, no new connection fails', async () => {
    const from = daemon.lines.length;
    await api.replace('/api/v1/namespaces/default/services/plain', plain('mh-fallback,mh-port'));
    const sync = await daemon.waitFor(
      (l) => isSync(l) && listed(PLAIN)[0] === `TCP ${PLAIN}:80 mh (mh-fallback,mh-port)`,
      'the flags change',
      from,
    );
    expect(sync.ipvsWrites).toBe(1);
    // the same real server, weight 0, its held connection still counted active (a delete and
    // add of the virtual server would have lost it)
    const after = drainedLine(PLAIN);
    console.log(`drained real server after the flags change: ${after}`);
    expect(after?.split(' ')[3]).toBe('0');
    expect(Number(after?.split(' ')[4])).toBeGreaterThan(0);
    const answered = holder.out.length;
    await until('an answer on the held connection', () =>
      holder.out.slice(answered).includes(`answer ${PLAIN} ${DRAINED.name}`),
    );
    expect(holder.out.filter((l) => /^(error|closed) /.test(l))).toEqual([]);
    const r = round(PLAIN, N);
    console.log(`after mh-fallback live, ${PLAIN}: ${JSON.stringify(r)}`);
    expect(r.outcomes).toEqual({ ok: N });
  });
});
