// Never touch what is not ours (issue 18, items 1, 3, 4), over the kernel fakes, the real
// trackers and planner, and a fake clock. The same against the real kernel and the daemon as
// a process: spec/vm/foreign-state.vm.test.ts.
//
// Addresses (testkit/builders.ts): ClusterIPs 10.96.0.0/12, pods 10.244.0.0/16, this node
// 192.0.2.1 on eth0. Foreign state: a keepalived-like virtual server on 192.0.2.1:443 (one
// backup real server at weight 0, inhibit_on_failure), and one inside ipvs.excludeCIDRs
// (203.0.113.128/25) at 203.0.113.200:80; tenant Services in namespace `aaa` aim at both.
import winston from 'winston';
import Transport from 'winston-transport';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { FakeLink } from '../../testkit/kernel/fake-link';
import { FakeIpset } from '../../testkit/kernel/fake-ipset';
import { KUBE_IPVS0 } from '../../lib/kernel/link/link';
import { ProxierSettings } from '../../lib/proxier/proxier';
import { ServiceHealthSink } from '../../lib/proxier/service-health';
import { FAKE_SETTINGS, proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { AF_INET, IPPROTO_TCP, IPPROTO_UDP } from '../../lib/uapi/inet';
import { formatServiceEntry } from '../../lib/cli/ipvsadm/format-list';
import { DEFAULT_FORMAT } from '../../lib/cli/ipvsadm/parse-args';
import { IpvsOp, VirtualServerEntry } from '../../lib/kernel/ipvs/ipvs';
import { RealServerSpec, VirtualServerId, virtualServerKey } from '../../lib/model/ipvs';

const EXCLUDED = '203.0.113.128/25';

/** `ipvsadm -Sn` lines of a table (services in key order, each followed by its real servers). */
function formatRestore(entries: readonly VirtualServerEntry[]): string[] {
  const fmt = { ...DEFAULT_FORMAT, rule: true, numeric: true };
  return [...entries]
    .sort((a, b) => (virtualServerKey(a.vs) < virtualServerKey(b.vs) ? -1 : 1))
    .flatMap((e) =>
      formatServiceEntry({ vs: e.vs, dests: [...e.dests].sort((x, y) => (x.address < y.address ? -1 : 1)) }, fmt)
        .split('\n')
        .filter(Boolean),
    );
}
/** The lines of the virtual servers at these addresses:ports (and their real servers). */
function linesOf(lines: readonly string[], ...vips: string[]): string[] {
  return lines.filter((l) => vips.some((v) => l.includes(` ${v} `)));
}

class Lines extends Transport {
  readonly lines: string[] = [];
  override log(info: { level: string; message: string }, next: () => void): void {
    this.lines.push(`${info.level} ${info.message}`);
    next();
  }
}

class RecordingSink implements ServiceHealthSink {
  feeds = 0;
  syncServices(): void {
    this.feeds++;
  }
  syncEndpoints(): void {}
}

const KEEPALIVED = { af: AF_INET, protocol: IPPROTO_TCP, address: '192.0.2.1', port: 443, fwmark: 0 } as const;
const INSIDE = { af: AF_INET, protocol: IPPROTO_TCP, address: '203.0.113.200', port: 80, fwmark: 0 } as const;
const rs = (address: string, port: number, weight: number): RealServerSpec => ({
  af: AF_INET,
  address,
  port,
  fwdMethod: 0,
  weight,
});

/** keepalived's virtual server (a backup at weight 0) and one inside excludeCIDRs, made by an admin */
async function programForeign(ipvs: FakeIpvs): Promise<void> {
  await ipvs.apply({ kind: 'newService', vs: { ...KEEPALIVED, scheduler: 'wlc' } });
  await ipvs.apply({ kind: 'newDest', vs: KEEPALIVED, rs: rs('192.0.2.50', 443, 1) });
  await ipvs.apply({ kind: 'newDest', vs: KEEPALIVED, rs: rs('192.0.2.51', 443, 0) });
  await ipvs.apply({ kind: 'newService', vs: { ...INSIDE, scheduler: 'wlc' } });
  await ipvs.apply({ kind: 'newDest', vs: INSIDE, rs: rs('198.51.100.7', 80, 1) });
  await ipvs.apply({ kind: 'newDest', vs: INSIDE, rs: rs('198.51.100.8', 80, 0) });
}

async function setup(
  opts: {
    settings?: Partial<ProxierSettings>;
    serviceHealth?: ServiceHealthSink;
    fakes?: { ipvs: FakeIpvs; link: FakeLink; ipset: FakeIpset };
  } = {},
) {
  const log = new Lines();
  const t = await proxierOverFakes({
    ...(opts.fakes ? { ipvs: opts.fakes.ipvs, link: opts.fakes.link, ipset: opts.fakes.ipset } : {}),
    settings: { excludeCIDRs: [EXCLUDED], ...opts.settings },
    log: winston.createLogger({ level: 'debug', transports: [log] }),
    ...(opts.serviceHealth ? { serviceHealth: opts.serviceHealth } : {}),
  });
  const { ipvs, link } = t;
  /** ops before the proxier started (the foreign state's) are not the proxier's */
  let from = 0;
  const start = async () => {
    from = ipvs.applied.length;
    await t.start();
  };
  /** every op any sync sent naming one of these addresses */
  const opsOn = (...addresses: string[]): IpvsOp[] =>
    ipvs.applied.slice(from).filter((op) => 'vs' in op && op.vs && addresses.includes(op.vs.address));
  const bound = async () => {
    const k = await link.getLink(KUBE_IPVS0);
    return (await link.listAddresses('ipv4')).filter((a) => a.ifindex === k.index).map((a) => a.address);
  };
  return { ...t, log: log.lines, start, opsOn, bound };
}

function service(
  namespace: string,
  name: string,
  o: { clusterIP: string; port?: number; protocol?: string; externalIPs?: string[]; lbIP?: string; created?: string },
): V1Service {
  return makeService(namespace, name, (s) => {
    if (o.created) s.metadata!.creationTimestamp = o.created as unknown as Date;
    s.spec = {
      type: o.lbIP ? 'LoadBalancer' : 'ClusterIP',
      clusterIP: o.clusterIP,
      clusterIPs: [o.clusterIP],
      ports: [svcPort('p', o.port ?? 80, o.protocol ?? 'TCP')],
      ...(o.externalIPs ? { externalIPs: o.externalIPs } : {}),
    };
    if (o.lbIP) s.status = { loadBalancer: { ingress: [{ ip: o.lbIP }] } };
  });
}
function slice(namespace: string, svc: string, port: number, protocol: string, ...ips: string[]): V1EndpointSlice {
  return makeEndpointSlice(namespace, svc, `${svc}-1`, (sl) => {
    sl.ports = [{ name: 'p', port, protocol }];
    sl.endpoints = ips.map((ip) => ({ addresses: [ip], conditions: { ready: true }, nodeName: 'node-b' }));
  });
}

describe('foreign virtual servers (issue 18 item 1): their weight-0 real servers are never drained', () => {
  it("keepalived's backup at weight 0 and one inside excludeCIDRs outlive every drain check and full sync", async () => {
    const t = await setup();
    await programForeign(t.ipvs);
    const before = formatRestore(await t.ipvs.listAll());
    t.add(service('default', 'web', { clusterIP: '10.96.0.10' }), slice('default', 'web', 8080, 'TCP', '10.244.1.2'));
    await t.start();
    // well past the drain timeout (10 min): drain checks every 15 s, full syncs every 30 s
    for (let i = 0; i < 45; i++) await t.settle(15_000);
    expect(t.opsOn('192.0.2.1', '203.0.113.200')).toEqual([]);
    expect(linesOf(formatRestore(await t.ipvs.listAll()), '192.0.2.1:443', '203.0.113.200:80')).toEqual(
      linesOf(before, '192.0.2.1:443', '203.0.113.200:80'),
    );
    expect(t.proxier.counts().draining).toBe(0);
    // the refusal is a log line (once, not every full sync)
    expect(t.log.filter((l) => l.includes('192.0.2.51:443'))).toEqual([
      expect.stringMatching(/^info .*TCP 192\.0\.2\.1:443.* not kube-ipvs's.*192\.0\.2\.51:443/),
    ]);
  });

  it("a tenant's externalIP on a foreign VIP, another port, binds the address but never makes the foreign virtual server ours", async () => {
    const t = await setup();
    const backup = { af: AF_INET, protocol: IPPROTO_TCP, address: '198.51.100.100', port: 443, fwmark: 0 } as const;
    await t.ipvs.apply({ kind: 'newService', vs: { ...backup, scheduler: 'wlc' } });
    await t.ipvs.apply({ kind: 'newDest', vs: backup, rs: rs('192.0.2.60', 443, 0) });
    const before = formatRestore(await t.ipvs.listAll());
    const near = service('aaa', 'near', { clusterIP: '10.96.0.50', port: 8443, externalIPs: ['198.51.100.100'] });
    t.add(near, slice('aaa', 'near', 8443, 'TCP', '10.244.7.9'));
    await t.start();
    for (let i = 0; i < 3; i++) await t.settle(30_000);
    expect(await t.bound()).toContain('198.51.100.100');
    t.remove(near, slice('aaa', 'near', 8443, 'TCP', '10.244.7.9'));
    await t.settle();
    for (let i = 0; i < 3; i++) await t.settle(30_000);
    expect(t.opsOn('198.51.100.100').filter((op) => 'vs' in op && op.vs!.port === 443)).toEqual([]);
    expect(linesOf(formatRestore(await t.ipvs.listAll()), '198.51.100.100:443')).toEqual(
      linesOf(before, '198.51.100.100:443'),
    );
  });

  it('its own weight-0 real servers are still adopted and drained after a restart', async () => {
    const t = await setup();
    t.add(
      service('default', 'web', { clusterIP: '10.96.0.10' }),
      slice('default', 'web', 8080, 'TCP', '10.244.1.2', '10.244.1.3'),
    );
    await t.start();
    t.slices.onUpdate(
      slice('default', 'web', 8080, 'TCP', '10.244.1.2', '10.244.1.3'),
      slice('default', 'web', 8080, 'TCP', '10.244.1.2'),
    );
    t.proxier.sync();
    await t.settle();
    // a restarted proxier over the same kernel adopts the drain
    t.proxier.stop();
    const again = await setup({ fakes: t });
    again.add(
      service('default', 'web', { clusterIP: '10.96.0.10' }),
      slice('default', 'web', 8080, 'TCP', '10.244.1.2'),
    );
    await again.start();
    expect(again.proxier.counts().draining).toBe(1);
    await again.settle(15_000);
    expect(formatRestore(await t.ipvs.listAll())).toEqual([
      '-A -t 10.96.0.10:80 -s rr',
      '-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1',
    ]);
    again.proxier.stop();
  });
});

describe('graceful termination (issue 18 mutation: drained = true)', () => {
  it('a draining real server with connections is kept until they end, then deleted', async () => {
    const t = await setup();
    t.add(
      service('default', 'web', { clusterIP: '10.96.0.10' }),
      slice('default', 'web', 8080, 'TCP', '10.244.1.2', '10.244.1.3'),
    );
    await t.start();
    const web: VirtualServerId = { af: AF_INET, protocol: IPPROTO_TCP, address: '10.96.0.10', port: 80, fwmark: 0 };
    const gone = { af: AF_INET, address: '10.244.1.3', port: 8080 } as const;
    t.ipvs.setConnections(web, gone, { active: 1, inactive: 2 });
    t.slices.onUpdate(
      slice('default', 'web', 8080, 'TCP', '10.244.1.2', '10.244.1.3'),
      slice('default', 'web', 8080, 'TCP', '10.244.1.2'),
    );
    t.proxier.sync();
    await t.settle();
    for (let i = 0; i < 4; i++) await t.settle(15_000);
    expect(formatRestore(await t.ipvs.listAll())).toContain('-a -t 10.96.0.10:80 -r 10.244.1.3:8080 -m -w 0');
    expect(t.ipvs.applied.filter((op) => op.kind === 'delDest')).toEqual([]);
    t.ipvs.setConnections(web, gone, { active: 0, inactive: 0 });
    await t.settle(15_000);
    expect(t.ipvs.applied.filter((op) => op.kind === 'delDest')).toEqual([
      expect.objectContaining({ rs: expect.objectContaining({ address: '10.244.1.3' }) }),
    ]);
  });
});

describe('graceful termination counts InActConn too (issue 25 item 4)', () => {
  it('a draining real server with only inactive connections (ActiveConn 0) is kept until they end, then deleted', async () => {
    const t = await setup();
    t.add(
      service('default', 'web', { clusterIP: '10.96.0.10' }),
      slice('default', 'web', 8080, 'TCP', '10.244.1.2', '10.244.1.3'),
    );
    await t.start();
    const web: VirtualServerId = { af: AF_INET, protocol: IPPROTO_TCP, address: '10.96.0.10', port: 80, fwmark: 0 };
    const gone = { af: AF_INET, address: '10.244.1.3', port: 8080 } as const;
    // FIN_WAIT / TIME_WAIT: the kernel counts them as InActConn
    t.ipvs.setConnections(web, gone, { active: 0, inactive: 3 });
    t.slices.onUpdate(
      slice('default', 'web', 8080, 'TCP', '10.244.1.2', '10.244.1.3'),
      slice('default', 'web', 8080, 'TCP', '10.244.1.2'),
    );
    t.proxier.sync();
    await t.settle();
    for (let i = 0; i < 4; i++) await t.settle(15_000);
    expect(formatRestore(await t.ipvs.listAll())).toContain('-a -t 10.96.0.10:80 -r 10.244.1.3:8080 -m -w 0');
    expect(t.ipvs.applied.filter((op) => op.kind === 'delDest')).toEqual([]);
    t.ipvs.setConnections(web, gone, { active: 0, inactive: 0 });
    await t.settle(15_000);
    expect(t.ipvs.applied.filter((op) => op.kind === 'delDest')).toEqual([
      expect.objectContaining({ rs: expect.objectContaining({ address: '10.244.1.3' }) }),
    ]);
  });
});

describe('one Service refused by IPVS fails only that Service (issue 18 mutation: failure thrown out of the sync)', () => {
  it('the next syncs stay partial; health check servers are fed and real servers drained node-wide', async () => {
    const sink = new RecordingSink();
    const t = await setup({ serviceHealth: sink });
    t.add(
      service('default', 'web', { clusterIP: '10.96.0.10' }),
      slice('default', 'web', 8080, 'TCP', '10.244.1.2', '10.244.1.3'),
    );
    await t.start();
    const odd = service('default', 'odd', { clusterIP: '10.96.0.11' });
    odd.metadata!.annotations = { 'kube-ipvs.io/scheduler': 'nosuch' };
    t.slices.onUpdate(
      slice('default', 'web', 8080, 'TCP', '10.244.1.2', '10.244.1.3'),
      slice('default', 'web', 8080, 'TCP', '10.244.1.2'),
    );
    t.add(odd, slice('default', 'odd', 8080, 'TCP', '10.244.1.4'));
    const feeds = sink.feeds;
    await t.settle();
    expect(t.results.at(-1)).toMatchObject({ full: false, ipvsFailures: 2 });
    expect(sink.feeds).toBe(feeds + 1);
    // the retries (1 s, 2 s, 4 s, 8 s) fail again and stay partial; the drain check at 15 s runs
    await t.settle(15_000);
    expect(t.results.slice(1).map((r) => r.full)).not.toContain(true);
    expect(t.ipvs.applied.filter((op) => op.kind === 'delDest')).toEqual([
      expect.objectContaining({ rs: expect.objectContaining({ address: '10.244.1.3' }) }),
    ]);
    expect(sink.feeds).toBeGreaterThan(feeds + 1);
  });
});

describe('ipvs.excludeCIDRs (issue 18 item 3): nothing inside is created, changed or deleted', () => {
  const tenant = () =>
    service('aaa', 'tenant', { clusterIP: '10.96.0.20', externalIPs: ['203.0.113.200', '203.0.113.201'] });
  const tenantEps = () => slice('aaa', 'tenant', 8080, 'TCP', '10.244.7.7');

  it.each([
    ['at the first (full) sync', true],
    ['added later (partial sync)', false],
  ])(
    'a tenant externalIP on a foreign virtual server inside them, %s: left as it was, with an Event and a log line',
    async (_name, before) => {
      const t = await setup();
      await programForeign(t.ipvs);
      const foreign = linesOf(formatRestore(await t.ipvs.listAll()), '203.0.113.200:80');
      if (before) t.add(tenant(), tenantEps());
      await t.start();
      if (!before) {
        t.add(tenant(), tenantEps());
        await t.settle();
        expect(t.results.at(-1)!.full).toBe(false);
      }
      for (let i = 0; i < 3; i++) await t.settle(30_000);
      const table = formatRestore(await t.ipvs.listAll());
      expect(linesOf(table, '203.0.113.200:80')).toEqual(foreign);
      // not created either (203.0.113.201 has no virtual server), nor bound on kube-ipvs0
      expect(t.opsOn('203.0.113.200', '203.0.113.201')).toEqual([]);
      expect(await t.bound()).toEqual(['10.96.0.20']);
      // the ClusterIP, outside, is programmed
      expect(linesOf(table, '10.96.0.20:80')).toEqual([
        '-A -t 10.96.0.20:80 -s rr',
        '-a -t 10.96.0.20:80 -r 10.244.7.7:8080 -m -w 1',
      ]);
      // told once: one Event per excluded VIP, one log line each naming Service, VIP and CIDR
      expect(t.events).toEqual([
        expect.stringMatching(/^aaa\/tenant VIPInExcludedCIDR: .*203\.0\.113\.200.*203\.0\.113\.128\/25/),
        expect.stringMatching(/^aaa\/tenant VIPInExcludedCIDR: .*203\.0\.113\.201.*203\.0\.113\.128\/25/),
      ]);
      expect(t.log.filter((l) => /aaa\/tenant.*203\.0\.113\.200.*203\.0\.113\.128\/25/.test(l))).toHaveLength(1);
      // the Service goes: the foreign virtual server stays
      t.remove(tenant(), tenantEps());
      await t.settle();
      await t.settle(30_000);
      expect(linesOf(formatRestore(await t.ipvs.listAll()), '203.0.113.200:80')).toEqual(foreign);
      expect(t.opsOn('203.0.113.200', '203.0.113.201')).toEqual([]);
    },
  );

  it('excludeCIDRs grown live over a virtual server kube-ipvs made: left as it is, drains included, never deleted', async () => {
    const t = await setup({ settings: { excludeCIDRs: [] } });
    const svc = service('aaa', 'mine', { clusterIP: '10.96.0.22', externalIPs: ['203.0.113.50'] });
    t.add(svc, slice('aaa', 'mine', 8080, 'TCP', '10.244.7.1', '10.244.7.2'));
    await t.start();
    // one real server starts draining; then the admin claims 203.0.113.0/24
    t.slices.onUpdate(
      slice('aaa', 'mine', 8080, 'TCP', '10.244.7.1', '10.244.7.2'),
      slice('aaa', 'mine', 8080, 'TCP', '10.244.7.1'),
    );
    t.proxier.sync();
    await t.settle();
    const lines = linesOf(formatRestore(await t.ipvs.listAll()), '203.0.113.50:80');
    expect(lines).toContain('-a -t 203.0.113.50:80 -r 10.244.7.2:8080 -m -w 0');
    const from = t.ipvs.applied.length;
    t.proxier.updateSettings({ ...FAKE_SETTINGS, excludeCIDRs: ['203.0.113.0/24'] });
    await t.settle();
    for (let i = 0; i < 4; i++) await t.settle(15_000);
    // the Service goes too
    t.remove(svc, slice('aaa', 'mine', 8080, 'TCP', '10.244.7.1'));
    await t.settle();
    await t.settle(30_000);
    expect(t.ipvs.applied.slice(from).filter((op) => 'vs' in op && op.vs?.address === '203.0.113.50')).toEqual([]);
    expect(linesOf(formatRestore(await t.ipvs.listAll()), '203.0.113.50:80')).toEqual(lines);
    expect(t.events).toEqual([
      expect.stringMatching(/^aaa\/mine VIPInExcludedCIDR: .*203\.0\.113\.50.*203\.0\.113\.0\/24/),
    ]);
  });
});

describe('two Services claiming one ip:port (issue 18 item 4)', () => {
  const dns = () =>
    service('kube-system', 'kube-dns', {
      clusterIP: '10.96.0.10',
      port: 53,
      protocol: 'UDP',
      created: '2024-01-01T00:00:00Z',
    });
  const dnsEps = () => slice('kube-system', 'kube-dns', 53, 'UDP', '10.244.0.53');
  const grab = () =>
    service('aaa', 'grab', {
      clusterIP: '10.96.0.30',
      port: 53,
      protocol: 'UDP',
      externalIPs: ['10.96.0.10'],
      created: '2025-01-01T00:00:00Z',
    });
  const grabEps = () => slice('aaa', 'grab', 5353, 'UDP', '10.244.9.9');
  const DNS_LINES = ['-A -u 10.96.0.10:53 -s rr', '-a -u 10.96.0.10:53 -r 10.244.0.53:53 -m -w 1'];

  it.each([
    ['both at the first sync', true],
    ['the externalIP added later', false],
  ])(
    "an externalIP equal to kube-dns's ClusterIP does not take it (%s); the loser is told once",
    async (_name, together) => {
      const t = await setup();
      t.add(dns(), dnsEps());
      if (together) t.add(grab(), grabEps());
      await t.start();
      if (!together) {
        t.add(grab(), grabEps());
        await t.settle();
      }
      for (let i = 0; i < 3; i++) await t.settle(30_000);
      expect(linesOf(formatRestore(await t.ipvs.listAll()), '10.96.0.10:53')).toEqual(DNS_LINES);
      expect(
        t.ipvs.applied.filter(
          (op) =>
            op.kind !== 'newService' &&
            'vs' in op &&
            op.vs?.address === '10.96.0.10' &&
            'rs' in op &&
            op.rs.address === '10.244.9.9',
        ),
      ).toEqual([]);
      expect(t.events).toEqual([
        expect.stringMatching(/^aaa\/grab VirtualServerConflict: .*UDP\/10\.96\.0\.10:53.*kube-system\/kube-dns/),
      ]);
      expect(t.log.filter((l) => /aaa\/grab/.test(l) && /10\.96\.0\.10:53/.test(l))).toHaveLength(1);
      // the loser goes: nothing changes; it comes back: told again
      t.remove(grab(), grabEps());
      await t.settle();
      t.add(grab(), grabEps());
      await t.settle();
      expect(linesOf(formatRestore(await t.ipvs.listAll()), '10.96.0.10:53')).toEqual(DNS_LINES);
      expect(t.events).toHaveLength(2);
    },
  );

  it('a load-balancer IP outranks an externalIP; then the older Service; then namespace/name', async () => {
    const t = await setup();
    const UDP: Omit<VirtualServerId, 'address'> = { af: AF_INET, protocol: IPPROTO_UDP, port: 53, fwmark: 0 };
    // zzz/lb is the newest and last by name, but a load-balancer IP outranks an externalIP
    t.add(
      service('aaa', 'ext', {
        clusterIP: '10.96.0.40',
        port: 53,
        protocol: 'UDP',
        externalIPs: ['203.0.113.5'],
        created: '2024-01-01T00:00:00Z',
      }),
      slice('aaa', 'ext', 53, 'UDP', '10.244.1.1'),
      service('zzz', 'lb', {
        clusterIP: '10.96.0.41',
        port: 53,
        protocol: 'UDP',
        lbIP: '203.0.113.5',
        created: '2025-01-01T00:00:00Z',
      }),
      slice('zzz', 'lb', 53, 'UDP', '10.244.1.2'),
      // two externalIPs: the older (bbb/old) wins over aaa/new
      service('aaa', 'new', {
        clusterIP: '10.96.0.42',
        port: 53,
        protocol: 'UDP',
        externalIPs: ['203.0.113.6'],
        created: '2025-06-01T00:00:00Z',
      }),
      slice('aaa', 'new', 53, 'UDP', '10.244.1.3'),
      service('bbb', 'old', {
        clusterIP: '10.96.0.43',
        port: 53,
        protocol: 'UDP',
        externalIPs: ['203.0.113.6'],
        created: '2023-06-01T00:00:00Z',
      }),
      slice('bbb', 'old', 53, 'UDP', '10.244.1.4'),
      // same age: namespace/name
      service('ccc', 'b', {
        clusterIP: '10.96.0.44',
        port: 53,
        protocol: 'UDP',
        externalIPs: ['203.0.113.7'],
        created: '2024-01-01T00:00:00Z',
      }),
      slice('ccc', 'b', 53, 'UDP', '10.244.1.5'),
      service('ccc', 'a', {
        clusterIP: '10.96.0.45',
        port: 53,
        protocol: 'UDP',
        externalIPs: ['203.0.113.7'],
        created: '2024-01-01T00:00:00Z',
      }),
      slice('ccc', 'a', 53, 'UDP', '10.244.1.6'),
    );
    await t.start();
    const backends = async (address: string) =>
      (await t.ipvs.listRealServers({ ...UDP, address })).map((d) => d.address);
    expect(await backends('203.0.113.5')).toEqual(['10.244.1.2']);
    expect(await backends('203.0.113.6')).toEqual(['10.244.1.4']);
    expect(await backends('203.0.113.7')).toEqual(['10.244.1.6']);
    expect(t.events.map((e) => e.split(' ')[0]).sort()).toEqual(['aaa/ext', 'aaa/new', 'ccc/b']);

    // the winner stays as the losers change (an endpoint update of each)
    t.slices.onUpdate(slice('aaa', 'new', 53, 'UDP', '10.244.1.3'), slice('aaa', 'new', 53, 'UDP', '10.244.1.30'));
    t.slices.onUpdate(slice('aaa', 'ext', 53, 'UDP', '10.244.1.1'), slice('aaa', 'ext', 53, 'UDP', '10.244.1.10'));
    t.proxier.sync();
    await t.settle();
    await t.settle(30_000);
    expect(await backends('203.0.113.5')).toEqual(['10.244.1.2']);
    expect(await backends('203.0.113.6')).toEqual(['10.244.1.4']);
    expect(t.events).toHaveLength(3);
  });
});

describe('a foreign virtual server at the exact ip:port a Service claims (issue 18: foreign when first seen)', () => {
  // keepalived-like, not on a local address: binding it on kube-ipvs0 would change its traffic too
  const VIP = { af: AF_INET, protocol: IPPROTO_TCP, address: '198.51.100.100', port: 443, fwmark: 0 } as const;
  const programVip = async (ipvs: FakeIpvs) => {
    await ipvs.apply({ kind: 'newService', vs: { ...VIP, scheduler: 'wlc' } });
    await ipvs.apply({ kind: 'newDest', vs: VIP, rs: rs('192.0.2.60', 443, 1) });
    await ipvs.apply({ kind: 'newDest', vs: VIP, rs: rs('192.0.2.61', 443, 0) });
  };
  const take = () => service('aaa', 'take', { clusterIP: '10.96.0.60', port: 443, externalIPs: ['198.51.100.100'] });
  const takeEps = () => slice('aaa', 'take', 8443, 'TCP', '10.244.7.10');
  const members = async (t: Awaited<ReturnType<typeof setup>>) =>
    [...(await t.ipset.observe()).values()].flatMap((s) => [...s.members]);

  it.each([
    ['at the first (full) sync', 'before'],
    ['added later (partial sync)', 'after'],
    ['the foreign virtual server made after the first full sync, then claimed (partial sync)', 'appeared'],
  ])(
    'is left byte-identical, %s: no op, no ipset entry, no address; one Event and one log line',
    async (_name, when) => {
      const t = await setup();
      if (when !== 'appeared') await programVip(t.ipvs);
      if (when === 'before') t.add(take(), takeEps());
      await t.start();
      if (when === 'appeared') await programVip(t.ipvs);
      const foreign = linesOf(formatRestore(await t.ipvs.listAll()), '198.51.100.100:443');
      /** the proxier's ops on the foreign virtual server (not its owner's) */
      const mark = t.ipvs.applied.length;
      const opsOnVip = () =>
        t.ipvs.applied.slice(mark).filter((op) => 'vs' in op && op.vs?.address === '198.51.100.100');
      if (when !== 'before') {
        t.add(take(), takeEps());
        await t.settle();
        expect(t.results.at(-1)!.full).toBe(false);
      }
      await t.settle();
      for (let i = 0; i < 4; i++) await t.settle(30_000);
      const table = formatRestore(await t.ipvs.listAll());
      expect(linesOf(table, '198.51.100.100:443')).toEqual(foreign);
      // nothing went through on it (the refused create of the third case changed nothing)
      expect(opsOnVip()).toEqual([]);
      expect(await t.bound()).toEqual(['10.96.0.60']);
      expect((await members(t)).filter((m) => m.includes('198.51.100.100'))).toEqual([]);
      // the ClusterIP is programmed
      expect(linesOf(table, '10.96.0.60:443')).toEqual([
        '-A -t 10.96.0.60:443 -s rr',
        '-a -t 10.96.0.60:443 -r 10.244.7.10:8443 -m -w 1',
      ]);
      // told once: one Event, one log line naming the Service, the ip:port and why
      expect(t.events).toEqual([
        expect.stringMatching(/^aaa\/take ForeignVirtualServer: .*TCP\/198\.51\.100\.100:443.*not kube-ipvs's/),
      ]);
      expect(t.log.filter((l) => /aaa\/take/.test(l) && /198\.51\.100\.100/.test(l))).toEqual([
        expect.stringMatching(
          /^warn .*aaa\/take.*TCP\/198\.51\.100\.100:443 exists in the kernel and is not kube-ipvs's \(.+\)/,
        ),
      ]);
      // the Service goes: the foreign virtual server stays, untouched
      t.remove(take(), takeEps());
      await t.settle();
      for (let i = 0; i < 2; i++) await t.settle(30_000);
      expect(linesOf(formatRestore(await t.ipvs.listAll()), '198.51.100.100:443')).toEqual(foreign);
      expect(opsOnVip()).toEqual([]);
    },
  );

  it('deleted by its owner: the Service gets it at the next sync', async () => {
    const t = await setup();
    await programVip(t.ipvs);
    t.add(take(), takeEps());
    await t.start();
    await t.settle(30_000);
    expect(await t.bound()).toEqual(['10.96.0.60']);
    await t.ipvs.apply({ kind: 'delService', vs: VIP });
    await t.settle(30_000);
    await t.settle();
    expect(linesOf(formatRestore(await t.ipvs.listAll()), '198.51.100.100:443')).toEqual([
      '-A -t 198.51.100.100:443 -s rr',
      '-a -t 198.51.100.100:443 -r 10.244.7.10:8443 -m -w 1',
    ]);
    expect((await t.bound()).sort()).toEqual(['10.96.0.60', '198.51.100.100']);
    expect(await members(t)).toContain('198.51.100.100,tcp:443');
    // and it is the Service's now: it goes with it
    t.remove(take(), takeEps());
    await t.settle();
    expect(linesOf(formatRestore(await t.ipvs.listAll()), '198.51.100.100:443')).toEqual([]);
  });

  it("kube-ipvs's own sets, written after the adoption read, never make a foreign virtual server its own", async () => {
    const t = await setup();
    await t.start();
    // appears between full syncs; the claim's create is refused (EEXIST); the sets the partial
    // sync in flight wrote for it are withdrawn; later full syncs read the sets kube-ipvs wrote
    await programVip(t.ipvs);
    const foreign = linesOf(formatRestore(await t.ipvs.listAll()), '198.51.100.100:443');
    t.add(take(), takeEps());
    await t.settle();
    await t.settle();
    expect((await members(t)).filter((m) => m.includes('198.51.100.100'))).toEqual([]);
    for (let i = 0; i < 3; i++) await t.settle(30_000);
    expect(linesOf(formatRestore(await t.ipvs.listAll()), '198.51.100.100:443')).toEqual(foreign);
    expect(t.results.filter((r) => r.ipvsFailures > 0)).toEqual([]);
  });

  it('a restart adopts everything kube-ipvs programmed with 0 writes, and still deletes it when its Service goes', async () => {
    const t = await setup();
    const web = service('default', 'web', {
      clusterIP: '10.96.0.10',
      externalIPs: ['198.51.100.9'],
      lbIP: '203.0.113.9',
    });
    t.add(web, slice('default', 'web', 8080, 'TCP', '10.244.1.2'));
    await t.start();
    const before = formatRestore(await t.ipvs.listAll());
    t.proxier.stop();
    const again = await setup({ fakes: t });
    again.add(web, slice('default', 'web', 8080, 'TCP', '10.244.1.2'));
    await again.start();
    expect(again.results[0]).toMatchObject({ full: true, ipvsWrites: 0, ipvsFailures: 0 });
    await again.settle(30_000);
    expect(again.results.every((r) => r.ipvsWrites === 0)).toBe(true);
    expect(formatRestore(await t.ipvs.listAll())).toEqual(before);
    expect(again.events).toEqual([]);
    again.remove(web, slice('default', 'web', 8080, 'TCP', '10.244.1.2'));
    await again.settle();
    expect(await t.ipvs.listAll()).toEqual([]);
    again.proxier.stop();
  });
});
