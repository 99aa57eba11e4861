// The IPVS applier alone, over the IPVS fake: the applied table follows the ops that went
// through, a refused op retries its Service with backoff, a guarded create that finds the
// virtual server there returns it as foreign, and draining real servers are deleted once drained.
import winston from 'winston';
import Transport from 'winston-transport';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { FakeClock } from '../../testkit/fake-clock';
import { IpvsApplier } from '../../lib/proxier/ipvs-applier';
import { EventSink } from '../../lib/proxier/types';
import { VirtualServerSpec, RealServerSpec, virtualServerKey } from '../../lib/model/ipvs';
import { DesiredVirtualServer } from '../../lib/plan/service-plan';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../lib/uapi/ip_vs';

const quiet = winston.createLogger({ silent: true });
const VS: VirtualServerSpec = {
  af: AF_INET,
  protocol: IPPROTO_TCP,
  address: '10.96.0.10',
  port: 80,
  fwmark: 0,
  scheduler: 'rr',
};
const RS: RealServerSpec = { af: AF_INET, address: '10.244.1.5', port: 8080, fwdMethod: IP_VS_CONN_F.MASQ, weight: 1 };
const KEY = virtualServerKey(VS);
const OWNER = 'default/web:http';
const zeroCounts = () => ({ ipvsWrites: 0, ipvsReads: 0, ipvsFailures: 0 });

function setup(random = () => 0) {
  const ipvs = new FakeIpvs();
  const clock = new FakeClock();
  const retries: number[] = [];
  const events: string[] = [];
  const sink: EventSink = { warn: (ref, reason) => events.push(`${ref.namespace}/${ref.name} ${reason}`) };
  const applier = new IpvsApplier({
    ipvs,
    clock,
    log: quiet,
    events: sink,
    random,
    retryAfter: (ms) => retries.push(ms),
  });
  const desired = (k: string): DesiredVirtualServer | undefined =>
    k === KEY ? { vs: VS, realServers: [RS], owner: OWNER, kind: 'ClusterIP' } : undefined;
  return { ipvs, clock, retries, events, applier, desired };
}

describe('IpvsApplier', () => {
  it('keeps the applied table as the ops that went through leave it, and counts the writes', async () => {
    const { applier, desired } = setup();
    const counts = zeroCounts();
    const out = await applier.run(
      [
        { kind: 'newService', vs: VS },
        { kind: 'newDest', vs: VS, rs: RS },
      ],
      desired,
      counts,
    );
    expect(out).toEqual({ appeared: [], fullSync: false });
    expect(counts).toEqual({ ipvsWrites: 2, ipvsReads: 0, ipvsFailures: 0 });
    expect([...applier.applied.keys()]).toEqual([KEY]);
    expect(applier.countApplied(() => true)).toEqual({ virtualServers: 1, realServers: 1 });
    expect(applier.countApplied(() => false)).toEqual({ virtualServers: 0, realServers: 0 });
  });

  it("retry waits are jittered by up to a tenth (client-go's wait.Jitter), so Services that failed together do not retry in step; the cap is 5 minutes before jitter", async () => {
    const { applier, desired, retries } = setup(() => 0.5);
    for (let i = 0; i < 10; i++) await applier.run([{ kind: 'newDest', vs: VS, rs: RS }], desired, zeroCounts());
    expect(retries).toEqual([1050, 2100, 4200, 8400, 16_800, 33_600, 67_200, 134_400, 268_800, 315_000]);
    expect(applier.syncFailed()).toBe(1050);
    expect(applier.syncFailed()).toBe(2100);
  });

  it('a refused op retries its Service with doubling backoff, one Event, until it goes through', async () => {
    const { applier, desired, retries, events, clock } = setup();
    const counts = zeroCounts();
    // no virtual server yet: the kernel refuses the real server (ESRCH)
    await applier.run([{ kind: 'newDest', vs: VS, rs: RS }], desired, counts);
    expect(counts.ipvsFailures).toBe(1);
    expect(events).toEqual(['default/web FailedToSyncIPVS']);
    expect(retries).toEqual([1000]);
    expect(applier.beginSync(clock.now())).toEqual([]);
    clock.spend(1000);
    const due = applier.beginSync(clock.now());
    expect(due).toEqual(['default/web']);
    await applier.run([{ kind: 'newDest', vs: VS, rs: RS }], desired, counts);
    expect(retries).toEqual([1000, 2000]);
    applier.settleRetries(due);
    clock.spend(2000);
    const again = applier.beginSync(clock.now());
    expect(again).toEqual(['default/web']);
    await applier.run(
      [
        { kind: 'newService', vs: VS },
        { kind: 'newDest', vs: VS, rs: RS },
      ],
      desired,
      counts,
    );
    applier.settleRetries(again);
    clock.spend(10 * 60_000);
    expect(applier.beginSync(clock.now())).toEqual([]);
  });

  it('a refused op of no Service asks for a full sync', async () => {
    const { applier } = setup();
    const out = await applier.run([{ kind: 'newDest', vs: VS, rs: RS }], () => undefined, zeroCounts());
    expect(out.fullSync).toBe(true);
  });

  it('the whole-sync backoff doubles and resets once a sync goes through', () => {
    const { applier } = setup();
    expect([applier.syncFailed(), applier.syncFailed(), applier.syncFailed()]).toEqual([1000, 2000, 4000]);
    applier.syncSucceeded();
    expect(applier.syncFailed()).toBe(1000);
  });

  it('a guarded create that finds the virtual server there returns it as foreign and sends nothing else for it', async () => {
    const { applier, desired, ipvs } = setup();
    await ipvs.run([{ kind: 'newService', vs: VS }]); // someone else's, made since the last read
    const before = ipvs.applied.length;
    const counts = zeroCounts();
    const out = await applier.run(
      [
        { kind: 'newService', vs: VS },
        { kind: 'newDest', vs: VS, rs: RS },
      ],
      desired,
      counts,
      true,
    );
    expect(out).toEqual({
      appeared: [{ key: KEY, vs: VS, why: expect.stringMatching(/appeared in the kernel after kube-ipvs last read/) }],
      fullSync: false,
    });
    expect(counts).toEqual({ ipvsWrites: 1, ipvsReads: 0, ipvsFailures: 0 });
    expect(ipvs.applied.length).toBe(before);
    expect((await ipvs.listAll())[0]!.dests).toEqual([]);
  });

  it('a real server at weight 0 drains, and is deleted at the first check after its connections end', async () => {
    const { applier, desired, ipvs, clock, retries } = setup();
    const counts = zeroCounts();
    await applier.run(
      [
        { kind: 'newService', vs: VS },
        { kind: 'newDest', vs: VS, rs: RS },
      ],
      desired,
      counts,
    );
    await applier.run([{ kind: 'setDest', vs: VS, rs: { ...RS, weight: 0 } }], () => undefined, counts);
    expect(applier.drainingCount).toBe(1);
    ipvs.setConnections(VS, RS, { active: 2, inactive: 0 });
    const facts = { excluded: () => false, foreign: () => undefined };
    // not due yet: nothing read, a sync asked for when it is
    await applier.checkDraining(desired, counts, facts);
    expect(counts.ipvsReads).toBe(0);
    expect(retries.at(-1)).toBe(applier.drainCheckIntervalMs);
    clock.spend(applier.drainCheckIntervalMs);
    await applier.checkDraining(desired, counts, facts);
    expect(counts.ipvsReads).toBe(1);
    expect(applier.drainingCount).toBe(1);
    ipvs.setConnections(VS, RS, { active: 0, inactive: 0 });
    clock.spend(applier.drainCheckIntervalMs);
    const writes = counts.ipvsWrites;
    await applier.checkDraining(desired, counts, facts);
    expect(counts.ipvsWrites).toBe(writes + 1);
    expect(applier.drainingCount).toBe(0);
    expect((await ipvs.listAll())[0]!.dests).toEqual([]);
  });

  it('adopts the weight-0 real servers a kernel read shows on an owned virtual server, not on a foreign one', async () => {
    const { applier, ipvs } = setup();
    await ipvs.run([
      { kind: 'newService', vs: VS },
      { kind: 'newDest', vs: VS, rs: { ...RS, weight: 0 } },
    ]);
    const { tableFromDump } = await import('../../lib/reconcile/ipvs-table');
    applier.replaceApplied(tableFromDump(await ipvs.listAll()));
    applier.adoptDraining(() => undefined, { excluded: () => false, foreign: () => 'someone else made it' });
    expect(applier.drainingCount).toBe(0);
    applier.adoptDraining(() => undefined, { excluded: () => false, foreign: () => undefined });
    expect(applier.drainingCount).toBe(1);
  });

  it('knows what it created, and what a lost answer may have created until the next full read', async () => {
    const { applier, ipvs, desired } = setup();
    await applier.run([{ kind: 'newService', vs: VS }], desired, zeroCounts());
    expect(applier.created(KEY, () => false)).toBe(true);
    expect(applier.created(KEY, () => true)).toBe(false);
    const other = { ...VS, port: 443 };
    ipvs.run = () => Promise.reject(new Error('socket closed'));
    await expect(applier.run([{ kind: 'newService', vs: other }], desired, zeroCounts())).rejects.toThrow(
      'socket closed',
    );
    expect(applier.created(virtualServerKey(other), () => false)).toBe(true);
    applier.forgetUncertainCreates();
    expect(applier.created(virtualServerKey(other), () => false)).toBe(false);
  });
});

describe("IpvsApplier: no op on a virtual server that is not kube-ipvs's is sent (issue 39 item 10)", () => {
  it('ops inside excludeCIDRs, on a foreign virtual server or a fwmark one are dropped, said once each; the rest go', async () => {
    const { ipvs, applier, desired } = setup();
    const lines: string[] = [];
    const log = winston.createLogger({
      transports: [
        new (class extends Transport {
          override log(info: { message: string }, next: () => void) {
            lines.push(info.message);
            next();
          }
        })(),
      ],
    });
    (applier as unknown as { deps: { log: winston.Logger } }).deps.log = log;
    const excluded: VirtualServerSpec = { ...VS, address: '203.0.113.9' };
    const foreign: VirtualServerSpec = { ...VS, address: '10.96.0.99' };
    const facts = {
      excluded: (a: string) => a === '203.0.113.9',
      foreign: (k: string) => (k === virtualServerKey(foreign) ? 'keepalived' : undefined),
    };
    for (const vs of [excluded, foreign]) await ipvs.apply({ kind: 'newService', vs });
    const sent: string[] = [];
    const run = ipvs.run.bind(ipvs);
    ipvs.run = async (ops) => {
      sent.push(...ops.map((op) => `${op.kind} ${'vs' in op ? op.vs?.address : ''}`));
      return run(ops);
    };
    await applier.run(
      [
        { kind: 'delService', vs: excluded },
        { kind: 'newDest', vs: foreign, rs: RS },
        { kind: 'delService', vs: foreign },
        { kind: 'newService', vs: VS },
        { kind: 'newDest', vs: VS, rs: RS },
      ],
      desired,
      zeroCounts(),
      false,
      facts,
    );
    expect(sent).toEqual(['newService 10.96.0.10', 'newDest 10.96.0.10']);
    expect((await ipvs.listAll()).map((e) => e.vs.address).sort()).toEqual(['10.96.0.10', '10.96.0.99', '203.0.113.9']);
    expect(lines).toEqual([
      "leaving virtual server TCP 203.0.113.9:80 alone: not kube-ipvs's (inside ipvs.excludeCIDRs); its delService is not sent",
      "leaving virtual server TCP 10.96.0.99:80 alone: not kube-ipvs's (keepalived); its newDest is not sent",
    ]);
  });
});
