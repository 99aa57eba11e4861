// IpvsNetlink above the socket, over a scripted kernel: which op and object each failure names.
// Addresses: RFC 5737.
import { IpvsNetlink, IpvsUnavailableError, resolveIpvsFamily } from '../../../lib/kernel/ipvs/ipvs-netlink';
import { IpvsOp } from '../../../lib/kernel/ipvs/ipvs';
import { NetlinkError, NetlinkTimeoutError, SocketError } from '../../../lib/errors';
import { VirtualServerId } from '../../../lib/model/ipvs';
import { ScriptedTransport, SeenMessage } from '../../../testkit/scripted-transport';
import { cstr, genlMsg, nla, nlDone, nlError, u16 } from '../../../testkit/nl-builder';
import { encodeIpvsRequest } from '../../../lib/netlink/ipvs-codec';

const FAMILY = 0x23;
const ACK = 0x4;
const E = { ENOENT: 2, ESRCH: 3, EEXIST: 17, EINVAL: 22 };
const tcp = (address: string, port: number): VirtualServerId => ({ af: 2, protocol: 6, address, port, fwmark: 0 });
const newService = (vs: VirtualServerId, scheduler = 'rr'): IpvsOp => ({
  kind: 'newService',
  vs: { ...vs, scheduler },
});
const newDest = (vs: VirtualServerId, address: string, port: number): IpvsOp => ({
  kind: 'newDest',
  vs,
  rs: { af: 2, address, port, weight: 1, fwdMethod: 0 },
});

/** Answers like the kernel: refusals always, acks when asked; `errnoOf` picks by position in the whole run. */
function kernelLike(errnoOf: (n: number) => number) {
  let n = 0;
  return new ScriptedTransport((msgs: SeenMessage[]) => {
    const out: Buffer[] = [];
    for (const m of msgs) {
      const errno = errnoOf(n++);
      if (errno || m.flags & ACK) out.push(nlError(errno, m));
    }
    return out.length ? [Buffer.concat(out)] : [];
  });
}

describe('IpvsNetlink.run attributes each failure to its op', () => {
  const a = tcp('192.0.2.10', 80);
  const b = tcp('192.0.2.11', 443);
  const ops: IpvsOp[] = [
    newService(a),
    newDest(a, '198.51.100.1', 8080),
    newService(b, 'nosuch'),
    newDest(b, '198.51.100.2', 8443),
    { kind: 'delDest', vs: a, rs: { af: 2, address: '198.51.100.9', port: 8080 } },
    newDest(a, '198.51.100.3', 8080),
  ];

  it('names the op, the object, the errno and the index of every refusal; the others succeed', async () => {
    const fail = new Map([
      [2, E.ENOENT],
      [3, E.ESRCH],
      [4, E.ENOENT],
    ]);
    const ipvs = new IpvsNetlink(() => kernelLike((n) => fail.get(n) ?? 0), FAMILY, { batchMessages: 4 });
    const results = await ipvs.run(ops);
    expect(results.map((r) => r.ok)).toEqual([true, true, false, false, false, true]);
    const errors = results.flatMap((r) => (r.ok ? [] : [r.error]));
    for (const e of errors) expect(e).toBeInstanceOf(NetlinkError);
    expect(errors.map((e) => [e.opIndex, e.operation, e.object, e.errnoName])).toEqual([
      [2, 'add virtual server', 'TCP 192.0.2.11:443', 'ENOENT'],
      [3, 'add real server', '198.51.100.2:8443 of TCP 192.0.2.11:443', 'ESRCH'],
      [4, 'delete real server', '198.51.100.9:8080 of TCP 192.0.2.10:80', 'ENOENT'],
    ]);
    expect(errors[0]!.message).toBe("add virtual server TCP 192.0.2.11:443: scheduler 'nosuch' not available (ENOENT)");
    ipvs.close();
  });

  it('a refusal of the first op names the first op only', async () => {
    const ipvs = new IpvsNetlink(() => kernelLike((n) => (n === 0 ? E.EEXIST : 0)), FAMILY);
    const results = await ipvs.run(ops.slice(0, 2));
    expect(results[1]).toEqual({ ok: true });
    expect(results[0]).toMatchObject({
      ok: false,
      error: { opIndex: 0, operation: 'add virtual server', object: 'TCP 192.0.2.10:80', errno: E.EEXIST },
    });
    ipvs.close();
  });
});

describe('IpvsNetlink single requests', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('a request the kernel never answers fails with NetlinkTimeoutError naming the op and object', async () => {
    const ipvs = new IpvsNetlink(() => new ScriptedTransport(() => []), FAMILY, { requestTimeoutMs: 10_000 });
    const got = ipvs.getService(tcp('192.0.2.10', 80)).then(
      () => undefined,
      (e: unknown) => e,
    );
    await new Promise((r) => setImmediate(r));
    jest.advanceTimersByTime(10_000);
    const err = await got;
    expect(err).toBeInstanceOf(NetlinkTimeoutError);
    expect((err as Error).message).toBe('get virtual server TCP 192.0.2.10:80: no answer within 10000 ms');
    ipvs.close();
  });

  it('a batch the kernel stops answering fails with NetlinkTimeoutError naming the batch', async () => {
    const ipvs = new IpvsNetlink(() => new ScriptedTransport(() => []), FAMILY, { requestTimeoutMs: 10_000 });
    const got = ipvs.run([newService(tcp('192.0.2.10', 80)), newService(tcp('192.0.2.11', 80))]).then(
      () => undefined,
      (e: unknown) => e,
    );
    await new Promise((r) => setImmediate(r));
    jest.advanceTimersByTime(10_000);
    const err = await got;
    expect(err).toBeInstanceOf(NetlinkTimeoutError);
    expect((err as Error).message).toBe(
      'run 2 IPVS ops (first: add virtual server TCP 192.0.2.10:80): no answer within 10000 ms',
    );
    ipvs.close();
  });

  it('a socket failure names the op and keeps the errno', async () => {
    let t!: ScriptedTransport;
    const ipvs = new IpvsNetlink(
      () =>
        (t = new ScriptedTransport(
          () => (setImmediate(() => t.raise(new SocketError('netlink receive: ENOBUFS', 105))), []),
        )),
      FAMILY,
    );
    const err = await ipvs.apply({ kind: 'delService', vs: tcp('192.0.2.10', 80) }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SocketError);
    expect(err).toMatchObject({
      errno: 105,
      message: 'delete virtual server TCP 192.0.2.10:80: netlink receive: ENOBUFS',
    });
    ipvs.close();
  });
});

describe('resolveIpvsFamily (nlctrl CTRL_CMD_GETFAMILY)', () => {
  const CTRL = 0x10;
  const familyReply = (m: SeenMessage, id: number) =>
    genlMsg(
      { type: CTRL, flags: 0, seq: m.seq, cmd: 1 /* CTRL_CMD_NEWFAMILY */ },
      nla(2, cstr('IPVS')),
      nla(1, u16(id)),
    );

  it('asks nlctrl for "IPVS" and returns the family id', async () => {
    const t = new ScriptedTransport((msgs) => msgs.flatMap((m) => [familyReply(m, 0x2a), nlError(0, m)]));
    await expect(resolveIpvsFamily(t)).resolves.toBe(0x2a);
    const m = t.sent[0]![0]!;
    expect([m.type, m.cmd]).toEqual([CTRL, 3 /* CTRL_CMD_GETFAMILY */]);
    expect(m.attrs).toEqual(nla(2, cstr('IPVS')));
    expect(t.closed).toBe(true);
  });

  it('ENOENT (no such family: ip_vs not loaded) is IpvsUnavailableError', async () => {
    const t = new ScriptedTransport((msgs) => [nlError(E.ENOENT, msgs[0]!)]);
    await expect(resolveIpvsFamily(t)).rejects.toBeInstanceOf(IpvsUnavailableError);
  });

  it('any other refusal is a NetlinkError with its errno, never "not loaded"', async () => {
    const t = new ScriptedTransport((msgs) => [nlError(1 /* EPERM */, msgs[0]!)]);
    const err = await resolveIpvsFamily(t).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).not.toBeInstanceOf(IpvsUnavailableError);
    expect(err).toBeInstanceOf(NetlinkError);
    expect(err).toMatchObject({ errno: 1, operation: 'resolve generic netlink family', object: 'IPVS' });
  });
});

describe('IpvsNetlink.listServices', () => {
  /** answers each service dump with one IPVS_CMD_NEW_SERVICE per virtual server of `table()` */
  function dumping(table: () => VirtualServerId[]) {
    return new ScriptedTransport((msgs: SeenMessage[]) => {
      const m = msgs[0]!;
      const parts = table().map((vs) => {
        const svc = encodeIpvsRequest({
          kind: 'newService',
          vs: { ...vs, scheduler: 'rr', flags: 0, timeout: 0, netmask: 0xffffffff, peName: '' },
        });
        return genlMsg({ type: FAMILY, flags: 0x2, seq: m.seq, cmd: 1 }, svc.attrs);
      });
      return [Buffer.concat([...parts, nlDone(m.seq)])];
    });
  }

  it("hands out the last dump's virtual server for unchanged bytes and decodes the changed one", async () => {
    let table = [tcp('192.0.2.10', 80), tcp('192.0.2.11', 443)];
    const ipvs = new IpvsNetlink(() => dumping(() => table), FAMILY);
    const first = await ipvs.listServices();
    expect(first.map((vs) => `${vs.address}:${vs.port} ${vs.scheduler}`)).toEqual([
      '192.0.2.10:80 rr',
      '192.0.2.11:443 rr',
    ]);
    table = [tcp('192.0.2.10', 80), tcp('192.0.2.12', 443)];
    const second = await ipvs.listServices();
    expect(second[0]).toBe(first[0]);
    expect(second[1]).not.toBe(first[1]);
    expect(second[1]!.address).toBe('192.0.2.12');
    ipvs.close();
  });
});
