// Never touch what is not ours (issue 18 items 1, 3, 4), end to end inside the VM: foreign
// IPVS state is programmed with ipvsadm first, then the real daemon (`kube-ipvs --config`,
// the fake API server as another process) runs several full syncs and drain checks with
// tenant Services aimed at that state, and after their deletion; the foreign virtual servers'
// `ipvsadm -Sn` lines must come out byte-identical. (The same over the fakes, with the op
// lists: spec/proxier/foreign-state.test.ts.)
//
// Foreign state: a keepalived-like virtual server TCP 192.0.2.100:443 on this backup node (its
// VIP not local; one real server at weight 0, inhibit_on_failure), and TCP 203.0.113.200:80
// inside ipvs.excludeCIDRs 203.0.113.128/25 (one real server at weight 0 too).
// Tenants (namespace aaa): `tenant` has externalIPs 203.0.113.200 (the excluded VS) and
// 203.0.113.201 (excluded, no VS); `near` has externalIP 192.0.2.100 on another port (so the
// daemon binds 192.0.2.100 on kube-ipvs0); `take` has externalIP 192.0.2.100 on port 443,
// the keepalived-like virtual server's exact ip:port (foreign when first seen: refused, no
// ipset entry names it); `grab` has externalIP 10.96.0.10, kube-dns's ClusterIP, UDP 53.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ApiClient,
  e2eProxyConfig,
  LoggedProcess,
  LogLine,
  startFixtureApiServer,
  startKubeIpvs,
} from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';

const API_PORT = 16444;
const NODE = 'node-a';
const EXCLUDED = '203.0.113.128/25';
/** full syncs every 5 s; the drain check looks at a weight-0 real server 15 s after it is found */
const SYNC_PERIOD = '5s';
const FOREIGN_VIPS = ['192.0.2.100:443', '203.0.113.200:80'];

type Obj = Record<string, unknown>;
const meta = (namespace: string, name: string, extra: Obj = {}) => ({
  namespace,
  name,
  uid: `uid-${namespace}-${name}`,
  ...extra,
});

function service(ns: string, name: string, spec: Obj): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: meta(ns, name),
    spec: { type: 'ClusterIP', sessionAffinity: 'None', ipFamilies: ['IPv4'], ...spec, clusterIPs: [spec.clusterIP] },
    status: { loadBalancer: {} },
  };
}
function slice(ns: string, svc: string, port: number, protocol: string, ...ips: string[]): Obj {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: meta(ns, `${svc}-1`, {
      labels: {
        'kubernetes.io/service-name': svc,
        'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io',
      },
    }),
    addressType: 'IPv4',
    ports: [{ name: 'p', port, protocol }],
    endpoints: ips.map((ip) => ({
      addresses: [ip],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: 'node-b',
    })),
  };
}

const node: Obj = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: NODE, uid: 'uid-node-a', labels: { 'kubernetes.io/hostname': NODE } },
  spec: { podCIDR: '10.244.0.0/24', podCIDRs: ['10.244.0.0/24'] },
  status: { addresses: [{ type: 'InternalIP', address: '192.0.2.1' }] },
};
const dns = service('kube-system', 'kube-dns', {
  clusterIP: '10.96.0.10',
  ports: [{ name: 'p', port: 53, protocol: 'UDP' }],
});
const dnsSlice = slice('kube-system', 'kube-dns', 53, 'UDP', '10.244.1.53');
const tenant = service('aaa', 'tenant', {
  clusterIP: '10.96.0.20',
  externalIPs: ['203.0.113.200', '203.0.113.201'],
  ports: [{ name: 'p', port: 80, protocol: 'TCP' }],
});
const tenantSlice = slice('aaa', 'tenant', 8080, 'TCP', '10.244.7.7');
const near = service('aaa', 'near', {
  clusterIP: '10.96.0.21',
  externalIPs: ['192.0.2.100'],
  ports: [{ name: 'p', port: 8443, protocol: 'TCP' }],
});
const nearSlice = slice('aaa', 'near', 8443, 'TCP', '10.244.7.8');
const take = service('aaa', 'take', {
  clusterIP: '10.96.0.22',
  externalIPs: ['192.0.2.100'],
  ports: [{ name: 'p', port: 443, protocol: 'TCP' }],
});
const takeSlice = slice('aaa', 'take', 8443, 'TCP', '10.244.7.9');
const grab = service('aaa', 'grab', {
  clusterIP: '10.96.0.30',
  externalIPs: ['10.96.0.10'],
  ports: [{ name: 'p', port: 53, protocol: 'UDP' }],
});
const grabSlice = slice('aaa', 'grab', 5353, 'UDP', '10.244.9.9');
const TENANTS: [string, string][] = [
  ['aaa', 'tenant'],
  ['aaa', 'near'],
  ['aaa', 'take'],
  ['aaa', 'grab'],
];

/** `ipvsadm -Sn` lines, sorted (the kernel's hash order is not stable). */
function ipvsRules(): string[] {
  return run('ipvsadm', ['-Sn']).split('\n').filter(Boolean).sort();
}
/** The lines of the foreign virtual servers and their real servers. */
function foreignLines(): string[] {
  return ipvsRules().filter((l) => FOREIGN_VIPS.some((v) => l.includes(` ${v} `)));
}
/** `ipset save` add lines naming this member. */
/** The `add` lines naming `member`, sorted: `ipset save` lists sets in the kernel's index order,
 * which follows creation and reuse order, not anything kube-ipvs promises. */
function setLines(member: string): string[] {
  return run('ipset', ['save'])
    .split('\n')
    .filter((l) => l.startsWith('add ') && l.includes(` ${member}`))
    .sort();
}
function boundAddresses(): string[] {
  const out = tryRun('ip', ['-o', '-4', 'addr', 'show', 'dev', 'kube-ipvs0']).stdout;
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(/\s+/)[3]!.split('/')[0]!)
    .sort();
}

const isSync = (l: LogLine) => l.message === 'sync done';
const messages = (p: LoggedProcess, from = 0) => p.lines.slice(from).map((l) => String(l.message));

describe('foreign IPVS state under the real daemon (issue 18)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-foreign-'));
  const api = new ApiClient(`http://127.0.0.1:${API_PORT}`);
  let apiserver: LoggedProcess;
  let daemon: LoggedProcess;
  let before: string[];

  /** Waits for `n` more full syncs and at least `ms` of wall time (drain checks fall due in it). */
  async function fullSyncs(n: number, ms: number): Promise<void> {
    const until = Date.now() + ms;
    for (let i = 0; i < n; i++)
      await daemon.waitFor(
        (l) => isSync(l) && l.full === true,
        `full sync ${i + 1} of ${n}`,
        daemon.lines.length,
        240_000,
      );
    while (Date.now() < until)
      await daemon.waitFor((l) => isSync(l) && l.full === true, 'a full sync', daemon.lines.length, 240_000);
  }

  beforeAll(async () => {
    // the admin's and keepalived's state, before kube-ipvs starts
    run('ipvsadm', ['-A', '-t', '192.0.2.100:443', '-s', 'wlc']);
    run('ipvsadm', ['-a', '-t', '192.0.2.100:443', '-r', '192.0.2.50:443', '-g', '-w', '1']);
    run('ipvsadm', ['-a', '-t', '192.0.2.100:443', '-r', '192.0.2.51:443', '-g', '-w', '0']);
    run('ipvsadm', ['-A', '-t', '203.0.113.200:80', '-s', 'wlc']);
    run('ipvsadm', ['-a', '-t', '203.0.113.200:80', '-r', '198.51.100.7:80', '-m', '-w', '1']);
    run('ipvsadm', ['-a', '-t', '203.0.113.200:80', '-r', '198.51.100.8:80', '-m', '-w', '0']);
    before = foreignLines();
    apiserver = await startFixtureApiServer(dir, API_PORT, [
      node,
      dns,
      dnsSlice,
      tenant,
      tenantSlice,
      near,
      nearSlice,
      take,
      takeSlice,
      grab,
      grabSlice,
    ]);
    const cfg = path.join(dir, 'config.conf');
    fs.writeFileSync(
      cfg,
      e2eProxyConfig({
        dir,
        node: NODE,
        ipvs: [`syncPeriod: ${SYNC_PERIOD}`, `excludeCIDRs: [${EXCLUDED}]`],
        healthz: '127.0.0.1:10356',
        metrics: '127.0.0.1:10349',
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

  it('the foreign state is as it was after the setup (6 lines)', () => {
    expect(before).toEqual([
      '-A -t 192.0.2.100:443 -s wlc',
      '-A -t 203.0.113.200:80 -s wlc',
      '-a -t 192.0.2.100:443 -r 192.0.2.50:443 -g -w 1',
      '-a -t 192.0.2.100:443 -r 192.0.2.51:443 -g -w 0',
      '-a -t 203.0.113.200:80 -r 198.51.100.7:80 -m -w 1',
      '-a -t 203.0.113.200:80 -r 198.51.100.8:80 -m -w 0',
    ]);
  });

  it('with tenant Services aimed at it, over full syncs and drain checks: byte-identical; refusals logged; the loser told', async () => {
    await daemon.waitFor(isSync, 'the first sync', 0, 300_000);
    // a drain check looks 15 s after a drain is found: 20 s covers it
    await fullSyncs(3, 20_000);
    expect(foreignLines()).toEqual(before);
    const rules = ipvsRules();
    // what is ours is programmed: the tenants' ClusterIPs, near's externalIP on its own port, kube-dns
    expect(rules).toEqual(
      expect.arrayContaining([
        '-A -t 10.96.0.20:80 -s rr',
        '-a -t 10.96.0.20:80 -r 10.244.7.7:8080 -m -w 1',
        '-A -t 192.0.2.100:8443 -s rr',
        '-a -t 192.0.2.100:8443 -r 10.244.7.8:8443 -m -w 1',
        '-A -u 10.96.0.10:53 -s rr',
        '-a -u 10.96.0.10:53 -r 10.244.1.53:53 -m -w 1',
      ]),
    );
    // nothing inside excludeCIDRs: no 203.0.113.201 virtual server, neither address bound
    expect(rules.filter((l) => l.includes('203.0.113.201'))).toEqual([]);
    expect(boundAddresses()).toEqual([
      '10.96.0.10',
      '10.96.0.20',
      '10.96.0.21',
      '10.96.0.22',
      '10.96.0.30',
      '192.0.2.100',
    ]);
    // take's ClusterIP is programmed; its externalIP, the keepalived-like virtual server's exact
    // ip:port, is in no set (near's, another port, is)
    expect(rules).toEqual(
      expect.arrayContaining(['-A -t 10.96.0.22:443 -s rr', '-a -t 10.96.0.22:443 -r 10.244.7.9:8443 -m -w 1']),
    );
    expect(rules.filter((l) => l.includes('10.244.7.9'))).toEqual(['-a -t 10.96.0.22:443 -r 10.244.7.9:8443 -m -w 1']);
    expect(setLines('192.0.2.100,tcp:443')).toEqual([]);
    // (and in kube-ipvs's own record of what it programmed, which the refused :443 is not in)
    expect(setLines('192.0.2.100,tcp:8443')).toEqual([
      'add KUBE-EXTERNAL-IP 192.0.2.100,tcp:8443',
      'add KUBE-IPVS-OWNED 192.0.2.100,tcp:8443 comment "rr/0x0000/0"',
    ]);
    // kube-dns keeps its ClusterIP: grab's endpoint is not on it
    expect(rules.filter((l) => l.includes('10.244.9.9'))).toEqual(['-a -u 10.96.0.30:53 -r 10.244.9.9:5353 -m -w 1']);

    const msgs = messages(daemon);
    expect(
      msgs.filter((m) => m.includes('aaa/tenant') && m.includes('203.0.113.200') && m.includes(EXCLUDED)),
    ).toHaveLength(1);
    expect(
      msgs.filter(
        (m) => m.includes('leaving virtual server TCP 192.0.2.100:443 alone') && m.includes('192.0.2.51:443'),
      ),
    ).toHaveLength(1);
    expect(
      msgs.filter(
        (m) => m.includes('Service aaa/grab') && m.includes('UDP/10.96.0.10:53') && m.includes('kube-system/kube-dns'),
      ),
    ).toHaveLength(1);
    expect(
      msgs.filter((m) => m.includes('aaa/take') && m.includes('TCP/192.0.2.100:443') && m.includes("not kube-ipvs's")),
    ).toHaveLength(1);
    type Events = { items: { involvedObject: { name: string }; reason: string; message: string }[] };
    const reasons = async () =>
      ((await api.get('/api/v1/namespaces/aaa/events')) as Events).items
        .map((e) => `${e.involvedObject.name} ${e.reason}`)
        .sort();
    const end = Date.now() + 60_000;
    while ((await reasons()).length < 4 && Date.now() < end) await new Promise((r) => setTimeout(r, 500));
    expect(await reasons()).toEqual([
      'grab VirtualServerConflict',
      'take ForeignVirtualServer',
      'tenant VIPInExcludedCIDR',
      'tenant VIPInExcludedCIDR',
    ]);
  }, 600_000);

  // the give-back: the frontend `take` was refused while keepalived's virtual server held it;
  // once its owner deletes it, a full sync hands it to the Service with no re-plan (the desired
  // index re-guards it), and it is kube-ipvs's from then on
  it('deleted by its owner: a later full sync gives TCP 192.0.2.100:443 to the Service that asked for it', async () => {
    const from = daemon.lines.length;
    run('ipvsadm', ['-D', '-t', '192.0.2.100:443']);
    await daemon.waitFor(
      (l) => String(l.message).includes('foreign virtual server') && String(l.message).includes('192.0.2.100'),
      'the gone foreign virtual server',
      from,
      240_000,
    );
    await daemon.waitFor((l) => isSync(l) && (l.ipvsWrites as number) > 0, 'the sync that programs it', from, 240_000);
    await fullSyncs(2, 0);
    expect(ipvsRules().filter((l) => l.includes(' 192.0.2.100:443 '))).toEqual([
      '-A -t 192.0.2.100:443 -s rr',
      '-a -t 192.0.2.100:443 -r 10.244.7.9:8443 -m -w 1',
    ]);
    expect(setLines('192.0.2.100,tcp:443')).toEqual([
      'add KUBE-EXTERNAL-IP 192.0.2.100,tcp:443',
      'add KUBE-IPVS-OWNED 192.0.2.100,tcp:443 comment "rr/0x0000/0"',
    ]);
    // the excluded one is still foreign, byte-identical
    expect(foreignLines().filter((l) => l.includes('203.0.113.200'))).toEqual(
      before.filter((l) => l.includes('203.0.113.200')),
    );
  }, 600_000);

  it('after the tenants are deleted, over more full syncs: the excluded one still byte-identical, the given one gone with its Service', async () => {
    for (const [ns, name] of TENANTS) {
      await api.delete(`/api/v1/namespaces/${ns}/services/${name}`);
      await api.delete(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices/${name}-1`);
    }
    const from = daemon.lines.length;
    await daemon.waitFor(
      (l) => isSync(l) && (l.ipvsWrites as number) > 0,
      'the sync that removes the tenants',
      from,
      240_000,
    );
    await fullSyncs(3, 20_000);
    expect(foreignLines()).toEqual(before.filter((l) => l.includes('203.0.113.200')));
    const rules = ipvsRules();
    expect(rules.filter((l) => /10\.96\.0\.(20|21|22|30)|192\.0\.2\.100:(8443|443)/.test(l))).toEqual([]);
    expect(setLines('192.0.2.100,tcp:443')).toEqual([]);
    expect(rules).toEqual(
      expect.arrayContaining(['-A -u 10.96.0.10:53 -s rr', '-a -u 10.96.0.10:53 -r 10.244.1.53:53 -m -w 1']),
    );
    expect(boundAddresses()).toEqual(['10.96.0.10']);
  }, 600_000);
});
