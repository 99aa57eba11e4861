import { NftTable } from '../../model/nft-table';
import { GenerationPeers, genPlus } from '../iptables/iptables-sync';
import { RulesetGeneration } from '../iptables/nft-generation';
import { NftTables } from './nftables';

/** iptables-nft's tables are named after the xtables tables they emulate */
const IPTABLES_TABLES = new Set(['filter', 'nat', 'mangle', 'raw', 'security']);

/**
 * NftTables whose deletion tells the iptables syncs of the namespace (GenerationPeers) when
 * the generation moved by exactly that one transaction: it touched none of their tables, so
 * the rules they proved before still hold, and their next periodic check reads nothing (without
 * this, the first check after kube-proxy's nftables-mode tables went would read both families'
 * tables once). A deletion naming an iptables-nft table, or a generation that moved by more
 * (someone else committed meanwhile) or could not be read, tells nobody.
 */
export class PeerNftTables implements NftTables {
  constructor(
    private readonly inner: NftTables,
    private readonly generation: RulesetGeneration,
    private readonly peers: GenerationPeers,
  ) {}

  listTables(): Promise<NftTable[]> {
    return this.inner.listTables();
  }

  async deleteTables(tables: readonly NftTable[]): Promise<void> {
    const peersUntouched = tables.length > 0 && !tables.some((t) => IPTABLES_TABLES.has(t.name));
    const before = peersUntouched ? await this.read() : undefined;
    await this.inner.deleteTables(tables);
    if (before === undefined) return;
    const after = await this.read();
    if (after === genPlus(before, 1)) this.peers.committedAlone(undefined, before, after);
  }

  /** the generation, or undefined when it cannot be read (then nobody is told) */
  private async read(): Promise<number | undefined> {
    try {
      return await this.generation.read();
    } catch {
      return undefined;
    }
  }

  close(): void {
    this.inner.close();
  }
}
