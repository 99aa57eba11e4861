/**
 * A kernel socket opened on first use, and again on the next use after an open that failed,
 * until close(): the daemon holds such surfaces from its start and may never need them (a
 * legacy iptables backend never reads the nf_tables generation; kube-proxy's nftables tables
 * are looked for once).
 */
import { SocketError } from '../errors';

/** One lazily opened socket; `what` names it in the error of a use after close(). */
export class LazySocket<T extends { close(): void }> {
  private socket: T | undefined;
  private closed = false;

  constructor(
    private readonly open: () => T,
    private readonly what: string,
  ) {}

  /** The socket, opened now if need be; throws the open's error, or a SocketError once closed. */
  get(): T {
    if (this.closed) throw new SocketError(`${this.what}: closed`);
    return (this.socket ??= this.open());
  }

  close(): void {
    this.closed = true;
    this.socket?.close();
    this.socket = undefined;
  }
}
