// withOperation: how every netlink surface names what it was doing when its socket failed.
import { NetlinkError, NetlinkTimeoutError, SocketError, withOperation } from '../lib/errors';

describe('withOperation', () => {
  it('prefixes socket failures and timeouts with the operation, keeping errno, timeout and cause', () => {
    const sock = new SocketError('recv: ENOBUFS', 105);
    const s = withOperation(sock, 'dump ipsets') as SocketError;
    expect(s).toBeInstanceOf(SocketError);
    expect([s.message, s.errno, s.cause]).toEqual(['dump ipsets: recv: ENOBUFS', 105, sock]);
    const t = withOperation(
      new NetlinkTimeoutError('no answer in 30000 ms', 30_000),
      'read nf_tables generation',
    ) as NetlinkTimeoutError;
    expect(t).toBeInstanceOf(NetlinkTimeoutError);
    expect([t.message, t.timeoutMs]).toEqual(['read nf_tables generation: no answer in 30000 ms', 30_000]);
  });

  it('passes anything else through as it is', () => {
    const refused = new NetlinkError(2, 'x', 'y', 'ENOENT');
    expect(withOperation(refused, 'op')).toBe(refused);
    const plain = new TypeError('bad');
    expect(withOperation(plain, 'op')).toBe(plain);
  });
});
