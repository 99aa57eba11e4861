import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, constants } from 'node:os';
import { join } from 'node:path';
import { ProcSysctl, SYSCTL, Sysctl, SysctlError, ensureSysctl } from '../../../lib/kernel/sysctl/sysctl';
import { FakeSysctl } from '../../../testkit/kernel/fake-sysctl';
import { ensureIpvsSysctls, parseKernelVersion, planIpvsSysctls } from '../../../lib/kernel/sysctl/ipvs-sysctls';

const E = constants.errno;

describe('ProcSysctl over a temp dir', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'sysctl-'));
    mkdirSync(join(root, 'net/ipv4/vs'), { recursive: true });
    writeFileSync(join(root, 'net/ipv4/vs/conntrack'), '0\n');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('reads trimmed, writes with a newline', async () => {
    const s = new ProcSysctl(root);
    expect(await s.read(SYSCTL.VS_CONNTRACK)).toBe('0');
    await s.write(SYSCTL.VS_CONNTRACK, '1');
    expect(readFileSync(join(root, 'net/ipv4/vs/conntrack'), 'utf8')).toBe('1\n');
  });

  it('a missing sysctl is a SysctlError naming it, with ENOENT, on read and on write (never created)', async () => {
    const s = new ProcSysctl(root);
    const r = await s.read(SYSCTL.IP_FORWARD).catch((e) => e);
    expect(r).toBeInstanceOf(SysctlError);
    expect(r).toEqual(expect.objectContaining({ key: 'net/ipv4/ip_forward', op: 'read', errno: E.ENOENT }));
    expect(r.message).toContain('net/ipv4/ip_forward');
    const w = await s.write('net/ipv4/vs/expire_nodest_conn', '1').catch((e) => e);
    expect(w).toEqual(expect.objectContaining({ op: 'write', errno: E.ENOENT, value: '1' }));
    await expect(s.read('net/ipv4/vs/expire_nodest_conn')).rejects.toBeInstanceOf(SysctlError);
  });

  it('refuses keys that escape the root', async () => {
    await expect(new ProcSysctl(root).read('../etc/passwd')).rejects.toEqual(
      expect.objectContaining({ errno: E.EINVAL }),
    );
  });
});

describe('ensureSysctl', () => {
  it('writes only when the value differs', async () => {
    const s = new FakeSysctl({ [SYSCTL.IP_FORWARD]: '1', [SYSCTL.VS_CONNTRACK]: '0' });
    expect(await ensureSysctl(s, SYSCTL.IP_FORWARD, '1')).toEqual({ changed: false, previous: '1' });
    expect(await ensureSysctl(s, SYSCTL.VS_CONNTRACK, '1')).toEqual({ changed: true, previous: '0' });
    expect(s.writes).toEqual([{ key: SYSCTL.VS_CONNTRACK, value: '1' }]);
  });
  it('the fake refuses a non-integer for an integer sysctl (EINVAL)', async () => {
    const s = new FakeSysctl({ [SYSCTL.IP_FORWARD]: '0' });
    await expect(s.write(SYSCTL.IP_FORWARD, 'yes')).rejects.toEqual(expect.objectContaining({ errno: E.EINVAL }));
  });
});

describe('parseKernelVersion', () => {
  it.each([
    ['6.1.0-56-amd64', { major: 6, minor: 1, patch: 0 }],
    ['5.10', { major: 5, minor: 10, patch: 0 }],
    ['4.19.123-foo', { major: 4, minor: 19, patch: 123 }],
    ['garbage', undefined],
  ])('%s', (rel, want) => expect(parseKernelVersion(rel)).toEqual(want));
});

describe('planIpvsSysctls', () => {
  const keys = (major: number, minor: number, strictARP = false) =>
    planIpvsSysctls({ kernel: { major, minor, patch: 0 }, strictARP }).settings.map((s) => `${s.key}=${s.value}`);

  it('conn_reuse_mode=0 only on 4.1 <= kernel < 5.9', () => {
    expect(keys(4, 0)).not.toContain('net/ipv4/vs/conn_reuse_mode=0');
    expect(keys(4, 1)).toContain('net/ipv4/vs/conn_reuse_mode=0');
    expect(keys(5, 8)).toContain('net/ipv4/vs/conn_reuse_mode=0');
    expect(keys(5, 9)).not.toContain('net/ipv4/vs/conn_reuse_mode=0');
    expect(keys(6, 1)).not.toContain('net/ipv4/vs/conn_reuse_mode=0');
  });
  it('the full set on 5.4 with strictARP, in kube-proxy order', () => {
    expect(keys(5, 4, true)).toEqual([
      'net/ipv4/vs/conntrack=1',
      'net/ipv4/vs/conn_reuse_mode=0',
      'net/ipv4/vs/expire_nodest_conn=1',
      'net/ipv4/vs/expire_quiescent_template=1',
      'net/ipv4/ip_forward=1',
      'net/ipv4/conf/all/arp_ignore=1',
      'net/ipv4/conf/all/arp_announce=2',
    ]);
  });
  it('no strictARP: arp sysctls untouched; < 4.1 and unknown versions warn', () => {
    expect(keys(6, 1).some((k) => k.includes('arp_'))).toBe(false);
    expect(planIpvsSysctls({ kernel: { major: 3, minor: 10, patch: 0 }, strictARP: false }).warnings).toHaveLength(1);
    expect(planIpvsSysctls({ kernel: undefined, strictARP: false }).warnings).toHaveLength(1);
  });
});

describe('ensureIpvsSysctls', () => {
  const all = {
    [SYSCTL.VS_CONNTRACK]: '0',
    [SYSCTL.VS_CONN_REUSE_MODE]: '1',
    [SYSCTL.VS_EXPIRE_NODEST_CONN]: '0',
    [SYSCTL.VS_EXPIRE_QUIESCENT_TEMPLATE]: '1',
    [SYSCTL.IP_FORWARD]: '1',
    [SYSCTL.ARP_IGNORE]: '0',
    [SYSCTL.ARP_ANNOUNCE]: '0',
  };
  it('writes only what differs; a second run writes nothing', async () => {
    const s = new FakeSysctl(all);
    expect(await ensureIpvsSysctls(s, { strictARP: false, kernelRelease: '5.4.0-1' })).toEqual([
      SYSCTL.VS_CONNTRACK,
      SYSCTL.VS_CONN_REUSE_MODE,
      SYSCTL.VS_EXPIRE_NODEST_CONN,
    ]);
    expect(await ensureIpvsSysctls(s, { strictARP: false, kernelRelease: '5.4.0-1' })).toEqual([]);
    expect(s.writes).toHaveLength(3);
    expect(await s.read(SYSCTL.VS_CONN_REUSE_MODE)).toBe('0');
  });
  it('the first failure stops it with a SysctlError naming the sysctl (ip_vs not loaded)', async () => {
    const s: Sysctl = new FakeSysctl({ [SYSCTL.IP_FORWARD]: '0' });
    const e = await ensureIpvsSysctls(s, { strictARP: false, kernelRelease: '6.1.0' }).catch((x) => x);
    expect(e).toEqual(expect.objectContaining({ code: 'KIPVS_SYSCTL', key: SYSCTL.VS_CONNTRACK, errno: E.ENOENT }));
    expect(await s.read(SYSCTL.IP_FORWARD)).toBe('0');
  });
});
