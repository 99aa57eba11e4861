import { constants as osConstants } from 'node:os';
import { NetlinkError, errnoName } from '../../lib/errors';
import { canonicalAddress } from '../../lib/model/ipvs';
import { IpFamily, familyOfAddress, ipVersion } from '../../lib/model/ip-family';
import { Link } from '../../lib/kernel/link/link';
import { LinkAddress, LinkInfo } from '../../lib/model/link';
import { compareAddresses } from '../../lib/kernel/link/link-rtnetlink';

const E = osConstants.errno;
/** IFNAMSIZ - 1 */
const MAX_IFNAME = 15;

interface FakeLinkState {
  info: LinkInfo;
  /** canonical address -> prefix length */
  addrs: Map<string, { family: IpFamily; prefixLen: number }>;
}

/**
 * In-memory fake of Link with the kernel's errno for each misuse (pinned against the VM
 * kernel by spec/vm/link.vm.test.ts). Starts with `lo` (index 1, 127.0.0.1/8, ::1/128),
 * as a fresh network namespace does; IPv6 autoconfigured link-local addresses are not modelled.
 */
export class FakeLink implements Link {
  private readonly links = new Map<number, FakeLinkState>();
  private nextIndex = 1;
  /** every request, in order, as "op object": lets tests assert what was (not) done */
  readonly calls: string[] = [];

  constructor() {
    const lo = this.seedLink('lo', '', true);
    this.seedAddress(lo.index, '127.0.0.1', 8);
    this.seedAddress(lo.index, '::1', 128);
  }

  /** Test set-up: a link of any kind (a veth, a NIC: kind ''), bypassing checks. */
  seedLink(name: string, kind: string, up = false): LinkInfo {
    const info: LinkInfo = { index: this.nextIndex++, name, kind, up };
    this.links.set(info.index, { info, addrs: new Map() });
    return info;
  }

  /** Test set-up: an address of any prefix length. */
  seedAddress(index: number, address: string, prefixLen: number): void {
    const l = this.links.get(index);
    if (!l) throw new Error(`seedAddress: no link ${index}`);
    const family = familyOfAddress(address);
    l.addrs.set(canonicalAddress(address), { family, prefixLen });
  }

  private fail(errno: number, operation: string, object: string): never {
    throw new NetlinkError(errno, operation, object, errnoName(errno));
  }

  private byName(name: string): FakeLinkState | undefined {
    for (const l of this.links.values()) if (l.info.name === name) return l;
    return undefined;
  }

  private byIndex(index: number, operation: string, object: string): FakeLinkState {
    const l = this.links.get(index);
    if (!l) this.fail(E.ENODEV, operation, object);
    return l;
  }

  async listLinks(): Promise<LinkInfo[]> {
    this.calls.push('listLinks');
    return [...this.links.values()].map((l) => l.info).sort((a, b) => a.index - b.index);
  }

  async getLink(name: string): Promise<LinkInfo> {
    this.calls.push(`getLink ${name}`);
    const l = this.byName(name);
    if (!l) this.fail(E.ENODEV, 'get link', name);
    return l.info;
  }

  async addDummy(name: string): Promise<void> {
    this.calls.push(`addDummy ${name}`);
    // IFLA_IFNAME policy (NLA_STRING, len IFNAMSIZ-1): too long is ERANGE (Linux 6.1);
    // dev_valid_name() refuses the rest with EINVAL
    if (name.length > MAX_IFNAME) this.fail(E.ERANGE, 'add dummy link', name);
    if (name.length === 0 || name === '.' || name === '..' || /[/:\s]/.test(name)) {
      this.fail(E.EINVAL, 'add dummy link', name);
    }
    if (this.byName(name)) this.fail(E.EEXIST, 'add dummy link', name);
    this.seedLink(name, 'dummy', false);
  }

  async deleteLink(index: number): Promise<void> {
    this.calls.push(`deleteLink ${index}`);
    const l = this.byIndex(index, 'delete link', `ifindex ${index}`);
    // rtnl_dellink: a device without rtnl_link_ops (lo, a NIC) cannot be deleted
    if (l.info.kind === '') this.fail(E.EOPNOTSUPP, 'delete link', `ifindex ${index}`);
    this.links.delete(index);
  }

  async listAddresses(family: IpFamily): Promise<LinkAddress[]> {
    this.calls.push(`listAddresses ${ipVersion(family)}`);
    const out: LinkAddress[] = [];
    for (const l of this.links.values()) {
      for (const [address, a] of l.addrs) {
        if (a.family === family) out.push({ ifindex: l.info.index, family, address, prefixLen: a.prefixLen });
      }
    }
    return out.sort(compareAddresses);
  }

  async addAddress(index: number, address: string): Promise<void> {
    this.calls.push(`addAddress ${index} ${address}`);
    const family = familyOfAddress(address);
    const prefixLen = family === 'ipv6' ? 128 : 32;
    const object = `${address}/${prefixLen} on ifindex ${index}`;
    const l = this.byIndex(index, 'add address', object);
    if (l.addrs.has(canonicalAddress(address))) this.fail(E.EEXIST, 'add address', object);
    l.addrs.set(canonicalAddress(address), { family, prefixLen });
  }

  async deleteAddress(index: number, address: string): Promise<void> {
    this.calls.push(`deleteAddress ${index} ${address}`);
    const family = familyOfAddress(address);
    const prefixLen = family === 'ipv6' ? 128 : 32;
    const object = `${address}/${prefixLen} on ifindex ${index}`;
    const l = this.byIndex(index, 'delete address', object);
    const a = l.addrs.get(canonicalAddress(address));
    if (!a || a.prefixLen !== prefixLen) this.fail(E.EADDRNOTAVAIL, 'delete address', object);
    l.addrs.delete(canonicalAddress(address));
  }

  async addAddresses(index: number, addresses: readonly string[]): Promise<(NetlinkError | null)[]> {
    return eachAddress(addresses, (a) => this.addAddress(index, a));
  }

  async deleteAddresses(index: number, addresses: readonly string[]): Promise<(NetlinkError | null)[]> {
    return eachAddress(addresses, (a) => this.deleteAddress(index, a));
  }

  close(): void {}
}

/** One request per address, in order, as the kernel handles a batch's messages. */
async function eachAddress(
  addresses: readonly string[],
  f: (a: string) => Promise<void>,
): Promise<(NetlinkError | null)[]> {
  const out: (NetlinkError | null)[] = [];
  for (const a of addresses) {
    try {
      await f(a);
      out.push(null);
    } catch (e) {
      if (!(e instanceof NetlinkError)) throw e;
      out.push(e);
    }
  }
  return out;
}
