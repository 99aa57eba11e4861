// Ipset sync: delta only, one exec per changing sync, none when unchanged; exact commands pinned
// with ScriptedExec. Addresses: 10.96.0.0/12 cluster IPs, 203.0.113.0/24 LBs (RFC 5737).
import { ExecError, IpsetTypeMismatchError } from '../../../lib/errors';
import { ScriptedExec } from '../../../lib/testing/scripted-exec';
import { FakeIpset } from '../../../lib/kernel/ipset/fake-ipset';
import { createIpset } from '../../../lib/kernel/ipset/ipset-restore';
import { DesiredSet, planIpsets } from '../../../lib/plan/ipsets';

const set = (type: DesiredSet['type'], members: string[], family: DesiredSet['family'] = 'ipv4'): DesiredSet => ({
  type,
  family,
  members: new Set(members),
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
      { cmd: 'ipset', args: ['save'], stdout: 'create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\nadd KUBE-IPVS-IPS 10.96.0.1\n' },
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
      { cmd: 'ipset', args: ['restore', '-exist'], stdin: 'create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\n' },
    ]);
    const r = await createIpset(exec).sync(new Map([['KUBE-IPVS-IPS', set('hash:ip', [])]]));
    expect(r.execs).toBe(2);
    exec.assertDone();
  });

  it('throws ExecError with the blamed line, then re-observes on the next sync', async () => {
    const exec = new ScriptedExec([
      { cmd: 'ipset', args: ['save'], stdout: '' },
      {
        cmd: 'ipset',
        args: ['restore', '-exist'],
        stdin: 'create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\nadd KUBE-IPVS-IPS 10.96.0.1\n',
        exitCode: 1,
        stderr: 'ipset v7.17: Error in line 2: Kernel error received: Operation not permitted\n',
      },
      { cmd: 'ipset', args: ['save'], stdout: 'create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\n' },
      { cmd: 'ipset', args: ['restore', '-exist'], stdin: 'add KUBE-IPVS-IPS 10.96.0.1\n' },
    ]);
    const ipset = createIpset(exec);
    const desired = new Map([['KUBE-IPVS-IPS', set('hash:ip', ['10.96.0.1'])]]);
    const err = await ipset.sync(desired).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExecError);
    expect(err).toMatchObject({ cmd: 'ipset restore -exist', exitCode: 1, line: 2 });
    expect((await ipset.sync(desired)).execs).toBe(2);
    exec.assertDone();
  });

  it('refuses a set that exists with another type, naming it, before running anything', async () => {
    const exec = new ScriptedExec([
      { cmd: 'ipset', args: ['save'], stdout: 'create KUBE-CLUSTER-IP hash:ip family inet hashsize 1024 maxelem 65536\n' },
    ]);
    const ipset = createIpset(exec);
    await ipset.observe();
    const err = await ipset.sync(new Map([['KUBE-CLUSTER-IP', set('hash:ip,port', [])]])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IpsetTypeMismatchError);
    expect(err).toMatchObject({ setName: 'KUBE-CLUSTER-IP', existing: 'hash:ip family inet', wanted: 'hash:ip,port family inet' });
    expect((err as Error).message).toContain('KUBE-CLUSTER-IP');
    exec.assertDone();
  });

  it('refuses a hash set of the other family', async () => {
    const exec = new ScriptedExec([
      { cmd: 'ipset', args: ['save'], stdout: 'create KUBE-6-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536\n' },
    ]);
    const ipset = createIpset(exec);
    await ipset.observe();
    await expect(ipset.sync(new Map([['KUBE-6-CLUSTER-IP', set('hash:ip,port', [], 'ipv6')]]))).rejects.toBeInstanceOf(IpsetTypeMismatchError);
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
      CLUSTER_IP: Array.from({ length: 300 }, (_, i) => `10.96.${i >> 8}.${i & 255},tcp:80`),
      NODE_PORT_TCP: ['30080', '30081'],
      LOOP_BACK: ['10.244.1.5,tcp:80,10.244.1.5'],
      LOAD_BALANCER_SOURCE_CIDR: ['203.0.113.7,tcp:443,198.51.100.0/24'],
      IPVS_IPS: ['10.96.0.1'],
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
    await fake.sync(planIpsets('ipv4', { IPVS_IPS: ['10.96.0.1'] }));
    fake.invalidate(); // as a restarted daemon would be
    await fake.observe();
    expect((await fake.sync(planIpsets('ipv4', { IPVS_IPS: ['10.96.0.1'] }))).execs).toBe(0);
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
    const members = new Set(['10.96.0.1']);
    const desired = new Map([['KUBE-IPVS-IPS', { type: 'hash:ip' as const, family: 'ipv4' as const, members }]]);
    await fake.sync(desired);
    members.add('10.96.0.2');
    expect((await fake.sync(desired)).added).toBe(1);
    expect([...fake.members('KUBE-IPVS-IPS')!].sort()).toEqual(['10.96.0.1', '10.96.0.2']);
  });
});
