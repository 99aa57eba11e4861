// The ownership record under a crash at every step of a sync (issue 39 item 3), inside the VM:
// the real daemon, the real kernel, killed by SIGKILL just before each ordered kernel write of
// its first sync after a change (KUBE_IPVS_FAULT_KILL_AT=N, lib/proxier/fault-points.ts), then
// started again. Whatever step it died at, the restart must take back every virtual server it
// made (none refused as foreign, its own NodePort not stranded) and converge: the record is
// written before a create and forgotten after a delete, so it is always true of the kernel.
//
// The change: Service a (ClusterIP + NodePort) goes from rr to wlc (an edit), b is deleted, c is
// new. This node: 192.0.2.1/24 on a dummy link `node0` (its one NodePort address).
// One fake API server serves the whole test, its objects changed through its API. Only the first
// round starts from a clean node; each later one starts from the node the previous round's
// restarted daemon leaves once the change is undone and it converges back, which must be the
// first round's node exactly (testkit/node-snapshot.ts): a daemon start fewer per round, and the
// undo is a convergence the test checks too.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ApiClient,
  e2eProxyConfig,
  KUBE_IPVS_BIN,
  LoggedProcess,
  LogLine,
  startFixtureApiServer,
  startKubeIpvs,
} from '../../testkit/processes';
import { ip, run, tryRun } from '../../testkit/netns';
import { makeEndpointSlice, makeNode, makeService, svcPort } from '../../testkit/builders';
import { differences, snapshot } from '../../testkit/node-snapshot';
import { eventually } from '../../testkit/wait-for';

const API_PORT = 16447;
const NODE = 'node-a';

// the builders' objects (testkit/builders.ts), with the kind the fixture API server serves them as
const node = {
  apiVersion: 'v1',
  kind: 'Node',
  ...makeNode(NODE, (n) => {
    n.metadata!.labels = { 'kubernetes.io/hostname': NODE };
    n.spec = { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] };
    n.status = { addresses: [{ type: 'InternalIP', address: '192.0.2.1' }] };
  }),
};
function service(name: string, clusterIP: string, nodePort?: number, scheduler?: string) {
  const svc = makeService('default', name, (s) => {
    if (scheduler) s.metadata!.annotations = { 'kube-ipvs.io/scheduler': scheduler };
    s.spec = {
      type: nodePort ? 'NodePort' : 'ClusterIP',
      ipFamilies: ['IPv4'],
      clusterIP,
      clusterIPs: [clusterIP],
      ports: [svcPort('p', 80, 'TCP', nodePort)],
    };
  });
  return { apiVersion: 'v1', kind: 'Service', ...svc };
}
function slice(svc: string, pod: string) {
  const sl = makeEndpointSlice('default', svc, `${svc}-1`, (e) => {
    e.ports = [{ name: 'p', port: 8080, protocol: 'TCP' }];
    e.endpoints = [
      { addresses: [pod], conditions: { ready: true, serving: true, terminating: false }, nodeName: 'node-b' },
    ];
  });
  return { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', ...sl };
}
const BEFORE = [
  node,
  service('a', '10.96.0.80', 30480),
  slice('a', '10.244.8.80'),
  service('b', '10.96.0.81'),
  slice('b', '10.244.8.81'),
];
const SERVICES = '/api/v1/namespaces/default/services';
const SLICES = '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices';
/** BEFORE -> AFTER through the API (and back): a's scheduler annotation, b deleted, c created */
async function change(api: ApiClient, to: 'after' | 'before'): Promise<void> {
  const after = to === 'after';
  await api.patch(`${SERVICES}/a`, {
    metadata: { annotations: after ? { 'kube-ipvs.io/scheduler': 'wlc' } : null },
  });
  const [gone, made] = after ? ['b', 'c'] : ['c', 'b'];
  const ip = { b: '81', c: '82' }[made];
  await api.delete(`${SLICES}/${gone}-1`);
  await api.delete(`${SERVICES}/${gone}`);
  await api.create(SERVICES, service(made, `10.96.0.${ip}`));
  await api.create(SLICES, slice(made, `10.244.8.${ip}`));
}
const WANT_IPVS = [
  '-A -t 10.96.0.80:80 -s wlc',
  '-a -t 10.96.0.80:80 -r 10.244.8.80:8080 -m -w 1',
  '-A -t 10.96.0.82:80 -s rr',
  '-a -t 10.96.0.82:80 -r 10.244.8.82:8080 -m -w 1',
  '-A -t 192.0.2.1:30480 -s wlc',
  '-a -t 192.0.2.1:30480 -r 10.244.8.80:8080 -m -w 1',
].sort();
const WANT_RECORD = [
  'add KUBE-IPVS-OWNED 10.96.0.80,tcp:80 comment "wlc/0x0000/0"',
  'add KUBE-IPVS-OWNED 10.96.0.82,tcp:80 comment "rr/0x0000/0"',
  'add KUBE-IPVS-OWNED 192.0.2.1,tcp:30480 comment "wlc/0x0000/0"',
];

const ipvsRules = () => run('ipvsadm', ['-Sn']).split('\n').filter(Boolean).sort();
const recordLines = () =>
  run('ipset', ['save'])
    .split('\n')
    .filter((l) => l.startsWith('add KUBE-IPVS-OWNED '))
    .sort();
const isFullSync = (l: LogLine) => l.message === 'sync done' && l.full === true;

describe('a SIGKILL at every step of a sync: the record stays true of the kernel (issue 39 item 3)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-crash-'));
  const cfg = path.join(dir, 'config.conf');
  let apiserver: LoggedProcess | undefined;
  /** every daemon started: a failed expectation must not leave one running */
  const daemons: LoggedProcess[] = [];
  const daemon = (env: NodeJS.ProcessEnv = {}) => {
    const d = startKubeIpvs(['--config', cfg, '--v=2'], env);
    daemons.push(d);
    return d;
  };

  async function untilFullSync(d: LoggedProcess, what: string): Promise<void> {
    await d.waitFor(isFullSync, what, 0, 300_000);
  }

  beforeAll(() => {
    ip('link', 'add', 'node0', 'type', 'dummy');
    ip('addr', 'add', '192.0.2.1/24', 'dev', 'node0');
    ip('link', 'set', 'node0', 'up');
    fs.writeFileSync(cfg, e2eProxyConfig({ dir, node: NODE, ipvs: ['syncPeriod: 30s'] }));
  });
  afterAll(async () => {
    for (const d of daemons) await d.kill('SIGKILL');
    await apiserver?.kill('SIGTERM');
    tryRun(process.execPath, [KUBE_IPVS_BIN, 'cleanup'], undefined, 180_000);
    tryRun('ip', ['link', 'del', 'node0']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('killed before each write in turn, then started again: its own table back, nothing refused, the record exact', async () => {
    const crashes: string[] = [];
    expect(tryRun(process.execPath, [KUBE_IPVS_BIN, 'cleanup'], undefined, 180_000).status).toBe(0);
    apiserver = await startFixtureApiServer(dir, API_PORT, BEFORE);
    const api = new ApiClient(`http://127.0.0.1:${API_PORT}`);
    let running = daemon();
    await untilFullSync(running, 'the first run');
    const fresh = snapshot('');
    for (let k = 1; k <= 8; k++) {
      if (k > 1) {
        // the last round's daemon, the change undone: back to the first round's node
        await change(api, 'before');
        await eventually(
          `the node as the first run left it, before round ${k}`,
          () => differences(fresh, snapshot('')),
          (d) => d.length === 0,
          300_000,
        );
      }
      await running.kill('SIGTERM');

      await change(api, 'after');
      const faulty = daemon({ KUBE_IPVS_FAULT_KILL_AT: String(k) });
      // (the wait for a full sync fails when the process dies first)
      const died = await faulty.waitFor(isFullSync, 'a full sync', 0, 300_000).then(
        () => false,
        () => true,
      );
      if (!died) {
        // past the last write: the change went through without a crash
        await faulty.kill('SIGTERM');
        expect(ipvsRules()).toEqual(WANT_IPVS);
        break;
      }
      const said = faulty.text.find((l) => l.startsWith(`KUBE_IPVS_FAULT_KILL_AT=${k}: killed before `));
      expect(said).toBeDefined();
      crashes.push(said!.slice(said!.indexOf('killed before ')));
      const rules = ipvsRules();
      const record = recordLines();
      // what the kernel holds at the crash, as the record says it: never a virtual server of
      // c that the record does not name, never a member of b forgotten while b is there
      if (rules.includes('-A -t 10.96.0.82:80 -s rr')) expect(record.join('\n')).toContain('10.96.0.82,tcp:80');
      if (rules.includes('-A -t 10.96.0.81:80 -s rr')) expect(record.join('\n')).toContain('10.96.0.81,tcp:80');

      running = daemon();
      await untilFullSync(running, `the restart after crash ${k}`);
      const refused = running.lines.map((l) => String(l.message)).filter((m) => m.includes("not kube-ipvs's"));
      expect({ k, refused }).toEqual({ k, refused: [] });
      expect({ k, rules: ipvsRules() }).toEqual({ k, rules: WANT_IPVS });
      expect({ k, record: recordLines() }).toEqual({ k, record: WANT_RECORD });
    }
    // the record before the IPVS ops, the ops, the record after them (b forgotten, a narrowed)
    expect(crashes).toEqual([
      'killed before ownership record',
      'killed before IPVS ops',
      'killed before ownership record',
    ]);
  }, 1_800_000);
});
