// Sysctl fake-vs-kernel parity and kube-proxy's IPVS sysctls on the VM's real /proc/sys.
import { constants, release } from 'node:os';
import { ProcSysctl, SYSCTL, Sysctl, SysctlError } from '../../lib/kernel/sysctl/sysctl';
import { FakeSysctl } from '../../testkit/kernel/fake-sysctl';
import { ensureIpvsSysctls, parseKernelVersion } from '../../lib/kernel/sysctl/ipvs-sysctls';
import { run } from '../../testkit/netns';

const E = constants.errno;

describe.each<[string, () => Sysctl]>([
  ['fake', () => new FakeSysctl({ [SYSCTL.IP_FORWARD]: '0', [SYSCTL.VS_CONNTRACK]: '0' })],
  ['kernel', () => new ProcSysctl()],
])('Sysctl errno parity: %s', (_label, open) => {
  const s = open();
  it('a missing sysctl: ENOENT on read and write', async () => {
    await expect(s.read('net/ipv4/vs/no_such_knob')).rejects.toEqual(expect.objectContaining({ errno: E.ENOENT }));
    await expect(s.write('net/ipv4/vs/no_such_knob', '1')).rejects.toEqual(
      expect.objectContaining({ errno: E.ENOENT }),
    );
  });
  it('a non-integer for an integer sysctl: EINVAL, naming the sysctl', async () => {
    const e = await s.write(SYSCTL.IP_FORWARD, 'yes').catch((x) => x);
    expect(e).toBeInstanceOf(SysctlError);
    expect(e).toEqual(expect.objectContaining({ key: SYSCTL.IP_FORWARD, errno: E.EINVAL }));
  });
  it('write then read back', async () => {
    await s.write(SYSCTL.VS_CONNTRACK, '1');
    expect(await s.read(SYSCTL.VS_CONNTRACK)).toBe('1');
    await s.write(SYSCTL.VS_CONNTRACK, '0');
    expect(await s.read(SYSCTL.VS_CONNTRACK)).toBe('0');
  });
});

describe('ensureIpvsSysctls on the VM kernel', () => {
  it('sets kube-proxy values (conn_reuse_mode left as-is on >= 5.9); second run writes nothing', async () => {
    const s = new ProcSysctl();
    const k = parseKernelVersion(release());
    expect(k && (k.major > 5 || (k.major === 5 && k.minor >= 9))).toBe(true);
    run('sysctl', ['-qw', 'net.ipv4.vs.conntrack=0', 'net.ipv4.vs.expire_nodest_conn=0', 'net.ipv4.ip_forward=0']);
    const reuseBefore = run('sysctl', ['-n', 'net.ipv4.vs.conn_reuse_mode']).trim();
    const changed = await ensureIpvsSysctls(s, { strictARP: true });
    expect(changed).toEqual(
      expect.arrayContaining([SYSCTL.VS_CONNTRACK, SYSCTL.VS_EXPIRE_NODEST_CONN, SYSCTL.IP_FORWARD]),
    );
    expect(changed).not.toContain(SYSCTL.VS_CONN_REUSE_MODE);
    const show = (k: string) => run('sysctl', ['-n', k]).trim();
    expect(show('net.ipv4.vs.conntrack')).toBe('1');
    expect(show('net.ipv4.vs.expire_nodest_conn')).toBe('1');
    expect(show('net.ipv4.vs.expire_quiescent_template')).toBe('1');
    expect(show('net.ipv4.ip_forward')).toBe('1');
    expect(show('net.ipv4.conf.all.arp_ignore')).toBe('1');
    expect(show('net.ipv4.conf.all.arp_announce')).toBe('2');
    expect(show('net.ipv4.vs.conn_reuse_mode')).toBe(reuseBefore);
    expect(await ensureIpvsSysctls(s, { strictARP: true })).toEqual([]);
    run('sysctl', ['-qw', 'net.ipv4.conf.all.arp_ignore=0', 'net.ipv4.conf.all.arp_announce=0']);
  });
});
