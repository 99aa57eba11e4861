import { NetlinkTransport } from '../lib/netlink/socket';

/** A request message as the scripted peer sees it. */
export interface SeenMessage {
  readonly type: number;
  readonly flags: number;
  readonly seq: number;
  readonly cmd: number;
  readonly attrs: Buffer;
}

/**
 * A NetlinkTransport whose peer is a function: every sent datagram is split into its
 * messages and handed to `answer`, whose returned datagrams are delivered asynchronously,
 * in order, like the kernel's receive queue. Fails loudly on a send after close.
 */
export class ScriptedTransport implements NetlinkTransport {
  readonly sent: SeenMessage[][] = [];
  private deliver: (d: Buffer) => void = () => {
    throw new Error('ScriptedTransport: no receiver registered');
  };
  private error: (e: Error) => void = () => undefined;
  closed = false;
  /** called after each datagram was handed to the receiver (e.g. to end a scripted dump) */
  afterDeliver?: (d: Buffer) => void;

  constructor(private readonly answer: (msgs: SeenMessage[]) => Buffer[]) {}

  async send(datagram: Buffer): Promise<void> {
    if (this.closed) throw new Error('ScriptedTransport: send after close');
    const msgs: SeenMessage[] = [];
    for (let off = 0; off < datagram.length;) {
      const len = datagram.readUInt32LE(off);
      msgs.push({
        type: datagram.readUInt16LE(off + 4),
        flags: datagram.readUInt16LE(off + 6),
        seq: datagram.readUInt32LE(off + 8),
        cmd: datagram.readUInt8(off + 16),
        attrs: datagram.subarray(off + 20, off + len),
      });
      off += (len + 3) & ~3;
    }
    this.sent.push(msgs);
    const replies = this.answer(msgs);
    for (const r of replies) {
      setImmediate(() => {
        this.deliver(r);
        this.afterDeliver?.(r);
      });
    }
  }
  onDatagram(cb: (d: Buffer) => void): void {
    this.deliver = cb;
  }
  onError(cb: (e: Error) => void): void {
    this.error = cb;
  }
  /** Simulates an asynchronous socket error (e.g. ENOBUFS). */
  raise(e: Error): void {
    this.error(e);
  }
  /** Delivers a datagram nobody asked for (e.g. a stale ack). */
  inject(d: Buffer): void {
    this.deliver(d);
  }
  close(): void {
    this.closed = true;
  }
}
