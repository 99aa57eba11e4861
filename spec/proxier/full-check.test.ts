// The periodic full check as the daemon runs it: the table read from /proc/net/ip_vs (each
// virtual server's real servers newest first, as the kernel prints them) beside the netlink
// service dump, compared with the plan. A table equal to the plan costs no write; what changed
// behind kube-ipvs's back is repaired and counted as drift; changes after a check still cost
// only their own ops.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { FAKE_SETTINGS, proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { realServerKey, virtualServerKey } from '../../lib/model/ipvs';
import { IpvsOp } from '../../lib/kernel/ipvs/ipvs';

const service = (name: string, ip: string): V1Service =>
  makeService('default', name, (s) => (s.spec = { clusterIP: ip, clusterIPs: [ip], ports: [svcPort('http', 80)] }));
const slice = (name: string, ...ips: string[]): V1EndpointSlice =>
  makeEndpointSlice('default', name, `${name}-1`, (sl) => {
    sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
    sl.endpoints = ips.map((ip) => ({
      addresses: [ip],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: 'node-b',
    }));
  });
const line = (op: IpvsOp) =>
  `${op.kind}${'vs' in op && op.vs ? ` ${virtualServerKey(op.vs)}` : ''}${'rs' in op ? ` ${realServerKey(op.rs)} w${'weight' in op.rs ? op.rs.weight : ''}` : ''}`;

describe('the full check over /proc/net/ip_vs', () => {
  async function started() {
    const t = await proxierOverFakes({ proc: 'newest-first' });
    const web = slice('web', '10.244.1.1', '10.244.1.2', '10.244.1.3');
    t.add(service('web', '10.96.0.10'), web, service('db', '10.96.0.11'), slice('db', '10.244.2.1', '10.244.2.2'));
    await t.start();
    t.ipvs.applied.length = 0;
    return { t, web };
  }
  const fullCheck = async (t: Awaited<ReturnType<typeof proxierOverFakes>>) => {
    t.ipvs.applied.length = 0;
    const before = t.proxier.totals.fullSyncs;
    // due syncPeriod after the last sync of any kind
    for (let i = 0; i < 2 && t.proxier.totals.fullSyncs === before; i++) await t.settle(FAKE_SETTINGS.syncPeriodMs);
    expect(t.proxier.totals.fullSyncs).toBe(before + 1);
    return t.ipvs.applied.map(line);
  };

  it('a table equal to the plan costs one read and no write, check after check', async () => {
    const { t } = await started();
    for (let i = 0; i < 3; i++) {
      expect(await fullCheck(t)).toEqual([]);
      expect(t.proxier.lastResult).toMatchObject({ ipvsReads: 1, ipvsWrites: 0 });
    }
    expect(t.proxier.totals.driftRepairs).toBe(0);
    expect(t.proxier.counts()).toMatchObject({ virtualServers: 2, realServers: 5 });
  });

  it('repairs what changed behind its back, once, and counts it as drift', async () => {
    const { t } = await started();
    expect(await fullCheck(t)).toEqual([]);
    const vs = (await t.ipvs.listServices()).find((v) => v.address === '10.96.0.10')!;
    const dests = await t.ipvs.listRealServers(vs);
    await t.ipvs.apply({ kind: 'delDest', vs, rs: dests.find((d) => d.address === '10.244.1.2')! });
    await t.ipvs.apply({ kind: 'setDest', vs, rs: { ...dests.find((d) => d.address === '10.244.1.3')!, weight: 5 } });
    expect(await fullCheck(t)).toEqual([
      'newDest TCP/10.96.0.10:80 10.244.1.2:8080 w1',
      'setDest TCP/10.96.0.10:80 10.244.1.3:8080 w1',
    ]);
    expect(t.proxier.totals.driftRepairs).toBe(1);
    expect(await fullCheck(t)).toEqual([]);
  });

  it('after a check, an endpoint change costs its own ops; the next check agrees', async () => {
    const { t, web } = await started();
    expect(await fullCheck(t)).toEqual([]);
    t.replaceSlice(web, slice('web', '10.244.1.1', '10.244.1.3', '10.244.1.4'));
    t.ipvs.applied.length = 0;
    await t.settle(FAKE_SETTINGS.minSyncPeriodMs + 1);
    expect(t.proxier.lastResult!.full).toBe(false);
    expect(t.ipvs.applied.map(line)).toEqual([
      'newDest TCP/10.96.0.10:80 10.244.1.4:8080 w1',
      'setDest TCP/10.96.0.10:80 10.244.1.2:8080 w0',
    ]);
    expect(t.proxier.counts()).toMatchObject({ realServers: 6, draining: 1 });
    // by the next check the drain check has deleted the draining one (no connections)
    expect(await fullCheck(t)).toEqual(['delDest TCP/10.96.0.10:80 10.244.1.2:8080 w0']);
    expect(t.proxier.counts()).toMatchObject({ realServers: 5, draining: 0 });
    expect(await fullCheck(t)).toEqual([]);
    expect(t.proxier.totals.driftRepairs).toBe(0);
  });

  it('dual-stack on iptables-nft: the first check after the cold start runs no process', async () => {
    // both families' restores move the namespace's one nf_tables generation; IPv6's tells IPv4
    const t = await proxierOverFakes({
      proc: 'newest-first',
      readGeneration: true,
      settings: { families: ['ipv4', 'ipv6'], clusterCIDRs: ['10.244.0.0/16', '2001:db8:244::/64'] },
    });
    t.add(service('web', '10.96.0.10'), slice('web', '10.244.1.1'));
    await t.start();
    // (8, and the ownership record's one write for both families before the creates)
    expect(t.results[0]).toMatchObject({ full: true, execs: 9 });
    for (let i = 0; i < 2; i++) {
      expect(await fullCheck(t)).toEqual([]);
      expect(t.proxier.lastResult).toMatchObject({ ipvsReads: 1, ipvsWrites: 0, execs: 0 });
    }
    // someone else's commit: both families read their tables once, and are proven again
    t.iptablesByFamily.ipv6!.foreignCommit();
    await fullCheck(t);
    expect(t.proxier.lastResult).toMatchObject({ ipvsWrites: 0, execs: 4 });
    await fullCheck(t);
    expect(t.proxier.lastResult).toMatchObject({ ipvsWrites: 0, execs: 0 });
  });
});
