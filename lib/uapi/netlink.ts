// Based on include/uapi/linux/netlink.h and genetlink.h (Linux 6.1).

export const NETLINK_ROUTE = 0;
export const NETLINK_GENERIC = 16;

export const NLMSG_HDRLEN = 16;
export const GENL_HDRLEN = 4;
export const NLA_HDRLEN = 4;
export const NLA_ALIGNTO = 4;

export const NLMSG = {
  NOOP: 1,
  ERROR: 2,
  DONE: 3,
  OVERRUN: 4,
} as const;

export const NLM_F = {
  REQUEST: 0x01,
  MULTI: 0x02,
  ACK: 0x04,
  ECHO: 0x08,
  DUMP_INTR: 0x10,
  ROOT: 0x100,
  MATCH: 0x200,
  DUMP: 0x300,
  /** on NLMSG_ERROR: the request was not echoed back */
  CAPPED: 0x100,
  /** on NLMSG_ERROR: extended-ack TLVs follow */
  ACK_TLVS: 0x200,
} as const;

export const NLA_F_NESTED = 0x8000;
export const NLA_F_NET_BYTEORDER = 0x4000;
export const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;

/** enum nlmsgerr_attrs */
export const NLMSGERR_ATTR = {
  MSG: 1,
  OFFS: 2,
} as const;

export const GENL_ID_CTRL = 0x10;

export const align4 = (n: number): number => (n + 3) & ~3;
