import { diffIpvsTable, diffVirtualServer } from '../../lib/reconcile/diff-ipvs';
import { IpvsTable, TableEntry, applyOpsToTable, tableFromDump } from '../../lib/reconcile/ipvs-table';
import { RealServer } from '../../lib/model/ipvs';
import { AF_INET, IPPROTO_TCP, IPPROTO_UDP } from '../../lib/uapi/inet';
import { RealServerSpec, VirtualServerSpec } from '../../lib/model/ipvs';
import { DesiredVirtualServer } from '../../lib/plan/service-plan';
import { realServerKey, virtualServerKey } from '../../lib/model/ipvs';

// addresses: VIPs 10.96.0.0/16, endpoints 10.244.0.0/16

const vs = (address: string, port = 80, extra: Partial<VirtualServerSpec> = {}): VirtualServerSpec => ({
  af: AF_INET,
  protocol: IPPROTO_TCP,
  address,
  port,
  fwmark: 0,
  scheduler: 'rr',
  flags: 0,
  timeout: 0,
  netmask: 0xffffffff,
  peName: '',
  ...extra,
});
const rs = (address: string, weight = 1): RealServerSpec => ({
  af: AF_INET,
  address,
  port: 8080,
  fwdMethod: 0,
  weight,
});
const desired = (v: VirtualServerSpec, ...dests: RealServerSpec[]): DesiredVirtualServer => ({
  vs: v,
  realServers: dests,
  owner: 'default/web:/ipv4',
  kind: 'ClusterIP',
});
const entry = (v: VirtualServerSpec, ...dests: [RealServerSpec, number?][]): TableEntry =>
  new TableEntry(
    v,
    new Map(dests.map(([d, active = 0]) => [realServerKey(d), { ...d, activeConns: active, inactConns: 0 }])),
  );
const line = (op: ReturnType<typeof diffVirtualServer>[number]) =>
  `${op.kind} ${'vs' in op && op.vs ? virtualServerKey(op.vs) : ''}${'rs' in op ? ` ${realServerKey(op.rs)} w${'weight' in op.rs ? op.rs.weight : ''}` : ''}${op.kind === 'setService' || op.kind === 'newService' ? ` ${op.vs.scheduler} f${op.vs.flags}` : ''}`;

describe('diffVirtualServer', () => {
  it.each<{ name: string; current?: TableEntry; want?: DesiredVirtualServer; ops: string[] }>([
    { name: 'nothing to nothing', ops: [] },
    {
      name: 'new service with its real servers',
      want: desired(vs('10.96.0.10'), rs('10.244.1.1'), rs('10.244.1.2')),
      ops: [
        'newService TCP/10.96.0.10:80 rr f0',
        'newDest TCP/10.96.0.10:80 10.244.1.1:8080 w1',
        'newDest TCP/10.96.0.10:80 10.244.1.2:8080 w1',
      ],
    },
    {
      name: 'unchanged',
      current: entry(vs('10.96.0.10'), [rs('10.244.1.1')]),
      want: desired(vs('10.96.0.10'), rs('10.244.1.1')),
      ops: [],
    },
    {
      name: 'scheduler change is a SET, real servers untouched',
      current: entry(vs('10.96.0.10'), [rs('10.244.1.1')]),
      want: desired(vs('10.96.0.10', 80, { scheduler: 'lc' }), rs('10.244.1.1')),
      ops: ['setService TCP/10.96.0.10:80 lc f0'],
    },
    {
      name: 'scheduler flags only (mh-port -> mh-fallback,mh-port) is one SET, real servers untouched',
      current: entry(
        vs('10.96.0.10', 80, { scheduler: 'mh', flags: 0x10 }),
        [rs('10.244.1.1')],
        [rs('10.244.1.2', 0), 2],
      ),
      want: desired(vs('10.96.0.10', 80, { scheduler: 'mh', flags: 0x18 }), rs('10.244.1.1')),
      ops: ['setService TCP/10.96.0.10:80 mh f24'],
    },
    {
      name: 'affinity on is a SET with the persistent flag',
      current: entry(vs('10.96.0.10')),
      want: desired(vs('10.96.0.10', 80, { flags: 1, timeout: 10800 })),
      ops: ['setService TCP/10.96.0.10:80 rr f1'],
    },
    {
      name: 'TCP real server removed drains (weight 0), not deleted',
      current: entry(vs('10.96.0.10'), [rs('10.244.1.1')], [rs('10.244.1.2')]),
      want: desired(vs('10.96.0.10'), rs('10.244.1.1')),
      ops: ['setDest TCP/10.96.0.10:80 10.244.1.2:8080 w0'],
    },
    {
      name: 'already draining: nothing more',
      current: entry(vs('10.96.0.10'), [rs('10.244.1.1')], [rs('10.244.1.2', 0)]),
      want: desired(vs('10.96.0.10'), rs('10.244.1.1')),
      ops: [],
    },
    {
      name: 'draining real server back: weight restored, no delete+add',
      current: entry(vs('10.96.0.10'), [rs('10.244.1.2', 0), 3]),
      want: desired(vs('10.96.0.10'), rs('10.244.1.2')),
      ops: ['setDest TCP/10.96.0.10:80 10.244.1.2:8080 w1'],
    },
    {
      name: 'UDP real server removed is deleted at once',
      current: entry(vs('10.96.0.10', 53, { protocol: IPPROTO_UDP }), [rs('10.244.1.1')], [rs('10.244.1.2')]),
      want: desired(vs('10.96.0.10', 53, { protocol: IPPROTO_UDP }), rs('10.244.1.1')),
      ops: ['delDest UDP/10.96.0.10:53 10.244.1.2:8080 w1'],
    },
    {
      name: 'service gone: deleted at once',
      current: entry(vs('10.96.0.10'), [rs('10.244.1.1')]),
      ops: ['delService TCP/10.96.0.10:80'],
    },
    {
      name: 'adopted weight other than 1 reset to 1',
      current: entry(vs('10.96.0.10'), [rs('10.244.1.1', 5)]),
      want: desired(vs('10.96.0.10'), rs('10.244.1.1')),
      ops: ['setDest TCP/10.96.0.10:80 10.244.1.1:8080 w1'],
    },
  ])('$name', ({ current, want, ops }) => {
    expect(diffVirtualServer(current, want).map(line)).toEqual(ops);
  });
});

describe('diffIpvsTable', () => {
  it('deletes only owned services that are not desired', () => {
    const current: IpvsTable = new Map([
      [virtualServerKey(vs('10.96.0.10')), entry(vs('10.96.0.10'))],
      [virtualServerKey(vs('192.0.2.5')), entry(vs('192.0.2.5'))], // keepalived's, say
      [virtualServerKey(vs('10.96.0.11')), entry(vs('10.96.0.11'))],
    ]);
    const want = new Map([[virtualServerKey(vs('10.96.0.11')), desired(vs('10.96.0.11'), rs('10.244.1.1'))]]);
    const ops = diffIpvsTable(current, want, (e) => e.vs.address.startsWith('10.96.'));
    expect(ops.map(line)).toEqual(['newDest TCP/10.96.0.11:80 10.244.1.1:8080 w1', 'delService TCP/10.96.0.10:80']);
  });
});

describe('applyOpsToTable', () => {
  it('applies only the ops that succeeded', () => {
    const table: IpvsTable = new Map();
    const v = vs('10.96.0.10');
    const ops = diffVirtualServer(undefined, desired(v, rs('10.244.1.1'), rs('10.244.1.2')));
    const err = { ok: false as const, error: {} as never };
    applyOpsToTable(table, ops, [{ ok: true }, err, { ok: true }]);
    expect([...table.get(virtualServerKey(v))!.realServers.keys()]).toEqual(['10.244.1.2:8080']);
    // diffing again asks only for what failed
    expect(
      diffVirtualServer(table.get(virtualServerKey(v)), desired(v, rs('10.244.1.1'), rs('10.244.1.2'))).map(line),
    ).toEqual(['newDest TCP/10.96.0.10:80 10.244.1.1:8080 w1']);
  });

  // ops of one virtual server share its spec object; the entry looked up for the first must
  // not outlive a delete, a flush or a re-set of that virtual server
  it('a real server op after its virtual server was deleted, flushed or re-set lands where the table says', () => {
    const ok = { ok: true as const };
    const v = vs('10.96.0.10');
    const keys = (t: IpvsTable) => [...t.get(virtualServerKey(v))!.realServers.keys()];
    const table: IpvsTable = new Map();
    // deleted and made again, from the same spec object and from an equal one: the real
    // servers after each join the new entry
    applyOpsToTable(
      table,
      [
        { kind: 'newService', vs: v },
        { kind: 'newDest', vs: v, rs: rs('10.244.1.1') },
        { kind: 'delService', vs: v },
        { kind: 'newService', vs: v },
        { kind: 'newDest', vs: v, rs: rs('10.244.1.2') },
      ],
      [ok, ok, ok, ok, ok],
    );
    expect(keys(table)).toEqual(['10.244.1.2:8080']);
    applyOpsToTable(
      table,
      [
        { kind: 'delService', vs: v },
        { kind: 'newService', vs: vs('10.96.0.10') },
        { kind: 'newDest', vs: v, rs: rs('10.244.1.2') },
      ],
      [ok, ok, ok],
    );
    expect(keys(table)).toEqual(['10.244.1.2:8080']);

    // re-set: the real servers stay, and later ones join them under the new settings
    applyOpsToTable(
      table,
      [
        { kind: 'setService', vs: { ...v, scheduler: 'lc' } },
        { kind: 'newDest', vs: v, rs: rs('10.244.1.3') },
      ],
      [ok, ok],
    );
    expect(table.get(virtualServerKey(v))!.vs.scheduler).toBe('lc');
    expect(keys(table)).toEqual(['10.244.1.2:8080', '10.244.1.3:8080']);

    // flushed and made again
    applyOpsToTable(
      table,
      [
        { kind: 'newDest', vs: v, rs: rs('10.244.1.4') },
        { kind: 'flush' },
        { kind: 'newService', vs: vs('10.96.0.10') },
        { kind: 'newDest', vs: v, rs: rs('10.244.1.5') },
      ],
      [ok, ok, ok, ok],
    );
    expect(keys(table)).toEqual(['10.244.1.5:8080']);
  });

  it('a failed newService leaves its real servers out; an equal spec in another object finds the same entry', () => {
    const ok = { ok: true as const };
    const err = { ok: false as const, error: {} as never };
    const table: IpvsTable = new Map();
    applyOpsToTable(
      table,
      [
        { kind: 'newService', vs: vs('10.96.0.10') },
        { kind: 'newDest', vs: vs('10.96.0.10'), rs: rs('10.244.1.1') },
      ],
      [err, ok],
    );
    expect(table.size).toBe(0);
    const a = vs('10.96.0.10');
    const b = vs('10.96.0.11');
    applyOpsToTable(
      table,
      [
        { kind: 'newService', vs: a },
        { kind: 'newService', vs: b },
        { kind: 'newDest', vs: vs('10.96.0.10'), rs: rs('10.244.1.1') },
        { kind: 'newDest', vs: b, rs: rs('10.244.1.2') },
        { kind: 'newDest', vs: a, rs: rs('10.244.1.3') },
        { kind: 'delDest', vs: vs('10.96.0.10'), rs: rs('10.244.1.1') },
      ],
      [ok, ok, ok, ok, ok, ok],
    );
    expect([...table.get(virtualServerKey(a))!.realServers.keys()]).toEqual(['10.244.1.3:8080']);
    expect([...table.get(virtualServerKey(b))!.realServers.keys()]).toEqual(['10.244.1.2:8080']);
  });
});

describe("TableEntry: the plan's real servers as a list until a key is needed", () => {
  const ok = { ok: true as const };
  const v = vs('10.96.0.10');
  const key = virtualServerKey(v);
  /** as the kernel dumps a real server */
  const dumped = (r: RealServerSpec, activeConns = 0, inactConns = 0): RealServer => ({
    uThreshold: 0,
    lThreshold: 0,
    persistConns: 0,
    tunType: 0,
    tunPort: 0,
    tunFlags: 0,
    ...r,
    activeConns,
    inactConns,
  });
  const dump = (...dests: RealServer[]) => [
    { vs: { ...v, flags: 0, timeout: 0, netmask: 0xffffffff, peName: '' }, dests },
  ];
  const want = desired(v, rs('10.244.1.1'), rs('10.244.1.2'), rs('10.244.1.3'));
  const conns = (e: TableEntry) =>
    [...e.realServers].map(([k, r]) => `${k} ${r.activeConns ?? 0}/${r.inactConns ?? 0}`);

  it("a dump equal to the plan, newest first or in plan order, holds the plan's objects; the diff has nothing to do", () => {
    const [a, b, c] = want.realServers.map((r) => dumped(r));
    for (const order of [
      [c!, b!, a!],
      [a!, b!, c!],
    ]) {
      const e = tableFromDump(dump(...order), new Map([[key, want]])).get(key)!;
      expect(e.holds(want.realServers)).toBe(true);
      expect([...e.values()]).toEqual(want.realServers);
      expect([...e.values()][0]).toBe(want.realServers[0]);
      expect(diffVirtualServer(e, want)).toEqual([]);
    }
  });

  it("takes over the last read's entry when the kernel shows the same spec and plan with no connections; builds a new one otherwise", () => {
    const plan = new Map([[key, want]]);
    const quiet = want.realServers.map((r) => dumped(r)).reverse();
    const last = tableFromDump(dump(...quiet), plan);
    const again = tableFromDump(dump(...quiet), plan, last);
    expect(again.get(key)).toBe(last.get(key));
    // each of these shows something the last entry does not say
    const otherScheduler = [{ ...dump(...quiet)[0]!, vs: { ...dump()[0]!.vs, scheduler: 'lc' } }];
    const withConns = dump(dumped(want.realServers[2]!, 1, 0), ...quiet.slice(1));
    const otherPlan = new Map([[key, desired(v, rs('10.244.1.1'), rs('10.244.1.2'), rs('10.244.1.3'))]]);
    for (const [what, read, p] of [
      ['another scheduler', otherScheduler, plan],
      ['a connection', withConns, plan],
      ['another plan (new objects)', dump(...quiet), otherPlan],
    ] as const) {
      const e = tableFromDump(read, p, last).get(key)!;
      expect({ what, same: e === last.get(key) }).toEqual({ what, same: false });
      expect({ what, ops: diffVirtualServer(e, p.get(key)!) }).toEqual({
        what,
        ops: what === 'another scheduler' ? [{ kind: 'setService', vs: v }] : [],
      });
    }
    // the spec object is taken over too when only the real servers differ
    expect(tableFromDump(withConns, plan, last).get(key)!.vs).toBe(last.get(key)!.vs);
    // an entry a partial sync keyed (it applied a change) is not taken over
    applyOpsToTable(last, [{ kind: 'setDest', vs: v, rs: rs('10.244.1.2', 0) }], [ok]);
    expect(tableFromDump(dump(...quiet), plan, last).get(key)).not.toBe(last.get(key));
  });

  it("keeps the dump's connection counts beside the plan's objects, in the plan's order", () => {
    const [a, b, c] = want.realServers;
    const e = tableFromDump(dump(dumped(c!, 0, 4), dumped(b!), dumped(a!, 7, 1)), new Map([[key, want]])).get(key)!;
    expect(e.holds(want.realServers)).toBe(true);
    expect(conns(e)).toEqual(['10.244.1.1:8080 7/1', '10.244.1.2:8080 0/0', '10.244.1.3:8080 0/4']);
    // once keyed, the entry no longer holds the list
    expect(e.holds(want.realServers)).toBe(false);
    expect(diffVirtualServer(e, want)).toEqual([]);
  });

  it.each<[string, RealServer[], string[]]>([
    [
      'a weight differs',
      [dumped(rs('10.244.1.3')), dumped(rs('10.244.1.2', 0)), dumped(rs('10.244.1.1'))],
      ['setDest TCP/10.96.0.10:80 10.244.1.2:8080 w1'],
    ],
    [
      'one is missing',
      [dumped(rs('10.244.1.3')), dumped(rs('10.244.1.1'))],
      ['newDest TCP/10.96.0.10:80 10.244.1.2:8080 w1'],
    ],
    [
      'one more (draining)',
      [dumped(rs('10.244.1.9', 0)), dumped(rs('10.244.1.3')), dumped(rs('10.244.1.2')), dumped(rs('10.244.1.1'))],
      [],
    ],
    ['another order', [dumped(rs('10.244.1.2')), dumped(rs('10.244.1.1')), dumped(rs('10.244.1.3'))], []],
    [
      'another port',
      [dumped(rs('10.244.1.3')), dumped(rs('10.244.1.2')), dumped({ ...rs('10.244.1.1'), port: 9090 })],
      ['newDest TCP/10.96.0.10:80 10.244.1.1:8080 w1', 'setDest TCP/10.96.0.10:80 10.244.1.1:9090 w0'],
    ],
  ])('a dump that is not the plan (%s) is copied and compared by key', (_name, dests, ops) => {
    const e = tableFromDump(dump(...dests), new Map([[key, want]])).get(key)!;
    expect(e.holds(want.realServers)).toBe(false);
    expect([...e.values()].map(realServerKey).sort()).toEqual(dests.map(realServerKey).sort());
    expect(diffVirtualServer(e, want).map(line)).toEqual(ops);
  });

  it("a cold start's adds leave the applied objects in a list the next diff accepts as is", () => {
    const table: IpvsTable = new Map();
    const ops = diffVirtualServer(undefined, want);
    applyOpsToTable(
      table,
      ops,
      ops.map(() => ok),
    );
    const e = table.get(key)!;
    expect(e.holds(want.realServers)).toBe(true);
    expect(e.size).toBe(3);
    expect(diffVirtualServer(e, want)).toEqual([]);
    // an equal plan made anew (other objects) is compared by key: still nothing to do
    const again = desired(v, rs('10.244.1.1'), rs('10.244.1.2'), rs('10.244.1.3'));
    expect(e.holds(again.realServers)).toBe(false);
    expect(diffVirtualServer(e, again)).toEqual([]);
  });

  it("real servers added after a re-set join the list; a dump's shared list is never appended to", () => {
    const table: IpvsTable = new Map();
    applyOpsToTable(
      table,
      [
        { kind: 'newService', vs: v },
        { kind: 'newDest', vs: v, rs: rs('10.244.1.1') },
      ],
      [ok, ok],
    );
    const lc = { ...v, scheduler: 'lc' };
    applyOpsToTable(
      table,
      [
        { kind: 'setService', vs: lc },
        { kind: 'newDest', vs: lc, rs: rs('10.244.1.2') },
      ],
      [ok, ok],
    );
    expect(table.get(key)!.vs.scheduler).toBe('lc');
    expect([...table.get(key)!.values()].map(realServerKey)).toEqual(['10.244.1.1:8080', '10.244.1.2:8080']);

    const plan = want.realServers.slice();
    const shared = tableFromDump(dump(...plan.map((r) => dumped(r))), new Map([[key, { realServers: plan }]]));
    applyOpsToTable(
      shared,
      [
        { kind: 'setService', vs: lc },
        { kind: 'newDest', vs: lc, rs: rs('10.244.1.4') },
      ],
      [ok, ok],
    );
    expect(plan.map(realServerKey)).toEqual(['10.244.1.1:8080', '10.244.1.2:8080', '10.244.1.3:8080']);
    expect([...shared.get(key)!.realServers.keys()]).toEqual([
      '10.244.1.1:8080',
      '10.244.1.2:8080',
      '10.244.1.3:8080',
      '10.244.1.4:8080',
    ]);
  });

  it('setDest and delDest on a listed entry key it first', () => {
    const table = tableFromDump(dump(...want.realServers.map((r) => dumped(r)).reverse()), new Map([[key, want]]));
    applyOpsToTable(
      table,
      [
        { kind: 'setDest', vs: v, rs: rs('10.244.1.2', 0) },
        { kind: 'delDest', vs: v, rs: rs('10.244.1.3') },
      ],
      [ok, ok],
    );
    const e = table.get(key)!;
    expect([...e.realServers].map(([k, r]) => `${k} w${r.weight}`)).toEqual([
      '10.244.1.1:8080 w1',
      '10.244.1.2:8080 w0',
    ]);
    expect(want.realServers.map((r) => r.weight)).toEqual([1, 1, 1]);
  });
});
