// FakeIptables semantics, as observed with iptables 1.8.9 (legacy and nft) on Linux 6.1 in the VM.
import { ExecError } from '../../../lib/errors';
import { FakeIpset } from '../../../testkit/kernel/fake-ipset';
import { FakeIptables } from '../../../testkit/kernel/fake-iptables';
import { planIptables } from '../../../lib/plan/iptables';
import { planIpsets } from '../../../lib/plan/ipsets';
import { formatIptablesRestore } from '../../../lib/kernel/iptables/format-restore';

function refusal(f: FakeIptables, text: string): ExecError {
  try {
    f.applyRestore(text, true);
  } catch (e) {
    if (e instanceof ExecError) return e;
    throw e;
  }
  throw new Error('restore did not fail');
}

describe.each(['legacy', 'nft'] as const)('FakeIptables (%s)', (flavor) => {
  const fresh = () => {
    const f = new FakeIptables({ flavor });
    f.applyRestore('*filter\n:FOREIGN - [0:0]\n-A FOREIGN -s 192.0.2.1 -j ACCEPT\n-A INPUT -j FOREIGN\nCOMMIT\n', true);
    return f;
  };

  it('--noflush: a declared chain is flushed and rewritten, undeclared chains and built-in rules stay', () => {
    const f = fresh();
    f.applyRestore('*filter\n:KUBE-A - [0:0]\n-A KUBE-A -j ACCEPT\n-A KUBE-A -j DROP\nCOMMIT\n', true);
    f.applyRestore('*filter\n:KUBE-A - [0:0]\n-A KUBE-A -j RETURN\nCOMMIT\n', true);
    expect(f.dump('filter')).toBe(
      '*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:FOREIGN - [0:0]\n:KUBE-A - [0:0]\n' +
        '-A INPUT -j FOREIGN\n-A FOREIGN -s 192.0.2.1/32 -j ACCEPT\n-A KUBE-A -j RETURN\nCOMMIT\n',
    );
  });

  // as iptables-save 1.8.9 printed these three on this machine (libxtables' xtables_save_string)
  it('prints a comment as iptables-save does: bare, quoted, or quoted with \\\' and \\"', () => {
    const f = fresh();
    f.applyRestore(
      '*filter\n:KUBE-C - [0:0]\n' +
        '-A KUBE-C -m comment --comment "ab_c-1" -j ACCEPT\n' +
        '-A KUBE-C -m comment --comment a/b -j ACCEPT\n' +
        `-A KUBE-C -m comment --comment "x 'y'" -j ACCEPT\n` +
        'COMMIT\n',
      true,
    );
    expect(
      f
        .dump('filter')
        .split('\n')
        .filter((l) => l.startsWith('-A KUBE-C')),
    ).toEqual([
      '-A KUBE-C -m comment --comment ab_c-1 -j ACCEPT',
      '-A KUBE-C -m comment --comment "a/b" -j ACCEPT',
      `-A KUBE-C -m comment --comment "x \\'y\\'" -j ACCEPT`,
    ]);
  });

  it('without --noflush the table is reset', () => {
    const f = fresh();
    f.applyRestore('*filter\n:KUBE-A - [0:0]\nCOMMIT\n', false);
    expect(f.chains('filter')).toEqual(['INPUT', 'FORWARD', 'OUTPUT', 'KUBE-A']);
  });

  it('a jump to a missing chain fails and leaves the table as it was', () => {
    const f = fresh();
    const before = f.dump('filter');
    const e = refusal(f, '*filter\n:KUBE-A - [0:0]\n-A KUBE-A -j KUBE-MISSING\nCOMMIT\n');
    expect(e.exitCode).toBe(2);
    expect(e.line).toBe(flavor === 'legacy' ? 3 : 4); // nft blames the COMMIT line
    expect(f.dump('filter')).toBe(before);
  });

  it('tables commit one by one: the earlier table stays when a later one fails', () => {
    const f = fresh();
    const e = refusal(
      f,
      '*filter\n:KUBE-A - [0:0]\n-A KUBE-A -j ACCEPT\nCOMMIT\n*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j NOPE2\nCOMMIT\n',
    );
    expect(e.line).toBe(flavor === 'legacy' ? 7 : 8);
    expect(f.rules('filter', 'KUBE-A')).toEqual(['-A KUBE-A -j ACCEPT']);
    expect(f.chains('nat')).not.toContain('KUBE-A');
  });

  it.each([
    ['-X of a referenced chain', '*filter\n-X FOREIGN\nCOMMIT\n', 2],
    ['-X of a non-empty chain', '*filter\n:KUBE-B - [0:0]\n-A KUBE-B -j ACCEPT\n-X KUBE-B\nCOMMIT\n', 4],
  ])('%s fails', (_n, text, line) => {
    const e = refusal(fresh(), text);
    expect(e.exitCode).toBe(flavor === 'legacy' ? 1 : 4);
    expect(e.line).toBe(line);
  });

  it.each([
    ['-A to a missing chain', '*filter\n-A NOCHAIN -j ACCEPT\nCOMMIT\n', 2],
    ['-N of an existing chain', '*filter\n-N KUBE-C\n-N KUBE-C\nCOMMIT\n', 3],
  ])('%s fails with exit 1', (_n, text, line) => {
    const e = refusal(fresh(), text);
    expect(e.exitCode).toBe(1);
    expect(e.line).toBe(line);
  });

  it('-F then -X of an unreferenced chain works', () => {
    const f = fresh();
    f.applyRestore('*filter\n:KUBE-B - [0:0]\n-A KUBE-B -j ACCEPT\nCOMMIT\n', true);
    f.applyRestore('*filter\n-F KUBE-B\n-X KUBE-B\nCOMMIT\n', true);
    expect(f.chains('filter')).not.toContain('KUBE-B');
  });

  it('one payload deletes the jump to a chain, then flushes and deletes the chain (cleanup)', () => {
    const f = fresh();
    f.applyRestore('*filter\n:KUBE-C - [0:0]\n-A KUBE-C -j ACCEPT\n-I INPUT -j KUBE-C\nCOMMIT\n', true);
    f.applyRestore('*filter\n-D INPUT -j KUBE-C\n-F KUBE-C\n-X KUBE-C\nCOMMIT\n', true);
    expect(f.chains('filter')).not.toContain('KUBE-C');
    expect(f.rules('filter', 'INPUT')).toEqual(['-A INPUT -j FOREIGN']);
  });

  it('with linked ipsets: a missing set fails, and a referenced set cannot be destroyed', () => {
    const sets = new FakeIpset();
    const f = new FakeIptables({ flavor, ipsets: sets });
    expect(
      refusal(f, '*filter\n:KUBE-A - [0:0]\n-A KUBE-A -m set --match-set NOPE dst -j ACCEPT\nCOMMIT\n'),
    ).toMatchObject({ exitCode: 2, line: 3 });
    sets.applyRestore('create KUBE-IPVS-IPS hash:ip family inet hashsize 1024 maxelem 65536\n', true);
    f.applyRestore(
      '*filter\n:KUBE-A - [0:0]\n-A KUBE-A -m set --match-set KUBE-IPVS-IPS dst -j ACCEPT\nCOMMIT\n',
      true,
    );
    expect(() => sets.destroy('KUBE-IPVS-IPS')).toThrow('in use by a kernel component');
    f.applyRestore('*filter\n:KUBE-A - [0:0]\nCOMMIT\n', true);
    sets.destroy('KUBE-IPVS-IPS');
  });

  it('takes the full kube-proxy payload with jumps; the KUBE-* chains hold exactly the plan rules', async () => {
    const sets = new FakeIpset();
    await sets.sync(planIpsets('ipv4', {}));
    const f = new FakeIptables({ flavor, ipsets: sets });
    f.applyRestore('*filter\n:FOREIGN - [0:0]\n-A FOREIGN -j ACCEPT\n-A INPUT -j FOREIGN\nCOMMIT\n', true);
    const plan = planIptables({ family: 'ipv4', nonEmptySets: new Set(['CLUSTER_IP']), randomFully: true });
    const r = await f.sync(plan);
    expect(r).toMatchObject({ execs: 3, wrote: true });
    expect(r.insertedJumps.length).toBe(9);
    for (const t of ['nat', 'filter'] as const) {
      for (const chain of plan[t].chains) {
        expect(f.rules(t, chain)).toEqual(plan[t].rules.filter((x) => x.startsWith(`-A ${chain} `)));
      }
    }
    // kube-proxy prepends in list order, so the last prepended is first
    expect(f.rules('filter', 'INPUT')).toEqual([
      '-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER',
      '-A INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL',
      '-A INPUT -m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT',
      '-A INPUT -j FOREIGN',
    ]);
    expect(f.rules('filter', 'FOREIGN')).toEqual(['-A FOREIGN -j ACCEPT']);
    expect((await f.sync(plan)).execs).toBe(0);
    // a forced resync finds all jumps and does not duplicate them
    const forced = await f.sync(plan, { force: true });
    expect(forced.insertedJumps).toEqual([]);
    expect(f.rules('filter', 'INPUT')!.length).toBe(4);
    expect(f.restores.at(-1)).toBe(formatIptablesRestore(plan));
  });
});

describe('FakeIptables prints rules as iptables-save spells them', () => {
  // each pair: the proxy's restore line, and what iptables-save 1.8.9 printed for it in the VM
  // (spec/vm/golden.vm.test.ts)
  const printed = (family: 'ipv4' | 'ipv6', table: string, rule: string): string => {
    const f = new FakeIptables({ family });
    const chain = rule.split(' ')[1]!;
    const target = /-j (KUBE-\S+)/.exec(rule)?.[1];
    const chains = [chain, ...(target ? [target] : [])].map((c) => `:${c} - [0:0]\n`).join('');
    f.applyRestore(`*${table}\n${chains}${rule}\nCOMMIT\n`, true);
    return f
      .dump(table)
      .split('\n')
      .find((l) => l.startsWith(`-A ${chain} `))!;
  };

  it.each([
    ['-A KUBE-MARK-MASQ -j MARK --or-mark 0x004000', '-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000'],
    ['-A KUBE-POSTROUTING -j MARK --xor-mark 0x004000', '-A KUBE-POSTROUTING -j MARK --set-xmark 0x4000/0x0'],
    [
      '-A KUBE-POSTROUTING -m mark ! --mark 0x004000/0x004000 -j RETURN',
      '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
    ],
    [
      '-A KUBE-SERVICES -m comment --comment "masquerade" -m set --match-set KUBE-CLUSTER-IP dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ',
      '-A KUBE-SERVICES ! -s 10.244.0.0/16 -m comment --comment masquerade -m set --match-set KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ',
    ],
    ['-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN', '-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN'],
  ])('nat: %s', (rule, saved) => expect(printed('ipv4', 'nat', rule)).toBe(saved));

  it("REJECT gets its family's default --reject-with", () => {
    const rule = '-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT';
    expect(printed('ipv4', 'filter', rule)).toBe(`${rule} --reject-with icmp-port-unreachable`);
    expect(printed('ipv6', 'filter', rule)).toBe(`${rule} --reject-with icmp6-port-unreachable`);
  });

  it("an address gets its prefix length, -m ipvs libxt_ipvs's order and protocol number; -D finds the rule by that spelling", () => {
    const f = new FakeIptables({ family: 'ipv4' });
    const rule =
      '-A KUBE-IPVS-OUT-FILTER -s 203.0.113.10 -m ipvs --vaddr 203.0.113.10 --vproto tcp --vport 443 -j DROP';
    f.applyRestore(`*filter\n:KUBE-IPVS-OUT-FILTER - [0:0]\n${rule}\nCOMMIT\n`, true);
    // (as iptables-save printed the proxy's rule in the VM: spec/vm/golden.vm.test.ts)
    const saved =
      '-A KUBE-IPVS-OUT-FILTER -s 203.0.113.10/32 -m ipvs --vproto 6 --vaddr 203.0.113.10 --vport 443 -j DROP';
    expect(f.dump('filter')).toContain(`${saved}\n`);
    f.applyRestore(`*filter\n${saved.replace('-A', '-D')}\nCOMMIT\n`, true);
    expect(f.rules('filter', 'KUBE-IPVS-OUT-FILTER')).toEqual([]);
  });
});

describe('FakeIptables nf_tables generation', () => {
  it('nft: +1 per committed table block that changes something; failed blocks and empty ones add nothing; legacy never moves', () => {
    const nft = new FakeIptables({ flavor: 'nft' });
    const g = nft.generation;
    nft.applyRestore(
      '*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j RETURN\nCOMMIT\n*filter\n:KUBE-F - [0:0]\n-A KUBE-F -j RETURN\nCOMMIT\n',
      true,
    );
    expect(nft.generation).toBe(g + 2);
    // the filter block fails at its COMMIT: only nat counts
    expect(() =>
      nft.applyRestore('*nat\n-A KUBE-A -j RETURN\nCOMMIT\n*filter\n-A KUBE-F -j NO-SUCH-CHAIN\nCOMMIT\n', true),
    ).toThrow();
    expect(nft.generation).toBe(g + 3);
    // a flush of an empty chain, a declaration of an existing empty one: nothing to commit
    nft.applyRestore('*filter\n:KUBE-E - [0:0]\nCOMMIT\n', true);
    expect(nft.generation).toBe(g + 4);
    nft.applyRestore('*filter\n-F KUBE-E\n:KUBE-E - [0:0]\nCOMMIT\n', true);
    expect(nft.generation).toBe(g + 4);
    nft.foreignCommit();
    expect(nft.generation).toBe(g + 5);

    const legacy = new FakeIptables({ flavor: 'legacy' });
    legacy.applyRestore('*nat\n:KUBE-A - [0:0]\n-A KUBE-A -j RETURN\nCOMMIT\n', true);
    legacy.foreignCommit();
    expect(legacy.generation).toBe(1);
  });
});
