// FakeIpset raises what ipset 7.17 raises (messages and lines seen in the VM, see
// spec/vm/ipset.vm.test.ts for the pinned parity).
import { ExecError } from '../../../lib/errors';
import { FakeIpset } from '../../../testkit/kernel/fake-ipset';
import { ExecIpsetRunner } from '../../../lib/kernel/ipset/ipset-restore';

const HASH = 'hash:ip,port family inet hashsize 1024 maxelem 65536';

function seeded(): FakeIpset {
  const f = new FakeIpset();
  f.applyRestore(
    `create KUBE-CLUSTER-IP ${HASH}\nadd KUBE-CLUSTER-IP 10.96.0.10,udp:53\ncreate KUBE-NODE-PORT-TCP bitmap:port range 0-65535\n`,
    false,
  );
  return f;
}

function refusal(f: FakeIpset, text: string, exist = true): ExecError {
  try {
    f.applyRestore(text, exist);
  } catch (e) {
    if (e instanceof ExecError) return e;
    throw e;
  }
  throw new Error('restore did not fail');
}

describe('FakeIpset refusals', () => {
  it.each([
    [
      'add to a missing set',
      'add KUBE-MISSING 1.2.3.4,tcp:80\n',
      1,
      1,
      'Error in line 1: The set with the given name does not exist',
    ],
    [
      'second element missing',
      'add KUBE-CLUSTER-IP 1.2.3.4,tcp:81\nadd KUBE-CLUSTER-IP 1.2.3.4\n',
      1,
      2,
      'Error in line 2: Syntax error: Second element is missing from 1.2.3.4.',
    ],
    [
      'too many elements',
      'add KUBE-CLUSTER-IP 1.2.3.4,tcp:80,1.1.1.1\n',
      1,
      1,
      'Two elem separators in 1.2.3.4,tcp:80,1.1.1.1, but settype hash:ip,port supports one.',
    ],
    [
      'IPv6 in an inet set',
      'add KUBE-CLUSTER-IP fd00::1,tcp:80\n',
      1,
      1,
      'cannot parse fd00::1: resolving to IPv4 address failed',
    ],
    [
      'same name, other type',
      'create KUBE-CLUSTER-IP hash:ip family inet hashsize 1024 maxelem 65536\n',
      1,
      1,
      'Set cannot be created: set with the same name already exists',
    ],
    [
      'name too long',
      'create KUBE-LONG-NAME-XXXXXXXXXXXXXXXXXXXXXXXXXXX hash:ip family inet\n',
      1,
      1,
      "setname 'KUBE-LONG-NAME-XXXXXXXXXXXXXXXXXXXXXXXXXXX' is longer than 31 characters",
    ],
    ['unknown command', 'bogus KUBE-Y\n', 2, undefined, 'No command specified: unknown argument bogus'],
    [
      'bitmap port not a number (ipset names no line)',
      'add KUBE-NODE-PORT-TCP 1.2.3.4\n',
      1,
      undefined,
      "Syntax error: '1.2.3.4' is invalid as number",
    ],
    ['bitmap port out of range', 'add KUBE-NODE-PORT-TCP 70000\n', 1, undefined, "'70000' is out of range 0-65535"],
  ])('%s', (_n, text, exitCode, line, message) => {
    const e = refusal(seeded(), text);
    expect(e.exitCode).toBe(exitCode);
    expect(e.line).toBe(line);
    expect(e.stderr).toContain(message);
  });

  it('without -exist: re-adding and deleting an absent member fail; with -exist they do not', () => {
    const f = seeded();
    expect(refusal(f, 'add KUBE-CLUSTER-IP 10.96.0.10,udp:53\n', false).stderr).toContain("it's already added");
    expect(refusal(f, 'del KUBE-CLUSTER-IP 9.9.9.9,tcp:80\n', false).stderr).toContain("it's not added");
    f.applyRestore('add KUBE-CLUSTER-IP 10.96.0.10,udp:53\ndel KUBE-CLUSTER-IP 9.9.9.9,tcp:80\n', true);
  });

  it('-exist accepts a same-type create with other options (the kernel does too)', () => {
    const f = seeded();
    f.applyRestore('create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 2048 maxelem 65536\n', true);
    expect([...f.members('KUBE-CLUSTER-IP')!]).toEqual(['10.96.0.10,udp:53']);
  });

  it('is not transactional like ipset: an earlier create stays, an unsent add batch is dropped', () => {
    const f = seeded();
    refusal(
      f,
      `create KUBE-Y hash:ip family inet hashsize 1024 maxelem 65536\nadd KUBE-CLUSTER-IP 1.2.3.4,tcp:81\nadd KUBE-CLUSTER-IP 1.2.3.4\n`,
    );
    expect(f.has('KUBE-Y')).toBe(true);
    expect([...f.members('KUBE-CLUSTER-IP')!]).toEqual(['10.96.0.10,udp:53']);
  });

  it('stores entries in ipset spelling (lower-case proto, canonical IPv6, masked net)', () => {
    const f = new FakeIpset();
    f.applyRestore(
      'create A hash:ip,port,ip family inet hashsize 1024 maxelem 65536\nadd A 1.2.3.4,TCP:80,1.2.3.4\n' +
        'create B hash:ip,port family inet6 hashsize 1024 maxelem 65536\nadd B 2001:DB8::A,tcp:80\n' +
        'create C hash:ip,port,net family inet hashsize 1024 maxelem 65536\nadd C 1.2.3.4,tcp:80,10.0.1.9/24\nadd C 1.2.3.4,tcp:80,10.0.2.7/32\n',
      true,
    );
    expect(f.dump()).toBe(
      'create A hash:ip,port,ip family inet\nadd A 1.2.3.4,tcp:80,1.2.3.4\n' +
        'create B hash:ip,port family inet6\nadd B 2001:db8::a,tcp:80\n' +
        'create C hash:ip,port,net family inet\nadd C 1.2.3.4,tcp:80,10.0.1.0/24\nadd C 1.2.3.4,tcp:80,10.0.2.7\n',
    );
  });

  it('refuses to destroy a referenced set, and destroys it once the reference is gone', () => {
    const f = seeded();
    f.addReference('KUBE-CLUSTER-IP');
    expect(() => f.destroy('KUBE-CLUSTER-IP')).toThrow('Set cannot be destroyed: it is in use by a kernel component');
    f.dropReference('KUBE-CLUSTER-IP');
    f.destroy('KUBE-CLUSTER-IP');
    expect(f.has('KUBE-CLUSTER-IP')).toBe(false);
  });

  it('drives the real ExecIpsetRunner through its exec front, errors included', async () => {
    const f = seeded();
    const runner = new ExecIpsetRunner(f.exec);
    expect(await runner.save()).toContain('add KUBE-CLUSTER-IP 10.96.0.10,udp:53');
    await expect(runner.restore('add KUBE-NOPE 1.2.3.4\n')).rejects.toMatchObject({ line: 1, exitCode: 1 });
  });
});
