// Based on include/uapi/linux/ip_vs.h (Linux 6.1) and net/netfilter/ipvs/ip_vs_ctl.c.
// Names are the kernel's; lib/netlink/ipvs-codec.ts is the only place that maps them to
// the domain's VirtualServer / RealServer.

/** IPVS_GENL_NAME: the generic netlink family name of IPVS (ip_vs.h). */
export const IPVS_GENL_NAME = 'IPVS';
/** IPVS_GENL_VERSION: the IPVS generic netlink family version (ip_vs.h). */
export const IPVS_GENL_VERSION = 1;

/** IP_VS_VERSION_CODE: IPVS version 1.2.1 as the kernel encodes it (ip_vs.h). */
export const IP_VS_VERSION_CODE = 0x010201;
/** IP_VS_SCHEDNAME_MAXLEN: the size of a scheduler name, NUL included (ip_vs.h). */
export const IP_VS_SCHEDNAME_MAXLEN = 16;
/** IP_VS_PENAME_MAXLEN: the size of a persistence engine name, NUL included (ip_vs.h). */
export const IP_VS_PENAME_MAXLEN = 16;

/** IPVS_CMD_*: the IPVS generic netlink commands (include/uapi/linux/ip_vs.h). */
export const IPVS_CMD = {
  UNSPEC: 0,
  NEW_SERVICE: 1,
  SET_SERVICE: 2,
  DEL_SERVICE: 3,
  GET_SERVICE: 4,
  NEW_DEST: 5,
  SET_DEST: 6,
  DEL_DEST: 7,
  GET_DEST: 8,
  NEW_DAEMON: 9,
  DEL_DAEMON: 10,
  GET_DAEMON: 11,
  SET_CONFIG: 12,
  GET_CONFIG: 13,
  SET_INFO: 14,
  GET_INFO: 15,
  ZERO: 16,
  FLUSH: 17,
} as const;
/** One IPVS_CMD_* value. */
export type IpvsCmd = (typeof IPVS_CMD)[keyof typeof IPVS_CMD];

/** IPVS_CMD_ATTR_*: the top-level attributes of an IPVS command (include/uapi/linux/ip_vs.h). */
export const IPVS_CMD_ATTR = {
  UNSPEC: 0,
  SERVICE: 1,
  DEST: 2,
  DAEMON: 3,
  TIMEOUT_TCP: 4,
  TIMEOUT_TCP_FIN: 5,
  TIMEOUT_UDP: 6,
} as const;

/** IPVS_SVC_ATTR_*: the attributes of a virtual server (include/uapi/linux/ip_vs.h). */
export const IPVS_SVC_ATTR = {
  UNSPEC: 0,
  AF: 1,
  PROTOCOL: 2,
  ADDR: 3,
  PORT: 4,
  FWMARK: 5,
  SCHED_NAME: 6,
  FLAGS: 7,
  TIMEOUT: 8,
  NETMASK: 9,
  STATS: 10,
  PE_NAME: 11,
  STATS64: 12,
} as const;

/** IPVS_DEST_ATTR_*: the attributes of a real server (destination) (include/uapi/linux/ip_vs.h). */
export const IPVS_DEST_ATTR = {
  UNSPEC: 0,
  ADDR: 1,
  PORT: 2,
  FWD_METHOD: 3,
  WEIGHT: 4,
  U_THRESH: 5,
  L_THRESH: 6,
  ACTIVE_CONNS: 7,
  INACT_CONNS: 8,
  PERSIST_CONNS: 9,
  STATS: 10,
  ADDR_FAMILY: 11,
  STATS64: 12,
  TUN_TYPE: 13,
  TUN_PORT: 14,
  TUN_FLAGS: 15,
} as const;

/** IPVS_DAEMON_ATTR_*: the attributes of a connection-sync daemon (include/uapi/linux/ip_vs.h). */
export const IPVS_DAEMON_ATTR = {
  UNSPEC: 0,
  STATE: 1,
  MCAST_IFN: 2,
  SYNC_ID: 3,
  SYNC_MAXLEN: 4,
  MCAST_GROUP: 5,
  MCAST_GROUP6: 6,
  MCAST_PORT: 7,
  MCAST_TTL: 8,
} as const;

/** IPVS_STATS_ATTR_*: the counters and rates of a service or destination (include/uapi/linux/ip_vs.h). */
export const IPVS_STATS_ATTR = {
  UNSPEC: 0,
  CONNS: 1,
  INPKTS: 2,
  OUTPKTS: 3,
  INBYTES: 4,
  OUTBYTES: 5,
  CPS: 6,
  INPPS: 7,
  OUTPPS: 8,
  INBPS: 9,
  OUTBPS: 10,
  PAD: 11,
} as const;

/** IPVS_INFO_ATTR_*: the attributes of IPVS_CMD_GET_INFO's answer (include/uapi/linux/ip_vs.h). */
export const IPVS_INFO_ATTR = {
  UNSPEC: 0,
  VERSION: 1,
  CONN_TAB_SIZE: 2,
} as const;

/** IP_VS_SVC_F_*: the virtual server flags (include/uapi/linux/ip_vs.h). */
export const IP_VS_SVC_F = {
  PERSISTENT: 0x0001,
  /** set by the kernel on every hashed service; never meaningful to send */
  HASHED: 0x0002,
  ONEPACKET: 0x0004,
  SCHED1: 0x0008,
  SCHED2: 0x0010,
  SCHED3: 0x0020,
} as const;
/** IP_VS_SVC_F_SCHED_SH_FALLBACK: sh scheduler flag: skip unavailable real servers (ip_vs.h). */
export const IP_VS_SVC_F_SCHED_SH_FALLBACK = IP_VS_SVC_F.SCHED1;
/** IP_VS_SVC_F_SCHED_SH_PORT: sh scheduler flag: hash the source port too (ip_vs.h). */
export const IP_VS_SVC_F_SCHED_SH_PORT = IP_VS_SVC_F.SCHED2;
// not in the uapi header: ipvsadm's libipvs/ip_vs.h and the kernel's ip_vs_mh.c
export const IP_VS_SVC_F_SCHED_MH_FALLBACK = IP_VS_SVC_F.SCHED1;
/** IP_VS_SVC_F_SCHED_MH_PORT: mh scheduler flag: hash the source port too. */
export const IP_VS_SVC_F_SCHED_MH_PORT = IP_VS_SVC_F.SCHED2;

/** IP_VS_CONN_F_FWD_MASK: the forwarding-method bits of a destination's conn flags (ip_vs.h). */
export const IP_VS_CONN_F_FWD_MASK = 0x0007;
/** IP_VS_CONN_F_*: the forwarding methods (IPVS_DEST_ATTR_FWD_METHOD) (include/uapi/linux/ip_vs.h). */
export const IP_VS_CONN_F = {
  MASQ: 0x0000,
  LOCALNODE: 0x0001,
  TUNNEL: 0x0002,
  DROUTE: 0x0003,
  BYPASS: 0x0004,
} as const;

/** IP_VS_CONN_F_TUNNEL_TYPE_*: the tunnel encapsulations of a tunnel destination (ip_vs.h). */
export const IP_VS_CONN_F_TUNNEL_TYPE = {
  IPIP: 0,
  GUE: 1,
  GRE: 2,
} as const;

/** IP_VS_TUNNEL_ENCAP_FLAG_*: the checksum options of a GUE/GRE tunnel destination (ip_vs.h). */
export const IP_VS_TUNNEL_ENCAP_FLAG = {
  NOCSUM: 0,
  CSUM: 1 << 0,
  REMCSUM: 1 << 1,
} as const;
