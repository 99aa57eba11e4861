import { NetlinkError, KubeIpvsError } from '../../errors';
import { ConntrackFlow } from '../../model/conntrack';
import { IpFamily } from '../../model/ip-family';

/** What a batched delete did: one request per flow. */
export interface DeleteFlowsResult {
  /** entries the kernel deleted */
  readonly deleted: number;
  /** entries already gone (ENOENT: expired, or deleted by someone else, or replaced since the dump): not an error */
  readonly gone: number;
  /** refusals other than ENOENT, with the flow each one names */
  readonly failures: readonly { readonly flow: ConntrackFlow; readonly error: NetlinkError }[];
}

/**
 * The netfilter connection-tracking table (ctnetlink, nf_conntrack_netlink). Implemented over
 * NETLINK_NETFILTER (ConntrackNetlink, conntrack-netlink.ts) and in memory (FakeConntrack),
 * which answer the same errno.
 */
export interface Conntrack {
  /**
   * One IPCTNL_MSG_CT_GET dump of `family`'s table; with `protocol` (IPPROTO_*) only that
   * protocol's entries (filtered by the kernel on 5.8+, and here). In no particular order.
   * Throws NetlinkError when the kernel refuses, SocketError when the socket fails.
   */
  listFlows(family: IpFamily, protocol?: number): Promise<ConntrackFlow[]>;
  /**
   * Deletes each flow by its original tuple (+ zone, + id when the flow has one), pipelined:
   * many requests per datagram, acks collected. ENOENT counts as `gone`. Throws only when the
   * socket itself fails.
   */
  deleteFlows(flows: readonly ConntrackFlow[]): Promise<DeleteFlowsResult>;
  close(): void;
}

/** ctnetlink cannot be used: no NETLINK_NETFILTER, or nf_conntrack_netlink missing. */
export class ConntrackUnavailableError extends KubeIpvsError {
  readonly code = 'KIPVS_CONNTRACK_UNAVAILABLE' as const;
}
