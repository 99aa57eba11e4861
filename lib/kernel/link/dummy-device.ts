import { NetlinkError } from '../../errors';
import { canonicalAddress } from '../../model/ipvs';
import { IpFamily } from '../../model/ip-family';
import { LinkAddress, LinkInfo } from '../../model/link';
import { KUBE_IPVS0, LINK_KIND, Link, LinkKindError, isAddressNotThere, isLinkExists, isNoDevice } from './link';

// What kube-proxy's netlinkHandle (K8S pkg/proxy/ipvs/netlink_linux.go) does, over the
// strict Link primitives: "already so" is success, anything else is an error.

async function findLink(link: Link, name: string): Promise<LinkInfo | undefined> {
  try {
    return await link.getLink(name);
  } catch (e) {
    if (isNoDevice(e)) return undefined;
    throw e;
  }
}

/**
 * Makes sure `name` is a dummy link; creates it (DOWN, as kube-proxy does) when missing.
 * A link of that name but another kind is a LinkKindError and is left alone.
 */
export async function ensureDummyDevice(
  link: Link,
  name: string = KUBE_IPVS0,
): Promise<{ readonly created: boolean; readonly link: LinkInfo }> {
  const found = await findLink(link, name);
  if (found) {
    if (found.kind !== LINK_KIND.DUMMY) throw new LinkKindError(name, LINK_KIND.DUMMY, found.kind);
    return { created: false, link: found };
  }
  try {
    await link.addDummy(name);
  } catch (e) {
    // created concurrently between our lookup and our add: check it is a dummy below
    if (!isLinkExists(e)) throw e;
  }
  const created = await link.getLink(name);
  if (created.kind !== LINK_KIND.DUMMY) throw new LinkKindError(name, LINK_KIND.DUMMY, created.kind);
  return { created: true, link: created };
}

/**
 * Deletes the dummy link `name`. Returns false when there is none. A link of that name but
 * another kind is a LinkKindError and is not deleted.
 */
export async function deleteDummyDevice(link: Link, name: string = KUBE_IPVS0): Promise<boolean> {
  const found = await findLink(link, name);
  if (!found) return false;
  if (found.kind !== LINK_KIND.DUMMY) throw new LinkKindError(name, LINK_KIND.DUMMY, found.kind);
  try {
    await link.deleteLink(found.index);
  } catch (e) {
    if (isNoDevice(e)) return false;
    throw e;
  }
  return true;
}

/** Host addresses (/32, /128) bound on link `index`, sorted; one dump per family asked for. */
export async function listBoundAddresses(
  link: Link,
  index: number,
  families: readonly IpFamily[] = ['ipv4', 'ipv6'],
): Promise<string[]> {
  const out: string[] = [];
  for (const f of families) {
    for (const a of await link.listAddresses(f)) if (a.ifindex === index) out.push(a.address);
  }
  return out;
}

/**
 * Binds host addresses to link `index`, many requests to a datagram: one result per address,
 * null when bound or already there (EEXIST), else the error. Throws only when the socket fails.
 */
export async function bindAddresses(
  link: Link,
  index: number,
  addresses: readonly string[],
): Promise<(NetlinkError | null)[]> {
  const results = await link.addAddresses(index, addresses.map(canonicalAddress));
  return results.map((e) => (e && !isLinkExists(e) ? e : null));
}

/** Unbinds host addresses from link `index`, as bindAddresses: not there (EADDRNOTAVAIL) counts as done. */
export async function unbindAddresses(
  link: Link,
  index: number,
  addresses: readonly string[],
): Promise<(NetlinkError | null)[]> {
  const results = await link.deleteAddresses(index, addresses.map(canonicalAddress));
  return results.map((e) => (e && !isAddressNotThere(e) ? e : null));
}

/**
 * Every local address of every link except `exceptIndex` (kube-ipvs0), one RTM_GETADDR dump
 * per family (kube-proxy: GetAllLocalAddressesExcept). Pass exceptIndex undefined for all.
 */
export async function listLocalAddresses(
  link: Link,
  exceptIndex: number | undefined,
  families: readonly IpFamily[] = ['ipv4', 'ipv6'],
): Promise<LinkAddress[]> {
  const out: LinkAddress[] = [];
  for (const f of families) {
    for (const a of await link.listAddresses(f)) if (a.ifindex !== exceptIndex) out.push(a);
  }
  return out;
}
