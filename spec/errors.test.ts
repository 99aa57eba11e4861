// withOperation: how every netlink surface names what it was doing when its socket failed.
import { asNeedsRoot, NetlinkError, NetlinkTimeoutError, SocketError, withOperation } from '../lib/errors';

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

describe('asNeedsRoot: the errno, never the text (issue 41 item 9)', () => {
  it('EPERM from netlink, EACCES from a Node system error, through a cause chain', () => {
    const eperm = new NetlinkError(1, 'get IPVS info', '', 'operation not permitted');
    expect(asNeedsRoot(eperm, 'the IPVS table')?.message).toBe(
      'kube-ipvs needs root (CAP_NET_ADMIN) for the IPVS table: get IPVS info: operation not permitted (EPERM)',
    );
    const eacces = Object.assign(new Error('open /proc/sys/x'), { code: 'EACCES', errno: -13 });
    const wrapped = new Error('write failed', { cause: eacces });
    expect(asNeedsRoot(wrapped, 'x')?.errnoName).toBe('EACCES');
    // the words alone are nothing: no errno, no NeedsRootError
    expect(asNeedsRoot(new Error('Permission denied (you must be root)'), 'x')).toBeUndefined();
    expect(asNeedsRoot(new NetlinkError(2, 'x', '', 'no such file'), 'x')).toBeUndefined();
  });
});
