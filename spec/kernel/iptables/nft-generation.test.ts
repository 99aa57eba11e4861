// NftGenerationNetlink over a scripted kernel: the request it sends and how it reads the
// answer. Message types are literals: 0x0a10 NFT_MSG_GETGEN, 0x0a0f NFT_MSG_NEWGEN.
import { LazyNftGeneration, NftGenerationNetlink } from '../../../lib/kernel/iptables/nft-generation';
import { DecodeError, NetlinkError, SocketError } from '../../../lib/errors';
import { ScriptedTransport } from '../../../testkit/scripted-transport';
import { be32, cstr, genlMsg, nla, nlError } from '../../../testkit/nl-builder';

const REQUEST = 0x1;
const ACK = 0x4;

const newGen = (seq: number, id: number) =>
  genlMsg(
    { type: 0x0a0f, flags: 0, seq, cmd: 0, version: 0 },
    nla(1, be32(id)),
    nla(2, be32(99)),
    nla(3, cstr('node')),
  );

describe('NftGenerationNetlink.read', () => {
  it('one GETGEN (AF_UNSPEC, version 0, an ack asked); the answer is NFTA_GEN_ID', async () => {
    let id = 41;
    const t = new ScriptedTransport((msgs) => [Buffer.concat([newGen(msgs[0]!.seq, ++id), nlError(0, msgs[0]!)])]);
    const g = new NftGenerationNetlink(t);
    expect(await g.read()).toBe(42);
    expect(await g.read()).toBe(43);
    expect(t.sent).toHaveLength(2);
    const m = t.sent[0]![0]!;
    expect([m.type, m.flags, m.cmd, m.attrs.length]).toEqual([0x0a10, REQUEST | ACK, 0, 0]);
    g.close();
    expect(t.closed).toBe(true);
  });

  it('a refusal is a NetlinkError with its errno; no reply, or a reply without the id, is an error too', async () => {
    const refused = new NftGenerationNetlink(new ScriptedTransport((msgs) => [nlError(1, msgs[0]!)]));
    const err = await refused.read().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as NetlinkError).errno).toBe(1);
    expect((err as NetlinkError).message).toBe('read nf_tables generation: EPERM (EPERM)');

    const empty = new NftGenerationNetlink(new ScriptedTransport((msgs) => [nlError(0, msgs[0]!)]));
    await expect(empty.read()).rejects.toThrow('read nf_tables generation: expected one NFT_MSG_NEWGEN reply, got 0');

    const noId = new NftGenerationNetlink(
      new ScriptedTransport((msgs) => [
        Buffer.concat([
          genlMsg({ type: 0x0a0f, flags: 0, seq: msgs[0]!.seq, cmd: 0, version: 0 }, nla(2, be32(1))),
          nlError(0, msgs[0]!),
        ]),
      ]),
    );
    await expect(noId.read()).rejects.toThrow(DecodeError);
  });
});

describe('LazyNftGeneration', () => {
  it('opens its reader on the first read only, again after an open that failed; closed, it refuses', async () => {
    let opens = 0;
    let fail = true;
    const g = new LazyNftGeneration(() => {
      opens++;
      if (fail) throw new SocketError('NETLINK_NETFILTER socket: EPERM', 1);
      return { read: async () => 7, close: () => undefined };
    });
    expect(opens).toBe(0);
    await expect(g.read()).rejects.toThrow('NETLINK_NETFILTER socket: EPERM');
    fail = false;
    expect(await g.read()).toBe(7);
    expect(await g.read()).toBe(7);
    expect(opens).toBe(2);
    g.close();
    await expect(g.read()).rejects.toThrow(SocketError);
    expect(opens).toBe(2);
  });
});
