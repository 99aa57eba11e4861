// What a sync costs: where its time goes (SyncResult.phasesMs, logged with every "sync done":
// each kernel surface's time is charged to its own phase, the laps add up to the sync's
// duration, and the netfilter sync (ipsets, then iptables) runs beside the IPVS read, writes and
// binds; the fakes "take" time on the fake clock while they run), what a one-endpoint change
// touches, and what the periodic full sync re-plans.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';
import { FAKE_SETTINGS, proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { SyncResult } from '../../lib/proxier/proxier';

const web: V1Service = makeService('default', 'web', (s) => {
  s.spec = { clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [svcPort('http', 80)] };
});
const webSlice = (...ips: string[]): V1EndpointSlice =>
  makeEndpointSlice('default', 'web', 'web-1', (sl) => {
    sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
    sl.endpoints = ips.map((ip) => ({
      addresses: [ip],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: 'node-b',
    }));
  });

type Fakes = Awaited<ReturnType<typeof proxierOverFakes>>;

/** Wraps `o[method]` so that each call first runs `before` (and waits for what it returns). */
function around<T extends object, K extends keyof T>(o: T, method: K, before: (name: string) => Promise<void>): void {
  const f = (o[method] as (...a: unknown[]) => Promise<unknown>).bind(o);
  (o as Record<K, unknown>)[method] = async (...a: unknown[]) => {
    await before(String(method));
    return f(...a);
  };
}

/**
 * Fakes whose writes take time on the fake clock (a timer each, so that operations in flight
 * together overlap as they would): IPVS run 7 ms, ipset restore 11 ms, iptables restore 13 ms,
 * binding addresses 3 ms.
 */
async function slowFakes(): Promise<Fakes> {
  const t = await proxierOverFakes();
  const takes = (ms: number) => () => new Promise<void>((resolve) => t.clock.setTimer(resolve, ms));
  around(t.ipvs, 'run', takes(7));
  around(t.ipset, 'restore', takes(11));
  around(t.iptables, 'restore', takes(13));
  around(t.link, 'addAddresses', takes(3));
  return t;
}

/**
 * Marks the informers synced and runs what is due, without waiting for the sync to end (it
 * waits on timers, or on a held restore, that the test moves on).
 */
async function begin(t: Fakes): Promise<void> {
  t.proxier.onServicesSynced();
  t.proxier.onEndpointSlicesSynced();
  await t.clock.advance(0);
}

/** The laps: every phase but `ipsets` and `iptables`, the netfilter syncs' own times, which overlap others. */
const laps = (r: SyncResult) =>
  Object.entries(r.phasesMs).reduce((a, [k, v]) => (k === 'ipsets' || k === 'iptables' ? a : a + (v ?? 0)), 0);

describe('SyncResult.phasesMs', () => {
  it('a full sync charges each surface its own time; the ipset and iptables restores run beside the IPVS writes and binds', async () => {
    const t = await slowFakes();
    t.add(web, webSlice('10.244.1.2'));
    await begin(t);
    await t.settle(100);
    const r = t.proxier.lastResult!;
    expect(r.full).toBe(true);
    // the ownership record's write 0-11 ms (the creates' members, before them), IPVS 11-18 ms,
    // binds 18-21 ms; ipsets 0-11 ms, then iptables 11-24 ms: the sync waited 3 ms for them
    expect(r.phasesMs).toMatchObject({ ipvsWrite: 18, addresses: 3, ipsets: 11, iptables: 13, netfilterWait: 3 });
    expect(Object.keys(r.phasesMs).sort()).toEqual([
      'addresses',
      'draining',
      'healthCheck',
      'ipsets',
      'iptables',
      'ipvsRead',
      'ipvsWrite',
      'netfilterWait',
      'node',
      'plan',
    ]);
    expect(laps(r)).toBe(r.durationMs);
    expect(r.durationMs).toBe(24);
  });

  it('the netfilter restores run beside the IPVS read of a full sync too', async () => {
    const t = await slowFakes();
    t.add(web, webSlice('10.244.1.2'));
    await begin(t);
    await t.settle(100);
    // an IPVS read of 30 ms: the ipsets (0-11 ms) and iptables (11-24 ms) are done before it is;
    // one endpoint more, on this node (7 ms of IPVS writes; a KUBE-LOOP-BACK member, the set's
    // first, so iptables changes too), no VIP to bind: the periodic full sync, whose virtual
    // servers kube-ipvs made
    around(t.ipvs, 'listAll', () => new Promise<void>((resolve) => t.clock.setTimer(resolve, 30)));
    const local = webSlice('10.244.1.2', '10.244.1.3');
    local.endpoints![1]!.nodeName = 'node-a';
    t.slices.onUpdate(webSlice('10.244.1.2'), local);
    await t.settle(30_000);
    const r = t.proxier.lastResult!;
    expect(r.full).toBe(true);
    expect(r.phasesMs).toMatchObject({
      ipvsRead: 30,
      ipsets: 11,
      iptables: 13,
      ipvsWrite: 7,
      addresses: 0,
      netfilterWait: 0,
    });
    expect(laps(r)).toBe(r.durationMs);
    expect(r.durationMs).toBe(37);
  });

  it('a full sync that wants a virtual server of unknown ownership (no set names it yet) reads the table before the netfilter restores', async () => {
    const t = await slowFakes();
    // the cold start: web's VIP is in no set and kube-ipvs did not create it; the read (30 ms)
    // tells whether someone else did, before any ipset entry names it
    around(t.ipvs, 'listAll', () => new Promise<void>((resolve) => t.clock.setTimer(resolve, 30)));
    t.add(web, webSlice('10.244.1.2'));
    await begin(t);
    await t.settle(100);
    const r = t.proxier.lastResult!;
    expect(r.full).toBe(true);
    // read 0-30 ms; then ipsets 30-41, iptables 41-54 beside the record's write 30-41, IPVS
    // 41-48 and binds 48-51
    expect(r.phasesMs).toMatchObject({
      ipvsRead: 30,
      ipsets: 11,
      iptables: 13,
      ipvsWrite: 18,
      addresses: 3,
      netfilterWait: 3,
    });
    expect(laps(r)).toBe(r.durationMs);
    expect(r.durationMs).toBe(54);
  });

  it('a partial sync has no node or IPVS-read phase; one endpoint added costs only the IPVS write', async () => {
    const t = await slowFakes();
    const first = webSlice('10.244.1.2');
    t.add(web, first);
    await begin(t);
    await t.settle(100);
    t.replaceSlice(first, webSlice('10.244.1.2', '10.244.1.3'));
    await t.clock.advance(100);
    await t.proxier.idle();
    const r = t.proxier.lastResult!;
    expect(r.full).toBe(false);
    expect(r.phasesMs.node).toBeUndefined();
    expect(r.phasesMs.ipvsRead).toBeUndefined();
    expect(r.phasesMs.ipvsWrite).toBe(7);
    // the endpoint is remote: no member of any set changes, no VIP is bound, iptables text is the same
    expect(r.phasesMs).toMatchObject({ addresses: 0, ipsets: 0, netfilterWait: 0, iptables: 0 });
    expect(laps(r)).toBe(r.durationMs);
  });
});

describe('the ipset and iptables restores beside the IPVS writes', () => {
  /**
   * Holds every ipset restore of the netfilter sync until release() (the ownership record's
   * writes, which come before the IPVS ops they record, go through); records the order of the
   * kernel calls.
   */
  async function heldIpsets() {
    const t = await proxierOverFakes();
    const calls: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const restore = t.ipset.restore.bind(t.ipset);
    t.ipset.restore = async (text: string) => {
      if (/^(create|add|del) KUBE-IPVS-OWNED /.test(text)) {
        calls.push('record');
        return restore(text);
      }
      calls.push('restore start');
      await held;
      calls.push('restore end');
      return restore(text);
    };
    for (const [o, m] of [
      [t.ipvs, 'run'],
      [t.link, 'addAddresses'],
      [t.iptables, 'restore'],
    ] as const) {
      around(o as object, m as never, async (name) => void calls.push(name));
    }
    return { t, calls, release };
  }

  it('iptables, whose rules name the sets, is restored only after the ipsets are', async () => {
    const { t, calls, release } = await heldIpsets();
    t.add(web, webSlice('10.244.1.2'));
    await begin(t);
    // the record's write, the IPVS writes and the binds went on while the restore was held;
    // iptables waits
    expect(calls).toEqual(['restore start', 'record', 'run', 'addAddresses']);
    expect(t.proxier.lastResult).toBeUndefined();
    release();
    await t.settle();
    expect(calls).toEqual(['restore start', 'record', 'run', 'addAddresses', 'restore end', 'restore']);
    expect(t.proxier.lastResult).toMatchObject({ full: true, ipvsFailures: 0 });
    expect((await t.ipset.observe()).get('KUBE-CLUSTER-IP')!.members).toEqual(new Set(['10.96.0.10,tcp:80']));
  });

  it('a socket failure in the IPVS writes: the sync ends only after the restore, and its retry completes', async () => {
    const { t, calls, release } = await heldIpsets();
    const run = t.ipvs.run;
    t.ipvs.run = () => Promise.reject(new Error('socket closed'));
    t.add(web, webSlice('10.244.1.2'));
    await begin(t);
    expect(calls).toEqual(['restore start', 'record']);
    expect(t.proxier.lastResult).toBeUndefined(); // still waiting for the restore
    release();
    await t.settle();
    // iptables depends on the plan alone: it is restored after the ipsets all the same
    expect(calls).toEqual(['restore start', 'record', 'restore end', 'restore']);
    expect(t.proxier.lastResult).toMatchObject({ full: true });
    expect(t.proxier.lastResult!.phasesMs.ipvsWrite).toBeUndefined();
    // the retry (a full sync after the backoff) programs the IPVS side; the sets and rules
    // already hold what it wants
    t.ipvs.run = run;
    await t.settle(5_000);
    expect(t.proxier.lastResult).toMatchObject({ full: true, ipvsFailures: 0 });
    // (the record already names the virtual server: no write before the create)
    expect(calls.slice(4)).toEqual(['run', 'addAddresses']);
    expect((await t.ipvs.listAll()).map((e) => e.vs.address)).toEqual(['10.96.0.10']);
  });
});

describe('a partial sync touches only what changed', () => {
  it('one remote endpoint replaced: no set diffed, no address compared, however many Services share the node', async () => {
    const t = await proxierOverFakes();
    let ipsetSyncs = 0;
    const sync = t.ipset.sync.bind(t.ipset);
    t.ipset.sync = (d) => {
      ipsetSyncs++;
      return sync(d);
    };
    let addressDumps = 0;
    const list = t.link.listAddresses.bind(t.link);
    t.link.listAddresses = (f) => {
      addressDumps++;
      return list(f);
    };
    const first = webSlice('10.244.1.2');
    t.add(web, first);
    await t.start();
    expect(ipsetSyncs).toBe(1);
    t.replaceSlice(first, webSlice('10.244.1.3'));
    await t.settle();
    // the cluster IP is both plans' (still bound, still a KUBE-CLUSTER-IP member): the sets
    // and kube-ipvs0's addresses are not looked at
    expect(t.proxier.lastResult).toMatchObject({ full: false, ipvsWrites: 2, execs: 0, linkOps: 0 });
    expect(ipsetSyncs).toBe(1);
    expect(addressDumps).toBe(2); // the first sync's two, none since
  });
});

describe('the periodic full sync', () => {
  const nodePort: V1Service = makeService('default', 'np', (s) => {
    s.spec = {
      type: 'NodePort',
      clusterIP: '10.96.0.20',
      clusterIPs: ['10.96.0.20'],
      ports: [svcPort('http', 80, 'TCP', 30080)],
    };
  });
  const npSlice = makeEndpointSlice('default', 'np', 'np-1', (sl) => {
    sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
    sl.endpoints = [
      { addresses: ['10.244.2.2'], conditions: { ready: true, serving: true, terminating: false }, nodeName: 'node-b' },
    ];
  });
  const vips = async (t: Awaited<ReturnType<typeof proxierOverFakes>>) =>
    (await t.ipvs.listAll()).map((e) => `${e.vs.address}:${e.vs.port}`).sort();

  it('re-reads the kernel and repairs it without re-planning unchanged Services', async () => {
    const t = await proxierOverFakes();
    t.add(web, webSlice('10.244.1.2'), nodePort, npSlice);
    await t.start();
    expect(t.proxier.lastResult).toMatchObject({ full: true, replanned: 2 });
    // drift: a real server deleted behind the proxier's back
    const [entry] = (await t.ipvs.listAll()).filter((e) => e.vs.address === '10.96.0.10');
    await t.ipvs.apply({ kind: 'delDest', vs: entry!.vs, rs: entry!.dests[0]! });
    await t.settle(31_000);
    expect(t.proxier.lastResult).toMatchObject({ full: true, replanned: 0, ipvsWrites: 1 });
    expect((await t.ipvs.listAll()).find((e) => e.vs.address === '10.96.0.10')!.dests.map((d) => d.address)).toEqual([
      '10.244.1.2',
    ]);
  });

  it("re-plans every Service when the node's addresses changed (a NodePort on the new address)", async () => {
    const t = await proxierOverFakes();
    t.add(web, webSlice('10.244.1.2'), nodePort, npSlice);
    await t.start();
    expect(await vips(t)).toEqual(['10.96.0.10:80', '10.96.0.20:80', '192.0.2.1:30080']);
    await t.link.addAddress((await t.link.getLink('eth0')).index, '192.0.2.9');
    await t.settle(31_000);
    expect(t.proxier.lastResult).toMatchObject({ full: true, replanned: 2 });
    expect(await vips(t)).toEqual(['10.96.0.10:80', '10.96.0.20:80', '192.0.2.1:30080', '192.0.2.9:30080']);
    // and the next full sync, with nothing changed, re-plans nothing again
    await t.settle(31_000);
    expect(t.proxier.lastResult).toMatchObject({ full: true, replanned: 0, ipvsWrites: 0 });
  });

  it('after a settings change: re-plans nothing when only the sync periods changed, everything when the scheduler did', async () => {
    const t = await proxierOverFakes();
    t.add(web, webSlice('10.244.1.2'), nodePort, npSlice);
    await t.start();
    t.proxier.updateSettings({ ...FAKE_SETTINGS, syncPeriodMs: 60_000 });
    await t.settle();
    expect(t.proxier.lastResult).toMatchObject({ full: true, replanned: 0, ipvsWrites: 0 });
    t.proxier.updateSettings({ ...FAKE_SETTINGS, syncPeriodMs: 60_000, scheduler: 'lc' });
    await t.settle();
    expect(t.proxier.lastResult).toMatchObject({ full: true, replanned: 2 });
    expect([...new Set((await t.ipvs.listAll()).map((e) => e.vs.scheduler))]).toEqual(['lc']);
  });

  it("after a change of the node's scheduler flags (ipvs.schedulerFlags): every Service re-planned, one SET per virtual server, nothing deleted", async () => {
    const t = await proxierOverFakes({ settings: { ...FAKE_SETTINGS, scheduler: 'mh' } });
    t.add(web, webSlice('10.244.1.2'), nodePort, npSlice);
    await t.start();
    const before = t.ipvs.applied.length;
    const servers = (await t.ipvs.listAll()).length;
    t.proxier.updateSettings({ ...FAKE_SETTINGS, scheduler: 'mh', schedulerFlags: ['mh-fallback', 'mh-port'] });
    await t.settle();
    expect(t.proxier.lastResult).toMatchObject({ full: true, replanned: 2, ipvsWrites: servers });
    expect(t.ipvs.applied.slice(before).map((o) => o.kind)).toEqual(Array(servers).fill('setService'));
    expect([...new Set((await t.ipvs.listAll()).map((e) => e.vs.flags))]).toEqual([0x18]);
    // unset again: kube-proxy's mh-port
    t.proxier.updateSettings({ ...FAKE_SETTINGS, scheduler: 'mh', schedulerFlags: null });
    await t.settle();
    expect([...new Set((await t.ipvs.listAll()).map((e) => e.vs.flags))]).toEqual([0x10]);
  });
});
