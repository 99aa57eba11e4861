// Based on include/uapi/linux/netfilter/nf_tables.h, nfnetlink.h and netfilter.h (Linux 6.1):
// the ruleset generation (NFT_MSG_GETGEN / NFT_MSG_NEWGEN), which kube-ipvs reads to tell
// whether anyone committed an nf_tables transaction since it last looked, and the tables
// (list, delete in one nfnetlink batch), for kube-proxy's nftables-mode leftovers.

/** nfnetlink subsystem id of nf_tables (nfnetlink.h) */
export const NFNL_SUBSYS_NFTABLES = 10;

/**
 * nfnetlink.h: the messages framing a batch (one transaction), NLMSG_MIN_TYPE and the next.
 * Their nfgenmsg: nfgen_family AF_UNSPEC, res_id the subsystem id, big-endian.
 */
export const NFNL_MSG_BATCH_BEGIN = 0x10;
/** NFNL_MSG_BATCH_END: the message that ends (commits) an nfnetlink batch (nfnetlink.h). */
export const NFNL_MSG_BATCH_END = 0x11;

/** enum nf_tables_msg_types (the ones kube-ipvs sends or reads) */
export const NFT_MSG = {
  NEWTABLE: 0,
  GETTABLE: 1,
  DELTABLE: 2,
  NEWGEN: 15,
  GETGEN: 16,
} as const;

/** nlmsg_type of an nf_tables message: (NFNL_SUBSYS_NFTABLES << 8) | msg */
export const nftMsgType = (msg: number): number => (NFNL_SUBSYS_NFTABLES << 8) | msg;

/** enum nft_gen_attributes */
export const NFTA_GEN = {
  ID: 1,
  PROC_PID: 2,
  PROC_NAME: 3,
} as const;

/** enum nft_table_attributes */
export const NFTA_TABLE = {
  NAME: 1,
  FLAGS: 2,
  USE: 3,
  HANDLE: 4,
  PAD: 5,
  USERDATA: 6,
  OWNER: 7,
} as const;

/** netfilter.h: the nf_tables families (nfgen_family), as `nft` spells them in the comments */
export const NFPROTO = {
  UNSPEC: 0,
  /** inet */
  INET: 1,
  /** ip */
  IPV4: 2,
  /** arp */
  ARP: 3,
  /** netdev */
  NETDEV: 5,
  /** bridge */
  BRIDGE: 7,
  /** ip6 */
  IPV6: 10,
} as const;
