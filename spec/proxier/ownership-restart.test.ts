// Ownership across restarts (issue 25, items 1-4), over the kernel fakes, the real trackers and
// planner, and a fake clock. A restart is a new proxier over the same fakes (the kernel a
// restarted daemon finds). The same against the real kernel and the daemon as a process:
// spec/vm/foreign-state.vm.test.ts.
//
// Addresses (testkit/builders.ts): ClusterIPs 10.96.0.0/12, pods 10.244.0.0/16, this node
// 192.0.2.1 on eth0 (its one NodePort address). keepalived-like virtual servers: one at
// 198.51.100.100 (not an address of this node), one on the node IP.
import winston from 'winston';
import Transport from 'winston-transport';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { FakeLink } from '../../testkit/kernel/fake-link';
import { FakeIpset } from '../../testkit/kernel/fake-ipset';
import { KUBE_IPVS0 } from '../../lib/kernel/link/link';
import { proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { IpvsOp, VirtualServerEntry } from '../../lib/kernel/ipvs/ipvs';
import { RealServerSpec, VirtualServerId, virtualServerKey } from '../../lib/model/ipvs';
import { SetName } from '../../lib/model/names';
import { SCHEDULER_ANNOTATION } from '../../lib/k8s/convert-fields';
import { ExecError } from '../../lib/errors';

/** kube-ipvs's record of the frontends it programmed (hash:ip,port), per family */
const RECORD = 'KUBE-IPVS-OWNED';
const RECORD6 = 'KUBE-6-IPVS-OWNED';

class Lines extends Transport {
  readonly lines: string[] = [];
  override log(info: { level: string; message: string }, next: () => void): void {
    this.lines.push(`${info.level} ${info.message}`);
    next();
  }
}

/** One line per virtual server and real server, sorted: a table to compare before and after. */
function dump(entries: readonly VirtualServerEntry[]): string[] {
  return entries
    .flatMap((e) => [
      `${virtualServerKey(e.vs)} ${e.vs.scheduler}`,
      ...[...e.dests].map((d) => `${virtualServerKey(e.vs)} -> ${d.address}:${d.port} w${d.weight}`).sort(),
    ])
    .sort();
}
const of = (lines: readonly string[], address: string, port: number) =>
  lines.filter((l) => l.includes(`/${address}:${port}`));

const rs = (address: string, port: number, weight: number): RealServerSpec => ({
  af: AF_INET,
  address,
  port,
  fwdMethod: 0,
  weight,
});
const tcp = (address: string, port: number): VirtualServerId => ({
  af: AF_INET,
  protocol: IPPROTO_TCP,
  address,
  port,
  fwmark: 0,
});

/** keepalived's virtual server: a live real server and a backup at weight 0 (inhibit_on_failure) */
async function keepalived(ipvs: FakeIpvs, vs: VirtualServerId): Promise<void> {
  await ipvs.apply({ kind: 'newService', vs: { ...vs, scheduler: 'wlc' } });
  await ipvs.apply({ kind: 'newDest', vs, rs: rs('192.0.2.60', vs.port, 1) });
  await ipvs.apply({ kind: 'newDest', vs, rs: rs('192.0.2.61', vs.port, 0) });
}

type Fakes = { ipvs: FakeIpvs; link: FakeLink; ipset: FakeIpset };

async function daemon(fakes?: Fakes) {
  const log = new Lines();
  const t = await proxierOverFakes({
    ...(fakes ?? {}),
    log: winston.createLogger({ level: 'debug', transports: [log] }),
  });
  let from = t.ipvs.applied.length;
  /** ops from here on are this proxier's (the test's own foreign state comes before) */
  const mark = () => void (from = t.ipvs.applied.length);
  /** every op this proxier sent naming this address */
  const opsOn = (address: string): IpvsOp[] =>
    t.ipvs.applied.slice(from).filter((op) => 'vs' in op && op.vs?.address === address);
  const bound = async () => {
    const k = await t.link.getLink(KUBE_IPVS0);
    return (await t.link.listAddresses('ipv4'))
      .filter((a) => a.ifindex === k.index)
      .map((a) => a.address)
      .sort();
  };
  const table = async () => dump(await t.ipvs.listAll());
  const run = async (syncs = 2) => {
    mark();
    await t.start();
    for (let i = 0; i < syncs; i++) await t.settle(30_000);
  };
  return { ...t, log: log.lines, mark, opsOn, bound, table, run };
}

function service(
  namespace: string,
  name: string,
  o: { clusterIP: string; port?: number; nodePort?: number; externalIPs?: string[]; lbIP?: string; created?: string },
): V1Service {
  return makeService(namespace, name, (s) => {
    if (o.created) s.metadata!.creationTimestamp = o.created as unknown as Date;
    s.spec = {
      type: o.lbIP ? 'LoadBalancer' : o.nodePort ? 'NodePort' : 'ClusterIP',
      clusterIP: o.clusterIP,
      clusterIPs: [o.clusterIP],
      ports: [svcPort('p', o.port ?? 80, 'TCP', o.nodePort)],
      ...(o.externalIPs ? { externalIPs: o.externalIPs } : {}),
    };
    if (o.lbIP) s.status = { loadBalancer: { ingress: [{ ip: o.lbIP }] } };
  });
}
function slice(namespace: string, svc: string, port: number, ...ips: string[]): V1EndpointSlice {
  return makeEndpointSlice(namespace, svc, `${svc}-1`, (sl) => {
    sl.ports = [{ name: 'p', port, protocol: 'TCP' }];
    sl.endpoints = ips.map((ip) => ({ addresses: [ip], conditions: { ready: true }, nodeName: 'node-b' }));
  });
}

// the tenant: a NodePort Service whose nodePort is keepalived's port
const tenant = () => service('aaa', 'np', { clusterIP: '10.96.0.70', port: 443, nodePort: 30443 });
const tenantEps = () => slice('aaa', 'np', 8443, '10.244.7.70');

describe('a port-only set never vouches for an address across a restart (issue 25 item 1)', () => {
  it("keepalived's 198.51.100.100:30443 (not a NodePort address) outlives a restart after a tenant got nodePort 30443", async () => {
    const first = await daemon();
    await keepalived(first.ipvs, tcp('198.51.100.100', 30443));
    const before = of(await first.table(), '198.51.100.100', 30443);
    first.add(tenant(), tenantEps());
    await first.run();
    expect(first.opsOn('198.51.100.100')).toEqual([]);
    // the tenant's NodePort is programmed on the node address, and its port is in the port-only set
    expect(of(await first.table(), '192.0.2.1', 30443)).toEqual([
      'TCP/192.0.2.1:30443 -> 10.244.7.70:8443 w1',
      'TCP/192.0.2.1:30443 rr',
    ]);
    expect(first.ipset.members(SetName.NODE_PORT_TCP)).toContain('30443');
    first.proxier.stop();

    const again = await daemon(first);
    again.add(tenant(), tenantEps());
    await again.run();
    expect(of(await again.table(), '198.51.100.100', 30443)).toEqual(before);
    expect(again.opsOn('198.51.100.100')).toEqual([]);
    again.proxier.stop();
  });

  it("keepalived's 192.0.2.1:30443 (the node IP) is refused before the restart and still refused after it: never taken over", async () => {
    const first = await daemon();
    await keepalived(first.ipvs, tcp('192.0.2.1', 30443));
    const before = of(await first.table(), '192.0.2.1', 30443);
    first.add(tenant(), tenantEps());
    await first.run();
    expect(of(await first.table(), '192.0.2.1', 30443)).toEqual(before);
    expect(first.events).toEqual([expect.stringMatching(/^aaa\/np ForeignVirtualServer: .*TCP\/192\.0\.2\.1:30443/)]);
    expect(first.ipset.members(SetName.NODE_PORT_TCP)).toContain('30443');
    first.proxier.stop();

    const again = await daemon(first);
    again.add(tenant(), tenantEps());
    await again.run();
    expect(of(await again.table(), '192.0.2.1', 30443)).toEqual(before);
    expect(again.opsOn('192.0.2.1')).toEqual([]);
    expect(again.events).toEqual([expect.stringMatching(/^aaa\/np ForeignVirtualServer: .*TCP\/192\.0\.2\.1:30443/)]);
    // loud (item 2): status and service list show the refused frontend, which the metric counts
    const refused = [
      {
        service: 'aaa/np',
        field: 'spec.ports[].nodePort',
        value: '192.0.2.1',
        reason: 'ForeignVirtualServer',
        message: expect.stringContaining('TCP/192.0.2.1:30443'),
      },
    ];
    expect((await again.proxier.status()).refusedFrontends).toEqual(refused);
    expect(again.proxier.refusedFrontends()).toEqual(refused);
    again.proxier.stop();
  });

  it('a node kube-proxy programmed (no record of kube-ipvs): its NodePort on the node address is adopted, keepalived elsewhere is not', async () => {
    // kube-proxy's state as kube-ipvs writes it, without kube-ipvs's own record set
    const first = await daemon();
    await keepalived(first.ipvs, tcp('198.51.100.100', 30443));
    const before = of(await first.table(), '198.51.100.100', 30443);
    first.add(tenant(), tenantEps());
    await first.run();
    first.proxier.stop();
    for (const name of [RECORD, RECORD6]) if (first.ipset.has(name)) first.ipset.destroy(name);
    const ours = of(await first.table(), '192.0.2.1', 30443);
    expect(ours).toHaveLength(2);

    const again = await daemon(first);
    again.add(tenant(), tenantEps());
    await again.run();
    expect(again.results[0]).toMatchObject({ full: true, ipvsWrites: 0 });
    expect(of(await again.table(), '192.0.2.1', 30443)).toEqual(ours);
    expect(of(await again.table(), '198.51.100.100', 30443)).toEqual(before);
    expect(again.opsOn('198.51.100.100')).toEqual([]);
    expect(again.events).toEqual([]);
    // the record is written again: it names every frontend kube-ipvs programmed
    expect([...(again.ipset.members(RECORD) ?? [])].sort()).toEqual(['10.96.0.70,tcp:443', '192.0.2.1,tcp:30443']);
    again.proxier.stop();
  });
});

describe('kube-ipvs0 vouches only when no KUBE-* set exists at all (issue 25 items 2 and 4)', () => {
  it('virtual servers on kube-ipvs0 addresses, the sets absent altogether: adopted, the addresses stay bound, no refusal', async () => {
    const ipvs = new FakeIpvs();
    const link = new FakeLink();
    const ipset = new FakeIpset();
    await link.addDummy('eth0');
    await link.addAddress((await link.getLink('eth0')).index, '192.0.2.1');
    await link.addDummy(KUBE_IPVS0);
    const dummy = (await link.getLink(KUBE_IPVS0)).index;
    for (const [ip, pod] of [
      ['10.96.0.10', '10.244.1.2'],
      ['10.96.0.11', '10.244.1.3'],
    ] as const) {
      await link.addAddress(dummy, ip);
      await ipvs.apply({ kind: 'newService', vs: { ...tcp(ip, 80), scheduler: 'rr' } });
      await ipvs.apply({ kind: 'newDest', vs: tcp(ip, 80), rs: { ...rs(pod, 8080, 1), fwdMethod: 0 } });
    }
    const t = await daemon({ ipvs, link, ipset });
    t.add(service('default', 'a', { clusterIP: '10.96.0.10' }), slice('default', 'a', 8080, '10.244.1.2'));
    t.add(service('default', 'b', { clusterIP: '10.96.0.11' }), slice('default', 'b', 8080, '10.244.1.3'));
    await t.run();
    expect(t.events).toEqual([]);
    expect(await t.bound()).toEqual(['10.96.0.10', '10.96.0.11']);
    expect(t.proxier.refusedFrontends()).toEqual([]);
    expect(of(await t.table(), '10.96.0.10', 80)).toEqual([
      'TCP/10.96.0.10:80 -> 10.244.1.2:8080 w1',
      'TCP/10.96.0.10:80 rr',
    ]);
    expect(of(await t.table(), '10.96.0.11', 80)).toEqual([
      'TCP/10.96.0.11:80 -> 10.244.1.3:8080 w1',
      'TCP/10.96.0.11:80 rr',
    ]);
    t.proxier.stop();
  });

  it("the sets read: a tenant's externalIP on keepalived's VIP (another port) binds the address, and a restart still leaves keepalived's virtual server alone", async () => {
    const first = await daemon();
    await keepalived(first.ipvs, tcp('198.51.100.100', 443));
    const before = of(await first.table(), '198.51.100.100', 443);
    const near = () => service('aaa', 'near', { clusterIP: '10.96.0.50', port: 8443, externalIPs: ['198.51.100.100'] });
    first.add(near(), slice('aaa', 'near', 8443, '10.244.7.9'));
    await first.run();
    expect(await first.bound()).toContain('198.51.100.100');
    first.proxier.stop();

    const again = await daemon(first);
    again.add(near(), slice('aaa', 'near', 8443, '10.244.7.9'));
    await again.run();
    expect(of(await again.table(), '198.51.100.100', 443)).toEqual(before);
    expect(again.opsOn('198.51.100.100').filter((op) => 'vs' in op && op.vs!.port === 443)).toEqual([]);
    again.proxier.stop();
  });
});

describe('only the adoption read vouches (issue 25 item 4: the adoption flag)', () => {
  it('a virtual server that appears later is foreign even when the sets, as a later full sync reads them, name its ip:port', async () => {
    const t = await daemon();
    t.add(service('default', 'web', { clusterIP: '10.96.0.10' }), slice('default', 'web', 8080, '10.244.1.2'));
    await t.run(1);
    // after the adoption read: keepalived's virtual server, and the sets (whoever wrote them) naming it
    await keepalived(t.ipvs, tcp('198.51.100.100', 443));
    t.mark();
    const before = of(await t.table(), '198.51.100.100', 443);
    t.ipset.applyRestore(
      `create ${RECORD} hash:ip,port family inet hashsize 1024 maxelem 65536\n` +
        [SetName.EXTERNAL_IP, SetName.LOAD_BALANCER, SetName.CLUSTER_IP, RECORD]
          .map((s) => `add ${s} 198.51.100.100,tcp:443`)
          .join('\n') +
        '\n',
      true,
    );
    for (let i = 0; i < 3; i++) await t.settle(30_000);
    expect(of(await t.table(), '198.51.100.100', 443)).toEqual(before);
    expect(t.opsOn('198.51.100.100')).toEqual([]);
    t.proxier.stop();
  });
});

describe('claims are ranked by the frontend that made them (issue 25 item 3)', () => {
  it("a tenant's externalIP on a LoadBalancer's IP, at a port equal to its own nodePort, does not outrank the LoadBalancer", async () => {
    const t = await daemon();
    t.add(
      service('bbb', 'lb', {
        clusterIP: '10.96.0.80',
        port: 30443,
        nodePort: 31000,
        lbIP: '203.0.113.5',
        created: '2025-01-01T00:00:00Z',
      }),
      slice('bbb', 'lb', 8443, '10.244.8.1'),
      // older, so only the kind decides
      service('aaa', 'grab', {
        clusterIP: '10.96.0.81',
        port: 30443,
        nodePort: 30443,
        externalIPs: ['203.0.113.5'],
        created: '2023-01-01T00:00:00Z',
      }),
      slice('aaa', 'grab', 8443, '10.244.9.9'),
    );
    await t.run(1);
    expect(of(await t.table(), '203.0.113.5', 30443)).toEqual([
      'TCP/203.0.113.5:30443 -> 10.244.8.1:8443 w1',
      'TCP/203.0.113.5:30443 rr',
    ]);
    expect(t.events).toEqual([
      expect.stringMatching(
        /^aaa\/grab VirtualServerConflict: .*203\.0\.113\.5:30443 \(this Service's ExternalIP\).*bbb\/lb.*a LoadBalancer outranks an ExternalIP/,
      ),
    ]);
    expect((await t.proxier.status()).refusedFrontends).toEqual([
      {
        service: 'aaa/grab',
        field: 'spec.ports[p]',
        value: 'TCP/203.0.113.5:30443',
        reason: 'VirtualServerConflict',
        message: expect.stringContaining('bbb/lb'),
      },
    ]);
    // the tenant's own NodePort on the node address is still its NodePort
    expect(of(await t.table(), '192.0.2.1', 30443)).toEqual([
      'TCP/192.0.2.1:30443 -> 10.244.9.9:8443 w1',
      'TCP/192.0.2.1:30443 rr',
    ]);
    t.proxier.stop();
  });
});

// Issue 39: the record's whole life. Without a record only what a tenant cannot forge adopts
// (item 1); a record is checked against the kernel before anything is deleted (item 2); it is
// written before a create and forgotten after a delete (item 3).
describe('no record: only evidence a tenant cannot forge adopts (issue 39 item 1)', () => {
  it("keepalived's 192.0.2.1:30443 stays keepalived's after the record is destroyed, though the port-only set holds 30443", async () => {
    const first = await daemon();
    await keepalived(first.ipvs, tcp('192.0.2.1', 30443));
    const before = of(await first.table(), '192.0.2.1', 30443);
    first.add(tenant(), tenantEps());
    await first.run();
    first.proxier.stop();
    first.ipset.destroy(RECORD);
    expect(first.ipset.members(SetName.NODE_PORT_TCP)).toContain('30443');

    const again = await daemon(first);
    again.add(tenant(), tenantEps());
    await again.run();
    expect(of(await again.table(), '192.0.2.1', 30443)).toEqual(before);
    expect(again.opsOn('192.0.2.1')).toEqual([]);
    expect(again.log).toContainEqual(
      expect.stringMatching(
        /virtual server TCP 192\.0\.2\.1:30443 is not kube-ipvs's .*no ownership record .*none of its real servers \(192\.0\.2\.6[01], 192\.0\.2\.6[01]\) is an endpoint/,
      ),
    );
    expect(again.events).toEqual([expect.stringMatching(/^aaa\/np ForeignVirtualServer: .*TCP\/192\.0\.2\.1:30443/)]);
    again.proxier.stop();
  });

  it("every set gone: a tenant's externalIP bound on kube-ipvs0 (another port) does not take keepalived's VIP:443", async () => {
    const first = await daemon();
    await keepalived(first.ipvs, tcp('198.51.100.100', 443));
    const before = of(await first.table(), '198.51.100.100', 443);
    const web = service('aaa', 'web', { clusterIP: '10.96.0.71', port: 80, externalIPs: ['198.51.100.100'] });
    const tls = service('aaa', 'tls', { clusterIP: '10.96.0.72', port: 443, externalIPs: ['198.51.100.100'] });
    first.add(web, slice('aaa', 'web', 8080, '10.244.7.71'));
    first.add(tls, slice('aaa', 'tls', 8443, '10.244.7.72'));
    await first.run();
    expect(await first.bound()).toContain('198.51.100.100');
    first.proxier.stop();

    // `iptables -F -X; ipset destroy`: a kernel with no set at all
    const again = await daemon({ ipvs: first.ipvs, link: first.link, ipset: new FakeIpset() });
    again.add(web, slice('aaa', 'web', 8080, '10.244.7.71'));
    again.add(tls, slice('aaa', 'tls', 8443, '10.244.7.72'));
    await again.run();
    expect(of(await again.table(), '198.51.100.100', 443)).toEqual(before);
    // its own, bound and with its pod, is adopted
    expect(of(await again.table(), '198.51.100.100', 80)).toEqual([
      'TCP/198.51.100.100:80 -> 10.244.7.71:8080 w1',
      'TCP/198.51.100.100:80 rr',
    ]);
    expect(again.events).toEqual([
      expect.stringMatching(/^aaa\/tls ForeignVirtualServer: .*TCP\/198\.51\.100\.100:443/),
    ]);
    again.proxier.stop();
  });

  it('after kube-proxy: its NodePort with no real server (the scheduler the plan programs, the port in its set) is adopted', async () => {
    const t = await daemon();
    // kube-proxy's: the virtual server, and its port in the port-only set
    await t.ipvs.apply({ kind: 'newService', vs: { ...tcp('192.0.2.1', 30444), scheduler: 'rr' } });
    await t.ipset.restore('create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\nadd KUBE-NODE-PORT-TCP 30444\n');
    const local = service('aaa', 'local', { clusterIP: '10.96.0.73', port: 443, nodePort: 30444 });
    t.add(local, slice('aaa', 'local', 8443, '10.244.7.73'));
    await t.run();
    expect(t.log.filter((l) => l.includes("is not kube-ipvs's"))).toEqual([]);
    expect(t.proxier.refusedFrontends()).toEqual([]);
    expect(of(await t.table(), '192.0.2.1', 30444)).toContain('TCP/192.0.2.1:30444 rr');
    expect(t.ipset.members(RECORD)).toContain('192.0.2.1,tcp:30444');
    t.proxier.stop();
  });
});

describe('a stale record deletes nothing another program made since (issue 39 item 2)', () => {
  it("kube-ipvs stopped; its NodePort's ip:port is keepalived's now: the next start leaves it, the record forgets it", async () => {
    const first = await daemon();
    first.add(tenant(), tenantEps());
    await first.run();
    first.proxier.stop();
    expect([...first.ipset.members(RECORD)!]).toContain('192.0.2.1,tcp:30443');
    // while kube-ipvs was away: the Service went, and keepalived took its ip:port
    await first.ipvs.apply({ kind: 'delService', vs: tcp('192.0.2.1', 30443) });
    await keepalived(first.ipvs, tcp('192.0.2.1', 30443));
    const before = of(await first.table(), '192.0.2.1', 30443);

    const again = await daemon(first);
    await again.run();
    expect(of(await again.table(), '192.0.2.1', 30443)).toEqual(before);
    expect(again.opsOn('192.0.2.1')).toEqual([]);
    expect(again.log).toContainEqual(
      expect.stringMatching(
        /record \(KUBE-IPVS-OWNED\) says it programmed rr\/0x0000\/0 there, and the kernel holds wlc/,
      ),
    );
    expect(again.ipset.members(RECORD)).not.toContain('192.0.2.1,tcp:30443');
    again.proxier.stop();
  });

  it('a record without comments (an earlier kube-ipvs) is taken at its word once, and rebuilt with them', async () => {
    const first = await daemon();
    first.add(tenant(), tenantEps());
    await first.run();
    first.proxier.stop();
    const members = [...first.ipset.members(RECORD)!].sort();
    first.ipset.destroy(RECORD);
    await first.ipset.restore(
      `create ${RECORD} hash:ip,port family inet hashsize 1024 maxelem 65536\n` +
        members.map((m) => `add ${RECORD} ${m}`).join('\n') +
        '\n',
    );

    const again = await daemon(first);
    again.add(tenant(), tenantEps());
    await again.run();
    expect(again.results[0]).toMatchObject({ ipvsWrites: 0 });
    const saved = (await again.ipset.save()).split('\n').filter((l) => l.includes(RECORD + ' '));
    expect(saved).toEqual([
      `create ${RECORD} hash:ip,port family inet hashsize 1024 maxelem 65536 comment bucketsize 12 initval 0x00000000`,
      ...members.map((m) => `add ${RECORD} ${m} comment "rr/0x0000/0"`),
    ]);
    expect(again.ipset.has(`${RECORD}-NEW`)).toBe(false);
    again.proxier.stop();
  });
});

describe('the record is written before a create and forgotten after a delete (issue 39 item 3)', () => {
  it('each create finds its member recorded; each delete has gone through before its member is forgotten', async () => {
    const t = await daemon();
    const seen: string[] = [];
    const run = t.ipvs.run.bind(t.ipvs);
    t.ipvs.run = async (ops) => {
      const record = t.ipset.members(RECORD) ?? new Set();
      for (const op of ops)
        if (op.kind === 'newService')
          seen.push(
            `create ${op.vs.address}:${op.vs.port} recorded=${record.has(`${op.vs.address},tcp:${op.vs.port}`)}`,
          );
      return run(ops);
    };
    const restore = t.ipset.restore.bind(t.ipset);
    t.ipset.restore = async (text) => {
      for (const m of text.matchAll(/^del KUBE-IPVS-OWNED (\S+),tcp:(\d+)$/gm)) {
        const there = (await t.ipvs.listAll()).some((e) => `${e.vs.address}` === m[1] && e.vs.port === Number(m[2]));
        seen.push(`forget ${m[1]}:${m[2]} inKernel=${there}`);
      }
      return restore(text);
    };
    t.add(tenant(), tenantEps());
    await t.run();
    expect(seen.sort()).toEqual(['create 10.96.0.70:443 recorded=true', 'create 192.0.2.1:30443 recorded=true']);
    seen.length = 0;
    t.remove(tenant(), tenantEps());
    await t.settle();
    expect(seen.sort()).toEqual(['forget 10.96.0.70:443 inKernel=false', 'forget 192.0.2.1:30443 inKernel=false']);
    expect([...(t.ipset.members(RECORD) ?? [])]).toEqual([]);
    t.proxier.stop();
  });

  it('a scheduler change: the record names both states while the edit is in flight, then the new one', async () => {
    const t = await daemon();
    t.add(tenant(), tenantEps());
    await t.run();
    const during: string[] = [];
    const run = t.ipvs.run.bind(t.ipvs);
    t.ipvs.run = async (ops) => {
      if (ops.some((op) => op.kind === 'setService')) {
        const save = await t.ipset.save();
        during.push(...save.split('\n').filter((l) => l.startsWith(`add ${RECORD} 10.96.0.70,tcp:443`)));
      }
      return run(ops);
    };
    const wlc = tenant();
    wlc.metadata!.annotations = { [SCHEDULER_ANNOTATION]: 'wlc' };
    t.services.onUpdate(tenant(), wlc);
    t.proxier.sync();
    await t.settle();
    expect(during).toEqual([`add ${RECORD} 10.96.0.70,tcp:443 comment "rr/0x0000/0|wlc/0x0000/0"`]);
    expect((await t.ipset.save()).split('\n').filter((l) => l.startsWith(`add ${RECORD} 10.96.0.70,tcp:443`))).toEqual([
      `add ${RECORD} 10.96.0.70,tcp:443 comment "wlc/0x0000/0"`,
    ]);
    t.proxier.stop();
  });

  it('a record that cannot be written: no virtual server is created, the sync fails loudly and is retried', async () => {
    const t = await daemon();
    const restore = t.ipset.restore.bind(t.ipset);
    let refuse = true;
    t.ipset.restore = async (text) => {
      if (refuse && text.includes(RECORD))
        throw new ExecError('ipset restore -exist', 1, 'ipset v7.17: Kernel error\n');
      return restore(text);
    };
    t.add(tenant(), tenantEps());
    await t.start();
    expect(await t.ipvs.listAll()).toEqual([]);
    expect(t.log).toContainEqual(
      expect.stringMatching(
        /^error sync failed, .*could not write ownership record KUBE-IPVS-OWNED: .*no virtual server is created or changed until it can be written/,
      ),
    );
    refuse = false;
    await t.settle(60_000);
    expect((await t.ipvs.listAll()).map((e) => `${e.vs.address}:${e.vs.port}`).sort()).toEqual([
      '10.96.0.70:443',
      '192.0.2.1:30443',
    ]);
    t.proxier.stop();
  });
});
