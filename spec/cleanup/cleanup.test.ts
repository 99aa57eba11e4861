import { cleanup, kubeSetNames, planTableCleanup } from '../../lib/cleanup/cleanup';
import { FakeIpvs } from '../../testkit/kernel/fake-ipvs';
import { FakeLink } from '../../testkit/kernel/fake-link';
import { FakeIpset } from '../../testkit/kernel/fake-ipset';
import { FakeIptables } from '../../testkit/kernel/fake-iptables';
import { KUBE_IPVS0 } from '../../lib/kernel/link/link';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import {
  FOREIGN,
  IPTABLES_MODE,
  IPTABLES_MODE_MANGLE,
  kubeProxyIpsetSeed,
  kubeProxyIptablesSeed,
} from '../../testkit/kube-proxy-leftovers';
import { FakeNftTables } from '../../testkit/kernel/fake-nftables';
import { NFPROTO } from '../../lib/uapi/nf_tables';

async function kubeProxyNode() {
  const ipvs = new FakeIpvs();
  await ipvs.apply({
    kind: 'newService',
    vs: { af: AF_INET, protocol: IPPROTO_TCP, address: '10.96.0.10', port: 80, fwmark: 0, scheduler: 'rr' },
  });
  const link = new FakeLink();
  await link.addDummy(KUBE_IPVS0);
  await link.addDummy(FOREIGN.LINK);
  const ipset = new FakeIpset();
  await ipset.restore(kubeProxyIpsetSeed());
  // flavor legacy: the nft-flavored fake (v1.8.9 as of this commit) re-checks the jump target
  // of a `-D` line at COMMIT, after the same payload's `-X` removed it, and refuses a payload
  // that the real iptables-nft-restore accepts (checked in the VM, spec/vm/cleanup.vm.test.ts)
  const ipt4 = new FakeIptables({ family: 'ipv4', flavor: 'legacy', ipsets: ipset });
  const ipt6 = new FakeIptables({ family: 'ipv6', flavor: 'legacy', ipsets: ipset });
  await ipt4.restore(kubeProxyIptablesSeed('ipv4'));
  await ipt6.restore(kubeProxyIptablesSeed('ipv6'));
  const nftables = new FakeNftTables();
  return { ipvs, link, ipset, ipt4, ipt6, nftables, deps: { ipvs, link, ipset, iptables: [ipt4, ipt6], nftables } };
}

const chainsOf = (save: string) =>
  save
    .split('\n')
    .filter((l) => l.startsWith(':'))
    .map((l) => l.slice(1).split(' ')[0]);

describe('cleanup on fakes seeded as a kube-proxy node', () => {
  it('removes kube-proxy state in kernel order and keeps every foreign object', async () => {
    const n = await kubeProxyNode();
    const r = await cleanup(n.deps);
    expect(r.failures).toEqual([]);
    expect(await n.ipvs.listServices()).toEqual([]);
    expect(r.linkDeleted).toBe(true);
    expect((await n.link.listLinks()).map((l) => l.name)).toEqual(['lo', FOREIGN.LINK]);
    for (const ipt of [n.ipt4, n.ipt6]) {
      const nat = await ipt.save('nat');
      const filter = await ipt.save('filter');
      expect(chainsOf(nat).filter((c) => c!.startsWith('KUBE-'))).toEqual([FOREIGN.KUBELET_NAT_CHAIN]);
      expect(chainsOf(filter).filter((c) => c!.startsWith('KUBE-'))).toEqual([FOREIGN.KUBELET_FILTER_CHAIN]);
      expect(nat).toContain(`-A ${FOREIGN.NAT_CHAIN} -j RETURN`);
      expect(nat).toMatch(/-A POSTROUTING -s \S+ -j MASQUERADE/);
      expect(filter).toContain(`-A INPUT -j ${FOREIGN.KUBELET_FILTER_CHAIN}`);
      expect(filter).toMatch(new RegExp(`-A INPUT -p tcp .*-j ${FOREIGN.FILTER_CHAIN}`));
      expect(nat + filter).not.toMatch(/kubernetes|kube-proxy/);
    }
    expect(r.setsDestroyed).toHaveLength(12);
    for (const name of kubeSetNames()) expect(n.ipset.has(name)).toBe(false);
    expect(n.ipset.has(FOREIGN.SET)).toBe(true);
    expect(n.ipset.has(FOREIGN.SET6)).toBe(true);
    // 3 saves (nat, filter, mangle) + 1 restore per family, 1 ipset save + 1 restore
    expect(r.execs).toBe(10);
  });

  it('a second run succeeds and changes nothing: saves only, no restore', async () => {
    const n = await kubeProxyNode();
    await cleanup(n.deps);
    const restores = n.ipt4.restores.length + n.ipt6.restores.length + n.ipset.restores.length;
    const r = await cleanup(n.deps);
    expect(r).toEqual({
      dryRun: false,
      virtualServersRemoved: [],
      virtualServersKept: [],
      linkDeleted: false,
      iptablesDone: [],
      chainsKept: [],
      setsDestroyed: [],
      nftTablesDeleted: [],
      execs: 7,
      failures: [],
    });
    expect(n.ipt4.restores.length + n.ipt6.restores.length + n.ipset.restores.length).toBe(restores);
  });

  it("destroys kube-ipvs's own record (KUBE-IPVS-OWNED, KUBE-6-IPVS-OWNED) with kube-proxy's sets", async () => {
    const n = await kubeProxyNode();
    await n.ipset.restore(
      'create KUBE-IPVS-OWNED hash:ip,port family inet hashsize 1024 maxelem 65536 comment\nadd KUBE-IPVS-OWNED 10.96.0.10,tcp:80 comment "rr/0x0000/0"\ncreate KUBE-6-IPVS-OWNED hash:ip,port family inet6 hashsize 1024 maxelem 65536\n' +
        // a rebuild a killed daemon left before its swap
        'create KUBE-IPVS-OWNED-NEW hash:ip,port family inet hashsize 1024 maxelem 131072 comment\n',
    );
    const r = await cleanup(n.deps);
    expect(r.failures).toEqual([]);
    expect(r.setsDestroyed).toEqual(
      expect.arrayContaining(['KUBE-IPVS-OWNED', 'KUBE-6-IPVS-OWNED', 'KUBE-IPVS-OWNED-NEW']),
    );
    expect(n.ipset.has('KUBE-IPVS-OWNED')).toBe(false);
    expect(n.ipset.has('KUBE-6-IPVS-OWNED')).toBe(false);
    expect(n.ipset.has('KUBE-IPVS-OWNED-NEW')).toBe(false);
    expect(n.ipset.has(FOREIGN.SET)).toBe(true);
  });

  it('a clean node: nothing to do', async () => {
    const ipset = new FakeIpset();
    const r = await cleanup({
      ipvs: new FakeIpvs(),
      link: new FakeLink(),
      ipset,
      iptables: [new FakeIptables({ ipsets: ipset })],
      nftables: new FakeNftTables(),
    });
    expect(r.failures).toEqual([]);
    expect(r.execs).toBe(4);
  });

  it('a kube-ipvs0 of another kind is reported, left in place, and the rest still runs', async () => {
    const n = await kubeProxyNode();
    await n.link.deleteLink((await n.link.getLink(KUBE_IPVS0)).index);
    n.link.seedLink(KUBE_IPVS0, 'veth');
    const r = await cleanup(n.deps);
    expect(r.failures.map((f) => [f.step, (f.error as { code: string }).code])).toEqual([['link', 'KIPVS_LINK_KIND']]);
    expect((await n.link.getLink(KUBE_IPVS0)).kind).toBe('veth');
    expect(r.setsDestroyed).toHaveLength(12);
  });

  it('a KUBE chain a foreign chain still jumps to is flushed but kept; a set a foreign rule uses survives, others go', async () => {
    const n = await kubeProxyNode();
    await n.ipt4.restore(
      `*nat\n-A ${FOREIGN.NAT_CHAIN} -j KUBE-MARK-MASQ\nCOMMIT\n*filter\n-A ${FOREIGN.FILTER_CHAIN} -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\nCOMMIT\n`,
    );
    const r = await cleanup(n.deps);
    expect(r.chainsKept).toEqual(['ipv4 nat KUBE-MARK-MASQ']);
    expect(await n.ipt4.save('nat')).toContain(':KUBE-MARK-MASQ');
    expect(await n.ipt4.save('nat')).not.toContain('-A KUBE-MARK-MASQ');
    expect(r.failures.map((f) => `${f.step} ${f.what}`)).toEqual(['ipset destroy KUBE-CLUSTER-IP']);
    expect(n.ipset.has('KUBE-CLUSTER-IP')).toBe(true);
    expect(r.setsDestroyed).toHaveLength(11);
  });
});

// kube-proxy --cleanup removes what each of its Linux modes leaves (platformCleanup with
// cleanupAndExit: iptables, ipvs and nftables CleanupLeftovers), whichever mode it ran in
describe("cleanup of kube-proxy's iptables-mode and nftables-mode leftovers", () => {
  const kubeProxyChains = (save: string) => chainsOf(save).filter((c) => /^KUBE-(?!FIREWALL$)/.test(c!));

  it("removes iptables mode's chains in nat, filter and mangle, with their jumps; the kubelet's and an admin's stay", async () => {
    const ipset = new FakeIpset();
    const ipt = new FakeIptables({ family: 'ipv4', flavor: 'legacy', ipsets: ipset });
    await ipt.restore(
      '*filter\n:KUBE-FIREWALL - [0:0]\n-A INPUT -j KUBE-FIREWALL\n-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT\nCOMMIT\n',
    );
    const foreign = { nat: await ipt.save('nat'), filter: await ipt.save('filter'), mangle: await ipt.save('mangle') };
    await ipt.restore(IPTABLES_MODE);
    await ipt.restore(IPTABLES_MODE_MANGLE);
    const r = await cleanup({
      ipvs: new FakeIpvs(),
      link: new FakeLink(),
      ipset,
      iptables: [ipt],
      nftables: new FakeNftTables(),
    });
    expect(r.failures).toEqual([]);
    expect(r.chainsKept).toEqual([]);
    for (const table of ['nat', 'filter', 'mangle'] as const) {
      expect(kubeProxyChains(await ipt.save(table))).toEqual([]);
      expect(await ipt.save(table)).toBe(foreign[table]);
    }
    expect(r.iptablesDone).toEqual(
      expect.arrayContaining([
        'ipv4 nat -D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        'ipv4 nat -X KUBE-SVC-ERIFXISQEP7F7OF4',
        'ipv4 nat -X KUBE-SEP-IT2ZTR26TO4XFPTO',
        'ipv4 filter -D INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
        'ipv4 filter -X KUBE-EXTERNAL-SERVICES',
        'ipv4 mangle -X KUBE-PROXY-CANARY',
      ]),
    );
    // one restore for the three tables
    expect(ipt.restores.length).toBe(4);
  });

  it("deletes nftables mode's ip and ip6 kube-proxy tables in one transaction; inet kube-proxy and others stay", async () => {
    const nftables = new FakeNftTables();
    nftables.addTable({ family: NFPROTO.IPV4, name: 'kube-proxy' });
    nftables.addTable({ family: NFPROTO.INET, name: 'kube-proxy' });
    nftables.addTable({ family: NFPROTO.IPV6, name: 'kube-proxy' });
    nftables.addTable({ family: NFPROTO.IPV4, name: 'filter' });
    const ipset = new FakeIpset();
    const deps = {
      ipvs: new FakeIpvs(),
      link: new FakeLink(),
      ipset,
      iptables: [new FakeIptables({ ipsets: ipset })],
      nftables,
    };
    const dry = await cleanup({ ...deps, dryRun: true });
    expect(dry.nftTablesDeleted).toEqual(['table ip kube-proxy', 'table ip6 kube-proxy']);
    expect(nftables.all()).toHaveLength(4);
    const r = await cleanup(deps);
    expect(r.failures).toEqual([]);
    expect(r.nftTablesDeleted).toEqual(['table ip kube-proxy', 'table ip6 kube-proxy']);
    expect(nftables.all()).toEqual([
      { family: NFPROTO.INET, name: 'kube-proxy' },
      { family: NFPROTO.IPV4, name: 'filter' },
    ]);
    expect(nftables.transactions).toBe(1);
    // nothing left: nothing sent
    expect((await cleanup(deps)).nftTablesDeleted).toEqual([]);
    expect(nftables.transactions).toBe(1);
  });

  it('nftables refused (no CAP_NET_ADMIN): a failure of that step, the other steps still run', async () => {
    const n = await kubeProxyNode();
    n.nftables.privileged = false;
    const r = await cleanup(n.deps);
    expect(r.failures.map((f) => `${f.step} ${(f.error as { code?: string }).code}`)).toEqual([
      expect.stringMatching(/^nftables /),
    ]);
    expect(r.setsDestroyed).toHaveLength(12);
  });
});

describe('planTableCleanup', () => {
  it('deletes jumps first, then flushes all, then deletes all; ignores chains that are not there', () => {
    const save = [
      '*nat',
      ':OUTPUT ACCEPT [0:0]',
      ':KUBE-SERVICES - [0:0]',
      ':KUBE-MARK-MASQ - [0:0]',
      '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A KUBE-SERVICES -j KUBE-MARK-MASQ',
      'COMMIT',
    ].join('\n');
    expect(planTableCleanup('nat', save)).toEqual({
      lines: [
        '-D OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-D OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        '-F KUBE-SERVICES',
        '-F KUBE-MARK-MASQ',
        '-X KUBE-SERVICES',
        '-X KUBE-MARK-MASQ',
      ],
      kept: [],
    });
  });
});
