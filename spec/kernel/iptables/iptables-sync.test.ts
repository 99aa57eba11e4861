// IptablesSync's periodic verify step, over the fake: chains flushed, rules or jumps deleted
// behind its back are noticed with one save per table and rewritten.
import { FakeIptables, FakeNftGeneration } from '../../../testkit/kernel/fake-iptables';
import { planIptables } from '../../../lib/plan/iptables';
import { SetKey } from '../../../lib/model/names';

const SETS: SetKey[] = ['CLUSTER_IP', 'NODE_PORT_TCP', 'LOAD_BALANCER'];
const plan = planIptables({
  family: 'ipv4',
  clusterCIDR: '10.244.0.0/16',
  nonEmptySets: new Set(SETS),
  randomFully: true,
});

async function synced() {
  const ipt = new FakeIptables({ family: 'ipv4' });
  expect((await ipt.sync(plan)).wrote).toBe(true);
  return { ipt, nat: await ipt.save('nat'), filter: await ipt.save('filter') };
}

describe('Iptables.sync verify (the periodic check)', () => {
  it('nothing changed behind our back: two saves, no write', async () => {
    const { ipt } = await synced();
    expect(await ipt.sync(plan)).toMatchObject({ execs: 0, wrote: false });
    expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
  });

  it.each<[string, string, string[]]>([
    [
      'a flushed chain (iptables -t nat -F KUBE-SERVICES)',
      '*nat\n-F KUBE-SERVICES\nCOMMIT\n',
      ['nat KUBE-SERVICES: 0 of 6 rules'],
    ],
    [
      'a deleted rule',
      '*filter\n-D KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\nCOMMIT\n',
      ['filter KUBE-FORWARD: 1 of 2 rules'],
    ],
    [
      'a deleted jump and a deleted chain',
      '*nat\n-D OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\n' +
        '-D POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING\n-F KUBE-POSTROUTING\n-X KUBE-POSTROUTING\nCOMMIT\n',
      [
        'nat KUBE-POSTROUTING: missing',
        'nat OUTPUT: jump to KUBE-SERVICES missing',
        'nat POSTROUTING: jump to KUBE-POSTROUTING missing',
      ],
    ],
  ])('%s is noticed and rewritten by the next verify', async (_name, behindOurBack, repaired) => {
    const { ipt, nat, filter } = await synced();
    await ipt.restore(behindOurBack);
    // an ordinary sync of the unchanged plan does not look
    expect(await ipt.sync(plan)).toMatchObject({ execs: 0, wrote: false });
    const r = await ipt.sync(plan, { verify: true });
    expect(r).toMatchObject({ execs: 3, wrote: true, repaired });
    expect(await ipt.save('nat')).toBe(nat);
    expect(await ipt.save('filter')).toBe(filter);
    expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
  });
});

// With the nf_tables generation (iptables-nft): the verify reads nothing while the generation
// is the one at which the rules were proven ours, and everything else reads as above.
import Transport from 'winston-transport';
import { log } from '../../../lib/log';
import { IptablesSync, genPlus, restoreCommits } from '../../../lib/kernel/iptables/iptables-sync';
import { IptablesRunner } from '../../../lib/kernel/iptables/iptables';
import { formatIptablesRestore } from '../../../lib/kernel/iptables/format-restore';

const OUTPUT_JUMP = '-D OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES';

async function syncedWithGeneration(flavor: 'nft' | 'legacy' = 'nft') {
  const ipt = new FakeIptables({ family: 'ipv4', flavor, readGeneration: true });
  expect((await ipt.sync(plan)).wrote).toBe(true);
  return { ipt, nat: await ipt.save('nat'), filter: await ipt.save('filter') };
}

/** an IptablesSync over the fake whose runner lets a test act between or inside its steps */
function hooked(ipt: FakeIptables, hooks: { beforeRestore?: () => void; beforeSave?: () => void }, withPeers = false) {
  const runner: IptablesRunner = {
    family: ipt.family,
    backend: () => ipt.backend(),
    save: async (t) => {
      hooks.beforeSave?.();
      return ipt.save(t);
    },
    restore: async (text) => {
      hooks.beforeRestore?.();
      return ipt.restore(text);
    },
  };
  return new IptablesSync(runner, {
    generation: ipt.rulesetGeneration,
    ...(withPeers ? { peers: ipt.netns.peers } : {}),
  });
}

describe('Iptables.sync verify with the nf_tables generation', () => {
  it('nothing committed since our write: the verify runs nothing; reads resume once anyone commits', async () => {
    const { ipt } = await syncedWithGeneration();
    const saves = ipt.saves;
    expect(await ipt.sync(plan, { verify: true })).toEqual({
      execs: 0,
      wrote: false,
      insertedJumps: [],
      restoreText: '',
      repaired: [],
    });
    expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 0, wrote: false });
    expect(ipt.saves).toBe(saves);
    // someone commits elsewhere (another table, nft): read, find nothing of ours changed, and
    // prove the tables ours at that generation again
    ipt.foreignCommit();
    expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
    expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 0, wrote: false });
  });

  it('a restore moves the generation once per table block: nat+filter is 2', async () => {
    const { ipt } = await syncedWithGeneration();
    const g = ipt.generation;
    await ipt.restore(formatIptablesRestore(plan));
    expect(ipt.generation).toBe(g + 2);
    expect(restoreCommits(formatIptablesRestore(plan))).toBe(2);
    // a block that writes no rule may commit nothing: the count is unknown, nothing is recorded
    expect(
      restoreCommits('*nat\n:KUBE-X - [0:0]\n-A KUBE-X -j RETURN\nCOMMIT\n*filter\n:KUBE-Y - [0:0]\nCOMMIT\n'),
    ).toBeUndefined();
    // the kernel skips 0 when the u32 wraps
    expect(genPlus(0xffffffff, 2)).toBe(2);
  });

  it.each<[string, string, string[]]>([
    ['a flushed chain', '*nat\n-F KUBE-SERVICES\nCOMMIT\n', ['nat KUBE-SERVICES: 0 of 6 rules']],
    ['a deleted jump', `*nat\n${OUTPUT_JUMP}\nCOMMIT\n`, ['nat OUTPUT: jump to KUBE-SERVICES missing']],
  ])(
    '%s behind our back moves the generation: the next verify reads and repairs',
    async (_name, behindOurBack, repaired) => {
      const { ipt, nat, filter } = await syncedWithGeneration();
      await ipt.restore(behindOurBack);
      expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 3, wrote: true, repaired });
      expect(await ipt.save('nat')).toBe(nat);
      expect(await ipt.save('filter')).toBe(filter);
      // the repair moved the generation by exactly its own commits: proven again
      expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 0, wrote: false });
    },
  );

  it('someone commits while our restore runs (the generation moves by 3): not recorded; a jump deleted then is repaired', async () => {
    const { ipt, nat } = await syncedWithGeneration();
    const otherPlan = planIptables({
      family: 'ipv4',
      clusterCIDR: '10.245.0.0/16',
      nonEmptySets: new Set(SETS),
      randomFully: true,
    });
    let race = true;
    const sync = hooked(ipt, {
      beforeRestore: () => {
        if (race) ipt.applyRestore(`*nat\n${OUTPUT_JUMP}\nCOMMIT\n`, true);
        race = false;
      },
    });
    // first sync of this IptablesSync: reads the jumps (present), then the race deletes one
    const g = ipt.generation;
    expect(await sync.sync(otherPlan)).toMatchObject({ execs: 3, wrote: true, insertedJumps: [] });
    expect(ipt.generation).toBe(g + 3);
    // were gen g+3 recorded, this verify would skip and the jump would stay missing
    expect(await sync.sync(otherPlan, { verify: true })).toMatchObject({
      execs: 3,
      wrote: true,
      repaired: ['nat OUTPUT: jump to KUBE-SERVICES missing'],
    });
    expect(await sync.sync(plan)).toMatchObject({ wrote: true });
    expect(await ipt.save('nat')).toBe(nat);
    expect(await sync.sync(plan, { verify: true })).toMatchObject({ execs: 0 });
  });

  it('someone commits while the verify reads: not recorded, the next verify reads again and repairs', async () => {
    const { ipt } = await syncedWithGeneration();
    let saves = 0;
    let race = false;
    const sync = hooked(ipt, {
      beforeSave: () => {
        // after nat was read, before filter: the nat jump goes
        if (race && saves++ === 1) ipt.applyRestore(`*nat\n${OUTPUT_JUMP}\nCOMMIT\n`, true);
      },
    });
    expect(await sync.sync(plan)).toMatchObject({ execs: 3, wrote: true });
    ipt.foreignCommit();
    race = true;
    expect(await sync.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
    race = false;
    expect(await sync.sync(plan, { verify: true })).toMatchObject({
      execs: 3,
      wrote: true,
      repaired: ['nat OUTPUT: jump to KUBE-SERVICES missing'],
    });
    expect(await sync.sync(plan, { verify: true })).toMatchObject({ execs: 0 });
  });

  it('a changed plan written without reading: proven only when the generation was still ours before it', async () => {
    const { ipt } = await syncedWithGeneration();
    const plan2 = planIptables({
      family: 'ipv4',
      clusterCIDR: '10.245.0.0/16',
      nonEmptySets: new Set(SETS),
      randomFully: true,
    });
    expect(await ipt.sync(plan2)).toMatchObject({ execs: 1, wrote: true });
    expect(await ipt.sync(plan2, { verify: true })).toMatchObject({ execs: 0 });
    // a foreign commit before the next write: that write cannot be proven (the jumps were not read)
    ipt.foreignCommit();
    expect(await ipt.sync(plan)).toMatchObject({ execs: 1, wrote: true });
    expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false });
    expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 0 });
  });

  it('a failed restore forgets the proof', async () => {
    const { ipt } = await syncedWithGeneration();
    const sync = hooked(ipt, {});
    await sync.sync(plan);
    expect(await sync.sync(plan, { verify: true })).toMatchObject({ execs: 0 });
    const bad = { ...plan, nat: { ...plan.nat, rules: [...plan.nat.rules, '-A KUBE-SERVICES -j KUBE-NOWHERE'] } };
    await expect(sync.sync(bad)).rejects.toThrow();
    expect(await sync.sync(plan, { verify: true })).toMatchObject({ execs: 3, wrote: true });
  });

  it('legacy: no generation, every verify reads', async () => {
    const { ipt } = await syncedWithGeneration('legacy');
    expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false });
    expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false });
    expect(ipt.generationReads).toBe(0);
  });

  it('the generation cannot be read: every verify reads; one warning (with the errno) until a read succeeds', async () => {
    const lines: Record<string, unknown>[] = [];
    const capture = new (class extends Transport {
      override log(info: Record<string, unknown>, next: () => void): void {
        lines.push(info);
        next();
      }
    })();
    log.add(capture);
    try {
      const { ipt } = await syncedWithGeneration();
      ipt.generationError = Object.assign(new Error('read nf_tables generation: EPERM (EPERM)'), { errno: 1 });
      expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
      expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false });
      const warned = lines.filter((l) => String(l.message).includes('cannot read the nf_tables generation'));
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatchObject({ level: 'warn', errno: 1, family: 'ipv4' });
      // readable again, and nobody committed since our write: proven as before
      ipt.generationError = undefined;
      expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 0 });
      ipt.generationError = new Error('netlink socket closed');
      expect(await ipt.sync(plan, { verify: true })).toMatchObject({ execs: 2 });
      expect(lines.filter((l) => String(l.message).includes('cannot read the nf_tables generation'))).toHaveLength(2);
    } finally {
      log.remove(capture);
    }
  });
});

// Both families in one network namespace: ip6tables-nft's commits move the one generation too
// (spec/vm/nft-generation.vm.test.ts), so what one family proved at g0 is stale at g0+2 after
// the other's restore, unless that restore tells it the move was its own (GenerationPeers).
describe('Iptables.sync verify with the nf_tables generation, both families in one network namespace', () => {
  const plan6 = planIptables({
    family: 'ipv6',
    clusterCIDR: '2001:db8:244::/64',
    nonEmptySets: new Set(SETS),
    randomFully: true,
  });
  function dualStack() {
    const netns = new FakeNftGeneration();
    return {
      netns,
      ipt4: new FakeIptables({ family: 'ipv4', readGeneration: true, netns }),
      ipt6: new FakeIptables({ family: 'ipv6', readGeneration: true, netns }),
    };
  }

  it("the fake keeps one generation per namespace: either family's commit moves it", async () => {
    const { netns, ipt4, ipt6 } = dualStack();
    await ipt4.restore(formatIptablesRestore(plan));
    await ipt6.restore(formatIptablesRestore(plan6));
    expect([netns.value, ipt4.generation, ipt6.generation]).toEqual([5, 5, 5]);
    ipt6.foreignCommit();
    expect(ipt4.generation).toBe(6);
  });

  it('cold start of both families, then a verify of each: nothing read, check after check', async () => {
    const { ipt4, ipt6 } = dualStack();
    expect(await ipt4.sync(plan)).toMatchObject({ execs: 3, wrote: true });
    expect(await ipt6.sync(plan6)).toMatchObject({ execs: 3, wrote: true });
    const saves = ipt4.saves + ipt6.saves;
    for (let i = 0; i < 2; i++) {
      expect(await ipt4.sync(plan, { verify: true })).toMatchObject({ execs: 0, wrote: false });
      expect(await ipt6.sync(plan6, { verify: true })).toMatchObject({ execs: 0, wrote: false });
    }
    expect(ipt4.saves + ipt6.saves).toBe(saves);
    // a repair of one family keeps the other's proof too
    await ipt6.restore('*nat\n-F KUBE-SERVICES\nCOMMIT\n');
    expect(await ipt6.sync(plan6, { verify: true })).toMatchObject({ execs: 3, wrote: true });
    expect(await ipt4.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
    expect(await ipt6.sync(plan6, { verify: true })).toMatchObject({ execs: 0 });
    expect(await ipt4.sync(plan, { verify: true })).toMatchObject({ execs: 0 });
  });

  it('a changed plan of one family written without reading: the other stays proven', async () => {
    const { ipt4, ipt6 } = dualStack();
    await ipt4.sync(plan);
    await ipt6.sync(plan6);
    const plan6b = planIptables({
      family: 'ipv6',
      clusterCIDR: '2001:db8:245::/64',
      nonEmptySets: new Set(SETS),
      randomFully: true,
    });
    expect(await ipt6.sync(plan6b)).toMatchObject({ execs: 1, wrote: true });
    expect(await ipt4.sync(plan, { verify: true })).toMatchObject({ execs: 0 });
    expect(await ipt6.sync(plan6b, { verify: true })).toMatchObject({ execs: 0 });
  });

  it('a foreign commit between the two restores: IPv4 reads and repairs what it did', async () => {
    const { ipt4, ipt6 } = dualStack();
    await ipt4.sync(plan);
    const nat = await ipt4.save('nat');
    // someone deletes IPv4's jump, then IPv6 starts: its restore is its own, but IPv4's proof is gone
    ipt4.applyRestore(`*nat\n${OUTPUT_JUMP}\nCOMMIT\n`, true);
    await ipt6.sync(plan6);
    expect(await ipt6.sync(plan6, { verify: true })).toMatchObject({ execs: 0 });
    expect(await ipt4.sync(plan, { verify: true })).toMatchObject({
      execs: 3,
      wrote: true,
      repaired: ['nat OUTPUT: jump to KUBE-SERVICES missing'],
    });
    expect(await ipt4.save('nat')).toBe(nat);
    expect(await ipt4.sync(plan, { verify: true })).toMatchObject({ execs: 0 });
    expect(await ipt6.sync(plan6, { verify: true })).toMatchObject({ execs: 0 });
  });

  it('a foreign commit after both restores: both read', async () => {
    const { ipt4, ipt6 } = dualStack();
    await ipt4.sync(plan);
    await ipt6.sync(plan6);
    ipt4.foreignCommit();
    expect(await ipt4.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
    expect(await ipt6.sync(plan6, { verify: true })).toMatchObject({ execs: 2, wrote: false, repaired: [] });
  });

  it("someone commits while the other family's restore runs (the generation moves by 3): nobody is told; IPv4 reads and repairs", async () => {
    const { ipt4, ipt6 } = dualStack();
    await ipt4.sync(plan);
    let race = true;
    const sync6 = hooked(
      ipt6,
      {
        beforeRestore: () => {
          if (race) ipt4.applyRestore(`*nat\n${OUTPUT_JUMP}\nCOMMIT\n`, true);
          race = false;
        },
      },
      true,
    );
    const g = ipt4.generation;
    await sync6.sync(plan6);
    expect(ipt4.generation).toBe(g + 3);
    // were IPv4 told g -> g+3, this verify would skip and its jump would stay missing
    expect(await ipt4.sync(plan, { verify: true })).toMatchObject({
      execs: 3,
      wrote: true,
      repaired: ['nat OUTPUT: jump to KUBE-SERVICES missing'],
    });
  });

  it('a family mid-write is not advanced: its restore clears its proof, and it records its own', async () => {
    const { ipt4, ipt6 } = dualStack();
    await ipt6.sync(plan6);
    let inner: Promise<unknown> | undefined;
    // IPv6 writes a new plan while IPv4's restore is under way: the generation moves by 4,
    // so neither is proven by its own restore; IPv6 must not be advanced by IPv4 either
    const plan6b = planIptables({
      family: 'ipv6',
      clusterCIDR: '2001:db8:245::/64',
      nonEmptySets: new Set(SETS),
      randomFully: true,
    });
    const sync4 = hooked(
      ipt4,
      {
        beforeRestore: () => {
          inner ??= ipt6.sync(plan6b);
        },
      },
      true,
    );
    await sync4.sync(plan);
    await inner;
    expect(await ipt6.sync(plan6b, { verify: true })).toMatchObject({ execs: 2, wrote: false });
    expect(await sync4.sync(plan, { verify: true })).toMatchObject({ execs: 2, wrote: false });
  });

  it('legacy: nothing to tell, every verify reads', async () => {
    const netns = new FakeNftGeneration();
    const ipt4 = new FakeIptables({ family: 'ipv4', flavor: 'legacy', readGeneration: true, netns });
    const ipt6 = new FakeIptables({ family: 'ipv6', flavor: 'legacy', readGeneration: true, netns });
    await ipt4.sync(plan);
    await ipt6.sync(plan6);
    expect(await ipt4.sync(plan, { verify: true })).toMatchObject({ execs: 2 });
    expect(await ipt6.sync(plan6, { verify: true })).toMatchObject({ execs: 2 });
    expect(netns.reads).toBe(0);
  });
});
