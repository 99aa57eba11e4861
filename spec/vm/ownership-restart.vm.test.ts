// Ownership across a restart of the real daemon (issue 25 item 1; issue 39 item 1: the record
// destroyed), inside the VM: keepalived's
// virtual servers are programmed with ipvsadm first, a tenant Service gets nodePort 30443 (their
// port), the daemon runs, is stopped (SIGTERM) and started again over the same kernel; the
// foreign virtual servers' `ipvsadm -Sn` lines must come out byte-identical through both runs.
// Before the fix the restart deleted one (198.51.100.100:30443: its port was in the port-only
// KUBE-NODE-PORT-TCP) and took over the other (192.0.2.1:30443, the node IP). The same over the
// fakes: spec/proxier/ownership-restart.test.ts.
//
// This node: 192.0.2.1/24 on a dummy link `node0` (nodePortAddresses 192.0.2.0/24: its one
// NodePort address). keepalived: TCP 198.51.100.100:30443 (its VIP not local) and TCP
// 192.0.2.1:30443 (on the node IP), each with a live real server and a backup at weight 0.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  e2eProxyConfig,
  KUBE_IPVS_BIN,
  LoggedProcess,
  LogLine,
  startFixtureApiServer,
  startKubeIpvs,
} from '../../testkit/processes';
import { ip, run, tryRun } from '../../testkit/netns';

const API_PORT = 16445;
const NODE = 'node-a';
const SYNC_PERIOD = '5s';
const FOREIGN_VIPS = ['198.51.100.100:30443', '192.0.2.1:30443'];

type Obj = Record<string, unknown>;
const meta = (namespace: string, name: string, extra: Obj = {}) => ({
  namespace,
  name,
  uid: `uid-${namespace}-${name}`,
  ...extra,
});

const node: Obj = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE, uid: 'uid-node-a', labels: { 'kubernetes.io/hostname': NODE } },
  spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
  status: { addresses: [{ type: 'InternalIP', address: '192.0.2.1' }] },
};
const tenant: Obj = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: meta('aaa', 'np'),
  spec: {
    type: 'NodePort',
    sessionAffinity: 'None',
    ipFamilies: ['IPv4'],
    clusterIP: '10.96.0.70',
    clusterIPs: ['10.96.0.70'],
    ports: [{ name: 'p', port: 443, protocol: 'TCP', nodePort: 30443 }],
  },
  status: { loadBalancer: {} },
};
const tenantSlice: Obj = {
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: meta('aaa', 'np-1', {
    labels: {
      'kubernetes.io/service-name': 'np',
      'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
    },
  }),
  addressType: 'IPv4',
  ports: [{ name: 'p', port: 8443, protocol: 'TCP' }],
  endpoints: [
    { addresses: ['10.244.7.70'], conditions: { ready: true, serving: true, terminating: false }, nodeName: 'node-b' },
  ],
};

function ipvsRules(): string[] {
  return run('ipvsadm', ['-Sn']).split('\n').filter(Boolean).sort();
}
function foreignLines(): string[] {
  return ipvsRules().filter((l) => FOREIGN_VIPS.some((v) => l.includes(` ${v} `)));
}
/** `ipset save` add lines of one set. */
function setLines(name: string): string[] {
  return run('ipset', ['save'])
    .split('\n')
    .filter((l) => l.startsWith(`add ${name} `))
    .sort();
}
const isSync = (l: LogLine) => l.message === 'sync done';

describe('keepalived across a restart of the real daemon (issue 25 item 1)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-restart-'));
  const cfg = path.join(dir, 'config.conf');
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;
  let before: string[];

  async function fullSyncs(n: number): Promise<void> {
    await daemon.waitFor(isSync, 'the first sync', 0, 300_000);
    for (let i = 0; i < n; i++)
      await daemon.waitFor(
        (l) => isSync(l) && l.full === true,
        `full sync ${i + 1} of ${n}`,
        daemon.lines.length,
        240_000,
      );
  }

  beforeAll(async () => {
    ip('link', 'add', 'node0', 'type', 'dummy');
    ip('addr', 'add', '192.0.2.1/24', 'dev', 'node0');
    ip('link', 'set', 'node0', 'up');
    for (const vip of FOREIGN_VIPS) {
      run('ipvsadm', ['-A', '-t', vip, '-s', 'wlc']);
      run('ipvsadm', ['-a', '-t', vip, '-r', '192.0.2.50:30443', '-m', '-w', '1']);
      run('ipvsadm', ['-a', '-t', vip, '-r', '192.0.2.51:30443', '-m', '-w', '0']);
    }
    before = foreignLines();
    apiserver = await startFixtureApiServer(dir, API_PORT, [node, tenant, tenantSlice]);
    fs.writeFileSync(
      cfg,
      e2eProxyConfig({
        dir,
        node: NODE,
        ipvs: [`syncPeriod: ${SYNC_PERIOD}`],
        healthz: '127.0.0.1:10357',
        metrics: '127.0.0.1:10359',
      }),
    );
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
  }, 300_000);

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    tryRun('ipvsadm', ['-C']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the first run: keepalived left alone; the tenant on its ClusterIP; its port in KUBE-NODE-PORT-TCP; the record names what was programmed', async () => {
    expect(before).toHaveLength(6);
    await fullSyncs(2);
    expect(foreignLines()).toEqual(before);
    expect(ipvsRules()).toEqual(
      expect.arrayContaining(['-A -t 10.96.0.70:443 -s rr', '-a -t 10.96.0.70:443 -r 10.244.7.70:8443 -m -w 1']),
    );
    expect(setLines('KUBE-NODE-PORT-TCP')).toEqual(['add KUBE-NODE-PORT-TCP 30443']);
    // 192.0.2.1:30443 was refused as foreign: not in the record
    expect(setLines('KUBE-IPVS-OWNED')).toEqual(['add KUBE-IPVS-OWNED 10.96.0.70,tcp:443 comment "rr/0x0000/0"']);
    expect(
      daemon.lines
        .map((l) => String(l.message))
        .filter((m) => m.includes('aaa/np') && m.includes('TCP/192.0.2.1:30443') && m.includes("not kube-ipvs's")),
    ).toHaveLength(1);
  }, 600_000);

  it('after a restart of the daemon: both keepalived virtual servers byte-identical, over more full syncs', async () => {
    expect(await daemon.kill('SIGTERM')).not.toBeNull();
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
    await fullSyncs(3);
    expect(foreignLines()).toEqual(before);
    expect(ipvsRules().filter((l) => l.includes('10.244.7.70'))).toEqual([
      '-a -t 10.96.0.70:443 -r 10.244.7.70:8443 -m -w 1',
    ]);
    const msgs = daemon.lines.map((l) => String(l.message));
    // the adoption read found both foreign, by the record
    expect(
      msgs.filter(
        (m) =>
          m.startsWith("virtual server TCP 198.51.100.100:30443 is not kube-ipvs's") && m.includes('KUBE-IPVS-OWNED'),
      ),
    ).toHaveLength(1);
    expect(
      msgs.filter(
        (m) => m.startsWith("virtual server TCP 192.0.2.1:30443 is not kube-ipvs's") && m.includes('KUBE-IPVS-OWNED'),
      ),
    ).toHaveLength(1);
  }, 600_000);

  it("the record destroyed, kube-proxy's sets left (issue 39 item 1): keepalived's 192.0.2.1:30443 is still not taken, though KUBE-NODE-PORT-TCP holds 30443", async () => {
    expect(await daemon.kill('SIGTERM')).not.toBeNull();
    run('ipset', ['destroy', 'KUBE-IPVS-OWNED']);
    tryRun('ipset', ['destroy', 'KUBE-6-IPVS-OWNED']);
    expect(setLines('KUBE-NODE-PORT-TCP')).toEqual(['add KUBE-NODE-PORT-TCP 30443']);
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
    await fullSyncs(1);
    expect(foreignLines()).toEqual(before);
    const msgs = daemon.lines.map((l) => String(l.message));
    expect(
      msgs.filter(
        (m) =>
          m.startsWith("virtual server TCP 192.0.2.1:30443 is not kube-ipvs's") &&
          m.includes('no ownership record') &&
          m.includes('is an endpoint of the Service claiming it'),
      ),
    ).toHaveLength(1);
    // its own ClusterIP (an address the API server allocated) is adopted, and recorded again
    expect(msgs.filter((m) => m.includes('10.96.0.70:443') && m.includes("not kube-ipvs's"))).toEqual([]);
    expect(setLines('KUBE-IPVS-OWNED')).toEqual(['add KUBE-IPVS-OWNED 10.96.0.70,tcp:443 comment "rr/0x0000/0"']);
  }, 600_000);

  it('`kube-ipvs cleanup` destroys the record with the KUBE-* sets', async () => {
    await daemon.kill('SIGTERM');
    const r = tryRun(process.execPath, [KUBE_IPVS_BIN, 'cleanup'], undefined, 180_000);
    expect(r.status).toBe(0);
    expect(
      run('ipset', ['list', '-n'])
        .split('\n')
        .filter((n) => n.startsWith('KUBE-')),
    ).toEqual([]);
  }, 300_000);

  it("no KUBE-* set at all, the VIP bound on kube-ipvs0 (issue 25 item 2): the tenant's virtual server is adopted, not refused; keepalived still untouched", async () => {
    // what kube-proxy leaves when its sets are gone: the ClusterIP's virtual server and its
    // address on kube-ipvs0 (cleanup above removed the sets, kube-ipvs0 and what they named)
    expect(
      run('ipset', ['list', '-n'])
        .split('\n')
        .filter((n) => n.startsWith('KUBE-')),
    ).toEqual([]);
    ip('link', 'add', 'kube-ipvs0', 'type', 'dummy');
    ip('addr', 'add', '10.96.0.70/32', 'dev', 'kube-ipvs0');
    run('ipvsadm', ['-A', '-t', '10.96.0.70:443', '-s', 'rr']);
    run('ipvsadm', ['-a', '-t', '10.96.0.70:443', '-r', '10.244.7.70:8443', '-m', '-w', '1']);
    daemon = startKubeIpvs(['--config', cfg, '--v=2']);
    await fullSyncs(1);
    const msgs = daemon.lines.map((l) => String(l.message));
    expect(msgs.filter((m) => m.includes('10.96.0.70:443') && m.includes("not kube-ipvs's"))).toEqual([]);
    expect(ipvsRules().filter((l) => l.includes('10.96.0.70:443'))).toEqual([
      '-A -t 10.96.0.70:443 -s rr',
      '-a -t 10.96.0.70:443 -r 10.244.7.70:8443 -m -w 1',
    ]);
    expect(run('ip', ['-o', '-4', 'addr', 'show', 'dev', 'kube-ipvs0'])).toContain('10.96.0.70/32');
    // keepalived's addresses are not on kube-ipvs0: still foreign, still byte-identical
    expect(foreignLines()).toEqual(before);
    // and the record now names the adopted frontend
    expect(setLines('KUBE-IPVS-OWNED')).toEqual(['add KUBE-IPVS-OWNED 10.96.0.70,tcp:443 comment "rr/0x0000/0"']);
  }, 600_000);
});
