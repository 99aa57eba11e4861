// NftTablesNetlink over a scripted kernel that answers as Linux 6.1's nfnetlink does: the
// requests it sends and how it reads the answers. Literals: 0x0a01 NFT_MSG_GETTABLE, 0x0a00
// NFT_MSG_NEWTABLE, 0x0a02 NFT_MSG_DELTABLE, 0x10/0x11 NFNL_MSG_BATCH_BEGIN/END; NFPROTO_INET
// 1, _IPV4 2, _IPV6 10; errno 1 EPERM, 2 ENOENT, 22 EINVAL, 93 EPROTONOSUPPORT.
import { LazyNftTables, NftTablesNetlink } from '../../../lib/kernel/nftables/nftables-netlink';
import { NetlinkError, SocketError } from '../../../lib/errors';
import { ScriptedTransport, SeenMessage } from '../../../testkit/scripted-transport';
import { Bytes, cstr, genlMsg, nla, nlDone, nlError } from '../../../testkit/nl-builder';

const REQUEST = 0x1;
const ACK = 0x4;
const DUMP = 0x300;

const newTable = (seq: number, family: number, name: string) =>
  genlMsg(
    { type: 0x0a00, flags: 0x2, seq, cmd: family, version: 0 },
    nla(1, cstr(name)),
    nla(3, new Bytes().u32be(0).build()),
  );

/** the dump's answer: one NEWTABLE per table, NLMSG_DONE */
const dumping = (tables: [number, string][]) => (msgs: SeenMessage[]) => {
  const m = msgs[0]!;
  return [Buffer.concat([...tables.map(([f, n]) => newTable(m.seq, f, n)), nlDone(m.seq)])];
};

/** nfnetlink_rcv_batch: BEGIN/END never answered, members answered when failed or asked, after the batch */
const batching =
  (errnoOf: (m: SeenMessage) => number, refuse = 0) =>
  (msgs: SeenMessage[]) => {
    if (refuse) return [nlError(refuse, msgs[0]!)];
    const out = msgs
      .filter((m) => m.type === 0x0a02)
      .flatMap((m) => {
        const errno = errnoOf(m);
        return errno || m.flags & ACK ? [nlError(errno, m)] : [];
      });
    return out.length > 0 ? [Buffer.concat(out)] : [];
  };

const errorOf = async (p: Promise<unknown>) =>
  (await p.then(
    () => undefined,
    (e: unknown) => e,
  )) as NetlinkError;

describe('NftTablesNetlink.listTables', () => {
  it('one GETTABLE dump of every family (nfgen_family 0, version 0); each reply is its family and name', async () => {
    const t = new ScriptedTransport(
      dumping([
        [2, 'kube-proxy'],
        [1, 'kube-proxy'],
        [10, 'kube-proxy'],
        [2, 'filter'],
      ]),
    );
    const nft = new NftTablesNetlink(t);
    expect(await nft.listTables()).toEqual([
      { family: 2, name: 'kube-proxy' },
      { family: 1, name: 'kube-proxy' },
      { family: 10, name: 'kube-proxy' },
      { family: 2, name: 'filter' },
    ]);
    const m = t.sent[0]![0]!;
    expect([m.type, m.flags, m.cmd, m.attrs.length]).toEqual([0x0a01, REQUEST | DUMP, 0, 0]);
    nft.close();
    expect(t.closed).toBe(true);
  });

  it('no nf_tables subsystem (EINVAL from nfnetlink) is no table; EPERM is a NetlinkError', async () => {
    expect(await new NftTablesNetlink(new ScriptedTransport((msgs) => [nlError(22, msgs[0]!)])).listTables()).toEqual(
      [],
    );
    const e = await errorOf(new NftTablesNetlink(new ScriptedTransport((msgs) => [nlError(1, msgs[0]!)])).listTables());
    expect(e).toBeInstanceOf(NetlinkError);
    expect([e.errno, e.message]).toEqual([1, 'dump nftables tables: EPERM (EPERM)']);
  });
});

describe('NftTablesNetlink.deleteTables', () => {
  it('one datagram: BATCH_BEGIN (res_id 10 big-endian), a DELTABLE with NLM_F_ACK per table, BATCH_END; done at the last ack', async () => {
    const t = new ScriptedTransport(batching(() => 0));
    const nft = new NftTablesNetlink(t, { requestTimeoutMs: 60_000 });
    await nft.deleteTables([
      { family: 2, name: 'kube-proxy' },
      { family: 10, name: 'kube-proxy' },
    ]);
    expect(t.sent).toHaveLength(1);
    const [begin, ip, ip6, end] = t.sent[0]!;
    expect(t.sent[0]!.map((m) => [m.type, m.flags])).toEqual([
      [0x10, REQUEST],
      [0x0a02, REQUEST | ACK],
      [0x0a02, REQUEST | ACK],
      [0x11, REQUEST],
    ]);
    // SeenMessage reads nfgenmsg as a genl header: cmd is nfgen_family, attrs start after res_id
    for (const b of [begin!, end!]) expect([b.cmd, b.attrs.length]).toEqual([0, 0]);
    expect([ip!.cmd, ip6!.cmd]).toEqual([2, 10]);
    expect(ip!.attrs).toEqual(nla(1, cstr('kube-proxy')));
    expect(ip6!.attrs).toEqual(nla(1, cstr('kube-proxy')));
    expect(new Set(t.sent[0]!.map((m) => m.seq)).size).toBe(4);
    expect(nft['sock'].pendingCount).toBe(0);
  });

  it('the res_id bytes are 00 0a (network order), as nfnetlink_rcv reads them', async () => {
    const datagrams: Buffer[] = [];
    const t = new ScriptedTransport(batching(() => 0));
    const send = t.send.bind(t);
    t.send = (d: Buffer) => (datagrams.push(Buffer.from(d)), send(d));
    await new NftTablesNetlink(t).deleteTables([{ family: 10, name: 'x' }]);
    expect(datagrams[0]!.subarray(16, 20)).toEqual(Buffer.from([0, 0, 0, 10]));
  });

  it('a table not there: ENOENT naming it (the transaction was aborted whole)', async () => {
    const t = new ScriptedTransport(batching((m) => (m.cmd === 10 ? 2 : 0)));
    const e = await errorOf(
      new NftTablesNetlink(t).deleteTables([
        { family: 2, name: 'kube-proxy' },
        { family: 10, name: 'kube-proxy' },
      ]),
    );
    expect(e).toBeInstanceOf(NetlinkError);
    expect([e.errno, e.message]).toEqual([2, 'delete nftables table ip6 kube-proxy: ENOENT (ENOENT)']);
  });

  it('refused whole at BATCH_BEGIN (EPERM): the error names every table, without waiting for a timeout', async () => {
    const t = new ScriptedTransport(batching(() => 0, 1));
    const e = await errorOf(
      new NftTablesNetlink(t, { requestTimeoutMs: 60_000 }).deleteTables([
        { family: 2, name: 'a' },
        { family: 1, name: 'b' },
      ]),
    );
    expect([e.errno, e.message]).toEqual([1, 'delete nftables table ip a, table inet b: EPERM (EPERM)']);
  });

  it('no table: nothing sent', async () => {
    const t = new ScriptedTransport(() => {
      throw new Error('nothing should be sent');
    });
    await new NftTablesNetlink(t).deleteTables([]);
    expect(t.sent).toEqual([]);
  });
});

describe('LazyNftTables', () => {
  it('opens on first use; no NETLINK_NETFILTER (EPROTONOSUPPORT) lists no table; another open failure throws; closed, it refuses', async () => {
    let opens = 0;
    let errno: number | undefined = 93;
    const inner = new NftTablesNetlink(new ScriptedTransport(dumping([[2, 'kube-proxy']])));
    const lazy = new LazyNftTables(() => {
      opens++;
      if (errno !== undefined) throw new SocketError('NETLINK_NETFILTER socket for nftables tables: no', errno);
      return inner;
    });
    expect(opens).toBe(0);
    expect(await lazy.listTables()).toEqual([]);
    errno = 1;
    await expect(lazy.listTables()).rejects.toThrow(SocketError);
    errno = undefined;
    expect(await lazy.listTables()).toEqual([{ family: 2, name: 'kube-proxy' }]);
    await lazy.deleteTables([]);
    expect(opens).toBe(3);
    lazy.close();
    await expect(lazy.listTables()).rejects.toThrow('nftables tables: closed');
  });
});
