/**
 * Which IP families this node can proxy (kube-proxy's platformCheckSupported,
 * cmd/kube-proxy/app/server_linux.go): a family is supported when its iptables binary works
 * (kube-proxy's `Present()`: the nat table's POSTROUTING chain can be read), and IPv6 also
 * needs the kernel's IPv6 (kube-proxy: /proc/net/if_inet6 exists, i.e. not booted with
 * ipv6.disable=1). kube-ipvs also treats `net.ipv6.conf.all.disable_ipv6 = 1` as no IPv6: no
 * IPv6 address could be bound to kube-ipvs0 there, and every sync would fail on it.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { IpFamily } from '../model/ip-family';
import { Iptables } from './iptables/iptables';

/** Whether this node can proxy one IP family, and why (not). */
export interface FamilyCheck {
  readonly supported: boolean;
  /** why not (or what was checked), for the start-up log line */
  readonly reason: string;
}

/** The capability check the daemon asks; the real one reads /proc and runs iptables-save. */
export interface FamilySupport {
  check(family: IpFamily): Promise<FamilyCheck>;
}

/** What KernelFamilySupport reads: each family's iptables, and /proc. */
export interface KernelFamilySupportDeps {
  /** the iptables of each family (their backend detection and save) */
  readonly iptables: Readonly<Partial<Record<IpFamily, Pick<Iptables, 'save'>>>>;
  /** '/proc' unless a test points it elsewhere */
  readonly procRoot?: string;
}

/** The real FamilySupport: iptables works for the family, and for IPv6 the kernel has IPv6 on. */
export class KernelFamilySupport implements FamilySupport {
  private readonly proc: string;
  constructor(private readonly deps: KernelFamilySupportDeps) {
    this.proc = deps.procRoot ?? '/proc';
  }

  async check(family: IpFamily): Promise<FamilyCheck> {
    if (family === 'ipv6') {
      const kernel = await this.kernelIpv6();
      if (!kernel.supported) return kernel;
    }
    const ipt = this.deps.iptables[family];
    const bin = family === 'ipv4' ? 'iptables' : 'ip6tables';
    if (!ipt) return { supported: false, reason: `no ${bin}` };
    try {
      const nat = await ipt.save('nat');
      if (!/^:POSTROUTING\b/m.test(nat))
        return { supported: false, reason: `${bin}: the nat table has no POSTROUTING chain` };
    } catch (e) {
      return { supported: false, reason: `${bin} is not usable: ${(e as Error).message}` };
    }
    return { supported: true, reason: family === 'ipv6' ? 'kernel IPv6 enabled, ip6tables usable' : 'iptables usable' };
  }

  private async kernelIpv6(): Promise<FamilyCheck> {
    try {
      await readFile(join(this.proc, 'net', 'if_inet6'));
    } catch {
      return {
        supported: false,
        reason: `no kernel IPv6 (${join(this.proc, 'net', 'if_inet6')} is missing: booted with ipv6.disable=1?)`,
      };
    }
    let disabled = '';
    try {
      disabled = (await readFile(join(this.proc, 'sys', 'net', 'ipv6', 'conf', 'all', 'disable_ipv6'), 'utf8')).trim();
    } catch {
      // no such sysctl: nothing says IPv6 is off
    }
    if (disabled === '1') return { supported: false, reason: 'IPv6 is disabled (net.ipv6.conf.all.disable_ipv6 = 1)' };
    return { supported: true, reason: 'kernel IPv6 enabled' };
  }
}
