// PeerNftTables over the fakes of one network namespace (FakeIptables of both families and
// FakeNftTables sharing one generation): deleting kube-proxy's nftables-mode tables keeps the
// iptables syncs' proof when the generation moved by exactly that transaction, so their next
// verify reads nothing; anything less certain tells them nothing.
import { FakeIptables, FakeNftGeneration } from '../../../testkit/kernel/fake-iptables';
import { FakeNftTables } from '../../../testkit/kernel/fake-nftables';
import { PeerNftTables } from '../../../lib/kernel/nftables/peer-nftables';
import { NftTable } from '../../../lib/model/nft-table';
import { planIptables } from '../../../lib/plan/iptables';
import { SetKey } from '../../../lib/model/names';

const SETS: SetKey[] = ['CLUSTER_IP', 'NODE_PORT_TCP'];
const plan4 = planIptables({
  family: 'ipv4',
  clusterCIDR: '10.244.0.0/16',
  nonEmptySets: new Set(SETS),
  randomFully: true,
});
const plan6 = planIptables({
  family: 'ipv6',
  clusterCIDR: 'fd00:244::/64',
  nonEmptySets: new Set(SETS),
  randomFully: true,
});

// NFPROTO_IPV4 2, NFPROTO_IPV6 10
const kubeProxy: NftTable[] = [
  { family: 2, name: 'kube-proxy' },
  { family: 10, name: 'kube-proxy' },
];

/** kube-proxy's tables, then both families' rules written and proven at the current generation */
async function namespace(tables: readonly NftTable[] = kubeProxy) {
  const netns = new FakeNftGeneration();
  const nft = new FakeNftTables({ netns });
  for (const t of tables) nft.addTable(t);
  const ipt4 = new FakeIptables({ family: 'ipv4', readGeneration: true, netns });
  const ipt6 = new FakeIptables({ family: 'ipv6', readGeneration: true, netns });
  await ipt4.sync(plan4);
  await ipt6.sync(plan6);
  const verify = async () =>
    (await ipt4.sync(plan4, { verify: true })).execs + (await ipt6.sync(plan6, { verify: true })).execs;
  expect(await verify()).toBe(0);
  return { netns, nft, verify, peer: new PeerNftTables(nft, netns.reader, netns.peers) };
}

describe('PeerNftTables', () => {
  it('the deletion alone moved the generation (+1): the iptables syncs stay proven, their verify reads nothing', async () => {
    const { netns, nft, peer, verify } = await namespace();
    const g = netns.value;
    await peer.deleteTables(kubeProxy);
    expect(netns.value).toBe(g + 1);
    expect(nft.all()).toEqual([]);
    expect(await verify()).toBe(0);
  });

  it('the same deletion without it: each family reads its two tables once', async () => {
    const { nft, verify } = await namespace();
    await nft.deleteTables(kubeProxy);
    expect(await verify()).toBe(4);
    expect(await verify()).toBe(0);
  });

  it('someone else committed meanwhile (+2), the deletion failed, the generation unreadable, or an iptables-nft table deleted: nobody is told', async () => {
    const raced = await namespace();
    const deleteTables = raced.nft.deleteTables.bind(raced.nft);
    raced.nft.deleteTables = async (tables) => {
      raced.netns.value++;
      return deleteTables(tables);
    };
    await raced.peer.deleteTables(kubeProxy);
    expect(await raced.verify()).toBe(4);

    const refused = await namespace([kubeProxy[0]!]);
    await expect(refused.peer.deleteTables(kubeProxy)).rejects.toThrow(/ENOENT/);
    expect(await refused.verify()).toBe(0);

    const unreadable = await namespace();
    unreadable.netns.error = new Error('NETLINK_NETFILTER socket: EPERM');
    await unreadable.peer.deleteTables(kubeProxy);
    unreadable.netns.error = undefined;
    expect(await unreadable.verify()).toBe(4);

    const nat = { family: 2, name: 'nat' };
    const xtables = await namespace([nat]);
    await xtables.peer.deleteTables([nat]);
    expect(await xtables.verify()).toBe(4);
  });

  it('lists and closes through', async () => {
    const { nft, peer } = await namespace();
    expect(await peer.listTables()).toEqual(kubeProxy);
    peer.close();
    expect(nft.closed).toBe(true);
  });
});
