// The socket layer's numbers, not IPVS's: address families (include/linux/socket.h) and IP
// protocol numbers (include/uapi/linux/in.h), as every netlink family and /proc file carries them.

/** AF_INET: the IPv4 address family (include/linux/socket.h). */
export const AF_INET = 2;
/** AF_INET6: the IPv6 address family (include/linux/socket.h). */
export const AF_INET6 = 10;

/** IPPROTO_TCP: the IP protocol number of TCP (include/uapi/linux/in.h). */
export const IPPROTO_TCP = 6;
/** IPPROTO_UDP: the IP protocol number of UDP (include/uapi/linux/in.h). */
export const IPPROTO_UDP = 17;
/** IPPROTO_SCTP: the IP protocol number of SCTP (include/uapi/linux/in.h). */
export const IPPROTO_SCTP = 132;
