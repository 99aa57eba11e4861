// The proxier over the kernel fakes (FakeIpvs, FakeLink, FakeIpset, FakeIptables), the real
// trackers and planner, and a fake clock: exact op and exec counts per sync, retries,
// graceful termination, adoption and drift repair. (The same behaviours against the real
// kernel, as a process: spec/vm/daemon.vm.test.ts.)
//
// Addresses (testkit/builders.ts): ClusterIPs 10.96.0.0/12, pods 10.244.0.0/16, this
// node 192.0.2.1 on eth0, foreign services on 192.0.2.1:80/443.
import { constants as osConstants } from 'node:os';
import { NetlinkError } from '../../lib/errors';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { FakeLink } from '../../testkit/kernel/fake-link';
import { FakeIpset } from '../../testkit/kernel/fake-ipset';
import { KUBE_IPVS0 } from '../../lib/kernel/link/link';
import { planServicePort } from '../../lib/plan/plan-service-port';
import { planFamilyState } from '../../lib/plan/plan-desired-state';
import { NodeState, Planner, ProxierSettings, SyncResult } from '../../lib/proxier/proxier';
import { ServiceHealthSink } from '../../lib/proxier/service-health';
import { DesiredIndex } from '../../lib/proxier/desired-index';
import { FAKE_SETTINGS, proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { formatServiceEntry } from '../../lib/cli/ipvsadm/format-list';
import { DEFAULT_FORMAT } from '../../lib/cli/ipvsadm/parse-args';
import { VirtualServerEntry } from '../../lib/kernel/ipvs/ipvs';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';

const E = osConstants.errno;

const NODE = 'node-a';

/** `ipvsadm -Sn` lines of a table (services in key order, each followed by its real servers). */
function formatRestore(entries: readonly VirtualServerEntry[]): string[] {
  const fmt = { ...DEFAULT_FORMAT, rule: true, numeric: true };
  return [...entries]
    .sort((a, b) => (a.vs.address + a.vs.port < b.vs.address + b.vs.port ? -1 : 1))
    .flatMap((e) =>
      formatServiceEntry({ vs: e.vs, dests: [...e.dests].sort((x, y) => (x.address < y.address ? -1 : 1)) }, fmt)
        .split('\n')
        .filter(Boolean),
    );
}

// the fakes' settings, with a second cluster excluded (multi-CNI)
const SETTINGS: ProxierSettings = { ...FAKE_SETTINGS, excludeClusterCIDRs: ['10.245.0.0/16'] };

function clusterIP(name: string, ip: string, annotations: Record<string, string> = {}): V1Service {
  return makeService('default', name, (s) => {
    s.metadata!.annotations = annotations;
    s.spec = { type: 'ClusterIP', clusterIP: ip, clusterIPs: [ip], ports: [svcPort('http', 80)] };
  });
}
function endpoints(svc: string, ...ips: string[]): V1EndpointSlice {
  return makeEndpointSlice('default', svc, `${svc}-1`, (sl) => {
    sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
    sl.endpoints = ips.map((ip) => ({ addresses: [ip], conditions: { ready: true }, nodeName: 'node-b' }));
  });
}

async function setup(
  opts: {
    schedulers?: string[];
    proc?: boolean;
    ipvs?: FakeIpvs;
    link?: FakeLink;
    ipset?: FakeIpset;
    serviceHealth?: ServiceHealthSink;
    settings?: Partial<ProxierSettings>;
    planner?: Planner;
    readGeneration?: boolean;
    node?: Partial<NodeState>;
  } = {},
) {
  const { proc, settings, ...rest } = opts;
  const t = await proxierOverFakes({
    ...rest,
    settings: { ...SETTINGS, ...settings },
    ...(proc ? { proc: 'listed' } : {}),
  });
  const addService = (s: V1Service, sl?: V1EndpointSlice) => (sl ? t.add(s, sl) : t.add(s));
  return { ...t, addService };
}

const last = (rs: SyncResult[]) => {
  const r = rs[rs.length - 1]!;
  return { full: r.full, ipvsWrites: r.ipvsWrites, ipvsFailures: r.ipvsFailures, execs: r.execs, linkOps: r.linkOps };
};

describe('Proxier over the kernel fakes', () => {
  it('initial sync, no-change sync, one endpoint change, one service added: exact op and exec counts', async () => {
    const t = await setup();
    t.services.onAdd(clusterIP('web', '10.96.0.10'));
    t.slices.onAdd(endpoints('web', '10.244.1.2', '10.244.1.3'));
    t.services.onAdd(clusterIP('api', '10.96.0.11'));
    t.slices.onAdd(endpoints('api', '10.244.2.2'));
    await t.start();
    // 2 VS + 3 RS; kube-ipvs0 created (lookup, add, lookup) + 2 address dumps + 2 binds;
    // ipset: the netlink read (no exec) + one restore, and the ownership record's one write (its
    // create and members, before the IPVS creates); iptables: save nat + save filter + one restore
    expect(last(t.results)).toEqual({ full: true, ipvsWrites: 5, ipvsFailures: 0, execs: 5, linkOps: 7 });
    expect(formatRestore(await t.ipvs.listAll())).toEqual([
      '-A -t 10.96.0.10:80 -s rr',
      '-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1',
      '-a -t 10.96.0.10:80 -r 10.244.1.3:8080 -m -w 1',
      '-A -t 10.96.0.11:80 -s rr',
      '-a -t 10.96.0.11:80 -r 10.244.2.2:8080 -m -w 1',
    ]);
    const kipvs = await t.link.getLink(KUBE_IPVS0);
    expect((await t.link.listAddresses('ipv4')).filter((a) => a.ifindex === kipvs.index).map((a) => a.address)).toEqual(
      ['10.96.0.10', '10.96.0.11'],
    );

    // an update that changes nothing the proxy uses
    const relabelled = clusterIP('web', '10.96.0.10');
    relabelled.metadata!.labels = { team: 'blue' };
    t.services.onUpdate(clusterIP('web', '10.96.0.10'), relabelled);
    t.proxier.sync();
    await t.settle();
    expect(last(t.results)).toEqual({ full: false, ipvsWrites: 0, ipvsFailures: 0, execs: 0, linkOps: 0 });

    // one endpoint replaced: one new real server, the old one drains (TCP): 2 writes, no exec
    t.slices.onUpdate(endpoints('web', '10.244.1.2', '10.244.1.3'), endpoints('web', '10.244.1.2', '10.244.1.4'));
    t.proxier.sync();
    await t.settle();
    expect(last(t.results)).toEqual({ full: false, ipvsWrites: 2, ipvsFailures: 0, execs: 0, linkOps: 0 });
    expect(formatRestore(await t.ipvs.listAll())).toContain('-a -t 10.96.0.10:80 -r 10.244.1.3:8080 -m -w 0');

    // one Service added: VS + RS, one bind, one ipset restore (CLUSTER-IP and IPVS-IPS members),
    // and the record's member written before the create
    t.addService(clusterIP('db', '10.96.0.12'), endpoints('db', '10.244.3.2'));
    await t.settle();
    expect(last(t.results)).toEqual({ full: false, ipvsWrites: 2, ipvsFailures: 0, execs: 2, linkOps: 1 });
    expect(t.ipset.restores.at(-1)).toBe('add KUBE-IPVS-OWNED 10.96.0.12,tcp:80 comment "rr/0x0000/0"\n');
  });

  it("every sync holds the informers' intake gate from before its first kernel op to after its last, a failed one too", async () => {
    const seen: string[] = [];
    let held = false;
    const intakeGate = {
      hold: () => {
        held = true;
        seen.push('hold');
      },
      release: () => {
        held = false;
        seen.push('release');
      },
    };
    const t = await proxierOverFakes({ settings: SETTINGS, intakeGate });
    const run = t.ipvs.run.bind(t.ipvs);
    let fail = false;
    t.ipvs.run = async (ops) => {
      seen.push(`ipvs ${ops.length}${held ? ' held' : ''}`);
      if (fail) throw new Error('netlink socket closed');
      return run(ops);
    };
    t.add(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2'));
    await t.start();
    expect(seen).toEqual(['hold', 'ipvs 2 held', 'release']);
    seen.length = 0;
    fail = true;
    t.replaceSlice(endpoints('web', '10.244.1.2'), endpoints('web', '10.244.1.3'));
    await t.settle();
    expect(seen).toEqual(['hold', 'ipvs 2 held', 'release']);
    expect(t.results.at(-1)!.ipvsWrites).toBe(2);
    t.proxier.stop();
  });

  it('a no-change full sync starts no ipset process: the sets are read over netlink (issue 9)', async () => {
    const t = await setup();
    t.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2', '10.244.1.3'));
    await t.start();
    const restores = t.ipset.restores.length;
    await t.settle(SETTINGS.syncPeriodMs);
    expect(last(t.results).full).toBe(true);
    // the two execs are iptables-save nat + filter (the full sync verifies the rules); an
    // `ipset save` coming back would make it 3
    expect(last(t.results)).toEqual({ full: true, ipvsWrites: 0, ipvsFailures: 0, execs: 2, linkOps: 3 });
    expect({ saves: t.ipset.saves, lists: t.ipset.lists, restores: t.ipset.restores.length - restores }).toEqual({
      saves: 0,
      lists: 2,
      restores: 0,
    });
  });

  // its tables (each family's virtual servers, sets, chains, kube-ipvs0): spec/golden/cases/dual-stack.yaml
  it('dual-stack: one Service, both families: one netlink read and one record write serve both (exec and op counts)', async () => {
    const { ipset, services, slices, results, start } = await setup({
      link: new FakeLink(),
      node: { nodeIPs: [] },
      settings: { families: ['ipv4', 'ipv6'], clusterCIDRs: ['10.244.0.0/16', '2001:db8:244::/64'] },
    });
    services.onAdd(
      makeService('default', 'web', (s) => {
        s.spec = {
          type: 'ClusterIP',
          ipFamilies: ['IPv4', 'IPv6'],
          clusterIP: '10.96.0.10',
          clusterIPs: ['10.96.0.10', '2001:db8:96::10'],
          ports: [svcPort('http', 80)],
        };
      }),
    );
    slices.onAdd(endpoints('web', '10.244.1.2'));
    slices.onAdd(
      makeEndpointSlice('default', 'web', 'web-v6', (sl) => {
        sl.addressType = 'IPv6';
        sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
        sl.endpoints = [{ addresses: ['2001:db8:244::2'], conditions: { ready: true }, nodeName: 'node-b' }];
      }),
    );
    await start();
    // one netlink read (no exec) serves both families: 2 restores, and one record write for both
    // (one Ipset); per family 2 iptables-save + 1 restore
    expect(results[0]).toMatchObject({ full: true, ipvsWrites: 4, ipvsFailures: 0, execs: 9 });
    expect({ saves: ipset.saves, lists: ipset.lists }).toEqual({ saves: 0, lists: 1 });
  });

  // dual-stack with one clusterCIDR (IPv4): spec/golden/cases/dual-stack-one-cluster-cidr.yaml

  it('counts service ports with a Local policy and no local endpoint, incrementally', async () => {
    const t = await setup();
    const local = (name: string, ip: string) =>
      makeService('default', name, (s) => {
        s.spec = {
          type: 'NodePort',
          clusterIP: ip,
          clusterIPs: [ip],
          externalTrafficPolicy: 'Local',
          ports: [svcPort('http', 80, 'TCP', 30000 + Number(ip.split('.')[3]))],
        };
      });
    t.addService(local('a', '10.96.0.21'), endpoints('a', '10.244.1.2')); // endpoint on node-b: none local
    t.addService(local('b', '10.96.0.22'), endpoints('b', '10.244.1.3'));
    await t.start();
    expect(t.proxier.noLocalEndpoints).toEqual({ internal: 0, external: 2 });
    t.services.onDelete(local('b', '10.96.0.22'));
    t.proxier.sync();
    await t.settle();
    expect(t.proxier.noLocalEndpoints).toEqual({ internal: 0, external: 1 });
  });

  it('graceful termination: a drained TCP real server is deleted at the next drain check; one that comes back gets weight 1', async () => {
    const t = await setup();
    t.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2', '10.244.1.3'));
    await t.start();
    t.slices.onUpdate(endpoints('web', '10.244.1.2', '10.244.1.3'), endpoints('web', '10.244.1.2'));
    t.proxier.sync();
    await t.settle();
    expect(formatRestore(await t.ipvs.listAll())).toContain('-a -t 10.96.0.10:80 -r 10.244.1.3:8080 -m -w 0');
    // back before the drain check: SET_DEST weight 1, never deleted
    t.slices.onUpdate(endpoints('web', '10.244.1.2'), endpoints('web', '10.244.1.2', '10.244.1.3'));
    t.proxier.sync();
    await t.settle();
    expect(t.ipvs.applied.slice(-1)).toEqual([
      expect.objectContaining({ kind: 'setDest', rs: expect.objectContaining({ address: '10.244.1.3', weight: 1 }) }),
    ]);
    // gone again; no connections on the fake, so the drain check 15 s later deletes it
    t.slices.onUpdate(endpoints('web', '10.244.1.2', '10.244.1.3'), endpoints('web', '10.244.1.2'));
    t.proxier.sync();
    await t.settle();
    await t.settle(15_000);
    expect(formatRestore(await t.ipvs.listAll())).not.toContain('-a -t 10.96.0.10:80 -r 10.244.1.3:8080 -m -w 0');
    expect(t.ipvs.applied.slice(-1)).toEqual([expect.objectContaining({ kind: 'delDest' })]);
  });

  it('a wave of terminations is drained in bounded batches (16 virtual servers per sync)', async () => {
    const t = await setup();
    const names = Array.from({ length: 40 }, (_, i) => `s${i}`);
    names.forEach((n, i) =>
      t.addService(clusterIP(n, `10.96.1.${i + 1}`), endpoints(n, `10.244.5.${i + 1}`, `10.244.6.${i + 1}`)),
    );
    await t.start();
    names.forEach((n, i) =>
      t.slices.onUpdate(endpoints(n, `10.244.5.${i + 1}`, `10.244.6.${i + 1}`), endpoints(n, `10.244.5.${i + 1}`)),
    );
    t.proxier.sync();
    await t.settle();
    expect(last(t.results)).toMatchObject({ ipvsWrites: 40 }); // 40 x weight 0
    const before = t.results.length;
    await t.settle(15_000);
    await t.settle(1_000);
    const drains = t.results.slice(before).filter((r) => r.ipvsWrites > 0);
    expect(drains.map((r) => r.ipvsWrites)).toEqual([16, 16, 8]);
    expect(formatRestore(await t.ipvs.listAll()).filter((l) => l.endsWith('-w 0'))).toEqual([]);
  });

  it("a scheduler flag the Service's scheduler lacks: one log line and one Event, the Service programmed without it", async () => {
    const t = await setup({ settings: { scheduler: 'mh' } });
    // two ports: the refusal is said once for the Service, not once per port
    const svc = clusterIP('odd', '10.96.0.11', { 'kube-ipvs.io/scheduler-flags': 'sh-port,mh-fallback' });
    svc.spec!.ports = [svcPort('http', 80), svcPort('https', 443)];
    t.addService(svc);
    await t.start();
    expect(formatRestore(await t.ipvs.listAll()).sort()).toEqual([
      '-A -t 10.96.0.11:443 -s mh -b mh-fallback',
      '-A -t 10.96.0.11:80 -s mh -b mh-fallback',
    ]);
    expect(t.events).toEqual([
      "default/odd InvalidField: kube-ipvs ignored metadata.annotations[kube-ipvs.io/scheduler-flags] 'sh-port': a flag of the sh scheduler, and this Service's scheduler is mh; programmed without it",
    ]);
  });

  it('a scheduler flags change is one SET per virtual server: no delete, the draining real server kept', async () => {
    const t = await setup({ settings: { scheduler: 'mh' } });
    t.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2', '10.244.1.3'));
    await t.start();
    t.slices.onUpdate(endpoints('web', '10.244.1.2', '10.244.1.3'), endpoints('web', '10.244.1.2'));
    t.proxier.sync();
    await t.settle();
    const before = t.ipvs.applied.length;
    t.services.onUpdate(
      clusterIP('web', '10.96.0.10'),
      clusterIP('web', '10.96.0.10', { 'kube-ipvs.io/scheduler-flags': 'mh-fallback,mh-port' }),
    );
    t.proxier.sync();
    await t.settle();
    expect(t.ipvs.applied.slice(before).map((o) => o.kind)).toEqual(['setService']);
    expect(formatRestore(await t.ipvs.listAll())).toEqual([
      '-A -t 10.96.0.10:80 -s mh -b mh-fallback,mh-port',
      '-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1',
      '-a -t 10.96.0.10:80 -r 10.244.1.3:8080 -m -w 0',
    ]);
  });

  it('a scheduler the kernel lacks fails that Service only, with an Event, and is retried with backoff', async () => {
    const t = await setup({ schedulers: ['rr', 'lc'] });
    t.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2'));
    t.addService(
      clusterIP('odd', '10.96.0.11', { 'kube-ipvs.io/scheduler': 'nosuch' }),
      endpoints('odd', '10.244.1.3'),
    );
    await t.start();
    expect(formatRestore(await t.ipvs.listAll())).toEqual([
      '-A -t 10.96.0.10:80 -s rr',
      '-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1',
    ]);
    expect(t.events).toEqual([
      expect.stringMatching(/^default\/odd FailedToSyncIPVS: .*scheduler 'nosuch'.*ENOENT.*retrying in 1s$/),
    ]);
    const before = t.ipvs.applied.length;
    await t.settle(1_000);
    // the retry re-sends only that Service's ops (newService + newDest), fails again, backs off to 2 s
    expect(t.ipvs.applied.length).toBe(before);
    expect(last(t.results)).toMatchObject({ ipvsWrites: 2, ipvsFailures: 2 });
    expect(t.events[1]).toMatch(/retrying in 2s$/);
    // fixed by the user: programmed on the next change
    t.services.onUpdate(
      clusterIP('odd', '10.96.0.11', { 'kube-ipvs.io/scheduler': 'nosuch' }),
      clusterIP('odd', '10.96.0.11', { 'kube-ipvs.io/scheduler': 'lc' }),
    );
    t.proxier.sync();
    await t.settle();
    expect(formatRestore(await t.ipvs.listAll())).toContain('-A -t 10.96.0.11:80 -s lc');
  });

  it('adopts a programmed kernel after a restart with no write, and deletes only what it owns', async () => {
    const t = await setup();
    t.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2'));
    t.addService(clusterIP('gone', '10.96.0.11'), endpoints('gone', '10.244.1.3'));
    await t.start();
    // a foreign service on the node address (keepalived)
    const foreign = { af: AF_INET, protocol: IPPROTO_TCP, address: '192.0.2.1', port: 443, fwmark: 0 } as const;
    await t.ipvs.apply({ kind: 'newService', vs: { ...foreign, scheduler: 'wlc' } });
    const writesBefore = t.ipvs.applied.length;

    // restart with the same objects: nothing written
    const same = await setup({ ipvs: t.ipvs, link: t.link, ipset: t.ipset });
    same.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2'));
    same.addService(clusterIP('gone', '10.96.0.11'), endpoints('gone', '10.244.1.3'));
    await same.start();
    expect(last(same.results)).toMatchObject({ full: true, ipvsWrites: 0 });
    expect(t.ipvs.applied.length).toBe(writesBefore);

    // restart after `gone` was deleted meanwhile: its VS goes, the foreign one stays
    const later = await setup({ ipvs: t.ipvs, link: t.link, ipset: t.ipset });
    later.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2'));
    await later.start();
    expect(last(later.results)).toMatchObject({ full: true, ipvsWrites: 1 });
    // the foreign virtual server is in the kernel, not in kube-ipvs's counts
    expect(later.proxier.counts()).toEqual({ virtualServers: 1, realServers: 1, draining: 0, boundAddresses: 1 });
    expect(formatRestore(await t.ipvs.listAll())).toEqual([
      '-A -t 10.96.0.10:80 -s rr',
      '-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1',
      '-A -t 192.0.2.1:443 -s wlc',
    ]);
  });

  it('a Node change (zone label) re-plans at once with the new zone, not at the next full sync', async () => {
    const t = await setup();
    const hinted = makeEndpointSlice('default', 'web', 'web-1', (sl) => {
      sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
      sl.endpoints = [
        {
          addresses: ['10.244.1.2'],
          conditions: { ready: true },
          nodeName: 'node-b',
          hints: { forZones: [{ name: 'zone-a' }] },
        },
        {
          addresses: ['10.244.1.3'],
          conditions: { ready: true },
          nodeName: 'node-c',
          hints: { forZones: [{ name: 'zone-b' }] },
        },
      ];
    });
    t.addService(clusterIP('web', '10.96.0.10'), hinted);
    await t.start();
    // no zone on the node: hints are not used, both endpoints
    expect(formatRestore(await t.ipvs.listAll()).filter((l) => l.startsWith('-a'))).toHaveLength(2);
    t.proxier.onNodeChange({ name: NODE, zone: 'zone-a', nodeIPs: ['192.0.2.1'], podCIDRs: [] });
    await t.settle();
    expect(t.results[t.results.length - 1]!.full).toBe(false);
    expect(formatRestore(await t.ipvs.listAll())).toEqual([
      '-A -t 10.96.0.10:80 -s rr',
      '-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1',
      '-a -t 10.96.0.10:80 -r 10.244.1.3:8080 -m -w 0',
    ]);
  });

  it("binds a cold node's VIPs in one batch; one the kernel refuses is bound by the next full sync, the rest at once", async () => {
    const link = new FakeLink();
    await link.addDummy('eth0');
    await link.addAddress((await link.getLink('eth0')).index, '192.0.2.1');
    const batches: number[] = [];
    const addAddresses = link.addAddresses.bind(link);
    link.addAddresses = async (index, addresses) => (batches.push(addresses.length), addAddresses(index, addresses));
    const add = link.addAddress.bind(link);
    let refuse = true;
    link.addAddress = async (index, address) => {
      if (refuse && address === '10.96.1.7')
        throw new NetlinkError(E.ENOSPC, 'add address', `${address}/32`, 'no space');
      return add(index, address);
    };
    const t = await setup({ link });
    for (let i = 0; i < 100; i++) t.services.onAdd(clusterIP(`s${i}`, `10.96.1.${i}`));
    await t.start();
    expect(batches).toEqual([100]);
    const kipvs = await t.link.getLink(KUBE_IPVS0);
    const bound = async () =>
      (await t.link.listAddresses('ipv4')).filter((a) => a.ifindex === kipvs.index).map((a) => a.address);
    expect(await bound()).toHaveLength(99);
    expect(await bound()).not.toContain('10.96.1.7');
    expect(last(t.results).linkOps).toBe(3 + 2 + 100);
    refuse = false;
    await t.settle(SETTINGS.syncPeriodMs);
    expect(batches).toEqual([100, 1]);
    expect(await bound()).toHaveLength(100);
  });

  it('repairs drift on the periodic full sync', async () => {
    const t = await setup();
    t.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2'));
    await t.start();
    const vs = { af: AF_INET, protocol: IPPROTO_TCP, address: '10.96.0.10', port: 80, fwmark: 0 } as const;
    await t.ipvs.apply({ kind: 'delDest', vs, rs: { af: AF_INET, address: '10.244.1.2', port: 8080 } });
    await t.settle(30_000);
    expect(last(t.results)).toMatchObject({ full: true, ipvsWrites: 1 });
    expect(t.proxier.totals.driftRepairs).toBe(1);
    expect(formatRestore(await t.ipvs.listAll())).toContain('-a -t 10.96.0.10:80 -r 10.244.1.2:8080 -m -w 1');
  });

  it('iptables-nft: a full sync with nothing committed since runs no iptables process; a foreign flush is read and repaired by the next one', async () => {
    const fullSyncExecs = async (readGeneration: boolean) => {
      const t = await setup({ readGeneration });
      t.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.1.2'));
      await t.start();
      const [saves, restores] = [t.iptables.saves, t.iptables.restores.length];
      await t.settle(30_000);
      expect(last(t.results)).toMatchObject({ full: true, ipvsWrites: 0 });
      return {
        t,
        execs: last(t.results).execs,
        iptables: t.iptables.saves - saves + t.iptables.restores.length - restores,
      };
    };
    const legacy = await fullSyncExecs(false);
    expect(legacy.iptables).toBe(2);
    const nft = await fullSyncExecs(true);
    expect(nft.iptables).toBe(0);
    expect(nft.execs).toBe(legacy.execs - 2);
    // with the ipsets read over netlink too, a no-change full sync starts no process at all
    expect(nft.execs).toBe(0);

    const t = nft.t;
    const nat = await t.iptables.save('nat');
    t.iptables.applyRestore('*nat\n-F KUBE-SERVICES\nCOMMIT\n', true);
    const [saves, restores] = [t.iptables.saves, t.iptables.restores.length];
    await t.settle(30_000);
    expect([t.iptables.saves - saves, t.iptables.restores.length - restores]).toEqual([2, 1]);
    expect(await t.iptables.save('nat')).toBe(nat);
    // the repair was our own commits only: the next full sync runs nothing again
    const after = [t.iptables.saves, t.iptables.restores.length];
    await t.settle(30_000);
    expect([t.iptables.saves, t.iptables.restores.length]).toEqual(after);
  });

  it('with /proc/net/ip_vs a full sync costs one netlink read (the service dump), not one more per virtual server, and still repairs drift', async () => {
    const reads = async (proc: boolean) => {
      const t = await setup({ proc });
      for (let i = 0; i < 5; i++)
        t.addService(clusterIP(`s${i}`, `10.96.0.${10 + i}`), endpoints(`s${i}`, `10.244.1.${2 + i}`));
      await t.start();
      const vs = { af: AF_INET, protocol: IPPROTO_TCP, address: '10.96.0.12', port: 80, fwmark: 0 } as const;
      await t.ipvs.apply({
        kind: 'setDest',
        vs,
        rs: { af: AF_INET, address: '10.244.1.4', port: 8080, fwdMethod: 0, weight: 7 },
      });
      await t.settle(30_000);
      const r = t.results[t.results.length - 1]!;
      expect([r.full, r.ipvsWrites, t.proxier.totals.driftRepairs]).toEqual([true, 1, 1]);
      expect(formatRestore(await t.ipvs.listAll())).toContain('-a -t 10.96.0.12:80 -r 10.244.1.4:8080 -m -w 1');
      return [t.results[0]!.ipvsReads, r.ipvsReads];
    };
    expect(await reads(false)).toEqual([1, 6]);
    expect(await reads(true)).toEqual([1, 1]);
  });

  it('the incremental index equals planFamilyState after a series of changes and re-guards', async () => {
    const t = await setup();
    const svcs = ['a', 'b', 'c', 'd'].map((n, i) => clusterIP(n, `10.96.0.${20 + i}`));
    svcs.forEach((s, i) => t.addService(s, endpoints(s.metadata!.name!, `10.244.${i}.2`)));
    await t.start();
    // d's ClusterIP is inside excludeCIDRs; a's becomes foreign, then is gone again
    const foreign = new Map<string, string>();
    const facts = { excludeCIDRs: ['10.96.0.23/32'], foreign: (k: string) => foreign.get(k) };
    const index = new DesiredIndex(['ipv4'], facts);
    const plans = new Map<string, ReturnType<typeof planServicePort>[]>();
    const ctx = {
      family: 'ipv4' as const,
      scheduler: 'rr',
      nodeName: NODE,
      nodeZone: '',
      nodePortAddresses: ['192.0.2.1'],
      localAddresses: new Set(['192.0.2.1']),
      nodeIPs: ['192.0.2.1'],
      excludeClusterCIDRs: [],
    };
    const replan = (name: string) => {
      const after = t.services.servicePorts(name).map((sp) => planServicePort(sp, t.slices.endpoints(sp), ctx));
      index.replace(plans.get(name) ?? [], after);
      plans.set(name, after);
    };
    const opts = { masqueradeBit: 14, masqueradeAll: false, randomFully: false };
    const same = () => {
      const want = planFamilyState([...plans.values()].flat(), 'ipv4', opts, new Map(), facts);
      expect([...index.virtualServers().entries()].sort()).toEqual([...want.virtualServers.entries()].sort());
      expect(new Map([...index.ipsets('ipv4')].map(([k, v]) => [k, [...v.members].sort()]))).toEqual(
        new Map([...want.ipsets].map(([k, v]) => [k, [...v.members].sort()])),
      );
      expect(index.iptables('ipv4', opts)).toEqual(want.iptables);
      expect([...index.boundAddresses()].sort()).toEqual([...want.boundAddresses]);
      return want;
    };
    for (const n of t.services.serviceNames()) replan(n);
    expect([...same().boundAddresses]).toEqual(['10.96.0.20', '10.96.0.21', '10.96.0.22']);
    // nothing changed: the same map (a full sync asks three times); a change: a new one, the
    // one handed out before left as it was
    const before = index.virtualServers();
    const boundBefore = index.boundAddresses();
    expect(index.virtualServers()).toBe(before);
    expect(index.boundAddresses()).toBe(boundBefore);
    const keysBefore = [...before.keys()];
    t.services.onDelete(svcs[1]!);
    replan('default/b');
    expect(index.virtualServers()).not.toBe(before);
    expect(index.boundAddresses()).not.toBe(boundBefore);
    expect([...before.keys()]).toEqual(keysBefore);
    expect([...boundBefore]).toEqual(['10.96.0.20', '10.96.0.21', '10.96.0.22']);
    t.slices.onUpdate(endpoints('c', '10.244.2.2'), endpoints('c', '10.244.2.2', '10.244.9.9'));
    replan('default/c');
    same();
    const a = 'TCP/10.96.0.20:80';
    foreign.set(a, 'keepalived');
    const touched = new Set<string>();
    expect(index.reguard([a], touched).services).toEqual(new Set(['default/a']));
    expect([...touched]).toEqual([a]);
    expect(index.virtualServer(a)).toBeUndefined();
    expect([...same().boundAddresses]).toEqual(['10.96.0.22']);
    // a re-plan of a withheld frontend's Service keeps it withheld, and touches nothing
    t.slices.onUpdate(endpoints('a', '10.244.0.2'), endpoints('a', '10.244.0.3'));
    replan('default/a');
    same();
    foreign.delete(a);
    index.reguard(undefined, touched);
    expect(index.virtualServer(a)?.realServers.map((r) => r.address)).toEqual(['10.244.0.3']);
    expect([...same().boundAddresses]).toEqual(['10.96.0.20', '10.96.0.22']);
  });
});

describe('Proxier feeding the HealthCheckNodePort servers', () => {
  /** Records what the proxier hands over; each call's map as a plain object. */
  class RecordingSink implements ServiceHealthSink {
    readonly calls: string[] = [];
    services: Record<string, number> = {};
    endpoints: Record<string, number> = {};
    syncServices(m: ReadonlyMap<string, number>): void {
      this.services = Object.fromEntries(m);
      this.calls.push('services');
    }
    syncEndpoints(m: ReadonlyMap<string, number>): void {
      this.endpoints = Object.fromEntries(m);
      this.calls.push('endpoints');
    }
    setNodePortAddresses(a: readonly string[] | undefined): void {
      this.calls.push(`addresses ${a?.join(',') ?? 'all'}`);
    }
  }
  /** A LoadBalancer Service (203.0.113.N) with externalTrafficPolicy `etp` and health check port hc. */
  const lb = (name: string, n: number, etp: 'Local' | 'Cluster', hc?: number) =>
    makeService('default', name, (s) => {
      s.spec = {
        type: 'LoadBalancer',
        clusterIP: `10.96.1.${n}`,
        clusterIPs: [`10.96.1.${n}`],
        externalTrafficPolicy: etp,
        ports: [svcPort('http', 80, 'TCP', 31000 + n)],
        ...(hc ? { healthCheckNodePort: hc } : {}),
      };
      s.status = { loadBalancer: { ingress: [{ ip: `203.0.113.${n}` }] } };
    });
  /** Endpoints `ip@node` (ready) or `ip@node!` (not ready). */
  const eps = (svc: string, ...specs: string[]) =>
    makeEndpointSlice('default', svc, `${svc}-1`, (sl) => {
      sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
      sl.endpoints = specs.map((spec) => {
        const [ip, node] = spec.replace('!', '').split('@') as [string, string];
        return { addresses: [ip], conditions: { ready: !spec.endsWith('!') }, nodeName: node };
      });
    });

  it("the informers' handlers: a change goes to its tracker and schedules a sync, an event that changes nothing does not; each sync hands over the trigger times of the slices it took in", async () => {
    const t = await setup();
    const web = clusterIP('web', '10.96.0.10');
    const slice = (at: string, ...ips: string[]) => {
      const s = endpoints('web', ...ips);
      s.metadata = { ...s.metadata, annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': at } };
      return s;
    };
    const first = slice('2026-11-27T10:00:00Z', '10.244.1.2');
    t.proxier.onServiceAdd(web);
    t.proxier.onEndpointSliceAdd(first);
    await t.start();
    expect(t.changes).toEqual(['service 1', 'endpoints 1']);
    expect(t.triggers).toEqual([[Date.parse('2026-11-27T10:00:00Z')]]);

    // the same Service again: no change, no sync
    t.proxier.onServiceUpdate(web, web);
    await t.settle(1000);
    expect(t.changes).toHaveLength(2);
    expect(t.results).toHaveLength(1);

    const second = slice('2026-11-27T10:00:05Z', '10.244.1.2', '10.244.1.3');
    t.proxier.onEndpointSliceUpdate(first, second);
    await t.settle(1000);
    expect(t.changes).toEqual(['service 1', 'endpoints 1', 'endpoints 1']);
    expect(t.triggers.at(-1)).toEqual([Date.parse('2026-11-27T10:00:05Z')]);
    expect(formatRestore(await t.ipvs.listAll())).toContain('-a -t 10.96.0.10:80 -r 10.244.1.3:8080 -m -w 1');
    // the next sync (the periodic one) took no slice in
    await t.settle(30_000);
    expect(t.triggers.at(-1)).toEqual([]);
  });

  it('trigger times are bounded by the slices (issue 39 item 8): 200,000 updates of two slices before a sync keep two, each its oldest', async () => {
    const t = await setup();
    const sliceAt = (name: string, ms: number) => {
      const s = makeEndpointSlice('default', 'web', name, (sl) => {
        sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
        sl.endpoints = [{ addresses: ['10.244.1.2'], conditions: { ready: true }, nodeName: 'node-b' }];
      });
      s.metadata!.annotations = { 'endpoints.kubernetes.io/last-change-trigger-time': new Date(ms).toISOString() };
      return s;
    };
    const base = Date.parse('2026-11-27T10:00:00Z');
    t.proxier.onServiceAdd(clusterIP('web', '10.96.0.10'));
    for (let i = 0; i < 100_000; i++) {
      t.proxier.onEndpointSliceAdd(sliceAt('web-a', base + i * 1000));
      t.proxier.onEndpointSliceAdd(sliceAt('web-b', base + 7 + i * 1000));
    }
    await t.start();
    expect(t.triggers).toEqual([[base, base + 7]]);
  });

  it('nodePortAddresses: the health check servers hear of the matching addresses once they are read, never of none before (a Node object first)', async () => {
    const sink = new RecordingSink();
    const t = await setup({ serviceHealth: sink, settings: { nodePortAddresses: ['192.0.2.0/24'] } });
    // the Node object arrives before the first sync has read the node's addresses
    t.proxier.onNodeChange({ name: NODE, zone: 'zone-a', nodeIPs: ['192.0.2.1'], podCIDRs: [] });
    expect(sink.calls).toEqual([]);
    await t.start();
    expect(sink.calls[0]).toBe('addresses 192.0.2.1');
    expect(sink.calls).not.toContain('addresses ');
  });

  it('after each sync: every Local LoadBalancer with a health check port, and its ready local endpoints; only re-planned Services are planned again', async () => {
    const sink = new RecordingSink();
    const planned: string[] = [];
    const planner: Planner = { planServicePort: (sp, e, ctx) => (planned.push(sp.name), planServicePort(sp, e, ctx)) };
    const t = await setup({ serviceHealth: sink, planner });
    t.addService(
      lb('two', 1, 'Local', 32001),
      eps('two', `10.244.1.2@${NODE}`, `10.244.1.3@${NODE}`, '10.244.1.4@node-b', `10.244.1.5@${NODE}!`),
    );
    t.addService(lb('none', 2, 'Local', 32002), eps('none', '10.244.2.2@node-b'));
    t.addService(lb('cluster', 3, 'Cluster', 32003), eps('cluster', `10.244.3.2@${NODE}`)); // eTP Cluster: no health check
    t.addService(clusterIP('web', '10.96.0.10'), endpoints('web', '10.244.4.2'));
    await t.start();
    // nodePortAddresses unset: every address; then both maps after the rules are applied
    expect(sink.calls).toEqual(['addresses all', 'services', 'endpoints']);
    expect(sink.services).toEqual({ 'default/two': 32001, 'default/none': 32002 });
    expect(sink.endpoints).toEqual({ 'default/two': 2 });

    // one local endpoint of `two` stops being ready: only `two` is planned again
    planned.length = 0;
    sink.calls.length = 0;
    t.slices.onUpdate(
      eps('two', `10.244.1.2@${NODE}`, `10.244.1.3@${NODE}`, '10.244.1.4@node-b', `10.244.1.5@${NODE}!`),
      eps('two', `10.244.1.2@${NODE}`, `10.244.1.3@${NODE}!`, '10.244.1.4@node-b'),
    );
    t.proxier.sync();
    await t.settle();
    expect(planned).toEqual(['two']);
    expect(sink.calls).toEqual(['services', 'endpoints']);
    expect(sink.endpoints).toEqual({ 'default/two': 1 });

    // `none` gets a local endpoint; `two` is deleted; `cluster` turns Local
    t.slices.onUpdate(eps('none', '10.244.2.2@node-b'), eps('none', `10.244.2.3@${NODE}`));
    t.services.onDelete(lb('two', 1, 'Local', 32001));
    t.services.onUpdate(lb('cluster', 3, 'Cluster', 32003), lb('cluster', 3, 'Local', 32003));
    t.proxier.sync();
    await t.settle();
    expect(sink.services).toEqual({ 'default/none': 32002, 'default/cluster': 32003 });
    expect(sink.endpoints).toEqual({ 'default/none': 1, 'default/cluster': 1 });

    // the periodic full sync re-plans everything and hands over the same (so does every
    // other sync, here the drain checks of the endpoints that went away)
    sink.calls.length = 0;
    const n = t.results.length;
    await t.settle(2 * SETTINGS.syncPeriodMs);
    expect(t.results.slice(n).filter((r) => r.full).length).toBeGreaterThanOrEqual(1);
    expect(sink.calls).toEqual(
      t.results.slice(n).flatMap((r) => [...(r.full ? ['addresses all'] : []), 'services', 'endpoints']),
    );
    expect(sink.services).toEqual({ 'default/none': 32002, 'default/cluster': 32003 });
    expect(sink.endpoints).toEqual({ 'default/none': 1, 'default/cluster': 1 });
  });

  it('nodePortAddresses narrows the addresses the servers listen on (the node IPs inside them)', async () => {
    const sink = new RecordingSink();
    const t = await setup({ serviceHealth: sink, settings: { nodePortAddresses: ['192.0.2.0/24'] } });
    t.addService(lb('two', 1, 'Local', 32001), eps('two', `10.244.1.2@${NODE}`));
    await t.start();
    expect(sink.calls).toEqual(['addresses 192.0.2.1', 'services', 'endpoints']);
    expect(sink.endpoints).toEqual({ 'default/two': 1 });
  });
});
