import { FakeConntrack } from '../../../testkit/kernel/fake-conntrack';
import { NetlinkError } from '../../../lib/errors';

// Addresses: RFC 5737, RFC 3849.
const udp = (srcPort: number, family: 'ipv4' | 'ipv6' = 'ipv4') =>
  family === 'ipv4'
    ? {
        family,
        protocol: 17,
        orig: { src: '192.0.2.1', dst: '198.51.100.10', srcPort, dstPort: 53 },
        reply: { src: '192.0.2.50', dst: '192.0.2.1', srcPort: 53, dstPort: srcPort },
      }
    : {
        family,
        protocol: 17,
        orig: { src: '2001:db8::1', dst: '2001:db8::a', srcPort, dstPort: 53 },
        reply: { src: '2001:db8::32', dst: '2001:db8::1', srcPort: 53, dstPort: srcPort },
      };

describe('FakeConntrack', () => {
  it('lists by family and protocol, one dump per call', async () => {
    const ct = new FakeConntrack();
    const a = ct.add(udp(1000));
    ct.add({ ...udp(1001), protocol: 6 });
    ct.add(udp(1000, 'ipv6'));
    expect(await ct.listFlows('ipv4', 17)).toEqual([a]);
    expect((await ct.listFlows('ipv4')).length).toBe(2);
    expect((await ct.listFlows('ipv6', 17)).length).toBe(1);
    expect(ct.dumps).toBe(3);
  });

  it('a second entry with the same original tuple and zone is EEXIST; another zone is another entry', () => {
    const ct = new FakeConntrack();
    ct.add(udp(1000));
    expect(() => ct.add(udp(1000))).toThrow(NetlinkError);
    expect(() => ct.add({ ...udp(1000), zone: 2 })).not.toThrow();
  });

  it('deletes by original tuple; a tuple not there, or the same tuple with another id, is gone (ENOENT)', async () => {
    const ct = new FakeConntrack();
    const a = ct.add(udp(1000));
    const b = ct.add(udp(1001));
    const r = await ct.deleteFlows([
      a,
      { ...b, id: 999 },
      { ...a, zone: 0, id: undefined, orig: { ...a.orig, srcPort: 5 } },
    ]);
    expect(r).toEqual({ deleted: 1, gone: 2, failures: [] });
    expect(ct.all()).toEqual([b]);
    expect(ct.deleteRequests).toBe(3);
    // deleting the same flow again: gone
    expect(await ct.deleteFlows([a])).toEqual({ deleted: 0, gone: 1, failures: [] });
  });

  it('refuses an address of the other family, as the encoder does', async () => {
    const ct = new FakeConntrack();
    expect(() => ct.add({ ...udp(1000), family: 'ipv6' })).toThrow(TypeError);
    await expect(ct.deleteFlows([{ ...udp(1000), family: 'ipv6', zone: 0 }])).rejects.toThrow(/not an IPv6 address/);
  });
});
