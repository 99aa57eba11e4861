// What the proxier leaves in the kernel's dest trash: every DEL_DEST (and every real server of a
// DEL_SERVICE) puts a real server there for two minutes or more, and every NEW_DEST walks it
// (DEVELOPERS.md). Over the kernel fakes, exact ops: a real server whose address returns while it
// drains gets its weight back (one SET_DEST, never DEL_DEST + NEW_DEST), a virtual server is
// edited in place (SET_SERVICE) and deleted whole (DEL_SERVICE, never its real servers one by one
// first). Traffic sees the same as before: a drain still waits for the connections to end.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { IpvsOp } from '../../lib/kernel/ipvs/ipvs';
import { AF_INET, IPPROTO_TCP, IPPROTO_UDP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../lib/uapi/ip_vs';
import { FAKE_SETTINGS, proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';

const VIP = '10.96.0.10';
const VS = { af: AF_INET, protocol: IPPROTO_TCP, address: VIP, port: 80, fwmark: 0 } as const;
const rs = (address: string) =>
  ({ af: AF_INET, address, port: 8080, fwdMethod: IP_VS_CONN_F.MASQ, weight: 1 }) as const;

function web(protocol = 'TCP', annotations: Record<string, string> = {}, port = 80): V1Service {
  return makeService('default', 'web', (s) => {
    s.metadata!.annotations = annotations;
    s.spec = { type: 'ClusterIP', clusterIP: VIP, clusterIPs: [VIP], ports: [svcPort('http', port, protocol)] };
  });
}
function endpoints(protocol: string, ...ips: string[]): V1EndpointSlice {
  return makeEndpointSlice('default', 'web', 'web-1', (sl) => {
    sl.ports = [{ name: 'http', port: 8080, protocol }];
    sl.endpoints = ips.map((ip) => ({ addresses: [ip], conditions: { ready: true }, nodeName: 'node-b' }));
  });
}

/** The ops since `from`, as "kind address weight" (address and weight for real server ops). */
function opsSince(ipvs: FakeIpvs, from: number): string[] {
  return ipvs.applied.slice(from).map((op: IpvsOp) => {
    if (op.kind === 'newDest' || op.kind === 'setDest') return `${op.kind} ${op.rs.address} w${op.rs.weight}`;
    if (op.kind === 'delDest') return `${op.kind} ${op.rs.address}`;
    return 'vs' in op && op.vs ? `${op.kind} ${op.vs.address}:${op.vs.port}` : op.kind;
  });
}

async function started(protocol = 'TCP', ...ips: string[]) {
  const t = await proxierOverFakes();
  t.add(web(protocol), endpoints(protocol, ...ips));
  await t.start();
  return t;
}

const DRAIN_CHECK_MS = 15_000;

describe('the dest trash: what the proxier deletes and re-adds', () => {
  it('an address that returns while its real server drains: one SET_DEST to weight 1, no DEL_DEST, no NEW_DEST', async () => {
    const t = await started('TCP', '10.244.1.2', '10.244.1.3');
    t.replaceSlice(endpoints('TCP', '10.244.1.2', '10.244.1.3'), endpoints('TCP', '10.244.1.2'));
    await t.settle();
    // an open connection: the drain checks keep it at weight 0
    t.ipvs.setConnections(VS, rs('10.244.1.3'), { active: 1, inactive: 0 });
    await t.settle(DRAIN_CHECK_MS);
    expect(opsSince(t.ipvs, 0).slice(-1)).toEqual(['setDest 10.244.1.3 w0']);
    const from = t.ipvs.applied.length;
    t.replaceSlice(endpoints('TCP', '10.244.1.2'), endpoints('TCP', '10.244.1.2', '10.244.1.3'));
    await t.settle();
    // and no drain check deletes it later (it drains no more)
    t.ipvs.setConnections(VS, rs('10.244.1.3'), { active: 0, inactive: 0 });
    await t.settle(DRAIN_CHECK_MS);
    await t.settle(FAKE_SETTINGS.syncPeriodMs);
    expect(opsSince(t.ipvs, from)).toEqual(['setDest 10.244.1.3 w1']);
    expect(t.proxier.counts().draining).toBe(0);
  });

  it('the same when the return is applied by a full sync', async () => {
    const t = await started('TCP', '10.244.1.2', '10.244.1.3');
    t.replaceSlice(endpoints('TCP', '10.244.1.2', '10.244.1.3'), endpoints('TCP', '10.244.1.2'));
    await t.settle();
    t.ipvs.setConnections(VS, rs('10.244.1.3'), { active: 1, inactive: 0 });
    await t.settle(FAKE_SETTINGS.syncPeriodMs - 1_000); // (a drain check at 15 s keeps it)
    const from = t.ipvs.applied.length;
    // the change waits for the next sync, which is a full one (the table read shows the weight-0 real server)
    t.slices.onUpdate(endpoints('TCP', '10.244.1.2'), endpoints('TCP', '10.244.1.2', '10.244.1.3'));
    await t.settle(1_000);
    expect(t.results.at(-1)?.full).toBe(true);
    await t.settle(DRAIN_CHECK_MS);
    expect(opsSince(t.ipvs, from)).toEqual(['setDest 10.244.1.3 w1']);
  });

  it('the same for a restarted daemon that finds the real server at weight 0 and its address desired again', async () => {
    const first = await started('TCP', '10.244.1.2', '10.244.1.3');
    first.replaceSlice(endpoints('TCP', '10.244.1.2', '10.244.1.3'), endpoints('TCP', '10.244.1.2'));
    await first.settle();
    first.proxier.stop();
    const from = first.ipvs.applied.length;
    const t = await proxierOverFakes({ ipvs: first.ipvs, link: first.link, ipset: first.ipset });
    t.add(web(), endpoints('TCP', '10.244.1.2', '10.244.1.3'));
    await t.start();
    await t.settle(DRAIN_CHECK_MS);
    expect(opsSince(t.ipvs, from)).toEqual(['setDest 10.244.1.3 w1']);
  });

  it('an address that returns after the drain check deleted its real server: one NEW_DEST (the kernel revives it from the trash)', async () => {
    const t = await started('TCP', '10.244.1.2', '10.244.1.3');
    t.replaceSlice(endpoints('TCP', '10.244.1.2', '10.244.1.3'), endpoints('TCP', '10.244.1.2'));
    await t.settle();
    await t.settle(DRAIN_CHECK_MS); // no connections: deleted
    expect(opsSince(t.ipvs, 0).slice(-2)).toEqual(['setDest 10.244.1.3 w0', 'delDest 10.244.1.3']);
    const from = t.ipvs.applied.length;
    t.replaceSlice(endpoints('TCP', '10.244.1.2'), endpoints('TCP', '10.244.1.2', '10.244.1.3'));
    await t.settle();
    expect(opsSince(t.ipvs, from)).toEqual(['newDest 10.244.1.3 w1']);
  });

  it("UDP real servers are deleted at once and re-added when their address returns (kube-proxy's: flows move on)", async () => {
    const t = await started('UDP', '10.244.1.2', '10.244.1.3');
    const from = t.ipvs.applied.length;
    t.replaceSlice(endpoints('UDP', '10.244.1.2', '10.244.1.3'), endpoints('UDP', '10.244.1.2'));
    await t.settle();
    t.replaceSlice(endpoints('UDP', '10.244.1.2'), endpoints('UDP', '10.244.1.2', '10.244.1.3'));
    await t.settle();
    expect(opsSince(t.ipvs, from)).toEqual(['delDest 10.244.1.3', 'newDest 10.244.1.3 w1']);
    expect((await t.ipvs.listAll()).map((e) => e.vs.protocol)).toEqual([IPPROTO_UDP]);
  });

  it('a deleted Service: one DEL_SERVICE, its real servers (a draining one too) not deleted one by one first, and no drain check after', async () => {
    const t = await started('TCP', '10.244.1.2', '10.244.1.3');
    t.replaceSlice(endpoints('TCP', '10.244.1.2', '10.244.1.3'), endpoints('TCP', '10.244.1.2'));
    await t.settle();
    t.ipvs.setConnections(VS, rs('10.244.1.3'), { active: 1, inactive: 0 });
    const from = t.ipvs.applied.length;
    t.remove(web(), endpoints('TCP', '10.244.1.2'));
    await t.settle();
    await t.settle(DRAIN_CHECK_MS);
    expect(opsSince(t.ipvs, from)).toEqual([`delService ${VIP}:80`]);
    expect(t.proxier.counts().draining).toBe(0);
  });

  it('a scheduler change edits the virtual server (SET_SERVICE): never DEL_SERVICE + NEW_SERVICE, its real servers untouched', async () => {
    const t = await started('TCP', '10.244.1.2', '10.244.1.3');
    const from = t.ipvs.applied.length;
    t.services.onUpdate(web(), web('TCP', { 'kube-ipvs.io/scheduler': 'lc' }));
    t.proxier.sync();
    await t.settle();
    await t.settle(FAKE_SETTINGS.syncPeriodMs); // and the full sync after it finds nothing to do
    expect(opsSince(t.ipvs, from)).toEqual([`setService ${VIP}:80`]);
    expect((await t.ipvs.listAll())[0]!.vs.scheduler).toBe('lc');
  });

  it("a Service port change: the new virtual server and its real servers first, the old one's DEL_SERVICE last (its real servers are not in the trash the adds walk)", async () => {
    const t = await started('TCP', '10.244.1.2', '10.244.1.3');
    const from = t.ipvs.applied.length;
    t.services.onUpdate(web(), web('TCP', {}, 81));
    t.proxier.sync();
    await t.settle();
    expect(opsSince(t.ipvs, from)).toEqual([
      `newService ${VIP}:81`,
      'newDest 10.244.1.2 w1',
      'newDest 10.244.1.3 w1',
      `delService ${VIP}:80`,
    ]);
  });
});
