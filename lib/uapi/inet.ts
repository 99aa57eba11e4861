// The socket layer's numbers, not IPVS's: address families (include/linux/socket.h) and IP
// protocol numbers (include/uapi/linux/in.h), as every netlink family and /proc file carries them.

export const AF_INET = 2;
export const AF_INET6 = 10;

export const IPPROTO_TCP = 6;
export const IPPROTO_UDP = 17;
export const IPPROTO_SCTP = 132;
