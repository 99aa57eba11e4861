// The proxier's smaller parts alone: kube-ipvs0's bound addresses, stale conntrack cleanup,
// the desired state re-plans write, the refusal and conflict reports, and a sync's figures.
import winston from 'winston';
import { FakeLink } from '../../testkit/kernel/fake-link';
import { FakeConntrack } from '../../testkit/kernel/fake-conntrack';
import { BoundAddresses } from '../../lib/proxier/bound-addresses';
import { ConntrackCleanup } from '../../lib/proxier/conntrack-cleanup';
import { DesiredState } from '../../lib/proxier/desired-state';
import { RefusalReports } from '../../lib/proxier/refusal-reports';
import { DesiredIndex } from '../../lib/proxier/desired-index';
import { SyncFigures, newSyncRun } from '../../lib/proxier/sync-run';
import { driftOps } from '../../lib/reconcile/diff-ipvs';
import { SyncResult } from '../../lib/proxier/types';
import { FakeClock } from '../../testkit/fake-clock';
import { DesiredVirtualServer, ServicePortPlan } from '../../lib/plan/service-plan';
import { FrontendFacts } from '../../lib/plan/frontend-guard';
import { Refusal, TrackedService } from '../../lib/model/service';
import { VirtualServerSpec, virtualServerKey } from '../../lib/model/ipvs';
import { AF_INET, IPPROTO_TCP, IPPROTO_UDP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../lib/uapi/ip_vs';

const quiet = winston.createLogger({ silent: true });

function udpVs(...backends: string[]): DesiredVirtualServer {
  return {
    vs: { af: AF_INET, protocol: IPPROTO_UDP, address: '10.96.0.10', port: 53, fwmark: 0, scheduler: 'rr' },
    realServers: backends.map((address) => ({
      af: AF_INET,
      address,
      port: 5353,
      fwdMethod: IP_VS_CONN_F.MASQ,
      weight: 1,
    })),
    owner: 'kube-system/dns:dns',
    kind: 'ClusterIP',
  };
}
function plan(vss: DesiredVirtualServer[], extra: Partial<ServicePortPlan> = {}): ServicePortPlan {
  return {
    key: 'kube-system/dns:dns/ipv4',
    family: 'ipv4',
    frontends: vss.map((v) => ({
      key: virtualServerKey(v.vs),
      virtualServer: v,
      field: 'spec.clusterIPs',
      boundAddress: v.vs.address,
      ipsetEntries: [],
    })),
    portEntries: [],
    localEndpoints: 0,
    noLocalEndpoints: { internal: false, external: false },
    refusals: [],
    ...extra,
  };
}

describe('BoundAddresses', () => {
  it('binds what is wanted, unbinds the rest, counts one link op each, and binds nothing before a read', async () => {
    const link = new FakeLink();
    const dummy = link.seedLink('kube-ipvs0', 'dummy');
    const bound = new BoundAddresses({ link, log: quiet });
    const counts = { linkOps: 0 };
    expect(await bound.sync(new Set(['10.96.0.10']), counts)).toBe(false);
    expect(counts.linkOps).toBe(0);
    bound.observed(dummy.index, new Set(['10.96.0.99']));
    expect(await bound.sync(new Set(['10.96.0.10', '10.96.0.11']), counts)).toBe(false);
    expect(counts.linkOps).toBe(3);
    expect(bound.list()).toEqual(['10.96.0.10', '10.96.0.11']);
    expect(
      (await link.listAddresses('ipv4'))
        .filter((a) => a.ifindex === dummy.index)
        .map((a) => a.address)
        .sort(),
    ).toEqual(['10.96.0.10', '10.96.0.11']);
  });

  it('a refused bind is not remembered and asks for a full sync', async () => {
    const link = new FakeLink();
    const bound = new BoundAddresses({ link, log: quiet });
    bound.observed(999, new Set()); // kube-ipvs0 went away behind our back
    expect(await bound.sync(new Set(['10.96.0.10']), { linkOps: 0 })).toBe(true);
    expect(bound.size).toBe(0);
  });
});

describe('ConntrackCleanup', () => {
  it('a UDP virtual server that lost a real server has its flows to it deleted after the sync, once', async () => {
    const ct = new FakeConntrack();
    const cleanup = new ConntrackCleanup({ conntrack: ct, log: quiet });
    const flow = (client: number, backend: string) => ({
      family: 'ipv4' as const,
      protocol: IPPROTO_UDP,
      orig: { src: '192.0.2.7', dst: '10.96.0.10', srcPort: client, dstPort: 53 },
      reply: { src: backend, dst: '192.0.2.7', srcPort: 5353, dstPort: client },
    });
    ct.add(flow(1001, '10.244.1.2'));
    ct.add(flow(1002, '10.244.1.3'));
    cleanup.replanned([udpVs('10.244.1.2', '10.244.1.3')], [udpVs('10.244.1.3')]);
    expect(cleanup.hasPending).toBe(true);
    const counts = { conntrackOps: 0, conntrackDeleted: 0 };
    expect(await cleanup.clean([udpVs('10.244.1.3')], counts)).toBe(1);
    expect(counts).toEqual({ conntrackOps: 2, conntrackDeleted: 1 });
    expect(ct.all().map((f) => f.orig.srcPort)).toEqual([1002]);
    expect(cleanup.hasPending).toBe(false);
  });

  it('without a conntrack table nothing is ever pending', () => {
    const cleanup = new ConntrackCleanup({ log: quiet });
    cleanup.replanned([udpVs('10.244.1.2')], [udpVs('10.244.1.3')]);
    expect(cleanup.hasPending).toBe(false);
  });
});

describe('DesiredState', () => {
  const NO_FACTS: FrontendFacts = { excludeCIDRs: [], foreign: () => undefined };
  // the planService stubs below plan without reading the Service
  const NO_OBJECTS: TrackedService = { ports: [], refusals: [] };

  it("a re-plan replaces the Service's plans in the index, counts no-local ports, and tells what changed", () => {
    let next: ServicePortPlan[] = [
      plan([udpVs('10.244.1.2')], { noLocalEndpoints: { internal: true, external: false } }),
    ];
    const seen: string[] = [];
    const d = new DesiredState(
      {
        planService: () => ({ ports: [], plans: next }),
        facts: NO_FACTS,
        replanned: (before, after) => seen.push(`${before.length}->${after.length}`),
        refused: (name, refusals) => seen.push(`${name} refused ${refusals.length}`),
      },
      ['ipv4'],
    );
    const touched = new Set<string>();
    d.replan('kube-system/dns', NO_OBJECTS, touched);
    const key = virtualServerKey(udpVs().vs);
    expect([...touched]).toEqual([key]);
    expect(d.virtualServer(key)?.realServers.map((r) => r.address)).toEqual(['10.244.1.2']);
    expect(d.noLocalEndpoints).toEqual({ internal: 1, external: 0 });
    expect(d.index.claimed(key)).toBe(true);
    next = [];
    d.replan('kube-system/dns', NO_OBJECTS, touched);
    expect(d.virtualServer(key)).toBeUndefined();
    expect(d.index.claimed(key)).toBe(false);
    expect(d.plans.size).toBe(0);
    expect(d.noLocalEndpoints).toEqual({ internal: 0, external: 0 });
    expect(seen).toEqual(['0->1', 'kube-system/dns refused 0', '1->0', 'kube-system/dns refused 0']);
  });

  it('a foreign frontend is withheld from its Service and given back by a re-guard, with no re-plan', () => {
    const foreign = new Map<string, string>();
    let plans = 0;
    const told: string[] = [];
    const given: string[] = [];
    const d = new DesiredState(
      {
        planService: () => (plans++, { ports: [], plans: [plan([udpVs('10.244.1.2')])] }),
        facts: { excludeCIDRs: [], foreign: (k) => foreign.get(k) },
        replanned: (_before, after) => given.push(after.map((v) => v.vs.address).join()),
        refused: (name, refusals) => told.push(`${name}: ${refusals.map((r) => r.eventReason).join()}`),
      },
      ['ipv4'],
    );
    const key = virtualServerKey(udpVs().vs);
    foreign.set(key, 'keepalived');
    d.replan('kube-system/dns', NO_OBJECTS, new Set());
    expect(d.virtualServer(key)).toBeUndefined();
    expect(d.index.claimed(key)).toBe(true);
    expect(d.index.boundAddresses()).toEqual(new Set());
    expect(told).toEqual(['kube-system/dns: ForeignVirtualServer']);
    expect(given).toEqual(['']);
    // nothing changed: nothing touched, nobody told
    const touched = new Set<string>();
    d.reguard([key], touched);
    expect(touched.size).toBe(0);
    foreign.delete(key);
    d.reguard([key], touched);
    expect([...touched]).toEqual([key]);
    expect(d.virtualServer(key)?.vs.address).toBe('10.96.0.10');
    expect(d.index.boundAddresses()).toEqual(new Set(['10.96.0.10']));
    expect(told).toEqual(['kube-system/dns: ForeignVirtualServer', 'kube-system/dns: ']);
    // the conntrack cleanup hears of the virtual server just given
    expect(given).toEqual(['', '10.96.0.10']);
    expect(plans).toBe(1);
  });
});

describe('RefusalReports', () => {
  it("says a Service's refusals once, again only when they change", () => {
    const events: string[] = [];
    const r = new RefusalReports({
      log: quiet,
      events: { warn: (_ref, reason, msg) => events.push(`${reason}: ${msg}`) },
    });
    const refusal: Refusal = {
      kind: 'Service',
      namespace: 'ns',
      name: 'a',
      field: 'spec.ports[0].port',
      value: '0',
      reason: 'out of range; the port is ignored',
    } as Refusal;
    r.refusalsOf('ns/a', [refusal]);
    r.refusalsOf('ns/a', [refusal]);
    expect(events).toHaveLength(1);
    r.refusalsOf('ns/a', []);
    r.refusalsOf('ns/a', [refusal]);
    expect(events).toHaveLength(2);
  });

  it('says nothing for a virtual server only one service port claims', () => {
    const events: string[] = [];
    const r = new RefusalReports({ log: quiet, events: { warn: (_ref, reason) => events.push(reason) } });
    r.conflictsOf(new DesiredIndex(['ipv4']), ['ipv4/6/10.96.0.10:80']);
    expect(events).toEqual([]);
  });
});

describe("one sync's figures", () => {
  it('laps add up to the time spent, and restartLap leaves a gap uncharged', () => {
    const clock = new FakeClock();
    const run = newSyncRun(clock, () => true);
    expect(run.full).toBe(true);
    clock.spend(5);
    run.lap('node');
    clock.spend(7);
    run.lap('plan');
    clock.spend(100);
    run.restartLap();
    clock.spend(3);
    run.lap('plan');
    expect(run.phasesMs).toEqual({ node: 5, plan: 10 });
  });

  it('drift is the ops beyond those the tracked state expected', () => {
    const vs: VirtualServerSpec = {
      af: AF_INET,
      protocol: IPPROTO_TCP,
      address: '10.96.0.10',
      port: 80,
      fwmark: 0,
      scheduler: 'rr',
    };
    const a = { kind: 'newService' as const, vs };
    const b = { kind: 'delService' as const, vs: { ...vs, port: 81 } };
    expect(driftOps([a, b], [a])).toEqual([b]);
  });

  it('totals add up over syncs; the last full and partial are kept apart', () => {
    const f = new SyncFigures();
    const result = (full: boolean, ipvsWrites: number): SyncResult => ({
      full,
      replanned: 0,
      ipvsWrites,
      ipvsReads: 0,
      ipvsFailures: 0,
      linkOps: 0,
      execs: 1,
      conntrackOps: 0,
      conntrackDeleted: 0,
      durationMs: 2,
      phasesMs: {},
    });
    f.record(result(true, 3), 0);
    f.record(result(false, 1), 1000);
    expect(f.totals).toMatchObject({ syncs: 2, fullSyncs: 1, ipvsWrites: 4, execs: 2 });
    expect(f.lastFull).toEqual({
      at: new Date(0).toISOString(),
      durationMs: 2,
      ipvsWrites: 3,
      ipvsFailures: 0,
      execs: 1,
    });
    expect(f.lastPartial?.at).toBe(new Date(1000).toISOString());
    expect(f.lastResult?.full).toBe(false);
  });
});
