// The proxier's stale conntrack cleanup over the kernel fakes: a dump happens only after a sync
// in which a UDP/SCTP virtual server lost a real server or got its first one, and exactly the
// stale flows are deleted; a conntrack failure never fails the IPVS sync.
//
// Addresses: ClusterIPs 10.96.0.0/12, pods 10.244.0.0/16, this node 192.0.2.1 on eth0,
// clients 192.0.2.0/24.
import winston from 'winston';
import Transport from 'winston-transport';
import { FakeConntrack } from '../../testkit/kernel/fake-conntrack';
import { Conntrack } from '../../lib/kernel/conntrack/conntrack';
import { ProxierSettings } from '../../lib/proxier/proxier';
import { FAKE_SETTINGS, proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { ConntrackFlow } from '../../lib/model/conntrack';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';

const UDP = 17;
const TCP = 6;

const SETTINGS: ProxierSettings = FAKE_SETTINGS;

class Lines extends Transport {
  readonly lines: { level: string; message: string }[] = [];
  override log(info: { level: string; message: string }, next: () => void): void {
    this.lines.push({ level: info.level, message: info.message });
    next();
  }
}

function service(name: string, ip: string, protocol: string, port: number): V1Service {
  return makeService('default', name, (s) => {
    s.spec = { type: 'ClusterIP', clusterIP: ip, clusterIPs: [ip], ports: [svcPort('p', port, protocol)] };
  });
}
function slice(svc: string, protocol: string, port: number, ...ips: string[]): V1EndpointSlice {
  return makeEndpointSlice('default', svc, `${svc}-1`, (sl) => {
    sl.ports = [{ name: 'p', port, protocol }];
    sl.endpoints = ips.map((ip) => ({ addresses: [ip], conditions: { ready: true }, nodeName: 'node-b' }));
  });
}
const flow = (
  protocol: number,
  clientPort: number,
  vip: string,
  vport: number,
  backend: string,
  bport: number,
): Omit<ConntrackFlow, 'zone' | 'id'> => ({
  family: 'ipv4',
  protocol,
  orig: { src: '192.0.2.7', dst: vip, srcPort: clientPort, dstPort: vport },
  reply: { src: backend, dst: '192.0.2.7', srcPort: bport, dstPort: clientPort },
});

async function setup(conntrack: Conntrack) {
  const lines = new Lines();
  const { services, slices, proxier, clock, results, start } = await proxierOverFakes({
    settings: SETTINGS,
    conntrack,
    log: winston.createLogger({ level: 'debug', transports: [lines] }),
  });
  const settle = async () => {
    proxier.sync();
    await clock.advance(0);
    await proxier.idle();
  };
  const last = () => {
    const r = results[results.length - 1]!;
    return { ipvsWrites: r.ipvsWrites, conntrackOps: r.conntrackOps };
  };
  return { services, slices, proxier, settle, start, last, lines, results };
}

const ports = (ct: FakeConntrack) =>
  ct
    .all()
    .map((f) => f.orig.srcPort)
    .sort();

describe('Proxier stale conntrack cleanup', () => {
  it('dumps only when a UDP virtual server lost a real server or got its first one; deletes exactly the stale flows', async () => {
    const ct = new FakeConntrack();
    const t = await setup(ct);
    t.services.onAdd(service('dns', '10.96.0.10', 'UDP', 53));
    t.slices.onAdd(slice('dns', 'UDP', 5353, '10.244.1.2'));
    t.services.onAdd(service('web', '10.96.0.11', 'TCP', 80));
    t.slices.onAdd(slice('web', 'TCP', 8080, '10.244.2.2'));
    ct.add(flow(UDP, 1001, '10.96.0.10', 53, '10.244.1.2', 5353)); // to the endpoint: stays
    ct.add(flow(UDP, 1002, '10.96.0.10', 53, '10.96.0.10', 53)); // blackholed before the endpoint: stale
    ct.add(flow(UDP, 1003, '10.96.0.10', 53, '10.244.1.9', 5353)); // to a gone pod: stale
    ct.add(flow(TCP, 1004, '10.96.0.11', 80, '10.244.2.9', 8080)); // TCP: never touched
    ct.add(flow(UDP, 1005, '192.0.2.99', 53, '192.0.2.99', 53)); // not a Service: never touched

    // first sync: the UDP virtual server gets its first real server: 1 dump + 2 deletes
    await t.start();
    expect(t.last()).toEqual({ ipvsWrites: 4, conntrackOps: 3 });
    expect([ct.dumps, ct.deleteRequests]).toEqual([1, 2]);
    expect(ports(ct)).toEqual([1001, 1004, 1005]);
    expect(t.lines.lines.filter((l) => l.message.startsWith('conntrack:'))).toEqual([
      { level: 'info', message: 'conntrack: deleted 2 stale entries (ipv4 UDP)' },
    ]);

    // TCP endpoint replaced: no dump
    t.slices.onUpdate(slice('web', 'TCP', 8080, '10.244.2.2'), slice('web', 'TCP', 8080, '10.244.2.3'));
    await t.settle();
    expect(t.last()).toEqual({ ipvsWrites: 2, conntrackOps: 0 });
    // a second UDP endpoint added: nothing can be stale, no dump
    t.slices.onUpdate(slice('dns', 'UDP', 5353, '10.244.1.2'), slice('dns', 'UDP', 5353, '10.244.1.2', '10.244.1.3'));
    await t.settle();
    expect(t.last()).toEqual({ ipvsWrites: 1, conntrackOps: 0 });
    expect(ct.dumps).toBe(1);

    // the first UDP endpoint goes: its flow is deleted (1 dump + 1 delete), the other backend's stays
    ct.add(flow(UDP, 1006, '10.96.0.10', 53, '10.244.1.3', 5353));
    t.slices.onUpdate(slice('dns', 'UDP', 5353, '10.244.1.2', '10.244.1.3'), slice('dns', 'UDP', 5353, '10.244.1.3'));
    await t.settle();
    expect(t.last()).toEqual({ ipvsWrites: 1, conntrackOps: 2 });
    expect([ct.dumps, ct.deleteRequests]).toEqual([2, 3]);
    expect(ports(ct)).toEqual([1004, 1005, 1006]);

    // a periodic full sync with no change: no dump
    const before = t.results.length;
    await t.proxier.syncProxyRules();
    expect(t.results.length).toBe(before + 1);
    expect(t.last().conntrackOps).toBe(0);
    expect(ct.dumps).toBe(2);
  });

  it('a conntrack failure is logged and never fails the IPVS sync', async () => {
    const broken: Conntrack = {
      listFlows: async () => {
        throw new Error('netlink receive: ENOBUFS');
      },
      deleteFlows: async () => ({ deleted: 0, gone: 0, failures: [] }),
      close: () => undefined,
    };
    const t = await setup(broken);
    t.services.onAdd(service('dns', '10.96.0.10', 'UDP', 53));
    t.slices.onAdd(slice('dns', 'UDP', 53, '10.244.1.2'));
    await t.start();
    expect(t.last()).toEqual({ ipvsWrites: 2, conntrackOps: 1 });
    const errors = t.lines.lines.filter((l) => l.level === 'error').map((l) => l.message);
    expect(errors).toEqual([
      'conntrack ipv4 UDP: stale entry cleanup failed (IPVS is synced): netlink receive: ENOBUFS',
    ]);
    expect(t.lines.lines.some((l) => l.message.startsWith('sync failed'))).toBe(false);
    // the next sync is a plain one: the failed cleanup is not retried in a loop
    await t.settle();
    expect(t.last()).toEqual({ ipvsWrites: 0, conntrackOps: 0 });
  });
});
