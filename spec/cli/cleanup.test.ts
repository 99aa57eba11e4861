// `kube-ipvs cleanup` as a command: its exit code and what it says, over fakes.
import { CleanupEnv, runCleanup } from '../../lib/cli/cleanup';
import { IpvsUnavailableError } from '../../lib/kernel/ipvs/ipvs-netlink';
import { FakeIpvs } from '../../lib/kernel/ipvs/fake-ipvs';
import { FakeLink } from '../../lib/kernel/link/fake-link';
import { FakeIpset } from '../../lib/kernel/ipset/fake-ipset';
import { FakeIptables } from '../../lib/kernel/iptables/fake-iptables';
import { KUBE_IPVS0 } from '../../lib/kernel/link/link';
import { NetlinkError } from '../../lib/errors';
import { kubeProxyIpsetSeed, kubeProxyIptablesSeed } from '../../testkit/kube-proxy-leftovers';

interface Logged {
  level: string;
  msg: string;
}

async function node(openIpvs: CleanupEnv['openIpvs']) {
  const link = new FakeLink();
  await link.addDummy(KUBE_IPVS0);
  const ipset = new FakeIpset();
  await ipset.restore(kubeProxyIpsetSeed());
  const ipt = new FakeIptables({ family: 'ipv4', flavor: 'legacy', ipsets: ipset });
  await ipt.restore(kubeProxyIptablesSeed('ipv4'));
  const logged: Logged[] = [];
  const at = (level: string) => (msg: string) => logged.push({ level, msg });
  const env: CleanupEnv = {
    openIpvs,
    openLink: async () => link,
    iptables: () => ipt,
    ipset: () => ipset,
    log: { info: at('info'), warn: at('warn'), error: at('error') },
  };
  return { env, logged, link, ipset };
}

describe('kube-ipvs cleanup (command)', () => {
  it('exits 0 when everything was removed', async () => {
    const { env, link } = await node(async () => new FakeIpvs());
    expect(await runCleanup(['--families', 'ipv4'], env)).toBe(0);
    expect((await link.listLinks()).map((l) => l.name)).not.toContain(KUBE_IPVS0);
  });

  it('IPVS module not loaded: nothing to flush, exits 0 after cleaning the rest', async () => {
    const { env, logged, link } = await node(async () => {
      throw new IpvsUnavailableError('IPVS generic netlink family not found (ENOENT): is the ip_vs kernel module loaded?');
    });
    expect(await runCleanup(['--families', 'ipv4'], env)).toBe(0);
    expect((await link.listLinks()).map((l) => l.name)).not.toContain(KUBE_IPVS0);
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('IPVS unreachable for another reason: cleans the rest, exits 1 and says the IPVS table was left', async () => {
    const eperm = new NetlinkError(1, 'resolve generic netlink family', 'IPVS', 'operation not permitted');
    const { env, logged, link, ipset } = await node(async () => {
      throw eperm;
    });
    expect(await runCleanup(['--families', 'ipv4'], env)).toBe(1);
    // the rest still ran
    expect((await link.listLinks()).map((l) => l.name)).not.toContain(KUBE_IPVS0);
    expect(await ipset.save()).not.toMatch(/KUBE-/);
    const last = logged[logged.length - 1]!;
    expect(last.level).toBe('error');
    expect(last.msg).toBe('cleanup incomplete; left behind: the IPVS table (ipvs flush: resolve generic netlink family IPVS: operation not permitted (EPERM))');
  });
});
