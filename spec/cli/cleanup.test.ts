// `kube-ipvs cleanup` as a command: its exit code and what it says, over fakes.
import { CleanupEnv, runCleanup } from '../../lib/cli/cleanup';
import { IpvsUnavailableError } from '../../lib/kernel/ipvs/ipvs-netlink';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { FakeLink } from '../../testkit/kernel/fake-link';
import { FakeIpset } from '../../testkit/kernel/fake-ipset';
import { FakeIptables } from '../../testkit/kernel/fake-iptables';
import { FakeNftTables } from '../../testkit/kernel/fake-nftables';
import { KUBE_IPVS0 } from '../../lib/kernel/link/link';
import { NetlinkError } from '../../lib/errors';
import { kubeProxyIpsetSeed, kubeProxyIptablesSeed } from '../../testkit/kube-proxy-leftovers';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';

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
  const formats: string[] = [];
  const at = (level: string) => (msg: string) => logged.push({ level, msg });
  // each run opens its own (a run closes what it opened); `nft.privileged` false: EPERM
  const nft = { privileged: true };
  const env: CleanupEnv = {
    openIpvs,
    openLink: async () => link,
    iptables: () => ipt,
    ipset: () => ipset,
    nftables: () => Object.assign(new FakeNftTables(), { privileged: nft.privileged }),
    log: { info: at('info'), warn: at('warn'), error: at('error') },
    setLogFormat: (f) => formats.push(f),
  };
  return { env, logged, link, ipset, ipt, nft, formats };
}

describe('kube-ipvs cleanup (command)', () => {
  it('exits 0 when everything was removed', async () => {
    const { env, link } = await node(async () => new FakeIpvs());
    expect(await runCleanup(['--families', 'ipv4'], env)).toBe(0);
    expect((await link.listLinks()).map((l) => l.name)).not.toContain(KUBE_IPVS0);
  });

  it('IPVS module not loaded: nothing to flush, exits 0 after cleaning the rest', async () => {
    const { env, logged, link } = await node(async () => {
      throw new IpvsUnavailableError(
        'IPVS generic netlink family not found (ENOENT): is the ip_vs kernel module loaded?',
      );
    });
    expect(await runCleanup(['--families', 'ipv4'], env)).toBe(0);
    expect((await link.listLinks()).map((l) => l.name)).not.toContain(KUBE_IPVS0);
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('IPVS unreachable for another reason: cleans the rest, exits 1 and says the IPVS virtual servers were left', async () => {
    const eio = new NetlinkError(5, 'resolve generic netlink family', 'IPVS', 'input/output error');
    const { env, logged, link, ipset } = await node(async () => {
      throw eio;
    });
    expect(await runCleanup(['--families', 'ipv4'], env)).toBe(1);
    // the rest still ran
    expect((await link.listLinks()).map((l) => l.name)).not.toContain(KUBE_IPVS0);
    expect(await ipset.save()).not.toMatch(/KUBE-/);
    const last = logged[logged.length - 1]!;
    expect(last.level).toBe('error');
    expect(last.msg).toBe(
      'cleanup incomplete; left behind: IPVS virtual servers (ipvs list virtual servers: resolve generic netlink family IPVS: input/output error (EIO))',
    );
  });
});

describe('kube-ipvs cleanup without root (issue 41 item 9)', () => {
  it('IPVS refuses with EPERM: one line naming what it needed, exit 1, nothing else tried', async () => {
    const { env, logged, link, ipset, ipt } = await node(async () => new FakeIpvs({ privileged: false }));
    const iptablesBefore = await ipt.save('nat');
    expect(await runCleanup(['--families', 'ipv4'], env)).toBe(1);
    expect(logged).toEqual([
      {
        level: 'error',
        msg: 'kube-ipvs needs root (CAP_NET_ADMIN) for cleanup (the IPVS table): list virtual servers: operation not permitted (needs CAP_NET_ADMIN in the network namespace) (EPERM)',
      },
    ]);
    // nothing was touched
    expect((await link.listLinks()).map((l) => l.name)).toContain(KUBE_IPVS0);
    expect(await ipset.save()).toMatch(/KUBE-/);
    expect(await ipt.save('nat')).toBe(iptablesBefore);
  });

  it('ip_vs not loaded and nf_tables refuses with EPERM: the one line names nf_tables, no other line', async () => {
    const { env, logged, nft } = await node(async () => {
      throw new IpvsUnavailableError(
        'IPVS generic netlink family not found (ENOENT): is the ip_vs kernel module loaded?',
      );
    });
    nft.privileged = false;
    expect(await runCleanup([], env)).toBe(1);
    expect(logged).toEqual([
      {
        level: 'error',
        msg: "kube-ipvs needs root (CAP_NET_ADMIN) for cleanup (nf_tables' tables): dump nftables tables: EPERM (EPERM)",
      },
    ]);
  });

  it("--logging-format sets the lines' format, text by default as kube-proxy's", async () => {
    const text = await node(async () => new FakeIpvs());
    expect(await runCleanup(['--dry-run'], text.env)).toBe(0);
    expect(text.formats).toEqual(['text']);
    const json = await node(async () => new FakeIpvs());
    expect(await runCleanup(['--dry-run', '--logging-format=json'], json.env)).toBe(0);
    expect(json.formats).toEqual(['json']);
  });
});

describe('kube-ipvs cleanup: only what kube-proxy or kube-ipvs owns (issue 25 item 8)', () => {
  const CLUSTER_IP = {
    af: AF_INET,
    protocol: IPPROTO_TCP,
    address: '10.96.0.10',
    port: 80,
    fwmark: 0,
    scheduler: 'rr',
  } as const;
  const KEEPALIVED = {
    af: AF_INET,
    protocol: IPPROTO_TCP,
    address: '192.168.1.10',
    port: 443,
    fwmark: 0,
    scheduler: 'wlc',
  } as const;
  const FWMARK = { af: AF_INET, protocol: 0, address: '0.0.0.0', port: 0, fwmark: 7, scheduler: 'rr' } as const;

  async function mixedNode() {
    const ipvs = new FakeIpvs();
    for (const vs of [CLUSTER_IP, KEEPALIVED, FWMARK]) await ipvs.apply({ kind: 'newService', vs });
    const n = await node(async () => ipvs);
    return { ...n, ipvs };
  }
  const addresses = async (ipvs: FakeIpvs) =>
    (await ipvs.listServices()).map((v) => (v.fwmark > 0 ? `FWM ${v.fwmark}` : `${v.address}:${v.port}`)).sort();

  it.each([['--dry-run-typo'], ['--version'], ['--bogus=1'], ['extra-argument']])(
    'an unknown option or argument (%s) exits 2 and touches nothing',
    async (arg) => {
      const { env, ipvs, link, ipset } = await mixedNode();
      expect(await runCleanup([arg], env)).toBe(2);
      expect(await addresses(ipvs)).toHaveLength(3);
      expect((await link.listLinks()).map((l) => l.name)).toContain(KUBE_IPVS0);
      expect(await ipset.save()).toMatch(/KUBE-CLUSTER-IP/);
    },
  );

  it("removes the virtual servers kube-proxy's sets name; keepalived's and fwmark services stay, each named with why", async () => {
    const { env, ipvs, logged } = await mixedNode();
    expect(await runCleanup(['--families', 'ipv4'], env)).toBe(0);
    expect(await addresses(ipvs)).toEqual(['192.168.1.10:443', 'FWM 7']);
    const info = logged.map((l) => l.msg).join('\n');
    expect(info).toMatch(/removed TCP 10\.96\.0\.10:80/);
    expect(info).toMatch(/left TCP 192\.168\.1\.10:443: in no kube-proxy ipset/);
    expect(info).toMatch(/left FWM 7: a fwmark service/);
  });

  it("a port in KUBE-NODE-PORT-TCP vouches only for this node's addresses, and not at all once kube-ipvs's record exists: keepalived's VIP at a NodePort number stays", async () => {
    const at = (address: string) =>
      ({ af: AF_INET, protocol: IPPROTO_TCP, address, port: 30443, fwmark: 0, scheduler: 'rr' }) as const;
    const { env, ipvs, link, ipset } = await mixedNode();
    await link.addDummy('eth0');
    await link.addAddress((await link.getLink('eth0')).index, '192.0.2.1');
    for (const vs of [at('192.0.2.1'), at('198.51.100.100')]) await ipvs.apply({ kind: 'newService', vs });
    await ipset.restore('add KUBE-NODE-PORT-TCP 30443\n');
    const dry = async () => {
      const out: string[] = [];
      expect(
        await runCleanup(['--families', 'ipv4', '--dry-run'], {
          ...env,
          stdout: { write: (s: string) => out.push(s) },
        }),
      ).toBe(0);
      return out.join('');
    };
    // kube-proxy's node (no record): its NodePort on the node's address goes, keepalived's VIP stays
    let text = await dry();
    expect(text).toMatch(/would remove IPVS TCP 192\.0\.2\.1:30443/);
    expect(text).toMatch(
      /would leave IPVS TCP 198\.51\.100\.100:30443: a KUBE-NODE-PORT set holds port 30443, but 198\.51\.100\.100 is not one of this node's NodePort addresses/,
    );
    // kube-ipvs's node: its record names what it programmed; the NodePort on the node IP is not in it
    await ipset.restore(
      'create KUBE-IPVS-OWNED hash:ip,port family inet hashsize 1024 maxelem 65536\nadd KUBE-IPVS-OWNED 10.96.0.10,tcp:80\n',
    );
    text = await dry();
    expect(text).toMatch(/would remove IPVS TCP 10\.96\.0\.10:80/);
    expect(text).toMatch(/would leave IPVS TCP 192\.0\.2\.1:30443: not in kube-ipvs's record/);
    expect(text).toMatch(/would leave IPVS TCP 198\.51\.100\.100:30443/);
  });

  it('without kube-proxy sets, a VIP bound on kube-ipvs0 is the evidence', async () => {
    const { env, ipvs, link } = await mixedNode();
    const noSets = new FakeIpset();
    const { index } = await link.getLink(KUBE_IPVS0);
    await link.addAddress(index, '10.96.0.10');
    expect(
      await runCleanup(['--families', 'ipv4'], {
        ...env,
        ipset: () => noSets,
        iptables: () => new FakeIptables({ family: 'ipv4', flavor: 'legacy', ipsets: noSets }),
      }),
    ).toBe(0);
    expect(await addresses(ipvs)).toEqual(['192.168.1.10:443', 'FWM 7']);
  });

  it('--dry-run lists what it would remove and changes nothing', async () => {
    const { env, ipvs, link, ipset, logged } = await mixedNode();
    const out: string[] = [];
    expect(
      await runCleanup(['--families', 'ipv4', '--dry-run'], { ...env, stdout: { write: (s: string) => out.push(s) } }),
    ).toBe(0);
    expect(await addresses(ipvs)).toHaveLength(3);
    expect((await link.listLinks()).map((l) => l.name)).toContain(KUBE_IPVS0);
    expect(await ipset.save()).toMatch(/KUBE-CLUSTER-IP/);
    const text = out.join('');
    expect(text).toMatch(/would remove IPVS TCP 10\.96\.0\.10:80/);
    expect(text).toMatch(/would remove link kube-ipvs0/);
    expect(text).toMatch(/would remove ipset KUBE-CLUSTER-IP/);
    expect(text).toMatch(/would run ipv4 nat -X KUBE-SERVICES/);
    expect(text).toMatch(/would leave IPVS TCP 192\.168\.1\.10:443: in no kube-proxy ipset/);
    expect(logged.filter((l) => l.level === 'error')).toEqual([]);
  });
});
