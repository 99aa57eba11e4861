/**
 * nf_tables tables: the NFT_MSG_GETTABLE dump and its NFT_MSG_NEWTABLE replies, and the
 * nfnetlink batch deleting tables in one transaction.
 *
 * Dump: struct nlmsghdr (type (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE, NLM_F_DUMP) +
 * struct nfgenmsg (nfgen_family NFPROTO_UNSPEC: every family, version NFNETLINK_V0, res_id 0).
 * The kernel (nf_tables_dump_tables) answers one NFT_MSG_NEWTABLE per table: nfgenmsg with the
 * table's family + NFTA_TABLE_NAME (string), NFTA_TABLE_FLAGS, NFTA_TABLE_USE, NFTA_TABLE_HANDLE
 * (and NFTA_TABLE_USERDATA, NFTA_TABLE_OWNER when set). As in nft-gen-codec.ts, a GenlRequest's
 * or GenlReply's `cmd` is the nfgen_family byte.
 *
 * Delete: NFNL_MSG_BATCH_BEGIN (nfgenmsg AF_UNSPEC, res_id = htons(NFNL_SUBSYS_NFTABLES)), one
 * NFT_MSG_DELTABLE per table (nfgenmsg with the table's family, NFTA_TABLE_NAME), and
 * NFNL_MSG_BATCH_END (as BEGIN): one transaction, committed whole or not at all. Each DELTABLE
 * asks for NLM_F_ACK (Linux 6.1 answers neither BEGIN nor END: GenlSocket.batchRaw's
 * transaction option completes at the last DELTABLE's answer).
 */
import { AttrReader, AttrWriter } from './attr';
import { GenlRequest } from './socket';
import { NftTable } from '../model/nft-table';
import { NLM_F } from '../uapi/netlink';
import { NFNETLINK_V0 } from '../uapi/nfnetlink_conntrack';
import {
  NFNL_MSG_BATCH_BEGIN,
  NFNL_MSG_BATCH_END,
  NFNL_SUBSYS_NFTABLES,
  NFPROTO,
  NFTA_TABLE,
  NFT_MSG,
  nftMsgType,
} from '../uapi/nf_tables';

const NFTA_TABLE_NAMES: Record<string, number> = Object.fromEntries(
  Object.entries(NFTA_TABLE).map(([k, v]) => ['NFTA_TABLE_' + k, v]),
);

/** One message of an nfnetlink batch as GenlSocket.batchRaw writes it: everything after struct nlmsghdr. */
export interface NfnlMessage {
  readonly type: number;
  /** beyond NLM_F_REQUEST, which batchRaw adds */
  readonly flags: number;
  /** struct nfgenmsg + attributes */
  readonly body: Buffer;
}

/** struct nfgenmsg: nfgen_family, version, res_id (big-endian) */
function nfgenmsg(family: number, resId = 0): Buffer {
  return Buffer.from([family, NFNETLINK_V0, (resId >> 8) & 0xff, resId & 0xff]);
}

/** Encodes NFT_MSG_GETTABLE for NFPROTO_UNSPEC: sent as a dump, it lists every table. */
export function encodeGetTables(): GenlRequest {
  return { type: nftMsgType(NFT_MSG.GETTABLE), cmd: NFPROTO.UNSPEC, attrs: Buffer.alloc(0) };
}

/** An NFT_MSG_NEWTABLE reply: its nfgen_family and attributes; DecodeError without NFTA_TABLE_NAME. */
export function decodeNewTable(family: number, attrs: Buffer): NftTable {
  const r = AttrReader.parse(attrs, 'NFT_MSG_NEWTABLE', NFTA_TABLE_NAMES);
  return { family, name: r.require(NFTA_TABLE.NAME, r.string(NFTA_TABLE.NAME)) };
}

/** The batch deleting `tables` in one transaction: BATCH_BEGIN, one DELTABLE each (NLM_F_ACK), BATCH_END. */
export function encodeDeleteTables(tables: readonly NftTable[]): NfnlMessage[] {
  const batch = { flags: 0, body: nfgenmsg(NFPROTO.UNSPEC, NFNL_SUBSYS_NFTABLES) };
  const deletes = tables.map((t) => ({
    type: nftMsgType(NFT_MSG.DELTABLE),
    flags: NLM_F.ACK,
    body: Buffer.concat([nfgenmsg(t.family), new AttrWriter(64).string(NFTA_TABLE.NAME, t.name).finish()]),
  }));
  return [{ type: NFNL_MSG_BATCH_BEGIN, ...batch }, ...deletes, { type: NFNL_MSG_BATCH_END, ...batch }];
}
