/**
 * NETLINK_EXT_ACK on the `netlink` package's sockets: with it the kernel appends a message
 * ("Attribute failed policy validation", "Unknown device type") and the offending
 * attribute's offset to its NLMSG_ERROR answers; decodeAck() (nlmsg.ts) reads them into
 * NetlinkError.extack. The package has no setsockopt for it, so a Node-API addon of ours
 * (native/netlink-sockopt.c, built by `make build`) sets it on the socket bound to the
 * package socket's (protocol, port).
 *
 * Best effort by design: without the addon (not built) or on a kernel older than 4.12 the
 * socket works as before and errors carry the errno alone; extendedAckProblem() says why
 * (the kernel layer logs it once).
 */
// the one module (the package index also loads its nl80211 and wireguard codecs)
import type { RawNetlinkSocket } from 'netlink/dist/raw';
import { errnoName } from '../errors';
import { nativeAddonLoader } from '../native-addon';

interface SockoptAddon {
  enableExtAck(protocol: number, port: number): number;
  extAckEnabled(protocol: number, port: number): boolean;
}

const loadAddon = nativeAddonLoader<SockoptAddon>('netlink_sockopt.node');
let problem: string | undefined;

function describe(e: unknown): string {
  const errno = (e as { errno?: unknown }).errno;
  return typeof errno === 'number' ? `${errnoName(errno)}: ${(e as Error).message}` : String((e as Error).message ?? e);
}

/** Turns NETLINK_EXT_ACK on for a socket; returns undefined when it is on, else why not. */
export function enableExtendedAck(socket: RawNetlinkSocket, protocol: number): string | undefined {
  const a = loadAddon();
  let why: string | undefined;
  if (a instanceof Error) why = a.message;
  else {
    try {
      a.enableExtAck(protocol, socket.address().port);
    } catch (e) {
      why = `setsockopt NETLINK_EXT_ACK failed: ${describe(e)}`;
    }
  }
  if (why !== undefined) problem ??= why;
  return why;
}

/** Why the first socket of this process got no extended acks; undefined when all did. */
export function extendedAckProblem(): string | undefined {
  return problem;
}

/** Whether NETLINK_EXT_ACK is on for a socket (getsockopt); tests and diagnostics. */
export function extendedAckEnabled(socket: RawNetlinkSocket, protocol: number): boolean {
  const a = loadAddon();
  if (a instanceof Error) throw a;
  return a.extAckEnabled(protocol, socket.address().port);
}
