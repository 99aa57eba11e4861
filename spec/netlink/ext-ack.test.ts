// NETLINK_EXT_ACK through our addon, against the host's own kernel (nlctrl is in every
// kernel, so this needs no VM): the kernel's policy message reaches the failure only on a
// socket that has the option on.
import { RawNetlinkSocket } from 'netlink';
import { GenlSocket, NetlinkTransport, RawTransport, isGenlFailure } from '../../lib/netlink/socket';
import { enableExtendedAck, extendedAckEnabled } from '../../lib/netlink/ext-ack';
import { AttrWriter } from '../../lib/netlink/attr';
import { GENL_ID_CTRL, NETLINK_GENERIC, NETLINK_ROUTE } from '../../lib/uapi/netlink';
import { PackageRtnlTransport } from '../../lib/kernel/link/link-rtnetlink';
import { errnoName } from '../../lib/errors';

const CTRL_CMD_GETFAMILY = 3;
const CTRL_ATTR_FAMILY_ID = 1;

/** CTRL_CMD_GETFAMILY with CTRL_ATTR_FAMILY_ID (NLA_U16) one byte long: fails policy validation */
async function malformedGetFamily(transport: NetlinkTransport): Promise<unknown> {
  const sock = new GenlSocket(transport, GENL_ID_CTRL, 2, { requestTimeoutMs: 5000 });
  try {
    await sock.request({
      cmd: CTRL_CMD_GETFAMILY,
      attrs: new AttrWriter().bytes(CTRL_ATTR_FAMILY_ID, Buffer.from([7])).finish(),
    });
    return undefined;
  } catch (e) {
    return e;
  } finally {
    sock.close();
  }
}

/** the package's socket as is (no NETLINK_EXT_ACK): the control */
function plainTransport(): NetlinkTransport {
  const raw = new RawNetlinkSocket(NETLINK_GENERIC);
  return {
    send: (d) => new Promise<void>((resolve, reject) => raw.send(d, {}, (err) => (err ? reject(err) : resolve()))),
    onDatagram: (cb) => raw.on('message', (m) => cb(m)),
    onError: (cb) => raw.on('error', cb),
    close: () => raw.close(),
  };
}

describe('NETLINK_EXT_ACK', () => {
  it('is on for every RawTransport, and the kernel message reaches the failure', async () => {
    const t = new RawTransport();
    expect(t.extAckProblem).toBeUndefined();
    expect(extendedAckEnabled(t.raw, NETLINK_GENERIC)).toBe(true);
    const e = await malformedGetFamily(t);
    expect(isGenlFailure(e)).toBe(true);
    expect(e).toEqual({ errno: 34, extack: 'Attribute failed policy validation' });
  });

  it('without it the same request fails with the errno alone (the control)', async () => {
    const e = await malformedGetFamily(plainTransport());
    expect(e).toEqual({ errno: 34 });
  });

  it('is on for the rtnetlink transport of the link surface', () => {
    const t = new PackageRtnlTransport();
    try {
      expect(t.extAckProblem).toBeUndefined();
      expect(
        extendedAckEnabled((t as unknown as { sock: { socket: RawNetlinkSocket } }).sock.socket, NETLINK_ROUTE),
      ).toBe(true);
    } finally {
      t.close();
    }
  });

  it('finds the socket by protocol and port: the same port under another protocol is not it', () => {
    const raw = new RawNetlinkSocket(NETLINK_GENERIC);
    try {
      expect(extendedAckEnabled(raw, NETLINK_GENERIC)).toBe(false);
      const why = enableExtendedAck(raw, NETLINK_ROUTE);
      expect(why).toMatch(
        /^setsockopt NETLINK_EXT_ACK failed: ENOENT: no netlink socket of this process is bound to that protocol and port/,
      );
      expect(extendedAckEnabled(raw, NETLINK_GENERIC)).toBe(false);
      expect(enableExtendedAck(raw, NETLINK_GENERIC)).toBeUndefined();
      expect(extendedAckEnabled(raw, NETLINK_GENERIC)).toBe(true);
    } finally {
      raw.close();
    }
  });
});

describe('errnoName', () => {
  it('names 95 as the kernel does (EOPNOTSUPP, not glibc alias ENOTSUP); others as libuv', () => {
    expect([errnoName(95), errnoName(2), errnoName(-1)]).toEqual(['EOPNOTSUPP', 'ENOENT', 'errno -1']);
  });
});
