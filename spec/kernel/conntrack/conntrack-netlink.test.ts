// ConntrackNetlink over a scripted kernel: what it sends, how it reads a dump, how it counts
// a batched delete's acks. Message types are literals: 0x101 CT_GET, 0x102 CT_DELETE, 0x100 CT_NEW.
// Addresses: RFC 5737.
import { ConntrackNetlink } from '../../../lib/kernel/conntrack/conntrack-netlink';
import { ConntrackUnavailableError } from '../../../lib/kernel/conntrack/conntrack';
import { NetlinkError } from '../../../lib/errors';
import { ConntrackFlow } from '../../../lib/model/conntrack';
import { ScriptedTransport, SeenMessage } from '../../../testkit/scripted-transport';
import { be16, be32, genlMsg, ipv4, nla, nlDone, nlError, plainNest, u8 } from '../../../testkit/nl-builder';

const REQUEST = 0x1;
const ACK = 0x4;
const DUMP = 0x300;
const E = { ENOENT: 2, EPERM: 1, EOPNOTSUPP: 95 };

const tuple = (src: string, dst: string, proto: number, sport: number, dport: number) =>
  Buffer.concat([
    plainNest(1, nla(1, ipv4(src)), nla(2, ipv4(dst))),
    plainNest(2, nla(1, u8(proto)), nla(2, be16(sport)), nla(3, be16(dport))),
  ]);
const entry = (seq: number, proto: number, id: number) =>
  genlMsg(
    { type: 0x100, flags: 0x2, seq, cmd: 2, version: 0 },
    plainNest(1, tuple('192.0.2.1', '198.51.100.10', proto, 40000, 53)),
    plainNest(2, tuple('192.0.2.50', '192.0.2.1', proto, 53, 40000)),
    nla(12, be32(id)),
  );

const flow = (srcPort: number): ConntrackFlow => ({
  family: 'ipv4',
  protocol: 17,
  orig: { src: '192.0.2.1', dst: '198.51.100.10', srcPort, dstPort: 53 },
  reply: { src: '192.0.2.50', dst: '192.0.2.1', srcPort: 53, dstPort: srcPort },
  zone: 0,
});

describe('ConntrackNetlink.listFlows', () => {
  it('one CT_GET dump of the family; keeps only the asked protocol (an old kernel ignores the filter)', async () => {
    const t = new ScriptedTransport((msgs) => {
      const m = msgs[0]!;
      return [Buffer.concat([entry(m.seq, 17, 7), entry(m.seq, 6, 8)]), nlDone(m.seq)];
    });
    const ct = new ConntrackNetlink(t);
    const flows = await ct.listFlows('ipv4', 17);
    expect(t.sent).toHaveLength(1);
    expect(t.sent[0]).toHaveLength(1);
    const m = t.sent[0]![0]!;
    expect([m.type, m.flags, m.cmd]).toEqual([0x101, REQUEST | DUMP, 2]);
    expect(flows).toEqual([{ ...flow(40000), id: 7 }]);
    ct.close();
  });

  it('EOPNOTSUPP is ConntrackUnavailableError; EPERM a NetlinkError naming the dump', async () => {
    const refuse = (errno: number) => new ConntrackNetlink(new ScriptedTransport((msgs) => [nlError(errno, msgs[0]!)]));
    await expect(refuse(E.EOPNOTSUPP).listFlows('ipv6', 17)).rejects.toThrow(ConntrackUnavailableError);
    const err = await refuse(E.EPERM)
      .listFlows('ipv4', 132)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as NetlinkError).message).toBe('dump conntrack ipv4 SCTP: EPERM (EPERM)');
  });
});

describe('ConntrackNetlink.deleteFlows', () => {
  it('pipelines one CT_DELETE per flow, ack asked on the last of each datagram; ENOENT is gone, others failures', async () => {
    const errnoOf = new Map([
      [1, E.ENOENT],
      [3, E.EPERM],
    ]);
    let n = 0;
    const t = new ScriptedTransport((msgs: SeenMessage[]) => {
      const out: Buffer[] = [];
      for (const m of msgs) {
        const errno = errnoOf.get(n++) ?? 0;
        if (errno || m.flags & ACK) out.push(nlError(errno, m));
      }
      return out.length ? [Buffer.concat(out)] : [];
    });
    const ct = new ConntrackNetlink(t, { batchMessages: 3 });
    const flows = [flow(1000), flow(1001), flow(1002), flow(1003), flow(1004)];
    const r = await ct.deleteFlows(flows);
    expect(t.sent.map((d) => d.length)).toEqual([3, 2]);
    expect(t.sent.flat().map((m) => [m.type, m.flags & ACK])).toEqual([
      [0x102, 0],
      [0x102, 0],
      [0x102, ACK],
      [0x102, 0],
      [0x102, ACK],
    ]);
    expect(r.deleted).toBe(3);
    expect(r.gone).toBe(1);
    expect(r.failures.map((f) => [f.flow.orig.srcPort, f.error.errno])).toEqual([[1003, E.EPERM]]);
    expect(r.failures[0]!.error.message).toMatch(
      /^delete conntrack entry UDP 192\.0\.2\.1:1003 -> 198\.51\.100\.10:53 .*\(EPERM\)$/,
    );
  });

  it('sends nothing for no flows', async () => {
    const t = new ScriptedTransport(() => {
      throw new Error('nothing should be sent');
    });
    expect(await new ConntrackNetlink(t).deleteFlows([])).toEqual({ deleted: 0, gone: 0, failures: [] });
    expect(t.sent).toHaveLength(0);
  });
});
