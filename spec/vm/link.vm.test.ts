// Fake-vs-kernel parity for Link, and the real implementation checked with iproute2 as an
// independent observer. Runs as root inside the QEMU VM; link names are unique to this file.
import { constants } from 'node:os';
import { NetlinkError } from '../../lib/errors';
import { FakeLink } from '../../testkit/kernel/fake-link';
import { PackageRtnlTransport, openLink } from '../../lib/kernel/link/link-rtnetlink';
import { encodeNewDummy } from '../../lib/netlink/rtnl-codec';
import { Link, LinkKindError } from '../../lib/kernel/link/link';
import {
  bindAddresses,
  deleteDummyDevice,
  ensureDummyDevice,
  listBoundAddresses,
  listLocalAddresses,
  unbindAddresses,
} from '../../lib/kernel/link/dummy-device';
import { ip, tryRun } from '../../testkit/netns';

const E = constants.errno;
const errno = (n: number) => expect.objectContaining({ constructor: NetlinkError, errno: n });

// a link index no VM link has
const NO_SUCH_INDEX = 9999;

describe.each<[string, () => Promise<Link>]>([
  ['fake', async () => new FakeLink()],
  ['kernel', openLink],
])('Link errno parity: %s', (_label, open) => {
  let link: Link;
  const D = 'kiptest-d0';
  beforeAll(async () => {
    link = await open();
  });
  afterAll(async () => {
    await deleteDummyDevice(link, D).catch(() => undefined);
    link.close();
  });

  it('addDummy: created DOWN as kind dummy; again EEXIST', async () => {
    await link.addDummy(D);
    expect(await link.getLink(D)).toEqual(expect.objectContaining({ name: D, kind: 'dummy', up: false }));
    await expect(link.addDummy(D)).rejects.toEqual(errno(E.EEXIST));
  });
  it('addDummy with a 16-character name: ERANGE; with a slash: EINVAL', async () => {
    await expect(link.addDummy('x'.repeat(16))).rejects.toEqual(errno(E.ERANGE));
    await expect(link.addDummy('kiptest/x')).rejects.toEqual(errno(E.EINVAL));
  });
  it('getLink of a missing link: ENODEV', async () => {
    await expect(link.getLink('kiptest-none')).rejects.toEqual(errno(E.ENODEV));
  });
  it('deleteLink of a missing index: ENODEV; of lo: EOPNOTSUPP', async () => {
    await expect(link.deleteLink(NO_SUCH_INDEX)).rejects.toEqual(errno(E.ENODEV));
    await expect(link.deleteLink(1)).rejects.toEqual(errno(E.EOPNOTSUPP));
  });
  it('addAddress: /32 and /128 listed; twice EEXIST; on a missing link ENODEV', async () => {
    const d = await link.getLink(D);
    await link.addAddress(d.index, '10.96.7.1');
    await link.addAddress(d.index, 'fd00:96::7');
    await expect(link.addAddress(d.index, '10.96.7.1')).rejects.toEqual(errno(E.EEXIST));
    await expect(link.addAddress(d.index, 'fd00:96::7')).rejects.toEqual(errno(E.EEXIST));
    await expect(link.addAddress(NO_SUCH_INDEX, '10.96.7.2')).rejects.toEqual(errno(E.ENODEV));
    const v4 = (await link.listAddresses('ipv4')).filter((a) => a.ifindex === d.index);
    const v6 = (await link.listAddresses('ipv6')).filter((a) => a.ifindex === d.index);
    expect(v4).toEqual([{ ifindex: d.index, family: 'ipv4', address: '10.96.7.1', prefixLen: 32 }]);
    expect(v6).toEqual([{ ifindex: d.index, family: 'ipv6', address: 'fd00:96::7', prefixLen: 128 }]);
  });
  it('deleteAddress: absent EADDRNOTAVAIL (both families); on a missing link ENODEV', async () => {
    const d = await link.getLink(D);
    await link.deleteAddress(d.index, '10.96.7.1');
    await expect(link.deleteAddress(d.index, '10.96.7.1')).rejects.toEqual(errno(E.EADDRNOTAVAIL));
    await link.deleteAddress(d.index, 'fd00:96::7');
    await expect(link.deleteAddress(d.index, 'fd00:96::7')).rejects.toEqual(errno(E.EADDRNOTAVAIL));
    await expect(link.deleteAddress(NO_SUCH_INDEX, '10.96.7.1')).rejects.toEqual(errno(E.ENODEV));
  });
  it('addAddresses / deleteAddresses: one result per address, in order; the errno each single request gets', async () => {
    const d = await link.getLink(D);
    const mine = async () =>
      [...(await link.listAddresses('ipv4')), ...(await link.listAddresses('ipv6'))]
        .filter((a) => a.ifindex === d.index)
        .map((a) => a.address);
    await link.addAddress(d.index, '10.96.8.2');
    const added = await link.addAddresses(d.index, ['10.96.8.1', '10.96.8.2', 'fd00:96::8', '10.96.8.3']);
    expect(added.map((e) => e?.errno ?? 0)).toEqual([0, E.EEXIST, 0, 0]);
    expect(added[1]).toEqual(errno(E.EEXIST));
    expect((await link.addAddresses(NO_SUCH_INDEX, ['10.96.8.9'])).map((e) => e?.errno)).toEqual([E.ENODEV]);
    expect(await mine()).toEqual(['10.96.8.1', '10.96.8.2', '10.96.8.3', 'fd00:96::8']);
    const deleted = await link.deleteAddresses(d.index, [
      '10.96.8.1',
      '10.96.8.9',
      'fd00:96::8',
      '10.96.8.2',
      '10.96.8.3',
    ]);
    expect(deleted.map((e) => e?.errno ?? 0)).toEqual([0, E.EADDRNOTAVAIL, 0, 0, 0]);
    expect(await link.deleteAddresses(d.index, [])).toEqual([]);
    expect(await mine()).toEqual([]);
  });
  it('lo is index 1 with 127.0.0.1/8', async () => {
    expect((await link.listLinks())[0]).toEqual({ index: 1, name: 'lo', kind: '', up: true });
    expect((await link.listAddresses('ipv4')).find((a) => a.ifindex === 1)).toEqual({
      ifindex: 1,
      family: 'ipv4',
      address: '127.0.0.1',
      prefixLen: 8,
    });
  });
  it('deleteLink removes the link and its addresses', async () => {
    const d = await link.getLink(D);
    await link.addAddress(d.index, '10.96.7.3');
    await link.deleteLink(d.index);
    await expect(link.getLink(D)).rejects.toEqual(errno(E.ENODEV));
    expect((await link.listAddresses('ipv4')).some((a) => a.address === '10.96.7.3')).toBe(false);
  });
});

describe('kube-ipvs0 on the kernel, seen by iproute2', () => {
  let link: Link;
  beforeAll(async () => {
    link = await openLink();
  });
  afterAll(async () => {
    tryRun('ip', ['link', 'del', 'kube-ipvs0']);
    tryRun('ip', ['link', 'del', 'kiptest-v0']);
    link.close();
  });

  it('ensureDummyDevice creates kube-ipvs0 as a DOWN dummy once', async () => {
    const first = await ensureDummyDevice(link);
    expect(first.created).toBe(true);
    const shown = ip('-d', '-o', 'link', 'show', 'kube-ipvs0');
    expect(shown).toMatch(/ dummy /);
    expect(shown).toMatch(/state DOWN/);
    expect(shown).not.toMatch(/<[^>]*\bUP\b/);
    expect((await ensureDummyDevice(link)).created).toBe(false);
  });

  it('bind/unbind host addresses; ip addr agrees; repeats are no-ops', async () => {
    const { link: k } = await ensureDummyDevice(link);
    expect(await bindAddresses(link, k.index, ['10.96.0.10', '10.96.0.10', 'fd00:96::10'])).toEqual([null, null, null]);
    expect(ip('-o', 'addr', 'show', 'dev', 'kube-ipvs0')).toMatch(/inet 10\.96\.0\.10\/32 /);
    expect(ip('-o', 'addr', 'show', 'dev', 'kube-ipvs0')).toMatch(/inet6 fd00:96::10\/128 /);
    expect(await listBoundAddresses(link, k.index)).toEqual(['10.96.0.10', 'fd00:96::10']);
    // the VIP is local (local route) although the link is DOWN: IPVS depends on it
    expect(ip('route', 'show', 'table', 'local', '10.96.0.10')).toMatch(/local 10\.96\.0\.10 dev kube-ipvs0/);
    const local = await listLocalAddresses(link, k.index);
    expect(local.some((a) => a.address === '10.96.0.10')).toBe(false);
    expect(local.some((a) => a.address === '127.0.0.1')).toBe(true);
    expect(await unbindAddresses(link, k.index, ['10.96.0.10', '10.96.0.10', 'fd00:96::10'])).toEqual([
      null,
      null,
      null,
    ]);
    expect(ip('-o', 'addr', 'show', 'dev', 'kube-ipvs0')).toBe('');
  });

  it('bindAddresses: 1,000 VIPs in one call (many datagrams), the bound ones again are no-ops; ip addr agrees; unbindAddresses', async () => {
    const { link: k } = await ensureDummyDevice(link);
    const vips = Array.from({ length: 1000 }, (_, i) => `10.97.${i >> 8}.${i & 255}`);
    expect((await bindAddresses(link, k.index, vips)).every((e) => e === null)).toBe(true);
    expect(ip('-o', '-4', 'addr', 'show', 'dev', 'kube-ipvs0').trim().split('\n')).toHaveLength(1000);
    expect(ip('route', 'show', 'table', 'local', '10.97.3.231')).toMatch(/local 10\.97\.3\.231 dev kube-ipvs0/);
    expect((await bindAddresses(link, k.index, ['10.97.0.5', 'fd00:97::5'])).every((e) => e === null)).toBe(true);
    expect(await listBoundAddresses(link, k.index)).toHaveLength(1001);
    expect((await unbindAddresses(link, k.index, [...vips, 'fd00:97::5', '10.97.9.9'])).every((e) => e === null)).toBe(
      true,
    );
    expect(ip('-o', 'addr', 'show', 'dev', 'kube-ipvs0')).toBe('');
  });

  it('a kube-ipvs0 of another kind is refused and left alone', async () => {
    expect(await deleteDummyDevice(link)).toBe(true);
    expect(await deleteDummyDevice(link)).toBe(false);
    ip('link', 'add', 'kube-ipvs0', 'type', 'veth', 'peer', 'name', 'kiptest-v0');
    await expect(ensureDummyDevice(link)).rejects.toBeInstanceOf(LinkKindError);
    await expect(deleteDummyDevice(link)).rejects.toBeInstanceOf(LinkKindError);
    expect(ip('-d', '-o', 'link', 'show', 'kube-ipvs0')).toMatch(/ veth /);
  });
});

describe('NETLINK_EXT_ACK on rtnetlink (the kernel says why, not just the errno)', () => {
  it("an unknown link kind fails with the kernel's message in the error", async () => {
    const t = new PackageRtnlTransport();
    try {
      const req = encodeNewDummy('kiptest-x0');
      const bad = { ...req, payload: Buffer.from(req.payload.toString('latin1').replace('dummy', 'nokind'), 'latin1') };
      const e = await t.request(bad).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toEqual(
        expect.objectContaining({ constructor: NetlinkError, errno: E.EOPNOTSUPP, extack: 'Unknown device type' }),
      );
      expect((e as Error).message).toBe('add dummy link kiptest-x0: EOPNOTSUPP [Unknown device type] (EOPNOTSUPP)');
    } finally {
      t.close();
    }
  });
});

describe('addresses read again (the full sync every syncPeriod) against the kernel', () => {
  const D = 'kiptest-memo';
  let link: Link;
  beforeAll(async () => {
    link = await openLink();
    await ensureDummyDevice(link, D);
  });
  afterAll(async () => {
    await deleteDummyDevice(link, D).catch(() => undefined);
    link.close();
  });

  it('a quiet kernel answers the same bytes: the same address objects; one deleted by ip(8) is gone at the next read', async () => {
    const index = (await link.getLink(D)).index;
    await link.addAddress(index, '10.96.9.1');
    await link.addAddress(index, '10.96.9.2');
    const ours = async () => (await link.listAddresses('ipv4')).filter((a) => a.ifindex === index);
    const first = await ours();
    const again = await ours();
    expect(again.map((a) => a.address)).toEqual(['10.96.9.1', '10.96.9.2']);
    again.forEach((a, i) => expect(a).toBe(first[i]));
    ip('addr', 'del', '10.96.9.1/32', 'dev', D);
    expect((await ours()).map((a) => a.address)).toEqual(['10.96.9.2']);
  });
});
