// The proxier's read-only views over the kernel fakes: backend states the kernel text cannot
// show, status, and the dry-run full sync behind `kube-ipvs diff` (a drifted fake shows exactly
// the repair, and neither the fake nor the proxier's own state changes). The service list's rows,
// ids and backend states after each step are in the step files' expected text
// (spec/golden/cases: service-list, terminating-step).
//
// Addresses (testkit/builders.ts): ClusterIPs 10.96.0.0/12, pods 10.244.0.0/16, this node
// 192.0.2.1 on eth0, LB VIP 203.0.113.10, external IP 203.0.113.20.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { NotSyncedError } from '../../lib/errors';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../lib/uapi/ip_vs';
import { VirtualServerEntry } from '../../lib/kernel/ipvs/ipvs';
import { VirtualServerId } from '../../lib/model/ipvs';

const web: V1Service = makeService('default', 'web', (s) => {
  s.spec = {
    type: 'LoadBalancer',
    clusterIP: '10.96.0.10',
    clusterIPs: ['10.96.0.10'],
    externalIPs: ['203.0.113.20'],
    ports: [svcPort('http', 80, 'TCP', 30080)],
  };
  s.status = { loadBalancer: { ingress: [{ ip: '203.0.113.10' }] } };
});
const dns: V1Service = makeService('kube-system', 'dns', (s) => {
  s.metadata!.annotations = { 'kube-ipvs.io/scheduler': 'lc' };
  s.spec = {
    clusterIP: '10.96.0.11',
    clusterIPs: ['10.96.0.11'],
    ports: [{ port: 53, protocol: 'UDP' }],
    sessionAffinity: 'ClientIP',
    sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
  };
});
type Ep = { ip: string; ready?: boolean; serving?: boolean; terminating?: boolean };
const slice = (
  svc: string,
  ns: string,
  port: number,
  portName: string | undefined,
  protocol: string,
  eps: Ep[],
): V1EndpointSlice =>
  makeEndpointSlice(ns, svc, `${svc}-1`, (sl) => {
    sl.ports = [{ ...(portName !== undefined ? { name: portName } : {}), port, protocol }];
    sl.endpoints = eps.map((e) => ({
      addresses: [e.ip],
      conditions: {
        ready: e.ready ?? true,
        serving: e.serving ?? e.ready ?? true,
        terminating: e.terminating ?? false,
      },
      nodeName: 'node-b',
    }));
  });
const webSlice = slice('web', 'default', 8080, 'http', 'TCP', [{ ip: '10.244.1.2' }, { ip: '10.244.2.2' }]);
const dnsSlice = slice('dns', 'kube-system', 53, undefined, 'UDP', [{ ip: '10.244.3.2' }]);

const vs = (address: string, port: number, protocol = IPPROTO_TCP): VirtualServerId => ({
  af: AF_INET,
  protocol,
  address,
  port,
  fwmark: 0,
});

async function started(opts: { schedulers?: string[] } = {}) {
  const t = await proxierOverFakes(opts);
  t.add(web, webSlice, dns, dnsSlice);
  await t.start();
  return t;
}

/** The fake's table, sorted, as data (to show nothing changed). */
async function table(entries: Promise<VirtualServerEntry[]>) {
  return (await entries).map((e) => JSON.stringify(e, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).sort();
}

describe('Proxier.serviceList', () => {
  it('backends of a virtual server the kernel refused are pending', async () => {
    const t = await started({ schedulers: ['rr'] }); // no 'lc' for the dns Service
    expect(t.proxier.serviceList().find((f) => f.service === 'kube-system/dns:53')!.backends).toEqual([
      { address: '10.244.3.2:53', state: 'pending', weight: 1, activeConns: 0, inactConns: 0 },
    ]);
  });
});

describe('Proxier.dryRunFullSync (kube-ipvs diff)', () => {
  it('nothing to change right after a sync', async () => {
    const { proxier } = await started();
    expect(await proxier.dryRunFullSync()).toEqual([]);
  });

  it('a drifted kernel: exactly the repairs, foreign services untouched, the fake and the proxier unchanged', async () => {
    const t = await started();
    const { ipvs, proxier } = t;
    // drift: one real server deleted, one scheduler changed, a stale real server added;
    // and a foreign virtual server (keepalived's, on the node IP) that is not kube-ipvs's
    await ipvs.apply({
      kind: 'delDest',
      vs: vs('10.96.0.10', 80),
      rs: { af: AF_INET, address: '10.244.2.2', port: 8080 },
    });
    await ipvs.apply({
      kind: 'setService',
      vs: { ...vs('203.0.113.10', 80), scheduler: 'wrr', flags: 0, timeout: 0, netmask: 0xffffffff },
    });
    await ipvs.apply({
      kind: 'newDest',
      vs: vs('203.0.113.20', 80),
      rs: { af: AF_INET, address: '10.244.9.9', port: 8080, fwdMethod: IP_VS_CONN_F.MASQ, weight: 1 },
    });
    await ipvs.apply({ kind: 'newService', vs: { ...vs('192.0.2.1', 443), scheduler: 'rr' } });
    const before = await table(ipvs.listAll());
    const opsBefore = ipvs.applied.length;

    const ops = await proxier.dryRunFullSync();
    expect(ops).toEqual([
      {
        kind: 'newDest',
        vs: expect.objectContaining(vs('10.96.0.10', 80)),
        rs: expect.objectContaining({ address: '10.244.2.2', port: 8080, weight: 1 }),
      },
      { kind: 'setService', vs: expect.objectContaining({ ...vs('203.0.113.10', 80), scheduler: 'rr' }) },
      // TCP: the stale real server drains (weight 0) rather than being deleted
      {
        kind: 'setDest',
        vs: expect.objectContaining(vs('203.0.113.20', 80)),
        rs: expect.objectContaining({ address: '10.244.9.9', weight: 0 }),
      },
    ]);
    expect(await table(ipvs.listAll())).toEqual(before);
    expect(ipvs.applied.length).toBe(opsBefore);

    // the proxier's own state is untouched: the next full sync finds the same drift, repairs it
    // and counts it as drift
    await t.settle(30_000);
    expect(proxier.totals.driftRepairs).toBe(1);
    expect(ipvs.applied.slice(opsBefore).map((o) => o.kind)).toEqual(['newDest', 'setService', 'setDest']);
    expect(await proxier.dryRunFullSync()).toEqual([]);
  });

  it('shows what a pending Service change will add before the proxier syncs it', async () => {
    const t = await started();
    const extra = makeService('default', 'extra', (s) => {
      s.spec = { clusterIP: '10.96.0.12', clusterIPs: ['10.96.0.12'], ports: [svcPort('http', 80)] };
    });
    t.add(extra, slice('extra', 'default', 8080, 'http', 'TCP', [{ ip: '10.244.4.2' }])); // no settle: not synced yet
    expect((await t.proxier.dryRunFullSync()).map((o) => o.kind)).toEqual(['newService', 'newDest']);
    expect(await t.ipvs.listServices()).toHaveLength(5);
  });

  it('refuses before Services and EndpointSlices have been listed', async () => {
    const t = await proxierOverFakes();
    await expect(t.proxier.dryRunFullSync()).rejects.toBeInstanceOf(NotSyncedError);
  });
});

describe('Proxier.status', () => {
  it('node, devices, features, syncs and counts', async () => {
    const t = await started();
    const s = await t.proxier.status();
    expect(s).toMatchObject({
      node: { name: 'node-a', ips: ['192.0.2.1'] },
      families: ['ipv4'],
      devices: [
        {
          name: 'kube-ipvs0',
          role: 'kube-ipvs0',
          addresses: ['10.96.0.10', '10.96.0.11', '203.0.113.10', '203.0.113.20'],
        },
        { name: 'eth0', role: 'NodePort', addresses: ['192.0.2.1'] },
      ],
      scheduler: { default: 'rr', overriddenBy: 1 },
      sessionAffinity: { enabled: true, frontends: 1 },
      gracefulTermination: {
        enabled: true,
        protocols: ['TCP'],
        drainTimeoutSeconds: 600,
        checkIntervalSeconds: 15,
        draining: 0,
      },
      services: {
        clusterIP: true,
        nodePort: { enabled: true, addresses: ['192.0.2.1'], portsInUse: [30080] },
        loadBalancer: true,
        externalIPs: true,
      },
      initialized: true,
      lastFullSync: { at: new Date(t.clock.now()).toISOString(), ipvsWrites: 14, ipvsFailures: 0 },
      lastPartialSync: null,
      driftRepairs: 0,
      counts: { services: 2, servicePorts: 2, virtualServers: 5, realServers: 9, draining: 0, boundAddresses: 4 },
    });
    t.replaceSlice(dnsSlice, slice('dns', 'kube-system', 53, undefined, 'UDP', []));
    await t.settle(1000);
    expect((await t.proxier.status()).lastPartialSync).toMatchObject({
      at: expect.any(String),
      ipvsWrites: 1,
      execs: 0,
    });
  });
});
