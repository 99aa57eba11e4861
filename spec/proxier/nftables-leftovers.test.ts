// kube-proxy's nftables-mode tables (ip and ip6 kube-proxy) over the Proxier and the kernel
// fakes: deleted once, after the first full sync that succeeded (IPVS already programmed), not
// before; retried after the next successful full sync when the removal failed; never read again
// once done; every other table left alone.
// Addresses: ClusterIPs 10.96.0.0/12, pods 10.244.0.0/16, this node 192.0.2.1.
import { FakeNftTables } from '../../testkit/kernel/fake-nftables';
import { NftTable } from '../../lib/model/nft-table';
import { FAKE_SETTINGS, breakIpvsReads, proxierOverFakes } from '../../testkit/proxier-over-fakes';
import { recordingLogger } from '../../testkit/log-lines';
import { makeEndpointSlice, makeService, svcPort } from '../../testkit/builders';

const SYNC_PERIOD_MS = FAKE_SETTINGS.syncPeriodMs;

// NFPROTO_IPV4 2, NFPROTO_IPV6 10, NFPROTO_INET 1
const ip = { family: 2, name: 'kube-proxy' };
const ip6 = { family: 10, name: 'kube-proxy' };
const inet = { family: 1, name: 'kube-proxy' };
const foreign = { family: 2, name: 'foreign' };

const web = makeService('default', 'web', (s) => {
  s.spec = { type: 'ClusterIP', clusterIP: '10.96.0.10', clusterIPs: ['10.96.0.10'], ports: [svcPort('http', 80)] };
});
const webSlice = makeEndpointSlice('default', 'web', 'web-1', (sl) => {
  sl.ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];
  sl.endpoints = [{ addresses: ['10.244.1.2'], conditions: { ready: true }, nodeName: 'node-b' }];
});

/** the node as kube-proxy's nftables mode left it, plus an inet kube-proxy and a foreign table */
function afterKubeProxy(
  nft = new FakeNftTables(),
  tables: readonly NftTable[] = [ip, inet, foreign, ip6],
): FakeNftTables {
  for (const t of tables) nft.addTable(t);
  return nft;
}

async function setup(nft: FakeNftTables) {
  const { log, lines } = recordingLogger();
  const t = await proxierOverFakes({ nftables: nft, log });
  const removed = () =>
    lines.filter((l) => l.message.startsWith('removed kube-proxy')).map((l) => `${l.level} ${l.message}`);
  const warnings = () => lines.filter((l) => l.message.startsWith("removing kube-proxy's nftables-mode tables failed"));
  return { ...t, lines, removed, warnings };
}

describe("kube-proxy's nftables-mode tables", () => {
  it('are deleted after the first full sync that succeeded, not before, in one transaction; the other tables stay; never read again', async () => {
    const nft = afterKubeProxy();
    const t = await setup(nft);
    // what IPVS held when the tables went
    let ipvsAtDelete: string[] | undefined;
    const deleteTables = nft.deleteTables.bind(nft);
    nft.deleteTables = async (tables) => {
      ipvsAtDelete = (await t.ipvs.listAll()).map(
        (e) => `${e.vs.address}:${e.vs.port} -> ${e.dests.map((d) => d.address).join()}`,
      );
      return deleteTables(tables);
    };
    const reads = breakIpvsReads(t.ipvs);
    t.add(web, webSlice);
    await t.settle(10 * SYNC_PERIOD_MS);
    // informers not synced: no sync, the tables untouched
    expect(nft.dumps).toBe(0);

    // the first full syncs fail: the tables still serve the ClusterIPs
    await t.start();
    await t.settle(1);
    expect(t.proxier.initialSyncDone).toBe(false);
    expect(nft.all()).toEqual([ip, inet, foreign, ip6]);
    expect(nft.dumps).toBe(0);

    reads.broken = false;
    await t.settle(SYNC_PERIOD_MS);
    expect(t.proxier.initialSyncDone).toBe(true);
    expect(ipvsAtDelete).toEqual(['10.96.0.10:80 -> 10.244.1.2']);
    expect(nft.all()).toEqual([inet, foreign]);
    expect([nft.dumps, nft.transactions]).toEqual([1, 1]);
    expect(t.removed()).toEqual([
      "info removed kube-proxy's nftables-mode table ip kube-proxy (kube-proxy deletes it too when it starts in ipvs mode)",
      "info removed kube-proxy's nftables-mode table ip6 kube-proxy (kube-proxy deletes it too when it starts in ipvs mode)",
    ]);

    // later full and partial syncs never look again, even when such a table reappears
    nft.addTable(ip);
    t.add(web);
    await t.settle(3 * SYNC_PERIOD_MS);
    expect(t.results.filter((r) => r.full).length).toBeGreaterThan(2);
    expect([nft.dumps, nft.transactions]).toEqual([1, 1]);
    expect(t.removed()).toHaveLength(2);
  });

  // the daemon's quiet-time collection waits for a sync's end (lib/daemon/idle-collector.ts):
  // told from onSync, a collection deferred by the first full sync found it still running
  it("the first full sync's end is told after the tables' removal, with no sync running", async () => {
    const nft = afterKubeProxy();
    const t = await setup(nft);
    let atDelete: { synced: number; ended: number } | undefined;
    const deleteTables = nft.deleteTables.bind(nft);
    nft.deleteTables = async (tables) => {
      atDelete = { synced: t.results.length, ended: t.syncEnds.length };
      return deleteTables(tables);
    };
    t.add(web, webSlice);
    await t.start();
    expect(t.proxier.initialSyncDone).toBe(true);
    // onSync had told the sync; its end was told only after the removal
    expect(atDelete).toEqual({ synced: 1, ended: 0 });
    expect(t.syncEnds).toEqual([false]);
    await t.settle(2 * SYNC_PERIOD_MS);
    expect(t.syncEnds.length).toBe(t.results.length);
    expect(t.syncEnds.every((running) => !running)).toBe(true);
  });

  it('a failed removal is a warning with its errno, tried again after the next successful full sync (not after a partial one)', async () => {
    const nft = afterKubeProxy();
    nft.privileged = false;
    const t = await setup(nft);
    t.add(web, webSlice);
    await t.start();
    expect(t.proxier.initialSyncDone).toBe(true);
    expect(t.warnings()).toEqual([
      expect.objectContaining({
        level: 'warn',
        message:
          "removing kube-proxy's nftables-mode tables failed, tried again after the next full sync: dump nftables tables: EPERM (EPERM)",
        errno: 'EPERM',
        code: 'KIPVS_NETLINK',
      }),
    ]);
    nft.privileged = true;
    // a partial sync: not again
    t.remove(webSlice);
    await t.settle();
    expect(t.results.at(-1)!.full).toBe(false);
    expect(nft.dumps).toBe(1);
    expect(nft.all()).toEqual([ip, inet, foreign, ip6]);

    // (the draining check's partial syncs in between; then the periodic full one)
    await t.settle(2 * SYNC_PERIOD_MS);
    expect(t.results.filter((r) => r.full).length).toBeGreaterThan(1);
    expect(nft.dumps).toBe(2);
    expect(nft.all()).toEqual([inet, foreign]);
    expect(t.removed()).toHaveLength(2);
    expect(t.warnings()).toHaveLength(1);
  });

  it('one deleted by someone else between the listing and the deletion (ENOENT, nothing deleted): listed again, the other one deleted', async () => {
    class Raced extends FakeNftTables {
      raced = false;
      override async listTables(): Promise<NftTable[]> {
        const listed = await super.listTables();
        if (!this.raced) {
          this.raced = true;
          await super.deleteTables([ip6]);
        }
        return listed;
      }
    }
    const nft = afterKubeProxy(new Raced());
    const t = await setup(nft);
    await t.start();
    expect(nft.all()).toEqual([inet, foreign]);
    // someone else's deletion, ours refused with ENOENT, ours again
    expect([nft.dumps, nft.transactions]).toEqual([2, 3]);
    expect(t.removed()).toEqual([
      "info removed kube-proxy's nftables-mode table ip kube-proxy (kube-proxy deletes it too when it starts in ipvs mode)",
    ]);
    expect(t.warnings()).toEqual([]);
  });

  it('none there (only an inet kube-proxy and a foreign table): one listing, no transaction, nothing logged, never read again', async () => {
    const nft = afterKubeProxy(new FakeNftTables(), [inet, foreign]);
    const t = await setup(nft);
    await t.start();
    await t.settle(3 * SYNC_PERIOD_MS);
    expect([nft.dumps, nft.transactions]).toEqual([1, 0]);
    expect(nft.all()).toEqual([inet, foreign]);
    expect([...t.removed(), ...t.warnings()]).toEqual([]);
  });
});
