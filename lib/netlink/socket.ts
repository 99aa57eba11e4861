import { DecodeError, NetlinkTimeoutError, SocketError } from '../errors';
import { AttrWriter } from './attr';
import { NetlinkMessage, decodeAck, encodeGenlMessage, genlBody, splitMessages } from './nlmsg';
import { GENL_HDRLEN, NLMSG, NLM_F } from '../uapi/netlink';
import { NetlinkTransport } from './transport';
import { writeBatchDatagrams } from './batch-datagrams';

// the transports live in transport.ts; importers have always found them here
export { RawTransport } from './transport';
/** The datagram transport a netlink socket runs over (see transport.ts). */
export type { NetlinkTransport } from './transport';

/** A reply message of a generic-netlink request: its genl cmd and attribute bytes. */
export interface GenlReply {
  readonly cmd: number;
  readonly attrs: Buffer;
}

/** A request as the batch API takes it. */
export interface GenlRequest {
  readonly cmd: number;
  readonly attrs: Buffer;
  /**
   * nlmsg_type; the socket's familyId when absent. nfnetlink (ctnetlink) puts its message
   * type here, and its struct nfgenmsg {family u8, version u8, res_id be16} has the layout
   * of struct genlmsghdr {cmd u8, version u8, reserved u16}: cmd carries nfgen_family.
   */
  readonly type?: number;
}

/** Why the kernel refused one request. */
export interface GenlFailure {
  readonly errno: number;
  readonly extack?: string;
}

/** Options of GenlSocket: batching, requests in flight, and timeouts. */
export interface GenlSocketOptions {
  /** messages per datagram in a batch */
  readonly batchMessages?: number;
  /** bytes per datagram in a batch (must stay below the socket's send buffer) */
  readonly batchBytes?: number;
  /** datagrams of one batch in flight before waiting for the first one's ack */
  readonly batchWindow?: number;
  /**
   * single requests in flight; more wait their turn. Unbounded bursts overflow the
   * socket's receive buffer (ENOBUFS), and the replies that were dropped are lost.
   */
  readonly maxInFlight?: number;
  /** a request (or batch datagram) without any answer for this long fails; default 30 s */
  readonly requestTimeoutMs?: number;
  /** called for messages that match no request (e.g. a late ack); for logging */
  readonly onStray?: (msg: NetlinkMessage) => void;
}

interface Pending {
  readonly replies: GenlReply[];
  readonly resolve: (r: GenlReply[]) => void;
  readonly reject: (e: GenlFailure | Error) => void;
  /** fails the request when nothing arrives for requestTimeoutMs; restarted by every message */
  timer: NodeJS.Timeout | undefined;
  /** Date.now() of the last message for it (a dump part): the timer re-arms itself from there */
  lastAt: number;
}

/** One datagram of a batch: requests first..first+count-1 with sequence numbers firstSeq.. */
interface Chunk {
  readonly firstSeq: number;
  readonly first: number;
  readonly count: number;
  /** the message whose answer completes the datagram (the last one, or a transaction's last acked) */
  readonly last: number;
  /** an nfnetlink transaction: an error answering its first message completes it too */
  readonly transaction: boolean;
  readonly results: (GenlFailure | null)[];
  readonly done: () => void;
  readonly fail: (e: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

/** batchRaw's options */
export interface RawBatchOptions {
  /**
   * The messages are one nfnetlink transaction (NFNL_MSG_BATCH_BEGIN first, the members,
   * NFNL_MSG_BATCH_END last): they go in one datagram (RangeError, nothing sent, when they do
   * not fit one) and no NLM_F_ACK is added. Linux 6.1 answers neither BATCH_BEGIN nor
   * BATCH_END (later kernels ack them only when they ask, which these do not), and delivers
   * the members' errors and acks after the whole batch ran; so the members that want an answer
   * carry NLM_F_ACK themselves (`write` sets it; at least one must), and the batch completes at
   * the answer of the last of them. An error answering the first message (BATCH_BEGIN) ends it
   * too: the kernel refused the batch as a whole (EPERM, no subsystem, ENOMEM, a failed commit)
   * and may answer nothing else.
   */
  readonly transaction?: boolean;
}

/** How long a request waits for its answer unless GenlSocketOptions.requestTimeoutMs says otherwise. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/**
 * Requests and pipelined batches over one generic-netlink family. Replies are matched to
 * requests by sequence number only, so a stale ack (e.g. the ack after a GET reply) can
 * never be taken for the answer to a later request.
 *
 * Batches: many requests per datagram; only the last request of each datagram asks for an
 * ACK. The kernel handles a datagram's messages in order and answers a failed one with an
 * NLMSG_ERROR carrying its sequence number whether or not it asked for an ACK, so when the
 * last one's ack arrives, every request of that datagram without an error has succeeded.
 *
 * Time limit: a request (or batch datagram) that receives no message for requestTimeoutMs
 * fails with NetlinkTimeoutError and frees its slot; its sequence number is forgotten, so a
 * late answer is a stray. Dumps run one at a time per socket (the kernel refuses a second
 * concurrent dump on a socket with EBUSY), in the order they were asked for.
 */
export class GenlSocket {
  private seq = Math.floor(Math.random() * 0x7fffffff);
  private readonly pending = new Map<number, Pending>();
  /** batch datagrams awaiting their last message's ack (at most batchWindow) */
  private readonly chunks = new Set<Chunk>();
  private closed = false;
  private readonly batchMessages: number;
  private readonly batchBytes: number;
  private readonly batchWindow: number;
  private readonly maxInFlight: number;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly requestTimeoutMs: number;
  /** settles when the last dump asked for has finished (dumps queue behind it) */
  private dumpTail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly transport: NetlinkTransport,
    readonly familyId: number,
    readonly version: number,
    private readonly options: GenlSocketOptions = {},
  ) {
    this.batchMessages = options.batchMessages ?? 128;
    this.batchBytes = options.batchBytes ?? 48 * 1024;
    this.batchWindow = options.batchWindow ?? 2;
    this.maxInFlight = options.maxInFlight ?? 64;
    this.requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    transport.onDatagram((d) => this.receive(d));
    transport.onError((e) => this.failAll(e));
  }

  private nextSeq(): number {
    this.seq = (this.seq + 1) >>> 0 || 1;
    return this.seq;
  }

  /** `count` consecutive sequence numbers (never wrapping inside the block); returns the first. */
  private reserveSeqs(count: number): number {
    if (this.seq > 0xffffffff - count - 1) this.seq = 0;
    const first = this.seq + 1;
    this.seq += count;
    return first;
  }

  private encode(req: GenlRequest, seq: number, flags: number): Buffer {
    return encodeGenlMessage(
      { familyId: req.type ?? this.familyId, flags, seq, cmd: req.cmd, version: this.version },
      req.attrs,
    );
  }

  /**
   * One request; resolves with its reply messages (none for a plain ACK). A dump collects
   * every part until NLMSG_DONE. Rejects with a GenlFailure when the kernel refuses.
   */
  async request(req: GenlRequest, opts: { dump?: boolean } = {}): Promise<GenlReply[]> {
    if (!opts.dump) return this.requestInSlot(req, opts);
    // one dump at a time on this socket, each after the one asked for before it
    const run = this.dumpTail.then(() => this.requestInSlot(req, opts));
    this.dumpTail = run.catch(() => undefined);
    return run;
  }

  private async requestInSlot(req: GenlRequest, opts: { dump?: boolean }): Promise<GenlReply[]> {
    if (this.inFlight >= this.maxInFlight) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.inFlight++;
    try {
      return await this.requestNow(req, opts);
    } finally {
      // hand the slot to the next waiter, or free it
      const next = this.waiting.shift();
      if (next) next();
      else this.inFlight--;
    }
  }

  private timeoutError(): NetlinkTimeoutError {
    return new NetlinkTimeoutError(`no answer within ${this.requestTimeoutMs} ms`, this.requestTimeoutMs);
  }

  /**
   * Starts the no-answer timer of a pending request. A message for it only stamps p.lastAt
   * (a dump of 10,000 parts would otherwise clear and set 10,000 timers); when the timer
   * fires early because of that, it waits out the rest from the last message.
   */
  private arm(seq: number, p: Pending, delay = this.requestTimeoutMs): void {
    if (p.timer) clearTimeout(p.timer);
    p.timer = setTimeout(() => {
      if (this.pending.get(seq) !== p) return;
      const idle = Date.now() - p.lastAt;
      if (idle < this.requestTimeoutMs) {
        this.arm(seq, p, this.requestTimeoutMs - idle);
        return;
      }
      this.pending.delete(seq);
      p.reject(this.timeoutError());
    }, delay);
  }

  /** Forgets a pending request (answered, failed or timed out); returns it if it was there. */
  private take(seq: number): Pending | undefined {
    const p = this.pending.get(seq);
    if (!p) return undefined;
    this.pending.delete(seq);
    if (p.timer) clearTimeout(p.timer);
    return p;
  }

  private requestNow(req: GenlRequest, opts: { dump?: boolean }): Promise<GenlReply[]> {
    if (this.closed) return Promise.reject(new SocketError('netlink socket is closed'));
    const seq = this.nextSeq();
    // a dump ends with NLMSG_DONE; NLM_F_ACK there would add nothing
    const flags = NLM_F.REQUEST | (opts.dump ? NLM_F.DUMP : NLM_F.ACK);
    return new Promise<GenlReply[]>((resolve, reject) => {
      const p: Pending = { replies: [], resolve, reject, timer: undefined, lastAt: Date.now() };
      this.pending.set(seq, p);
      this.arm(seq, p);
      this.transport.send(this.encode(req, seq, flags)).catch((e: Error) => {
        if (this.take(seq)) reject(e);
      });
    });
  }

  /**
   * Sends many requests pipelined, in order; one result per request: null for success, a
   * GenlFailure for a refusal. Rejects only when the socket itself fails (then no result
   * of the unfinished datagrams is known).
   */
  batch(reqs: readonly GenlRequest[]): Promise<(GenlFailure | null)[]> {
    return this.batchWritten(
      reqs.length,
      (i, w) => {
        w.raw(reqs[i]!.attrs);
        return reqs[i]!.cmd;
      },
      (i) => reqs[i]!.type,
    );
  }

  /**
   * batch() for requests encoded on the way: `write(i, w)` appends request i's attributes to
   * `w` and returns its genl cmd; `typeOf(i)` its nlmsg_type when not the family's. Every
   * request is written (straight into the datagrams, no copy per request) before the first
   * datagram is sent, so a request that cannot be encoded throws with nothing sent.
   */
  async batchWritten(
    count: number,
    write: (i: number, w: AttrWriter) => number,
    typeOf?: (i: number) => number | undefined,
  ): Promise<(GenlFailure | null)[]> {
    return this.batchFramed(count, GENL_HDRLEN, (i, w, at) => {
      const cmd = write(i, w);
      const b = w.buffer;
      b.writeUInt16LE(typeOf?.(i) ?? this.familyId, at + 4);
      b.writeUInt16LE(NLM_F.REQUEST, at + 6);
      b[at + 16] = cmd;
      b[at + 17] = this.version;
      b.writeUInt16LE(0, at + 18);
    });
  }

  /**
   * batch() for messages of the transport's own protocol, which need not be generic netlink
   * (e.g. RTM_NEWADDR over NETLINK_ROUTE): `write(i, w)` appends everything of message i after
   * struct nlmsghdr and returns its nlmsg_type and flags (NLM_F_REQUEST is added, and
   * NLM_F_ACK to the last message of each datagram, but for a transaction: RawBatchOptions).
   * Only acks are read: no dumps or GETs.
   */
  batchRaw(
    count: number,
    write: (i: number, w: AttrWriter) => { readonly type: number; readonly flags: number },
    options: RawBatchOptions = {},
  ): Promise<(GenlFailure | null)[]> {
    return this.batchFramed(
      count,
      0,
      (i, w, at) => {
        const { type, flags } = write(i, w);
        w.buffer.writeUInt16LE(type, at + 4);
        w.buffer.writeUInt16LE(NLM_F.REQUEST | flags, at + 6);
      },
      options.transaction ?? false,
    );
  }

  /**
   * Writes `count` messages into datagrams and sends them pipelined. `write(i, w, at)` appends
   * message i's body after its nlmsghdr (at `at`) and the `extraHeader` bytes after it, and
   * sets the header's type and flags; length and sequence number are set here. A transaction
   * (RawBatchOptions) is one datagram, acked where `write` asked.
   */
  private async batchFramed(
    count: number,
    extraHeader: number,
    write: (i: number, w: AttrWriter, at: number) => void,
    transaction = false,
  ): Promise<(GenlFailure | null)[]> {
    if (this.closed) throw new SocketError('netlink socket is closed');
    const results: (GenlFailure | null)[] = new Array(count).fill(null);
    const datagrams = writeBatchDatagrams(
      count,
      extraHeader,
      transaction ? count : this.batchMessages,
      this.batchBytes,
      write,
    );
    let ackAt: number | undefined;
    if (transaction) {
      const d = datagrams[0];
      if (datagrams.length !== 1 || !d)
        throw new RangeError(
          `an nfnetlink transaction of ${count} messages does not fit one datagram of ${this.batchBytes} bytes`,
        );
      ackAt = d.offsets.findLastIndex((at) => (d.datagram.readUInt16LE(at + 6) & NLM_F.ACK) !== 0);
      if (ackAt < 0) throw new RangeError('an nfnetlink transaction needs NLM_F_ACK on one of its members at least');
    }
    const inFlight = new Set<Promise<void>>();
    for (const d of datagrams) {
      const p = this.sendChunk(d.datagram, d.offsets, d.first, results, ackAt);
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p)).catch(() => undefined);
      if (inFlight.size >= this.batchWindow) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    return results;
  }

  /**
   * Sends one written datagram (messages at `offsets`), numbering its messages now. `ackAt`:
   * a transaction's last message with NLM_F_ACK; else the last message gets it.
   */
  private sendChunk(
    datagram: Buffer,
    offsets: readonly number[],
    first: number,
    results: (GenlFailure | null)[],
    ackAt?: number,
  ): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const count = offsets.length;
      const firstSeq = this.reserveSeqs(count);
      for (let k = 0; k < count; k++) datagram.writeUInt32LE((firstSeq + k) >>> 0, offsets[k]! + 8);
      if (ackAt === undefined) {
        // only the last message asks for an ack (see the class comment)
        const flagsAt = offsets[count - 1]! + 6;
        datagram.writeUInt16LE(datagram.readUInt16LE(flagsAt) | NLM_F.ACK, flagsAt);
      }
      const chunk: Chunk = {
        firstSeq,
        first,
        count,
        last: ackAt ?? count - 1,
        transaction: ackAt !== undefined,
        results,
        done: () => {
          this.chunks.delete(chunk);
          clearTimeout(chunk.timer);
          resolve();
        },
        fail: (e) => {
          this.chunks.delete(chunk);
          clearTimeout(chunk.timer);
          reject(e);
        },
        timer: undefined,
      };
      this.armChunk(chunk);
      this.chunks.add(chunk);
      this.transport.send(datagram).catch((e: Error) => chunk.fail(e));
    });
  }

  private armChunk(c: Chunk): void {
    if (c.timer) clearTimeout(c.timer);
    c.timer = setTimeout(() => {
      if (this.chunks.has(c)) c.fail(this.timeoutError());
    }, this.requestTimeoutMs);
  }

  private chunkOf(seq: number): Chunk | undefined {
    for (const c of this.chunks) if ((seq - c.firstSeq) >>> 0 < c.count) return c;
    return undefined;
  }

  private receive(datagram: Buffer): void {
    let msgs: NetlinkMessage[];
    try {
      msgs = splitMessages(datagram);
    } catch (e) {
      this.failAll(e as DecodeError);
      return;
    }
    for (const m of msgs) {
      // never let a malformed message throw: this runs inside the native socket's callback,
      // where an exception aborts the process. It fails only the request it answers.
      try {
        this.handle(m);
      } catch (e) {
        this.failSeq(m, e as Error);
      }
    }
  }

  private failSeq(m: NetlinkMessage, e: Error): void {
    const p = this.take(m.seq);
    if (p) {
      p.reject(e);
      return;
    }
    const c = this.chunkOf(m.seq);
    if (c) c.fail(e);
    else this.options.onStray?.(m);
  }

  private handle(m: NetlinkMessage): void {
    const p = this.pending.get(m.seq);
    if (!p) {
      const c = m.type === NLMSG.ERROR ? this.chunkOf(m.seq) : undefined;
      if (c) this.handleChunkAck(c, m);
      else this.options.onStray?.(m);
      return;
    }
    if (m.type === NLMSG.ERROR) {
      const ack = decodeAck(m);
      this.take(m.seq);
      if (ack.errno === 0) p.resolve(p.replies);
      else p.reject(ack.extack ? { errno: ack.errno, extack: ack.extack } : { errno: ack.errno });
      return;
    }
    if (m.type === NLMSG.DONE) {
      this.take(m.seq);
      const errno = m.payload.length >= 4 ? -m.payload.readInt32LE(0) : 0;
      if (errno > 0) p.reject({ errno });
      else p.resolve(p.replies);
      return;
    }
    if (m.type === NLMSG.NOOP || m.type === NLMSG.OVERRUN) return;
    const body = genlBody(m);
    p.replies.push({ cmd: body.cmd, attrs: body.attrs });
    // a dump part: the answer is coming, give the rest the full time again
    p.lastAt = Date.now();
  }

  // A refusal of any member, or the ack (or refusal) of the datagram's last message (a
  // transaction's last acked one); the kernel answers in order, so the last one's answer means
  // every other member has had its say. A transaction refused at its BATCH_BEGIN ends there.
  private handleChunkAck(c: Chunk, m: NetlinkMessage): void {
    const ack = decodeAck(m);
    const k = (m.seq - c.firstSeq) >>> 0;
    if (ack.errno !== 0)
      c.results[c.first + k] = ack.extack ? { errno: ack.errno, extack: ack.extack } : { errno: ack.errno };
    if (k === c.last || (c.transaction && k === 0 && ack.errno !== 0)) c.done();
    else this.armChunk(c);
  }

  private failAll(e: Error): void {
    for (const seq of [...this.pending.keys()]) this.take(seq)!.reject(e);
    for (const c of [...this.chunks]) c.fail(e);
  }

  /** Requests still waiting for an answer (for tests and diagnostics). */
  get pendingCount(): number {
    return this.pending.size + this.chunks.size;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.failAll(new SocketError('netlink socket closed'));
    this.transport.close();
  }
}

/** Is `e` a GenlFailure (a kernel refusal, not a thrown Error)? */
export const isGenlFailure = (e: unknown): e is GenlFailure =>
  typeof e === 'object' && e !== null && !(e instanceof Error) && typeof (e as GenlFailure).errno === 'number';
