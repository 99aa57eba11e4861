import { constants } from 'node:os';
import { FakeLink } from '../../../testkit/kernel/fake-link';
import {
  bindAddresses,
  deleteDummyDevice,
  ensureDummyDevice,
  listBoundAddresses,
  listLocalAddresses,
  unbindAddresses,
} from '../../../lib/kernel/link/dummy-device';
import { KUBE_IPVS0, LinkKindError } from '../../../lib/kernel/link/link';
import { NetlinkError } from '../../../lib/errors';

const E = constants.errno;
const errno = (n: number) => expect.objectContaining({ constructor: NetlinkError, errno: n });

describe('FakeLink (strict fake)', () => {
  it.each<{ name: string; run: (l: FakeLink) => Promise<unknown>; errno: number }>([
    {
      name: 'add an existing link: EEXIST',
      run: async (l) => (await l.addDummy('d0'), l.addDummy('d0')),
      errno: E.EEXIST,
    },
    { name: 'a 16-char name: ERANGE', run: (l) => l.addDummy('a'.repeat(16)), errno: E.ERANGE },
    { name: 'a name with a slash: EINVAL', run: (l) => l.addDummy('a/b'), errno: E.EINVAL },
    { name: 'get a missing link: ENODEV', run: (l) => l.getLink('nope'), errno: E.ENODEV },
    { name: 'delete a missing link: ENODEV', run: (l) => l.deleteLink(99), errno: E.ENODEV },
    { name: 'delete lo: EOPNOTSUPP', run: (l) => l.deleteLink(1), errno: E.EOPNOTSUPP },
    { name: 'address on a missing link: ENODEV', run: (l) => l.addAddress(99, '10.0.0.1'), errno: E.ENODEV },
    {
      name: 'an address twice: EEXIST',
      run: async (l) => (await l.addAddress(1, '10.0.0.1'), l.addAddress(1, '10.0.0.1')),
      errno: E.EEXIST,
    },
    {
      name: 'delete an absent address: EADDRNOTAVAIL',
      run: (l) => l.deleteAddress(1, '10.9.9.9'),
      errno: E.EADDRNOTAVAIL,
    },
    {
      name: 'delete 127.0.0.1/32 when it is /8: EADDRNOTAVAIL',
      run: (l) => l.deleteAddress(1, '127.0.0.1'),
      errno: E.EADDRNOTAVAIL,
    },
  ])('$name', async ({ run, errno: n }) => {
    await expect(run(new FakeLink())).rejects.toEqual(errno(n));
  });

  it('deleting a link drops its addresses', async () => {
    const l = new FakeLink();
    await l.addDummy('d0');
    const d0 = await l.getLink('d0');
    await l.addAddress(d0.index, '10.96.0.1');
    await l.deleteLink(d0.index);
    expect((await l.listAddresses('ipv4')).map((a) => a.address)).toEqual(['127.0.0.1']);
  });
});

describe('ensureDummyDevice', () => {
  it('creates kube-ipvs0 DOWN once, then finds it', async () => {
    const l = new FakeLink();
    const first = await ensureDummyDevice(l);
    expect(first).toEqual({ created: true, link: { index: 2, name: KUBE_IPVS0, kind: 'dummy', up: false } });
    const second = await ensureDummyDevice(l);
    expect(second.created).toBe(false);
    expect(l.calls.filter((c) => c.startsWith('addDummy'))).toEqual(['addDummy kube-ipvs0']);
  });

  it('a kube-ipvs0 of another kind is an error and is left in place', async () => {
    const l = new FakeLink();
    l.seedLink(KUBE_IPVS0, 'veth', true);
    await expect(ensureDummyDevice(l)).rejects.toBeInstanceOf(LinkKindError);
    await expect(deleteDummyDevice(l)).rejects.toEqual(
      expect.objectContaining({ code: 'KIPVS_LINK_KIND', actual: 'veth' }),
    );
    expect((await l.getLink(KUBE_IPVS0)).kind).toBe('veth');
    expect(l.calls.some((c) => c.startsWith('deleteLink'))).toBe(false);
  });

  it('deleteDummyDevice is false when absent', async () => {
    const l = new FakeLink();
    expect(await deleteDummyDevice(l)).toBe(false);
    await ensureDummyDevice(l);
    expect(await deleteDummyDevice(l)).toBe(true);
    await expect(l.getLink(KUBE_IPVS0)).rejects.toEqual(errno(E.ENODEV));
  });
});

describe('bind/unbind', () => {
  it('EEXIST on bind and EADDRNOTAVAIL on unbind are no-ops; addresses are canonical; one request each', async () => {
    const l = new FakeLink();
    const { link } = await ensureDummyDevice(l);
    l.calls.length = 0;
    expect(await bindAddresses(l, link.index, ['10.96.0.10', '10.96.0.10', 'FD00:0::A'])).toEqual([null, null, null]);
    expect(l.calls).toEqual([
      `addAddress ${link.index} 10.96.0.10`,
      `addAddress ${link.index} 10.96.0.10`,
      `addAddress ${link.index} fd00::a`,
    ]);
    expect(await listBoundAddresses(l, link.index)).toEqual(['10.96.0.10', 'fd00::a']);
    expect(await unbindAddresses(l, link.index, ['fd00::a', 'fd00::a'])).toEqual([null, null]);
    expect(await listBoundAddresses(l, link.index)).toEqual(['10.96.0.10']);
  });

  it('binding on a missing link is still an error (ENODEV), address by address', async () => {
    expect(await bindAddresses(new FakeLink(), 42, ['10.96.0.10', '10.96.0.11'])).toEqual([
      errno(E.ENODEV),
      errno(E.ENODEV),
    ]);
    expect(await unbindAddresses(new FakeLink(), 42, ['10.96.0.10'])).toEqual([errno(E.ENODEV)]);
  });

  it('listLocalAddresses: one dump per family, kube-ipvs0 excluded', async () => {
    const l = new FakeLink();
    const eth0 = l.seedLink('eth0', '', true);
    l.seedAddress(eth0.index, '192.0.2.10', 24);
    l.seedAddress(eth0.index, '2001:db8::10', 64);
    const { link } = await ensureDummyDevice(l);
    await bindAddresses(l, link.index, ['10.96.0.10']);
    l.calls.length = 0;
    const local = await listLocalAddresses(l, link.index);
    expect(local.map((a) => a.address)).toEqual(['127.0.0.1', '192.0.2.10', '::1', '2001:db8::10']);
    expect(l.calls).toEqual(['listAddresses 4', 'listAddresses 6']);
  });
});
