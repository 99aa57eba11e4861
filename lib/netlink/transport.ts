// the raw socket module only: the package's index also loads its rtnetlink, nl80211 and
// WireGuard layers (start-up time for nothing), which the IPVS client never uses
import { RawNetlinkSocket } from 'netlink/dist/raw';
import { SocketError } from '../errors';
import { NETLINK_GENERIC } from '../uapi/netlink';
import { enableExtendedAck } from './ext-ack';

/**
 * The datagram transport under a GenlSocket: the `netlink` package's raw socket in
 * production, a ScriptedTransport in unit tests. One datagram may carry many messages.
 */
export interface NetlinkTransport {
  send(datagram: Buffer): Promise<void>;
  onDatagram(cb: (datagram: Buffer) => void): void;
  onError(cb: (err: Error) => void): void;
  close(): void;
}

/**
 * NETLINK_GENERIC socket from the `netlink` package, with large buffers for pipelining and
 * NETLINK_EXT_ACK on (when the addon is built: ext-ack.ts).
 */
export class RawTransport implements NetlinkTransport {
  readonly raw: RawNetlinkSocket;
  /** why the kernel's extended-ack messages are off on this socket; undefined when on */
  readonly extAckProblem: string | undefined;

  constructor(protocol = NETLINK_GENERIC, bufferSize = 4 << 20) {
    // the kernel caps SO_RCVBUF at net.core.rmem_max (and doubles it); batch sizes below
    // are chosen so even a batch where every op fails fits in the default cap
    this.raw = new RawNetlinkSocket(protocol, { recvBufferSize: bufferSize, sendBufferSize: bufferSize });
    this.extAckProblem = enableExtendedAck(this.raw, protocol);
  }

  send(datagram: Buffer): Promise<void> {
    return new Promise((resolve, reject) => {
      this.raw.send(datagram, {}, (err) =>
        err
          ? reject(new SocketError(`netlink send: ${err.code ?? err.message}`, err.errno, { cause: err }))
          : resolve(),
      );
    });
  }
  onDatagram(cb: (datagram: Buffer) => void): void {
    this.raw.on('message', (msg) => cb(msg));
  }
  onError(cb: (err: Error) => void): void {
    this.raw.on('error', (err) =>
      cb(new SocketError(`netlink receive: ${err.code ?? err.message}`, err.errno, { cause: err })),
    );
  }
  close(): void {
    this.raw.close();
  }
}

/**
 * A RawTransport of `protocol`; when the socket cannot be opened, a SocketError naming `what`
 * with the errno (EPROTONOSUPPORT: the kernel has no such netlink protocol).
 */
export function openRawTransport(protocol: number, bufferSize: number, what: string): RawTransport {
  try {
    return new RawTransport(protocol, bufferSize);
  } catch (e) {
    const errno = (e as { errno?: number }).errno;
    throw new SocketError(`${what}: ${(e as Error).message}`, errno, { cause: e });
  }
}
