// Based on include/uapi/linux/netfilter/nf_tables.h and nfnetlink.h (Linux 6.1): only the
// ruleset generation (NFT_MSG_GETGEN / NFT_MSG_NEWGEN), which kube-ipvs reads to tell whether
// anyone committed an nf_tables transaction since it last looked.

/** nfnetlink subsystem id of nf_tables (nfnetlink.h) */
export const NFNL_SUBSYS_NFTABLES = 10;

/** enum nf_tables_msg_types (the two generation messages) */
export const NFT_MSG = {
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
