// The fake's objects have the kernel client's shape: the same own fields under spread and
// JSON, counters read through `stats`. (The VM test compares fake and kernel listings too.)
import { FakeIpvs } from '../../../testkit/kernel/fake-ipvs';
import { decodeDest, decodeService } from '../../../lib/netlink/ipvs-codec';
import { VirtualServerId, ZERO_STATS } from '../../../lib/model/ipvs';
import { be16, cstr, ipv4in16, nla, plainNest, u16, u32, u64 } from '../../../testkit/nl-builder';

const vs: VirtualServerId = { af: 2, protocol: 6, address: '192.0.2.10', port: 80, fwmark: 0 };
const stats64 = plainNest(12, ...Array.from({ length: 10 }, (_, i) => nla(i + 1, u64(0n))));
const json = (x: unknown) => JSON.stringify(x, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));

async function fakeEntry() {
  const fake = new FakeIpvs();
  await fake.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
  await fake.apply({
    kind: 'newDest',
    vs,
    rs: { af: 2, address: '198.51.100.1', port: 8080, weight: 1, fwdMethod: 0 },
  });
  const [entry] = await fake.listAll();
  return entry!;
}

describe('FakeIpvs objects', () => {
  it('spread and JSON like the kernel client decodes them', async () => {
    const entry = await fakeEntry();
    const kernelVs = decodeService(
      Buffer.concat([
        nla(1, u16(2)),
        nla(2, u16(6)),
        nla(3, ipv4in16('192.0.2.10')),
        nla(4, be16(80)),
        nla(6, cstr('rr')),
        nla(7, Buffer.concat([u32(0), u32(0xffffffff)])),
        nla(8, u32(0)),
        nla(9, Buffer.from([0xff, 0xff, 0xff, 0xff])),
        stats64,
      ]),
    );
    const kernelRs = decodeDest(
      Buffer.concat([
        nla(1, ipv4in16('198.51.100.1')),
        nla(2, be16(8080)),
        nla(3, u32(0)),
        nla(4, u32(1)),
        nla(11, u16(2)),
        stats64,
      ]),
      2,
    );
    expect({ ...entry.vs }).toEqual({ ...kernelVs });
    expect(Object.keys({ ...entry.vs })).toEqual(Object.keys({ ...kernelVs }));
    expect(json(entry.vs)).toBe(json(kernelVs));
    expect({ ...entry.dests[0]! }).toEqual({ ...kernelRs });
    expect(json(entry.dests[0])).toBe(json(kernelRs));
    // counters through the getter, on both
    expect(entry.vs.stats).toEqual(ZERO_STATS);
    expect(entry.dests[0]!.stats).toEqual(kernelRs.stats);
  });

  it('hands out copies: changing a listed object does not change the fake', async () => {
    const fake = new FakeIpvs();
    await fake.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
    const [listed] = await fake.listServices();
    (listed as { scheduler: string }).scheduler = 'wlc';
    expect((await fake.getService(vs)).scheduler).toBe('rr');
  });
});
