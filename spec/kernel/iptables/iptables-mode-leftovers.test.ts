// A node kube-proxy's iptables mode ran on: the first sync of kube-ipvs leaves its tables as a
// node that never ran it would hold them (kube-proxy's IPVS mode does not: its filter
// KUBE-SERVICES REJECTs stay), and touches nothing that is not kube-proxy's.
import { FakeIptables } from '../../../testkit/kernel/fake-iptables';
import { planIptables } from '../../../lib/plan/iptables';
import { planChainRemoval } from '../../../lib/kernel/iptables/chain-removal';
import { isIptablesModeChain, isIptablesModeFirewallJump } from '../../../lib/model/iptables';
import { SetKey } from '../../../lib/model/names';
import { IPTABLES_MODE } from '../../../testkit/kube-proxy-leftovers';

const SETS: SetKey[] = ['CLUSTER_IP', 'NODE_PORT_TCP', 'LOAD_BALANCER'];
const plan = planIptables({
  family: 'ipv4',
  clusterCIDR: '10.244.0.0/16',
  nonEmptySets: new Set(SETS),
  randomFully: true,
});

// what an admin and the kubelet keep there, and no kube-proxy mode touches
const FOREIGN =
  [
    '*filter',
    ':KUBE-FIREWALL - [0:0]',
    '-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT',
    '-A INPUT -j KUBE-FIREWALL',
    '-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m comment --comment "block incoming localnet connections" -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP',
    'COMMIT',
  ].join('\n') + '\n';

async function node(...payloads: string[]): Promise<FakeIptables> {
  const ipt = new FakeIptables({ family: 'ipv4' });
  for (const p of payloads) await ipt.restore(p);
  return ipt;
}

describe("kube-proxy's iptables-mode leftovers at the first sync", () => {
  it('removed after our restore: the tables are those of a node that never ran iptables mode; foreign rules stay', async () => {
    const ipt = await node(FOREIGN, IPTABLES_MODE);
    const r = await ipt.sync(plan);
    // 2 saves, our restore, the leftovers' restore
    expect(r).toMatchObject({ execs: 4, wrote: true });
    expect(r.leftoversRemoved).toEqual(
      expect.arrayContaining([
        'nat -X KUBE-SVC-ERIFXISQEP7F7OF4',
        'nat -X KUBE-SEP-IT2ZTR26TO4XFPTO',
        'nat -X KUBE-NODEPORTS',
        'filter -D OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
        'filter -D INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
        'filter -X KUBE-SERVICES',
        'filter -X KUBE-EXTERNAL-SERVICES',
      ]),
    );

    const clean = await node(FOREIGN);
    await clean.sync(plan);
    expect(await ipt.save('nat')).toBe(await clean.save('nat'));
    expect(await ipt.save('filter')).toBe(await clean.save('filter'));
    expect(await ipt.save('filter')).not.toMatch(/has no endpoints|load balancer firewall/);

    // nothing left to find
    const again = await ipt.sync(plan, { verify: true });
    expect(again).toMatchObject({ execs: 2, wrote: false, repaired: [] });
    expect(again.leftoversRemoved).toBeUndefined();
  });

  it('a clean node: no extra restore', async () => {
    const r = await (await node(FOREIGN)).sync(plan);
    expect(r).toMatchObject({ execs: 3, wrote: true });
    expect(r.leftoversRemoved).toBeUndefined();
  });

  it('looked for once (issue 39 item 4): chains by those names that appear after the first sync are left alone', async () => {
    const ipt = await node(FOREIGN);
    await ipt.sync(plan);
    const later =
      '*filter\n:KUBE-SERVICES - [0:0]\n-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\n-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment "default/web:http has no endpoints" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable\nCOMMIT\n' +
      '*nat\n:KUBE-EXT-TOOL - [0:0]\n-A KUBE-EXT-TOOL -p tcp -m comment --comment "x" -j DNAT --to-destination 10.1.2.3:80\nCOMMIT\n';
    await ipt.restore(later);
    const filter = await ipt.save('filter');
    const nat = await ipt.save('nat');
    for (let i = 0; i < 3; i++) {
      const r = await ipt.sync(plan, { verify: true });
      expect(r).toMatchObject({ execs: 2, wrote: false, repaired: [] });
      expect(r.leftoversRemoved).toBeUndefined();
    }
    expect(await ipt.save('filter')).toBe(filter);
    expect(await ipt.save('nat')).toBe(nat);
  });

  it("a chain by such a name with a rule kube-proxy did not write (no comment) is another program's: it and its jump stay", async () => {
    const tool =
      '*filter\n:KUBE-SERVICES - [0:0]\n-A INPUT -j KUBE-SERVICES\n-A KUBE-SERVICES -s 203.0.113.0/24 -j DROP\nCOMMIT\n' +
      '*nat\n:KUBE-EXT-TOOL - [0:0]\n-A PREROUTING -j KUBE-EXT-TOOL\n-A KUBE-EXT-TOOL -p tcp -j DNAT --to-destination 10.1.2.3:80\nCOMMIT\n';
    const ipt = await node(FOREIGN, tool);
    const r = await ipt.sync(plan);
    expect(r.leftoversRemoved).toBeUndefined();
    expect(await ipt.save('filter')).toContain('-A KUBE-SERVICES -s 203.0.113.0/24 -j DROP');
    expect(await ipt.save('filter')).toContain('-A INPUT -j KUBE-SERVICES');
    expect(await ipt.save('nat')).toContain('-A KUBE-EXT-TOOL -p tcp -j DNAT --to-destination 10.1.2.3:80');
  });

  it('a chain a foreign chain still jumps to is flushed, kept, and not touched again', async () => {
    const ipt = await node(
      FOREIGN,
      IPTABLES_MODE,
      '*nat\n:ADMIN - [0:0]\n-A ADMIN -j KUBE-SVC-ERIFXISQEP7F7OF4\nCOMMIT\n',
    );
    const r = await ipt.sync(plan);
    expect(r.leftoversRemoved).toContain('nat -F KUBE-SVC-ERIFXISQEP7F7OF4');
    expect(r.leftoversRemoved).not.toContain('nat -X KUBE-SVC-ERIFXISQEP7F7OF4');
    expect(r.leftoversRemoved).toContain('nat -X KUBE-SEP-IT2ZTR26TO4XFPTO');
    const nat = await ipt.save('nat');
    expect(nat).toContain(':KUBE-SVC-ERIFXISQEP7F7OF4');
    expect(nat).toContain('-A ADMIN -j KUBE-SVC-ERIFXISQEP7F7OF4');
    expect(nat).not.toMatch(/^-A KUBE-SVC-/m);
    const again = await ipt.sync(plan, { verify: true });
    expect(again).toMatchObject({ execs: 2, wrote: false });
  });

  it('a refused removal does not fail the sync: ours are in place, the next verify retries', async () => {
    const ipt = await node(FOREIGN, IPTABLES_MODE);
    const restore = ipt.restore.bind(ipt);
    let calls = 0;
    ipt.restore = async (text: string) => {
      if (++calls === 2) throw new Error('iptables-restore: line 3 failed');
      return restore(text);
    };
    const r = await ipt.sync(plan);
    expect(r).toMatchObject({ execs: 4, wrote: true });
    expect(r.leftoversRemoved).toBeUndefined();
    expect(await ipt.save('filter')).toMatch(/has no endpoints/);
    const again = await ipt.sync(plan, { verify: true });
    expect(again.leftoversRemoved).toContain('filter -X KUBE-SERVICES');
    expect(await ipt.save('filter')).not.toMatch(/has no endpoints/);
  });
});

describe('iptables-mode chain names', () => {
  it.each<[string, string, boolean]>([
    ['nat', 'KUBE-SVC-ERIFXISQEP7F7OF4', true],
    ['nat', 'KUBE-SEP-IT2ZTR26TO4XFPTO', true],
    ['nat', 'KUBE-NODEPORTS', true],
    ['nat', 'KUBE-NODE-PORT', false], // IPVS mode's
    ['nat', 'KUBE-SERVICES', false], // shared, rewritten
    ['filter', 'KUBE-SERVICES', true],
    ['filter', 'KUBE-SVC-ERIFXISQEP7F7OF4', false], // iptables mode makes those in nat only
    ['filter', 'KUBE-PROXY-FIREWALL', false], // shared
    ['filter', 'KUBE-FIREWALL', false], // the kubelet's
  ])('%s %s: %s', (table, chain, expected) => {
    expect(isIptablesModeChain(table as 'nat' | 'filter', chain)).toBe(expected);
  });

  it("only the firewall jump under iptables mode's comment is its own", () => {
    const plan = (save: string) =>
      planChainRemoval(save, { remove: () => false, alsoDelete: isIptablesModeFirewallJump }).lines;
    expect(
      plan(
        '-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL\n',
      ),
    ).toEqual([
      '-D INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
    ]);
    expect(plan('-A INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL\n')).toEqual([]);
  });
});
