/**
 * The nf_tables ruleset generation: the NFT_MSG_GETGEN request and the NFT_MSG_NEWGEN reply.
 *
 * Request: struct nlmsghdr (type (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETGEN) + struct
 * nfgenmsg (nfgen_family AF_UNSPEC, version NFNETLINK_V0, res_id 0), no attributes. The
 * kernel (nf_tables_getgen) answers one NFT_MSG_NEWGEN: nfgenmsg (AF_UNSPEC, res_id = the low
 * 16 bits of the generation) + NFTA_GEN_ID (be32, the generation: incremented by every
 * committed transaction, never 0), NFTA_GEN_PROC_PID and NFTA_GEN_PROC_NAME (the task asking).
 * As in conntrack-codec.ts, a GenlRequest's `type` is the message type and `cmd` the
 * nfgen_family byte.
 */
import { AttrReader } from './attr';
import { GenlRequest } from './socket';
import { NFTA_GEN, NFT_MSG, nftMsgType } from '../uapi/nf_tables';

/** AF_UNSPEC: the generation is one per network namespace, not per family */
const AF_UNSPEC = 0;

const NFTA_GEN_NAMES: Record<string, number> = Object.fromEntries(
  Object.entries(NFTA_GEN).map(([k, v]) => ['NFTA_GEN_' + k, v]),
);

/** The nf_tables ruleset generation (NFT_MSG_NEWGEN), and who last committed, when the kernel says. */
export interface NftGeneration {
  /** NFTA_GEN_ID */
  readonly id: number;
  /** NFTA_GEN_PROC_PID: the task that asked (the kernel fills in the caller) */
  readonly pid?: number;
  /** NFTA_GEN_PROC_NAME */
  readonly procName?: string;
}

/** Encodes NFT_MSG_GETGEN: the current ruleset generation. */
export function encodeGetGen(): GenlRequest {
  return { type: nftMsgType(NFT_MSG.GETGEN), cmd: AF_UNSPEC, attrs: Buffer.alloc(0) };
}

/** The attributes of an NFT_MSG_NEWGEN reply; DecodeError without NFTA_GEN_ID or with a bad size. */
export function decodeNewGen(attrs: Buffer): NftGeneration {
  const r = AttrReader.parse(attrs, 'NFT_MSG_NEWGEN', NFTA_GEN_NAMES);
  const id = r.require(NFTA_GEN.ID, r.be32(NFTA_GEN.ID));
  const pid = r.be32(NFTA_GEN.PROC_PID);
  const procName = r.string(NFTA_GEN.PROC_NAME);
  return { id, ...(pid !== undefined ? { pid } : {}), ...(procName !== undefined ? { procName } : {}) };
}
