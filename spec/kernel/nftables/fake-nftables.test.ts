import { FakeNftTables } from '../../../testkit/kernel/fake-nftables';
import { NetlinkError } from '../../../lib/errors';

const ip = { family: 2, name: 'kube-proxy' };
const ip6 = { family: 10, name: 'kube-proxy' };
const inet = { family: 1, name: 'kube-proxy' };

const errnoOf = async (p: Promise<unknown>) =>
  (
    (await p.then(
      () => undefined,
      (e: unknown) => e,
    )) as NetlinkError
  ).errno;

describe('FakeNftTables', () => {
  it('lists in creation order; a deletion is one transaction: the generation moves once', async () => {
    const nft = new FakeNftTables();
    for (const t of [ip, inet, ip6]) nft.addTable(t);
    expect(await nft.listTables()).toEqual([ip, inet, ip6]);
    const g = nft.generation;
    await nft.deleteTables([ip, ip6]);
    expect(nft.generation - g).toBe(1);
    expect(await nft.listTables()).toEqual([inet]);
    expect([nft.dumps, nft.transactions]).toEqual([2, 1]);
  });

  it('a table absent or named twice: ENOENT, and none is deleted (the generation stays)', async () => {
    const nft = new FakeNftTables();
    nft.addTable(ip);
    const g = nft.generation;
    expect(await errnoOf(nft.deleteTables([ip, ip6]))).toBe(2);
    expect(await errnoOf(nft.deleteTables([ip, ip]))).toBe(2);
    await expect(nft.deleteTables([ip6])).rejects.toThrow('delete nftables table ip6 kube-proxy: ENOENT (ENOENT)');
    expect(nft.all()).toEqual([ip]);
    expect(nft.generation).toBe(g);
  });

  it('without CAP_NET_ADMIN: EPERM for the dump and the transaction; nothing sent for no table', async () => {
    const nft = new FakeNftTables();
    nft.addTable(ip);
    nft.privileged = false;
    expect(await errnoOf(nft.listTables())).toBe(1);
    expect(await errnoOf(nft.deleteTables([ip]))).toBe(1);
    await nft.deleteTables([]);
    expect(nft.transactions).toBe(1);
    expect(nft.all()).toEqual([ip]);
  });
});
