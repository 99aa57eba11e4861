import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KernelFamilySupport } from '../../lib/kernel/family-support';
import { ExecError } from '../../lib/errors';

const NAT =
  '*nat\n:PREROUTING ACCEPT [0:0]\n:INPUT ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:POSTROUTING ACCEPT [0:0]\nCOMMIT\n';
const saves = (text: string | Error) => ({
  save: jest.fn(async () => (text instanceof Error ? Promise.reject(text) : text)),
});

describe('KernelFamilySupport (kube-proxy platformCheckSupported: iptables Present() per family, kernel IPv6)', () => {
  let proc: string;
  beforeEach(() => {
    proc = mkdtempSync(join(tmpdir(), 'proc-'));
    mkdirSync(join(proc, 'net'));
    mkdirSync(join(proc, 'sys/net/ipv6/conf/all'), { recursive: true });
    writeFileSync(join(proc, 'net/if_inet6'), '');
    writeFileSync(join(proc, 'sys/net/ipv6/conf/all/disable_ipv6'), '0\n');
  });
  afterEach(() => rmSync(proc, { recursive: true, force: true }));

  it('both families when iptables and ip6tables read their nat table and the kernel has IPv6', async () => {
    const ipt = { ipv4: saves(NAT), ipv6: saves(NAT) };
    const s = new KernelFamilySupport({ iptables: ipt, procRoot: proc });
    expect(await s.check('ipv4')).toEqual({ supported: true, reason: 'iptables usable' });
    expect(await s.check('ipv6')).toEqual({ supported: true, reason: 'kernel IPv6 enabled, ip6tables usable' });
    expect(ipt.ipv4.save).toHaveBeenCalledWith('nat');
    expect(ipt.ipv6.save).toHaveBeenCalledWith('nat');
  });

  it('no IPv6 when /proc/net/if_inet6 is missing (ipv6.disable=1): ip6tables is not even run', async () => {
    rmSync(join(proc, 'net/if_inet6'));
    const ipt = { ipv4: saves(NAT), ipv6: saves(NAT) };
    const r = await new KernelFamilySupport({ iptables: ipt, procRoot: proc }).check('ipv6');
    expect(r.supported).toBe(false);
    expect(r.reason).toMatch(/no kernel IPv6 .*if_inet6 is missing/);
    expect(ipt.ipv6.save).not.toHaveBeenCalled();
  });

  it('no IPv6 when net.ipv6.conf.all.disable_ipv6 = 1', async () => {
    writeFileSync(join(proc, 'sys/net/ipv6/conf/all/disable_ipv6'), '1\n');
    const r = await new KernelFamilySupport({ iptables: { ipv4: saves(NAT), ipv6: saves(NAT) }, procRoot: proc }).check(
      'ipv6',
    );
    expect(r).toEqual({ supported: false, reason: 'IPv6 is disabled (net.ipv6.conf.all.disable_ipv6 = 1)' });
  });

  it('a family whose iptables cannot be run or read (missing binary, no nat table) is unsupported, naming why', async () => {
    const enoent = Object.assign(new Error('spawn ip6tables-nft-save ENOENT'), { code: 'ENOENT' });
    const s = new KernelFamilySupport({
      iptables: {
        ipv4: saves(new ExecError('iptables-nft-save -t nat', 1, "can't initialize iptables table `nat'")),
        ipv6: saves(enoent),
      },
      procRoot: proc,
    });
    const v4 = await s.check('ipv4');
    expect(v4.supported).toBe(false);
    expect(v4.reason).toMatch(/^iptables is not usable: .*nat/);
    expect(await s.check('ipv6')).toEqual({
      supported: false,
      reason: 'ip6tables is not usable: spawn ip6tables-nft-save ENOENT',
    });
    const noPostrouting = await new KernelFamilySupport({
      iptables: { ipv4: saves('*nat\nCOMMIT\n') },
      procRoot: proc,
    }).check('ipv4');
    expect(noPostrouting).toEqual({ supported: false, reason: 'iptables: the nat table has no POSTROUTING chain' });
    expect(await new KernelFamilySupport({ iptables: {}, procRoot: proc }).check('ipv4')).toEqual({
      supported: false,
      reason: 'no iptables',
    });
  });
});
