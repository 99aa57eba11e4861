import { constants as osConstants } from 'node:os';
import { NetlinkError, errnoName } from '../../lib/errors';
import { NftTable, describeNftTable } from '../../lib/model/nft-table';
import { FakeNftGeneration } from './fake-iptables';
import { genPlus } from '../../lib/kernel/iptables/iptables-sync';
import { NftTables } from '../../lib/kernel/nftables/nftables';

const E = osConstants.errno;

const same = (a: NftTable, b: NftTable): boolean => a.family === b.family && a.name === b.name;

/**
 * In-memory nf_tables tables: tests put tables in with `addTable` (what `nft add table` does to
 * the kernel). Answers as Linux 6.1 does: a listing in creation order; a deletion is one
 * transaction, refused whole with ENOENT when a table is absent or named twice; without
 * CAP_NET_ADMIN (`privileged` false) every request fails with EPERM. Counts what the kernel
 * counts: `generation` (the namespace's, `netns`) moves by one per committed transaction.
 */
export class FakeNftTables implements NftTables {
  private readonly tables: NftTable[] = [];
  /** the network namespace's generation, shared with the FakeIptables of the same namespace */
  readonly netns: FakeNftGeneration;
  /** listTables calls (one dump each) */
  dumps = 0;
  /** deleteTables calls that sent a transaction */
  transactions = 0;
  /** false: every request is refused with EPERM, as for a process without CAP_NET_ADMIN */
  privileged = true;
  closed = false;

  constructor(opts: { readonly netns?: FakeNftGeneration } = {}) {
    this.netns = opts.netns ?? new FakeNftGeneration();
  }

  /** the nf_tables ruleset generation (never 0) */
  get generation(): number {
    return this.netns.value;
  }

  private commit(): void {
    this.netns.value = genPlus(this.netns.value, 1);
  }

  /** Adds a table, one transaction, as `nft add table FAMILY NAME` does (nothing when it is there). */
  addTable(t: NftTable): void {
    if (this.tables.some((x) => same(x, t))) return;
    this.tables.push({ family: t.family, name: t.name });
    this.commit();
  }

  /** Every table (for assertions). */
  all(): NftTable[] {
    return this.tables.map((t) => ({ ...t }));
  }

  async listTables(): Promise<NftTable[]> {
    this.assertOpen();
    this.dumps++;
    if (!this.privileged) throw new NetlinkError(E.EPERM, 'dump nftables tables', '', errnoName(E.EPERM));
    return this.all();
  }

  async deleteTables(tables: readonly NftTable[]): Promise<void> {
    this.assertOpen();
    if (tables.length === 0) return;
    this.transactions++;
    const all = tables.map(describeNftTable).join(', ');
    if (!this.privileged) throw new NetlinkError(E.EPERM, 'delete nftables', all, errnoName(E.EPERM));
    // every member is looked up in the next generation: one deleted before (or absent) is ENOENT
    const left = [...this.tables];
    for (const t of tables) {
      const i = left.findIndex((x) => same(x, t));
      if (i < 0) throw new NetlinkError(E.ENOENT, 'delete nftables', describeNftTable(t), errnoName(E.ENOENT));
      left.splice(i, 1);
    }
    this.tables.splice(0, this.tables.length, ...left);
    this.commit();
  }

  close(): void {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('FakeNftTables: used after close');
  }
}
