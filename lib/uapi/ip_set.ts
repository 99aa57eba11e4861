// Based on include/uapi/linux/netfilter/ipset/ip_set.h, include/uapi/linux/netfilter/nfnetlink.h
// and include/uapi/linux/netfilter.h (Linux 6.1; the values below are the same since 5.6).

/** nfnetlink subsystem id of ip_set; a message type is (NFNL_SUBSYS_IPSET << 8) | IPSET_CMD_* */
export const NFNL_SUBSYS_IPSET = 6;

/**
 * IPSET_PROTOCOL (7 since Linux 5.6) and IPSET_PROTOCOL_MIN (6). A kernel accepts a request
 * whose IPSET_ATTR_PROTOCOL is >= its IPSET_PROTOCOL_MIN (6.1: 6); kernels before 5.6 want
 * exactly 6. With 7 the kernel adds IPSET_ATTR_INDEX to each set header; nothing else differs.
 */
export const IPSET_PROTOCOL = 7;
/** IPSET_PROTOCOL_MIN: the oldest ip_set protocol version a kernel accepts (see IPSET_PROTOCOL). */
export const IPSET_PROTOCOL_MIN = 6;

/** IPSET_MAXNAMELEN: set and type names, NUL included */
export const IPSET_MAXNAMELEN = 32;

/** enum ipset_cmd (the netlink commands) */
export const IPSET_CMD = {
  NONE: 0,
  PROTOCOL: 1,
  CREATE: 2,
  DESTROY: 3,
  FLUSH: 4,
  RENAME: 5,
  SWAP: 6,
  LIST: 7,
  SAVE: 8,
  ADD: 9,
  DEL: 10,
  TEST: 11,
  HEADER: 12,
  TYPE: 13,
  GET_BYNAME: 14,
  GET_BYINDEX: 15,
} as const;

/** nlmsg_type of an ipset message */
export const ipsetMsgType = (cmd: number): number => (NFNL_SUBSYS_IPSET << 8) | cmd;

/** attributes at command level (IPSET_ATTR_*) */
export const IPSET_ATTR = {
  PROTOCOL: 1,
  SETNAME: 2,
  TYPENAME: 3,
  SETNAME2: 3,
  REVISION: 4,
  FAMILY: 5,
  FLAGS: 6,
  DATA: 7,
  ADT: 8,
  LINENO: 9,
  PROTOCOL_MIN: 10,
  REVISION_MIN: 10,
  INDEX: 11,
} as const;

/**
 * CADT (create and add/del/test) attributes inside IPSET_ATTR_DATA: the create-only ones of a
 * set header and the ADT ones of an element share one number space. Integers the kernel puts
 * with nla_put_net16/32/64 are big-endian and carry NLA_F_NET_BYTEORDER; u8 ones have no flag.
 */
export const IPSET_ATTR_CADT = {
  IP: 1,
  IP_FROM: 1,
  IP_TO: 2,
  CIDR: 3,
  PORT: 4,
  PORT_FROM: 4,
  PORT_TO: 5,
  TIMEOUT: 6,
  PROTO: 7,
  CADT_FLAGS: 8,
  CADT_LINENO: 9,
  MARK: 10,
  MARKMASK: 11,
  // create-only
  INITVAL: 17,
  HASHSIZE: 18,
  MAXELEM: 19,
  NETMASK: 20,
  BUCKETSIZE: 21,
  RESIZE: 22,
  SIZE: 23,
  // kernel-only
  ELEMENTS: 24,
  REFERENCES: 25,
  MEMSIZE: 26,
  // ADT-only
  ETHER: 17,
  NAME: 18,
  NAMEREF: 19,
  IP2: 20,
  CIDR2: 21,
  IP2_TO: 22,
  IFACE: 23,
  BYTES: 24,
  PACKETS: 25,
  COMMENT: 26,
  SKBMARK: 27,
  SKBPRIO: 28,
  SKBQUEUE: 29,
  PAD: 30,
} as const;

/** inside IPSET_ATTR_IP / IP2 / IP_TO (a nest): the address, network order, NLA_F_NET_BYTEORDER */
export const IPSET_ATTR_IPADDR = {
  IPV4: 1,
  IPV6: 2,
} as const;

/** enum ipset_errno (positive errnos above the system's) */
export const IPSET_ERR = {
  PRIVATE: 4096,
  PROTOCOL: 4097,
  FIND_TYPE: 4098,
  MAX_SETS: 4099,
  BUSY: 4100,
  EXIST_SETNAME2: 4101,
  TYPE_MISMATCH: 4102,
  EXIST: 4103,
  INVALID_CIDR: 4104,
  INVALID_NETMASK: 4105,
  INVALID_FAMILY: 4106,
  TIMEOUT: 4107,
  REFERENCED: 4108,
  IPADDR_IPV4: 4109,
  IPADDR_IPV6: 4110,
  COUNTER: 4111,
  COMMENT: 4112,
  INVALID_MARKMASK: 4113,
  SKBINFO: 4114,
  TYPE_SPECIFIC: 4352,
} as const;

/** enum ipset_cadt_flags (IPSET_ATTR_CADT_FLAGS, net32) */
export const IPSET_FLAG_CADT = {
  BEFORE: 1 << 0,
  PHYSDEV: 1 << 1,
  NOMATCH: 1 << 2,
  WITH_COUNTERS: 1 << 3,
  WITH_COMMENT: 1 << 4,
  WITH_FORCEADD: 1 << 5,
  WITH_SKBINFO: 1 << 6,
} as const;

/** enum { NFPROTO_* } (include/uapi/linux/netfilter.h): IPSET_ATTR_FAMILY values */
export const NFPROTO = {
  UNSPEC: 0,
  IPV4: 2,
  IPV6: 10,
} as const;
