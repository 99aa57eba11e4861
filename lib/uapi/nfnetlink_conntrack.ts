// Based on include/uapi/linux/netfilter/nfnetlink.h, nfnetlink_conntrack.h and
// net/netfilter/nf_internals.h (the CTA_FILTER_F_* flags; not exported, but ABI) (Linux 6.1).

/** netlink protocol number of nfnetlink (include/uapi/linux/netlink.h) */
export const NETLINK_NETFILTER = 12;

/** struct nfgenmsg: nfgen_family u8, version u8, res_id __be16 */
export const NFGENMSG_LEN = 4;
/** NFNETLINK_V0: the only nfgenmsg version (nfnetlink.h). */
export const NFNETLINK_V0 = 0;

/** nfnetlink subsystem ids (nfnetlink.h); a message type is (subsys << 8) | msg */
export const NFNL_SUBSYS_CTNETLINK = 1;

/** enum cntl_msg_types */
export const IPCTNL_MSG = {
  CT_NEW: 0,
  CT_GET: 1,
  CT_DELETE: 2,
  CT_GET_CTRZERO: 3,
} as const;

/** nlmsg_type of a ctnetlink message */
export const ctnlMsgType = (msg: number): number => (NFNL_SUBSYS_CTNETLINK << 8) | msg;

/** enum ctattr_type (top level of a conntrack message) */
export const CTA = {
  TUPLE_ORIG: 1,
  TUPLE_REPLY: 2,
  STATUS: 3,
  PROTOINFO: 4,
  HELP: 5,
  NAT_SRC: 6,
  TIMEOUT: 7,
  MARK: 8,
  COUNTERS_ORIG: 9,
  COUNTERS_REPLY: 10,
  USE: 11,
  ID: 12,
  NAT_DST: 13,
  TUPLE_MASTER: 14,
  SEQ_ADJ_ORIG: 15,
  SEQ_ADJ_REPLY: 16,
  SECMARK: 17,
  ZONE: 18,
  SECCTX: 19,
  TIMESTAMP: 20,
  MARK_MASK: 21,
  LABELS: 22,
  LABELS_MASK: 23,
  SYNPROXY: 24,
  FILTER: 25,
  STATUS_MASK: 26,
} as const;

/** enum ctattr_tuple */
export const CTA_TUPLE = {
  IP: 1,
  PROTO: 2,
  ZONE: 3,
} as const;

/** enum ctattr_ip (addresses in network order: 4 bytes V4, 16 bytes V6) */
export const CTA_IP = {
  V4_SRC: 1,
  V4_DST: 2,
  V6_SRC: 3,
  V6_DST: 4,
} as const;

/** enum ctattr_l4proto (NUM u8; ports __be16) */
export const CTA_PROTO = {
  NUM: 1,
  SRC_PORT: 2,
  DST_PORT: 3,
  ICMP_ID: 4,
  ICMP_TYPE: 5,
  ICMP_CODE: 6,
} as const;

/** enum ctattr_filter (host-order u32 flag words) */
export const CTA_FILTER = {
  ORIG_FLAGS: 1,
  REPLY_FLAGS: 2,
} as const;

/** CTA_FILTER_F_* (net/netfilter/nf_internals.h): which tuple fields a dump filter compares */
export const CTA_FILTER_F = {
  CTA_IP_SRC: 1 << 0,
  CTA_IP_DST: 1 << 1,
  CTA_TUPLE_ZONE: 1 << 2,
  CTA_PROTO_NUM: 1 << 3,
  CTA_PROTO_SRC_PORT: 1 << 4,
  CTA_PROTO_DST_PORT: 1 << 5,
} as const;
