// Based on include/uapi/linux/netlink.h and genetlink.h (Linux 6.1).

/** NETLINK_ROUTE: the netlink protocol of rtnetlink (links, addresses, routes) (netlink.h). */
export const NETLINK_ROUTE = 0;
/** NETLINK_GENERIC: the netlink protocol of generic netlink (netlink.h). */
export const NETLINK_GENERIC = 16;

/** NLMSG_HDRLEN: the size of struct nlmsghdr (netlink.h). */
export const NLMSG_HDRLEN = 16;
/** GENL_HDRLEN: the size of struct genlmsghdr (genetlink.h). */
export const GENL_HDRLEN = 4;
/** NLA_HDRLEN: the size of struct nlattr (netlink.h). */
export const NLA_HDRLEN = 4;
/** NLA_ALIGNTO: the alignment of netlink attributes and messages (netlink.h). */
export const NLA_ALIGNTO = 4;

/** NLMSG_*: the control message types every netlink protocol shares (netlink.h). */
export const NLMSG = {
  NOOP: 1,
  ERROR: 2,
  DONE: 3,
  OVERRUN: 4,
} as const;

/** NLM_F_*: the nlmsghdr flags (netlink.h); GET-request and ACK flags reuse the same bits. */
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

/** NLA_F_NESTED: the nlattr type bit marking a nested attribute (netlink.h). */
export const NLA_F_NESTED = 0x8000;
/** NLA_F_NET_BYTEORDER: the nlattr type bit marking a big-endian payload (netlink.h). */
export const NLA_F_NET_BYTEORDER = 0x4000;
/** NLA_TYPE_MASK: the nlattr type without the NESTED and NET_BYTEORDER bits (netlink.h). */
export const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;

/** enum nlmsgerr_attrs */
export const NLMSGERR_ATTR = {
  MSG: 1,
  OFFS: 2,
} as const;

/** GENL_ID_CTRL: the family id of the generic netlink controller, nlctrl (genetlink.h). */
export const GENL_ID_CTRL = 0x10;

/** NLA_ALIGN / NLMSG_ALIGN: rounds a length up to a multiple of 4 (netlink.h). */
export const align4 = (n: number): number => (n + 3) & ~3;
