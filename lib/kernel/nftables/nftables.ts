import { NftTable } from '../../model/nft-table';

/**
 * The nf_tables tables of this network namespace: listed, and deleted in one transaction.
 * kube-ipvs deletes only kube-proxy's nftables-mode tables with it (proxier/nftables-leftovers.ts).
 * Implemented over NETLINK_NETFILTER (NftTablesNetlink, nftables-netlink.ts) and in memory
 * (FakeNftTables), which answer the same errno; spec/vm/nftables.vm.test.ts pins the two.
 */
export interface NftTables {
  /**
   * Every table of every family (one NFT_MSG_GETTABLE dump), in the kernel's order (creation).
   * [] where nf_tables cannot be used at all (no NETLINK_NETFILTER, no nf_tables subsystem).
   * Throws NetlinkError (EPERM without CAP_NET_ADMIN), SocketError or NetlinkTimeoutError.
   */
  listTables(): Promise<NftTable[]>;
  /**
   * Deletes `tables`, with everything in them, in ONE transaction: all of them or none (the
   * generation moves once). Throws NetlinkError naming the first table refused: ENOENT when
   * one is not there (deleted meanwhile, or named twice), and then none is deleted; EPERM
   * without CAP_NET_ADMIN (or for a table another process owns). Sends nothing for none.
   */
  deleteTables(tables: readonly NftTable[]): Promise<void>;
  close(): void;
}
