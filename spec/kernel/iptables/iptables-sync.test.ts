// IptablesSync's periodic verify step, over the twin: chains flushed, rules or jumps deleted
// behind its back are noticed with one save per table and rewritten.
import { FakeIptables } from '../../../lib/kernel/iptables/fake-iptables';
import { planIptables } from '../../../lib/plan/iptables';
import { SetKey } from '../../../lib/model/names';

const SETS: SetKey[] = ['CLUSTER_IP', 'NODE_PORT_TCP', 'LOAD_BALANCER'];
const plan = planIptables({ family: 'ipv4', clusterCIDR: '10.244.0.0/16', nonEmptySets: new Set(SETS), randomFully: true });

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
    ['a flushed chain (iptables -t nat -F KUBE-SERVICES)', '*nat\n-F KUBE-SERVICES\nCOMMIT\n', ['nat KUBE-SERVICES: 0 of 6 rules']],
    [
      'a deleted rule',
      '*filter\n-D KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\nCOMMIT\n',
      ['filter KUBE-FORWARD: 1 of 2 rules'],
    ],
    [
      'a deleted jump and a deleted chain',
      '*nat\n-D OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\n' +
        '-D POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING\n-F KUBE-POSTROUTING\n-X KUBE-POSTROUTING\nCOMMIT\n',
      ['nat KUBE-POSTROUTING: missing', 'nat OUTPUT: jump to KUBE-SERVICES missing', 'nat POSTROUTING: jump to KUBE-POSTROUTING missing'],
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
