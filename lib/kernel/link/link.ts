import { constants as osConstants } from 'node:os';
import { KubeIpvsError, NetlinkError, hasErrno } from '../../errors';
import { IpFamily } from '../../model/ip-family';
import { LinkAddress, LinkInfo } from '../../model/link';

const E = osConstants.errno;

/** The dummy device kube-proxy binds every service VIP to (K8S pkg/proxy/ipvs/proxier.go defaultDummyDevice). */
export const KUBE_IPVS0 = 'kube-ipvs0' as const;

/** IFLA_INFO_KIND values this project creates or recognises. */
export const LINK_KIND = {
  DUMMY: 'dummy',
  VETH: 'veth',
  BRIDGE: 'bridge',
} as const;

/**
 * The kernel's links and addresses (rtnetlink). Implemented over NETLINK_ROUTE
 * (LinkRtnetlink, link-rtnetlink.ts) and in memory (FakeLink), which raise the same
 * errno. Every method is one request (or one dump); no method is idempotent by itself:
 * the ensure/bind helpers in dummy-device.ts turn the "already so" errnos into no-ops.
 *
 * Errors are NetlinkError with a positive errno.
 */
export interface Link {
  /** RTM_GETLINK dump: every link, by ascending index. */
  listLinks(): Promise<LinkInfo[]>;
  /** RTM_GETLINK by IFLA_IFNAME; ENODEV when there is no such link. */
  getLink(name: string): Promise<LinkInfo>;
  /** RTM_NEWLINK (CREATE|EXCL) of kind dummy, left DOWN as kube-proxy leaves it; EEXIST when the name is taken. */
  addDummy(name: string): Promise<void>;
  /** RTM_DELLINK by index; ENODEV when there is no such link. */
  deleteLink(index: number): Promise<void>;
  /**
   * RTM_GETADDR dump of one family: every address of every link, one request.
   * Sorted by ifindex, then address text.
   */
  listAddresses(family: IpFamily): Promise<LinkAddress[]>;
  /**
   * RTM_NEWADDR (CREATE|EXCL) of a host address (/32 or /128) on link `index`;
   * EEXIST when already there, ENODEV when the link does not exist.
   */
  addAddress(index: number, address: string): Promise<void>;
  /**
   * RTM_DELADDR of a host address (/32 or /128) from link `index`;
   * EADDRNOTAVAIL when it is not there, ENODEV when the link does not exist.
   */
  deleteAddress(index: number, address: string): Promise<void>;
  /**
   * addAddress of many addresses, many requests to a datagram (a cold node binds every VIP:
   * a round trip each added up on a slow machine). One result per address, in
   * order: null when added, else the NetlinkError addAddress throws (EEXIST, ENODEV).
   * Throws only when the socket fails.
   */
  addAddresses(index: number, addresses: readonly string[]): Promise<(NetlinkError | null)[]>;
  /** deleteAddress of many addresses, as addAddresses (EADDRNOTAVAIL, ENODEV). */
  deleteAddresses(index: number, addresses: readonly string[]): Promise<(NetlinkError | null)[]>;
  close(): void;
}

/** A link of the expected name exists but is of another kind; it is never deleted or reused. */
export class LinkKindError extends KubeIpvsError {
  readonly code = 'KIPVS_LINK_KIND' as const;
  constructor(
    readonly linkName: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(`link ${linkName} exists with kind "${actual || 'none'}", expected "${expected}"; not touching it`);
  }
}

/** No such link (ENODEV). */
export const isNoDevice = (e: unknown): boolean => hasErrno(e, E.ENODEV);
/** The address is not on the link (EADDRNOTAVAIL; ENXIO when an IPv6 link has no inet6 state). */
export const isAddressNotThere = (e: unknown): boolean => hasErrno(e, E.EADDRNOTAVAIL, E.ENXIO);
/** The link or address already exists (EEXIST). */
export const isLinkExists = (e: unknown): boolean => hasErrno(e, E.EEXIST);
