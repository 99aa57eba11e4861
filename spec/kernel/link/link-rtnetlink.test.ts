import { constants } from 'node:os';
import { NetlinkSocket } from 'netlink';
import { PackageRtnlTransport, LinkRtnetlink } from '../../../lib/kernel/link/link-rtnetlink';
import { encodeNewDummy } from '../../../lib/netlink/rtnl-codec';
import { NetlinkError } from '../../../lib/errors';

const E = constants.errno;

/** An NLMSG_ERROR payload: int32 -errno + the echoed request header (capped). */
function nlmsgerr(errno: number): Buffer {
  const b = Buffer.alloc(4 + 16);
  b.writeInt32LE(-errno, 0);
  b.writeUInt32LE(16, 4);
  return b;
}

/** Stands in for the package's NetlinkSocket: records requests, answers from a script. */
function scripted(answers: { type: number; flags?: number; data: Buffer }[][]) {
  const sent: { type: number; flags: number | undefined }[] = [];
  const sock = {
    request: async (type: number, _data: unknown, opts: { flags?: number; checkError?: boolean }) => {
      expect(opts.checkError).toBe(false);
      sent.push({ type, flags: opts.flags });
      const next = answers.shift();
      if (!next) throw new Error('unexpected request');
      return [next.map((m) => ({ type: m.type, flags: m.flags ?? 0x100, seq: 1, port: 0, data: m.data })), {}];
    },
    close: () => undefined,
  };
  return { sock: sock as unknown as NetlinkSocket, sent, left: () => answers.length };
}

describe('PackageRtnlTransport', () => {
  it('turns NLMSG_ERROR into a NetlinkError with the positive errno and the object', async () => {
    const s = scripted([[{ type: 2, data: nlmsgerr(E.EEXIST) }]]);
    const err = await new PackageRtnlTransport(s.sock).request(encodeNewDummy('kube-ipvs0')).catch((e) => e);
    expect(err).toBeInstanceOf(NetlinkError);
    expect(err).toEqual(
      expect.objectContaining({ errno: E.EEXIST, operation: 'add dummy link', object: 'kube-ipvs0' }),
    );
    expect(s.sent).toEqual([{ type: 16, flags: 0x600 }]);
  });

  it('a plain ACK (errno 0) is an empty reply', async () => {
    const s = scripted([[{ type: 2, data: nlmsgerr(0) }]]);
    await expect(new PackageRtnlTransport(s.sock).request(encodeNewDummy('x'))).resolves.toEqual([]);
  });

  it('LinkRtnetlink.listAddresses decodes a dump, keeps its family, sorts', async () => {
    const le32 = (n: number) => Buffer.from([n, 0, 0, 0]).toString('hex');
    // struct ifaddrmsg {AF_INET, 32, 0, 0, idx} + IFA_LOCAL 10.96.0.<last>
    const v4 = (idx: number, last: number) =>
      Buffer.from(`02200000${le32(idx)}080002000a6000${last.toString(16).padStart(2, '0')}`, 'hex');
    const s = scripted([
      [
        { type: 20, data: v4(3, 2) },
        { type: 20, data: v4(3, 1) },
        { type: 20, data: v4(2, 9) },
      ],
    ]);
    const l = new LinkRtnetlink(new PackageRtnlTransport(s.sock));
    expect((await l.listAddresses('ipv4')).map((a) => `${a.ifindex} ${a.address}/${a.prefixLen}`)).toEqual([
      '2 10.96.0.9/32',
      '3 10.96.0.1/32',
      '3 10.96.0.2/32',
    ]);
    expect(s.sent).toEqual([{ type: 22, flags: 0x300 }]);
    expect(s.left()).toBe(0);
  });

  it("LinkRtnetlink.listAddresses hands out the last dump's address for unchanged bytes, decodes a changed one", async () => {
    const v4 = (last: number) =>
      Buffer.from(`022000000300000008000200 0a6000${last.toString(16).padStart(2, '0')}`.replace(/ /g, ''), 'hex');
    const s = scripted([
      [
        { type: 20, data: v4(1) },
        { type: 20, data: v4(2) },
      ],
      [
        { type: 20, data: v4(1) },
        { type: 20, data: v4(3) },
      ],
    ]);
    const l = new LinkRtnetlink(new PackageRtnlTransport(s.sock));
    const [a1, a2] = await l.listAddresses('ipv4');
    const [b1, b3] = await l.listAddresses('ipv4');
    expect(b1).toBe(a1);
    expect(b3).not.toBe(a2);
    expect(b3!.address).toBe('10.96.0.3');
  });
});
