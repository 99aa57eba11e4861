import { GenlSocket, isGenlFailure } from '../../lib/netlink/socket';
import { splitMessages } from '../../lib/netlink/nlmsg';
import { DecodeError, NetlinkTimeoutError, SocketError } from '../../lib/errors';
import { ScriptedTransport, SeenMessage } from '../../testkit/scripted-transport';
import { Bytes, genlMsg, nlDone, nlError, nla, u32 } from '../../testkit/nl-builder';

const FAMILY = 0x22;
const ACK = 0x4;
const req = (cmd: number, n = 0) => ({ cmd, attrs: nla(1, u32(n)) });
const reply = (m: SeenMessage, cmd: number, n: number, flags = 0) =>
  genlMsg({ type: FAMILY, flags, seq: m.seq, cmd }, nla(1, u32(n)));

describe('GenlSocket.request', () => {
  it('resolves with the reply that precedes the ACK', async () => {
    const t = new ScriptedTransport((msgs) => msgs.flatMap((m) => [reply(m, 1, 42), nlError(0, m)]));
    const s = new GenlSocket(t, FAMILY, 1);
    const replies = await s.request(req(4));
    expect(replies.map((r) => [r.cmd, r.attrs.readUInt32LE(4)])).toEqual([[1, 42]]);
    expect(t.sent[0]![0]!.flags).toBe(0x1 | ACK);
    expect(s.pendingCount).toBe(0);
  });

  it('never takes the ACK of an earlier GET for the answer to the next request', async () => {
    // The kernel answers a non-dump GET with NLM_F_ACK with a reply AND an ack. Deliver
    // the first request's ack late, after the second request was sent.
    const late: Buffer[] = [];
    const t = new ScriptedTransport((msgs) => {
      const m = msgs[0]!;
      if (m.cmd === 4) {
        late.push(nlError(0, m));
        return [reply(m, 1, 1)];
      }
      return [nlError(3 /* ESRCH */, m)];
    });
    const strays: number[] = [];
    const s = new GenlSocket(t, FAMILY, 1, { onStray: (m) => strays.push(m.seq) });
    const first = s.request(req(4));
    await new Promise((r) => setImmediate(r));
    const second = s.request(req(3));
    t.inject(late[0]!);
    await expect(second).rejects.toEqual({ errno: 3 });
    expect((await first).length).toBe(1);
    expect(strays).toEqual([]);
  });

  it('reports a message for no pending request as a stray, and keeps going', async () => {
    const t = new ScriptedTransport((msgs) => msgs.map((m) => nlError(0, m)));
    const strays: number[] = [];
    const s = new GenlSocket(t, FAMILY, 1, { onStray: (m) => strays.push(m.seq) });
    t.inject(nlError(0, { type: FAMILY, flags: 5, seq: 12345 }));
    await expect(s.request(req(1))).resolves.toEqual([]);
    expect(strays).toEqual([12345]);
  });

  it('collects a multi-part dump spread over several datagrams until NLMSG_DONE', async () => {
    const t = new ScriptedTransport((msgs) => {
      const m = msgs[0]!;
      expect(m.flags & 0x300).toBe(0x300);
      expect(m.flags & ACK).toBe(0);
      return [
        Buffer.concat([reply(m, 1, 1, 0x2), reply(m, 1, 2, 0x2)]),
        Buffer.concat([reply(m, 1, 3, 0x2)]),
        Buffer.concat([reply(m, 1, 4, 0x2), nlDone(m.seq)]),
      ];
    });
    const s = new GenlSocket(t, FAMILY, 1);
    const replies = await s.request(req(4), { dump: true });
    expect(replies.map((r) => r.attrs.readUInt32LE(4))).toEqual([1, 2, 3, 4]);
  });

  it('rejects a dump whose NLMSG_DONE carries an error', async () => {
    const t = new ScriptedTransport((msgs) => [nlDone(msgs[0]!.seq, 16)]);
    await expect(new GenlSocket(t, FAMILY, 1).request(req(4), { dump: true })).rejects.toEqual({ errno: 16 });
  });
});

describe('GenlSocket.batch', () => {
  // A kernel-like peer: handles a datagram's messages in order, answers failures with
  // NLMSG_ERROR whether or not they asked for an ACK, acks successes only when asked.
  function kernelLike(fail: Map<number, number>) {
    return (msgs: SeenMessage[]) => {
      const out: Buffer[] = [];
      for (const m of msgs) {
        const n = m.attrs.readUInt32LE(4);
        const errno = fail.get(n) ?? 0;
        if (errno || m.flags & ACK) out.push(nlError(errno, m));
      }
      return out.length ? [Buffer.concat(out)] : [];
    };
  }

  it('gives every op its own result, attributing each error to its op', async () => {
    const fail = new Map([
      [5, 17],
      [127, 2],
      [150, 3],
      [299, 22],
    ]);
    const t = new ScriptedTransport(kernelLike(fail));
    const s = new GenlSocket(t, FAMILY, 1, { batchMessages: 128 });
    const ops = Array.from({ length: 300 }, (_, i) => req(5, i));
    const results = await s.batch(ops);
    expect(results).toHaveLength(300);
    const failed = results.flatMap((r, i) => (r ? [[i, r.errno]] : []));
    expect(failed).toEqual([
      [5, 17],
      [127, 2],
      [150, 3],
      [299, 22],
    ]);
    // 300 ops in datagrams of at most 128, only the last message of each asks for an ACK
    expect(t.sent.map((d) => d.length)).toEqual([128, 128, 44]);
    for (const d of t.sent)
      expect(d.map((m) => (m.flags & ACK ? 1 : 0))).toEqual(d.map((_, k) => (k === d.length - 1 ? 1 : 0)));
    expect(s.pendingCount).toBe(0);
  });

  it('splits datagrams by size as well as by count', async () => {
    const t = new ScriptedTransport(kernelLike(new Map()));
    const s = new GenlSocket(t, FAMILY, 1, { batchMessages: 1000, batchBytes: 28 * 10 });
    await s.batch(Array.from({ length: 25 }, (_, i) => req(5, i)));
    expect(t.sent.map((d) => d.length)).toEqual([10, 10, 5]);
  });

  it('rejects the whole batch when the socket fails, leaving nothing pending', async () => {
    let calls = 0;
    let t: ScriptedTransport;
    t = new ScriptedTransport((msgs) => {
      if (++calls === 2) {
        setImmediate(() => t.raise(new SocketError('netlink receive: ENOBUFS', 105)));
        return [];
      }
      return kernelLike(new Map())(msgs);
    });
    const s = new GenlSocket(t, FAMILY, 1, { batchMessages: 10, batchWindow: 1 });
    await expect(s.batch(Array.from({ length: 50 }, (_, i) => req(5, i)))).rejects.toThrow(/ENOBUFS/);
    expect(s.pendingCount).toBe(0);
  });

  it('batchWritten sends the bytes batch() sends for the same requests, split the same way', async () => {
    const reqs = Array.from({ length: 40 }, (_, i) => ({
      cmd: 5,
      attrs: Buffer.concat([nla(1, u32(i)), nla(2, Buffer.alloc(4 * (i % 5)))]),
    }));
    const datagrams = async (send: (s: GenlSocket) => Promise<unknown>): Promise<SeenMessage[][]> => {
      const t = new ScriptedTransport(kernelLike(new Map()));
      await send(new GenlSocket(t, FAMILY, 1, { batchMessages: 16, batchBytes: 400 }));
      return t.sent;
    };
    const viaBatch = await datagrams((s) => s.batch(reqs));
    const viaWriter = await datagrams((s) =>
      s.batchWritten(reqs.length, (i, w) => {
        w.u32(1, i).bytes(2, Buffer.alloc(4 * (i % 5)));
        return 5;
      }),
    );
    const shape = (d: SeenMessage[][]) => d.map((ms) => ms.map((m) => [m.cmd, m.flags, m.attrs.toString('hex')]));
    expect(shape(viaWriter)).toEqual(shape(viaBatch));
    expect(viaWriter.length).toBeGreaterThan(2);
  });

  it('batchWritten: a request that cannot be written fails the batch before anything is sent', async () => {
    const t = new ScriptedTransport(kernelLike(new Map()));
    const s = new GenlSocket(t, FAMILY, 1, { batchMessages: 4 });
    const write = (i: number, w: { u32(t: number, v: number): unknown }): number => {
      if (i === 9) throw new TypeError('not an IPv4 address');
      w.u32(1, i);
      return 5;
    };
    await expect(s.batchWritten(10, write)).rejects.toThrow(/not an IPv4 address/);
    expect(t.sent).toEqual([]);
    expect(s.pendingCount).toBe(0);
  });

  it('batchRaw: messages of another protocol keep their type, flags and bytes; ACK is added to the last of each datagram', async () => {
    const fail = new Map([[3, 17]]);
    const t = new ScriptedTransport(kernelLike(fail));
    const s = new GenlSocket(t, 0, 0, { batchMessages: 4 });
    const RTM_NEWADDR = 20;
    const CREATE_EXCL = 0x400 | 0x200;
    // no genl header: the payload (an ifaddrmsg, say) starts right after struct nlmsghdr
    const payload = (n: number) => Buffer.concat([Buffer.from([2, 32, 0, 0]), nla(1, u32(n))]);
    const results = await s.batchRaw(6, (i, w) => (w.raw(payload(i)), { type: RTM_NEWADDR, flags: CREATE_EXCL }));
    expect(results.map((r) => r?.errno ?? 0)).toEqual([0, 0, 0, 17, 0, 0]);
    expect(t.sent.map((d) => d.length)).toEqual([4, 2]);
    for (const d of t.sent) {
      expect(d.map((m) => m.type)).toEqual(d.map(() => RTM_NEWADDR));
      expect(d.map((m) => m.flags)).toEqual(d.map((_, k) => 0x1 | CREATE_EXCL | (k === d.length - 1 ? ACK : 0)));
    }
    // SeenMessage reads a genl header: cmd is the payload's first byte, attrs start 4 bytes in
    expect(t.sent.flat().map((m) => [m.cmd, m.attrs.readUInt32LE(4)])).toEqual([0, 1, 2, 3, 4, 5].map((n) => [2, n]));
    expect(s.pendingCount).toBe(0);
  });

  describe('batchRaw as an nfnetlink transaction', () => {
    // Linux 6.1's nfnetlink_rcv_batch: BATCH_BEGIN (0x10) and BATCH_END (0x11) are never answered;
    // a member is answered when it failed or asked for NLM_F_ACK, all after the whole batch ran
    const BEGIN = 0x10;
    const END = 0x11;
    const MEMBER = 0x0a02;
    /** the kernel's answers to one batch: refused whole at BEGIN, or per member */
    function nfnlBatch(opts: { fail?: Map<number, number>; refuse?: number; commitFails?: number } = {}) {
      return (msgs: SeenMessage[]) => {
        const begin = msgs[0]!;
        if (opts.refuse) return [nlError(opts.refuse, begin)];
        const out: Buffer[] = [];
        if (opts.commitFails) out.push(nlError(opts.commitFails, begin));
        for (const m of msgs) {
          if (m.type !== MEMBER) continue;
          const errno = opts.fail?.get(m.attrs.readUInt32LE(4)) ?? 0;
          if (errno || m.flags & ACK) out.push(nlError(errno, m));
        }
        return out.length ? [Buffer.concat(out)] : [];
      };
    }
    // a transaction of n members: BEGIN, members 1..n (NLM_F_ACK on those `acked` says), END
    const transaction = (s: GenlSocket, n: number, acked = (_i: number) => true) =>
      s.batchRaw(
        n + 2,
        (i, w) => {
          w.raw(Buffer.from([0, 0, 0, 10]));
          if (i === 0 || i === n + 1) return { type: i === 0 ? BEGIN : END, flags: 0 };
          w.u32(1, i);
          return { type: MEMBER, flags: acked(i) ? ACK : 0 };
        },
        { transaction: true },
      );

    it('one datagram whatever batchMessages says; no NLM_F_ACK added; done at the last acked member, failures where they belong', async () => {
      const t = new ScriptedTransport(nfnlBatch({ fail: new Map([[2, 2]]) }));
      const s = new GenlSocket(t, 0, 0, { batchMessages: 2, requestTimeoutMs: 60_000 });
      const results = await transaction(s, 3);
      expect(results.map((r) => r?.errno ?? 0)).toEqual([0, 0, 2, 0, 0]);
      expect(t.sent).toHaveLength(1);
      expect(t.sent[0]!.map((m) => [m.type, m.flags])).toEqual([
        [BEGIN, 0x1],
        [MEMBER, 0x1 | ACK],
        [MEMBER, 0x1 | ACK],
        [MEMBER, 0x1 | ACK],
        [END, 0x1],
      ]);
      expect(s.pendingCount).toBe(0);
    });

    it('only the last member acked: a failure of an earlier one is still its own result', async () => {
      const t = new ScriptedTransport(nfnlBatch({ fail: new Map([[1, 1]]) }));
      const s = new GenlSocket(t, 0, 0, { requestTimeoutMs: 60_000 });
      const results = await transaction(s, 3, (i) => i === 3);
      expect(results.map((r) => r?.errno ?? 0)).toEqual([0, 1, 0, 0, 0]);
      expect(t.sent[0]!.map((m) => m.flags & ACK)).toEqual([0, 0, 0, ACK, 0]);
    });

    it('refused whole at BATCH_BEGIN (nothing else answered): done at once with that error, no timeout', async () => {
      const t = new ScriptedTransport(nfnlBatch({ refuse: 1 /* EPERM */ }));
      const s = new GenlSocket(t, 0, 0, { requestTimeoutMs: 60_000 });
      expect((await transaction(s, 2)).map((r) => r?.errno ?? 0)).toEqual([1, 0, 0, 0]);
      expect(s.pendingCount).toBe(0);
    });

    it('a failed commit (its error on BATCH_BEGIN, the members acked after it): the error is the result; the late acks are strays', async () => {
      const t = new ScriptedTransport(nfnlBatch({ commitFails: 12 /* ENOMEM */ }));
      const strays: number[] = [];
      const s = new GenlSocket(t, 0, 0, { onStray: (m) => strays.push(m.seq) });
      expect((await transaction(s, 2)).map((r) => r?.errno ?? 0)).toEqual([12, 0, 0, 0]);
      expect(strays).toHaveLength(2);
      expect(s.pendingCount).toBe(0);
    });

    it('no member asks for an ack, or too big for one datagram: RangeError with nothing sent', async () => {
      const t = new ScriptedTransport(nfnlBatch());
      const s = new GenlSocket(t, 0, 0, { batchBytes: 200 });
      await expect(transaction(s, 2, () => false)).rejects.toThrow(/NLM_F_ACK on one of its members/);
      await expect(transaction(s, 20)).rejects.toThrow(/22 messages does not fit one datagram of 200 bytes/);
      expect(t.sent).toEqual([]);
      expect(s.pendingCount).toBe(0);
    });
  });

  it('an empty batch sends nothing', async () => {
    const t = new ScriptedTransport(() => []);
    expect(await new GenlSocket(t, FAMILY, 1).batch([])).toEqual([]);
    expect(t.sent).toEqual([]);
  });
});

describe('splitMessages', () => {
  it('throws DecodeError on a message longer than the datagram', () => {
    const m = nlError(0, { type: 1, flags: 0, seq: 1 });
    expect(() => splitMessages(m.subarray(0, m.length - 4))).toThrow(DecodeError);
    expect(splitMessages(Buffer.concat([m, m])).length).toBe(2);
  });

  it('isGenlFailure tells a kernel refusal from a thrown Error', () => {
    expect(isGenlFailure({ errno: 2 })).toBe(true);
    expect(isGenlFailure(new SocketError('x', 2))).toBe(false);
  });
});

describe('GenlSocket request bursts', () => {
  it('keeps at most maxInFlight single requests outstanding; the rest wait their turn', async () => {
    let outstanding = 0;
    let most = 0;
    const t = new ScriptedTransport((msgs) => {
      outstanding += msgs.length;
      most = Math.max(most, outstanding);
      return msgs.map((m) => nlError(0, m));
    });
    const s = new GenlSocket(t, FAMILY, 1, { maxInFlight: 8 });
    const orig = (s as unknown as { handle: (m: unknown) => void }).handle.bind(s);
    (s as unknown as { handle: (m: unknown) => void }).handle = (m) => {
      outstanding--;
      orig(m);
    };
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => s.request(req(1, i))));
    expect(results).toHaveLength(100);
    expect(most).toBe(8);
    expect(s.pendingCount).toBe(0);
  });
});

describe('GenlSocket with malformed replies', () => {
  it('a truncated NLMSG_ERROR fails only the request it answers; the socket keeps working', async () => {
    let n = 0;
    const t = new ScriptedTransport((msgs) =>
      msgs.map((m) => {
        if (++n === 1) {
          // nlmsgerr needs 4 + 16 bytes; give it 4
          return new Bytes().u32le(20).u16le(2).u16le(0).u32le(m.seq).u32le(0).u32le(0).build();
        }
        return nlError(0, m);
      }),
    );
    const s = new GenlSocket(t, FAMILY, 1);
    await expect(s.request(req(1))).rejects.toThrow(DecodeError);
    await expect(s.request(req(1))).resolves.toEqual([]);
    expect(s.pendingCount).toBe(0);
  });

  it('a malformed answer inside a batch fails that batch, not the process', async () => {
    const t = new ScriptedTransport((msgs) => {
      const last = msgs[msgs.length - 1]!;
      return [new Bytes().u32le(20).u16le(2).u16le(0).u32le(last.seq).u32le(0).u32le(0).build()];
    });
    const s = new GenlSocket(t, FAMILY, 1);
    await expect(s.batch([req(5, 1), req(5, 2)])).rejects.toThrow(DecodeError);
    expect(s.pendingCount).toBe(0);
  });
});

describe('GenlSocket request timeout', () => {
  // the transport's deliveries (setImmediate) stay real; only the request timers are faked
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());
  const turn = () => new Promise((r) => setImmediate(r));

  it('a request with no answer fails with NetlinkTimeoutError, frees its slot, and its late answer is a stray', async () => {
    const unanswered: SeenMessage[] = [];
    const t = new ScriptedTransport((msgs) => {
      const m = msgs[0]!;
      if (m.attrs.readUInt32LE(4) === 1) {
        unanswered.push(m);
        return [];
      }
      return [nlError(0, m)];
    });
    const strays: number[] = [];
    const s = new GenlSocket(t, FAMILY, 1, {
      maxInFlight: 1,
      requestTimeoutMs: 30_000,
      onStray: (m) => strays.push(m.seq),
    });
    const first = s.request(req(1, 1));
    const firstResult = first.then(
      () => undefined,
      (e: unknown) => e,
    );
    const second = s.request(req(1, 2)); // waits for the only slot
    await turn();
    expect(t.sent).toHaveLength(1);
    jest.advanceTimersByTime(29_999);
    await turn();
    expect(s.pendingCount).toBe(1);
    jest.advanceTimersByTime(1);
    const err = await firstResult;
    expect(err).toBeInstanceOf(NetlinkTimeoutError);
    expect((err as NetlinkTimeoutError).code).toBe('KIPVS_NETLINK_TIMEOUT');
    expect((err as Error).message).toBe('no answer within 30000 ms');
    await expect(second).resolves.toEqual([]);
    t.inject(nlError(0, unanswered[0]!));
    expect(strays).toEqual([unanswered[0]!.seq]);
    expect(s.pendingCount).toBe(0);
  });

  it('the timer restarts with every part of a dump: a long dump that keeps answering does not time out', async () => {
    let dumpMsg: SeenMessage | undefined;
    const t = new ScriptedTransport((msgs) => {
      dumpMsg = msgs[0]!;
      return [reply(dumpMsg, 1, 1, 0x2)];
    });
    const s = new GenlSocket(t, FAMILY, 1, { requestTimeoutMs: 1000 });
    const dump = s.request(req(4), { dump: true });
    await turn();
    await turn(); // the first part delivered
    jest.advanceTimersByTime(900);
    t.inject(reply(dumpMsg!, 1, 2, 0x2));
    jest.advanceTimersByTime(900);
    t.inject(Buffer.concat([reply(dumpMsg!, 1, 3, 0x2), nlDone(dumpMsg!.seq)]));
    expect((await dump).map((r) => r.attrs.readUInt32LE(4))).toEqual([1, 2, 3]);
  });

  it('a batch datagram whose ack never comes fails the batch with NetlinkTimeoutError', async () => {
    const t = new ScriptedTransport(() => []);
    const s = new GenlSocket(t, FAMILY, 1, { requestTimeoutMs: 5000 });
    const b = s.batch([req(5, 1), req(5, 2)]).then(
      () => undefined,
      (e: unknown) => e,
    );
    await turn();
    jest.advanceTimersByTime(5000);
    expect(await b).toBeInstanceOf(NetlinkTimeoutError);
    expect(s.pendingCount).toBe(0);
  });
});

describe('GenlSocket dumps', () => {
  // The kernel runs one dump per socket: a dump request while another dump's parts are still
  // to be read is refused with EBUSY (netlink_dump_start). This peer does the same.
  function dumpingPeer(parts: number) {
    let running: number | undefined;
    const t = new ScriptedTransport((msgs) => {
      const m = msgs[0]!;
      if (running !== undefined) return [nlError(16 /* EBUSY */, m)];
      running = m.seq;
      const out: Buffer[] = [];
      for (let i = 1; i <= parts; i++) out.push(reply(m, 1, i, 0x2));
      out.push(nlDone(m.seq));
      return out;
    });
    t.afterDeliver = (d) => {
      if (d.readUInt16LE(4) === 3 /* NLMSG_DONE */) running = undefined;
    };
    return t;
  }

  it('run one at a time on a socket: concurrent dumps all succeed, none is refused with EBUSY', async () => {
    const s = new GenlSocket(dumpingPeer(3), FAMILY, 1);
    const results = await Promise.all([
      s.request(req(4), { dump: true }),
      s.request(req(4), { dump: true }),
      s.request(req(4), { dump: true }),
    ]);
    for (const r of results) expect(r.map((x) => x.attrs.readUInt32LE(4))).toEqual([1, 2, 3]);
  });

  it('a dump that fails does not block the next one', async () => {
    let n = 0;
    const t = new ScriptedTransport((msgs) => [++n === 1 ? nlDone(msgs[0]!.seq, 22) : nlDone(msgs[0]!.seq)]);
    const s = new GenlSocket(t, FAMILY, 1);
    const [a, b] = await Promise.allSettled([s.request(req(4), { dump: true }), s.request(req(4), { dump: true })]);
    expect(a).toEqual({ status: 'rejected', reason: { errno: 22 } });
    expect(b).toEqual({ status: 'fulfilled', value: [] });
  });
});
