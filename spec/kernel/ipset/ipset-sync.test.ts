// Ipset sync: delta only, one exec per changing sync, none when unchanged; exact commands pinned
// with ScriptedExec. Addresses: 10.96.0.0/12 cluster IPs, 203.0.113.0/24 LBs (RFC 5737).
import { IpsetTypeMismatchError } from '../../../lib/errors';
import { ScriptedExec } from '../../../testkit/scripted-exec';
import { FakeIpset } from '../../../testkit/kernel/fake-ipset';
import { createIpset } from '../../../lib/kernel/ipset/ipset-restore';
import { planIpsets } from '../../../lib/plan/ipsets';
import { DesiredSet, IpsetMember, entryIp } from '../../../lib/model/ipset';

/** Collects quarantine notices (keeps the test output quiet). */
class CapturingLog {
  readonly lines: string[] = [];
  warn(message: string): void {
    this.lines.push(message);
  }
}

/** Members spelled by hand (in ipset's spelling), as the sync must take them. */
const m = (...xs: string[]) => xs as IpsetMember[];

const set = (type: DesiredSet['type'], members: string[], family: DesiredSet['family'] = 'ipv4'): DesiredSet => ({
  type,
  family,
  members: new Set(m(...members)),
});

describe('Ipset over the ipset binary (ScriptedExec)', () => {
  it('observes with one `ipset save`, then creates and fills with one `ipset restore -exist`', async () => {
    const exec = new ScriptedExec([
      {
        cmd: 'ipset',
        args: ['save'],
        stdout:
          'create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1234\n' +
          'add KUBE-CLUSTER-IP 10.96.0.10,udp:53\n' +
          'add KUBE-CLUSTER-IP 10.96.0.99,tcp:80\n' +
          'create FOREIGN hash:ip family inet hashsize 1024 maxelem 65536\n' +
          'add FOREIGN 192.0.2.1\n',
      },
      {
        cmd: 'ipset',
        args: ['restore', '-exist'],
        stdin:
          'add KUBE-CLUSTER-IP 10.96.0.1,tcp:443\n' +
          'del KUBE-CLUSTER-IP 10.96.0.99,tcp:80\n' +
          'create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\n' +
          'add KUBE-NODE-PORT-TCP 30080\n' +
          'create KUBE-6-CLUSTER-IP hash:ip,port family inet6 hashsize 1024 maxelem 65536\n' +
          'add KUBE-6-CLUSTER-IP fd00::a,tcp:80\n',
      },
    ]);
    const ipset = createIpset(exec);
    const observed = await ipset.observe();
    expect([...observed.get('KUBE-CLUSTER-IP')!.members]).toEqual(['10.96.0.10,udp:53', '10.96.0.99,tcp:80']);
    expect(observed.get('FOREIGN')!.family).toBe('ipv4');
    const r = await ipset.sync(
      new Map([
        ['KUBE-CLUSTER-IP', set('hash:ip,port', ['10.96.0.10,udp:53', '10.96.0.1,tcp:443'])],
        ['KUBE-NODE-PORT-TCP', set('bitmap:port', ['30080'])],
        ['KUBE-6-CLUSTER-IP', set('hash:ip,port', ['fd00::a,tcp:80'], 'ipv6')],
      ]),
    );
    expect(r).toMatchObject({ execs: 1, created: ['KUBE-NODE-PORT-TCP', 'KUBE-6-CLUSTER-IP'], added: 3, deleted: 1 });
    exec.assertDone();
  });

  it('runs nothing when the desired state equals the observed one, or the last applied one', async () => {
    const exec = new ScriptedExec([
      {
        cmd: 'ipset',
        args: ['save'],
        stdout: 'create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\nadd KUBE-IPVS-IPS 10.96.0.1\n',
      },
      { cmd: 'ipset', args: ['restore', '-exist'], stdin: 'add KUBE-IPVS-IPS 10.96.0.2\n' },
    ]);
    const ipset = createIpset(exec);
    await ipset.observe();
    const desired = new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1'])]]);
    expect((await ipset.sync(desired)).execs).toBe(0);
    const grown = new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1', '10.96.0.2'])]]);
    expect((await ipset.sync(grown)).execs).toBe(1);
    expect((await ipset.sync(grown)).execs).toBe(0);
    exec.assertDone(); // and no further call was made (ScriptedExec would have thrown)
  });

  it('observes by itself when sync comes first (two execs)', async () => {
    const exec = new ScriptedExec([
      { cmd: 'ipset', args: ['save'], stdout: '' },
      {
        cmd: 'ipset',
        args: ['restore', '-exist'],
        stdin: 'create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\n',
      },
    ]);
    const r = await createIpset(exec).sync(new Map([['KUBE-IPVS-IPS', set('hash:ip', [])]]));
    expect(r.execs).toBe(2);
    exec.assertDone();
  });

  it('quarantines the line ipset blames, sends the rest again, re-reads the sets, and then runs nothing', async () => {
    const CREATE = 'create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536';
    const exec = new ScriptedExec([
      { cmd: 'ipset', args: ['save'], stdout: '' },
      {
        cmd: 'ipset',
        args: ['restore', '-exist'],
        stdin: `${CREATE}\nadd KUBE-IPVS-IPS 10.96.0.1\nadd KUBE-IPVS-IPS 10.96.0.2\n`,
        exitCode: 1,
        stderr: 'ipset v7.17: Error in line 2: Kernel error received: Operation not permitted\n',
      },
      { cmd: 'ipset', args: ['restore', '-exist'], stdin: `${CREATE}\nadd KUBE-IPVS-IPS 10.96.0.2\n` },
      { cmd: 'ipset', args: ['save'], stdout: `${CREATE}\nadd KUBE-IPVS-IPS 10.96.0.2\n` },
    ]);
    const log = new CapturingLog();
    const ipset = createIpset(exec, 'ipset', log);
    const desired = new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1', '10.96.0.2'])]]);
    const r = await ipset.sync(desired);
    expect(r).toMatchObject({ execs: 4, created: ['KUBE-IPVS-IPS'], added: 1, deleted: 0 });
    expect(r.quarantined).toEqual([
      {
        set: 'KUBE-IPVS-IPS',
        verb: 'add',
        member: '10.96.0.1',
        reason: 'Kernel error received: Operation not permitted',
      },
    ]);
    expect(log.lines).toEqual([
      expect.stringMatching(
        /^ipset KUBE-IPVS-IPS: member 10\.96\.0\.1 quarantined, not added \(Kernel error received: Operation not permitted\)/,
      ),
    ]);
    // same desired state: the quarantined line is not sent again, nothing runs, nothing is logged
    const again = await ipset.sync(new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.2', '10.96.0.1'])]]));
    expect(again).toMatchObject({ execs: 0, quarantined: [] });
    expect(log.lines.length).toBe(1);
    exec.assertDone();
  });

  it('retries a quarantined line once the desired members of its set change, and only then', async () => {
    const fake = new FakeIpset({ log: new CapturingLog() });
    await fake.observe();
    fake.applyRestore('create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\n', true);
    await fake.observe();
    const bad = m('10.96.0.999')[0]!; // the fake refuses it as ipset does
    const r1 = await fake.sync(new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1', bad])]]));
    expect(r1.quarantined.map((q) => q.member)).toEqual([bad]);
    const sent = fake.restores.length;
    expect((await fake.sync(new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1', bad])]]))).execs).toBe(0);
    expect(fake.restores.length).toBe(sent);
    // a change in the set: the bad line goes out once more with the change, and is quarantined again
    const r3 = await fake.sync(new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1', '10.96.0.3', bad])]]));
    expect(fake.restores.slice(sent)[0]).toContain(`add KUBE-IPVS-IPS ${bad}`);
    expect(r3.quarantined.map((q) => q.member)).toEqual([bad]);
    expect([...fake.members('KUBE-IPVS-IPS')!].sort()).toEqual(['10.96.0.1', '10.96.0.3']);
    // the cache is right: removing the good member deletes it, the bad one stays unsent
    const r4 = await fake.sync(new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.3'])]]));
    expect(r4).toMatchObject({ deleted: 1, added: 0, quarantined: [] });
    expect([...fake.members('KUBE-IPVS-IPS')!]).toEqual(['10.96.0.3']);
  });

  it('halves the text when ipset names no line (bitmap:port parse errors)', async () => {
    const fake = new FakeIpset({ log: new CapturingLog() });
    await fake.observe();
    const r = await fake.sync(
      new Map([
        ['KUBE-NODE-PORT-TCP', set('bitmap:port', ['30080', '30081', '99999', '30082'])],
        ['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1'])],
      ]),
    );
    expect(r.quarantined).toEqual([
      {
        set: 'KUBE-NODE-PORT-TCP',
        verb: 'add',
        member: '99999',
        reason: "Syntax error: '99999' is out of range 0-65535",
      },
    ]);
    expect([...fake.members('KUBE-NODE-PORT-TCP')!].sort()).toEqual(['30080', '30081', '30082']);
    expect([...fake.members('KUBE-IPVS-IPS')!]).toEqual(['10.96.0.1']);
    expect(
      (await fake.sync(new Map([['KUBE-NODE-PORT-TCP', set('bitmap:port', ['30080', '30081', '99999', '30082'])]])))
        .execs,
    ).toBe(0);
  });

  it('a set that cannot be created is held back whole; the other sets are applied', async () => {
    const exec = new ScriptedExec([
      { cmd: 'ipset', args: ['save'], stdout: '' },
      {
        cmd: 'ipset',
        args: ['restore', '-exist'],
        stdin:
          'create KUBE-NODE-PORT-TCP bitmap:port range 0-65535\nadd KUBE-NODE-PORT-TCP 30080\ncreate KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\nadd KUBE-IPVS-IPS 10.96.0.1\n',
        exitCode: 1,
        stderr: 'ipset v7.17: Error in line 1: Kernel error received: set type not supported\n',
      },
      {
        cmd: 'ipset',
        args: ['restore', '-exist'],
        stdin: 'create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\nadd KUBE-IPVS-IPS 10.96.0.1\n',
      },
      {
        cmd: 'ipset',
        args: ['save'],
        stdout: 'create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\nadd KUBE-IPVS-IPS 10.96.0.1\n',
      },
    ]);
    const log = new CapturingLog();
    const ipset = createIpset(exec, 'ipset', log);
    const desired = new Map([
      ['KUBE-NODE-PORT-TCP', set('bitmap:port', ['30080'])],
      ['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1'])],
    ]);
    const r = await ipset.sync(desired);
    expect(r).toMatchObject({
      created: ['KUBE-IPVS-IPS'],
      added: 1,
      quarantined: [{ set: 'KUBE-NODE-PORT-TCP', verb: 'create' }],
    });
    expect(log.lines).toEqual([
      expect.stringMatching(
        /^ipset KUBE-NODE-PORT-TCP: cannot be created \(Kernel error received: set type not supported\)/,
      ),
    ]);
    expect((await ipset.sync(desired)).execs).toBe(0);
    exec.assertDone();
  });

  it('more than 8 refused lines in one set hold the whole set back; other sets are applied', async () => {
    const fake = new FakeIpset({ log: new CapturingLog() });
    await fake.observe();
    const bad = Array.from({ length: 12 }, (_, i) => `10.96.0.${300 + i}`);
    const r = await fake.sync(
      new Map([
        ['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1', ...bad])],
        ['KUBE-NODE-PORT-TCP', set('bitmap:port', ['30080'])],
      ]),
    );
    expect(r.quarantined.length).toBe(9);
    expect(r.quarantined[8]).toMatchObject({ set: 'KUBE-IPVS-IPS', verb: 'add' });
    expect(fake.restores.length).toBe(10); // first try + one per refused line; no retry loop
    expect([...fake.members('KUBE-NODE-PORT-TCP')!]).toEqual(['30080']);
    expect(
      (
        await fake.sync(
          new Map([
            ['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1', ...bad])],
            ['KUBE-NODE-PORT-TCP', set('bitmap:port', ['30080'])],
          ]),
        )
      ).execs,
    ).toBe(0);
  });

  it('a member that does not fit its set (other family, other shape) is never sent, and logged once', async () => {
    const fake = new FakeIpset();
    const log = new CapturingLog();
    const ipset = createIpset(fake.exec, 'ipset', log);
    const desired = new Map([
      ['KUBE-CLUSTER-IP', set('hash:ip,port', ['10.96.0.1,tcp:80', 'fd00::1,tcp:80', '10.96.0.2'])],
      ['KUBE-NODE-PORT-TCP', set('bitmap:port', ['30080'])],
    ]);
    const r = await ipset.sync(desired);
    expect(r.quarantined.map((q) => `${q.member}: ${q.reason}`)).toEqual([
      'fd00::1,tcp:80: not ipv4, in a ipv4 set',
      '10.96.0.2: 1 part(s), a hash:ip,port member has 2',
    ]);
    expect(fake.restores.join('')).not.toMatch(/fd00::1|10\.96\.0\.2\n/);
    expect([...fake.members('KUBE-CLUSTER-IP')!]).toEqual(['10.96.0.1,tcp:80']);
    expect((await ipset.sync(desired)).execs).toBe(0);
    expect(log.lines.length).toBe(2);
  });

  it('throws when ipset cannot run at all, and re-observes on the next sync', async () => {
    let fail = true;
    const fake = new FakeIpset();
    const exec = {
      run: (cmd: string, args: readonly string[], stdin?: string) =>
        fail && args[0] === 'restore'
          ? Promise.reject(new Error('spawn ipset ENOENT'))
          : fake.exec.run(cmd, args, stdin),
    };
    const ipset = createIpset(exec);
    const desired = new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1'])]]);
    await expect(ipset.sync(desired)).rejects.toThrow('ENOENT');
    fail = false;
    expect((await ipset.sync(desired)).execs).toBe(2);
    expect([...fake.members('KUBE-IPVS-IPS')!]).toEqual(['10.96.0.1']);
  });

  it('refuses a set that exists with another type, naming it, before running anything', async () => {
    const exec = new ScriptedExec([
      {
        cmd: 'ipset',
        args: ['save'],
        stdout: 'create KUBE-CLUSTER-IP hash:ip family inet hashsize 1024 maxelem 65536\n',
      },
    ]);
    const ipset = createIpset(exec);
    await ipset.observe();
    const err = await ipset.sync(new Map([['KUBE-CLUSTER-IP', set('hash:ip,port', [])]])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IpsetTypeMismatchError);
    expect(err).toMatchObject({
      setName: 'KUBE-CLUSTER-IP',
      existing: 'hash:ip family inet',
      wanted: 'hash:ip,port family inet',
    });
    expect((err as Error).message).toContain('KUBE-CLUSTER-IP');
    exec.assertDone();
  });

  it('refuses a hash set of the other family', async () => {
    const exec = new ScriptedExec([
      {
        cmd: 'ipset',
        args: ['save'],
        stdout: 'create KUBE-6-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536\n',
      },
    ]);
    const ipset = createIpset(exec);
    await ipset.observe();
    await expect(ipset.sync(new Map([['KUBE-6-CLUSTER-IP', set('hash:ip,port', [], 'ipv6')]]))).rejects.toBeInstanceOf(
      IpsetTypeMismatchError,
    );
  });
});

describe('Ipset deltas (FakeIpset)', () => {
  it('never names a member that stays: no flush, no del+add of it', async () => {
    const fake = new FakeIpset();
    await fake.observe();
    const stay = Array.from({ length: 50 }, (_, i) => `10.96.0.${i + 1},tcp:80`);
    await fake.sync(new Map([['KUBE-CLUSTER-IP', set('hash:ip,port', [...stay, '10.96.1.1,udp:53'])]]));
    const r = await fake.sync(new Map([['KUBE-CLUSTER-IP', set('hash:ip,port', [...stay, '10.96.1.2,udp:53'])]]));
    expect(r.restoreText).toBe('add KUBE-CLUSTER-IP 10.96.1.2,udp:53\ndel KUBE-CLUSTER-IP 10.96.1.1,udp:53\n');
    for (const m of stay) expect(r.restoreText).not.toContain(m);
    expect(r.restoreText).not.toMatch(/flush|destroy|create/);
  });

  it('applies many sets in one restore and then nothing when unchanged', async () => {
    const fake = new FakeIpset();
    await fake.observe();
    const members = {
      CLUSTER_IP: m(...Array.from({ length: 300 }, (_, i) => `10.96.${i >> 8}.${i & 255},tcp:80`)),
      NODE_PORT_TCP: m('30080', '30081'),
      LOOP_BACK: m('10.244.1.5,tcp:80,10.244.1.5'),
      LOAD_BALANCER_SOURCE_CIDR: m('203.0.113.7,tcp:443,198.51.100.0/24'),
      IPVS_IPS: m('10.96.0.1'),
    };
    const desired = planIpsets('ipv4', members);
    const first = await fake.sync(desired);
    expect(first.execs).toBe(1);
    expect(fake.restores.length).toBe(1);
    expect(first.created.length).toBe(17);
    expect(fake.members('KUBE-CLUSTER-IP')!.size).toBe(300);
    expect((await fake.sync(planIpsets('ipv4', members))).execs).toBe(0);
    expect(fake.restores.length).toBe(1);
  });

  it('starts from what observe() saw: a kernel already in the desired state costs no restore', async () => {
    const fake = new FakeIpset();
    await fake.sync(planIpsets('ipv4', { IPVS_IPS: [entryIp('10.96.0.1')] }));
    fake.invalidate(); // as a restarted daemon would be
    await fake.observe();
    expect((await fake.sync(planIpsets('ipv4', { IPVS_IPS: [entryIp('10.96.0.1')] }))).execs).toBe(0);
  });

  it('leaves sets it is not asked about alone', async () => {
    const fake = new FakeIpset();
    fake.applyRestore('create FOREIGN hash:ip family inet hashsize 1024 maxelem 65536\nadd FOREIGN 192.0.2.1\n', false);
    await fake.observe();
    await fake.sync(planIpsets('ipv4', {}));
    expect([...fake.members('FOREIGN')!]).toEqual(['192.0.2.1']);
  });

  it('the desired map may be mutated by the caller after sync without fooling the next one', async () => {
    const fake = new FakeIpset();
    await fake.observe();
    const members = new Set([entryIp('10.96.0.1')]);
    const desired = new Map([['KUBE-IPVS-IPS', { type: 'hash:ip' as const, family: 'ipv4' as const, members }]]);
    await fake.sync(desired);
    members.add(entryIp('10.96.0.2'));
    expect((await fake.sync(desired)).added).toBe(1);
    expect([...fake.members('KUBE-IPVS-IPS')!].sort()).toEqual(['10.96.0.1', '10.96.0.2']);
  });
});
