import { NetlinkError } from '../../errors';
import { IpvsInfo, IpvsTimeouts, RealServer, VirtualServer, VirtualServerId } from '../../model/ipvs';
import { IpvsOp } from '../../model/ipvs-op';

/** A change to the IPVS table, as data (the model's vocabulary, model/ipvs-op.ts). */
export type { IpvsOp };

/** The outcome of one op of a batch: every op gets exactly one. */
export type IpvsOpResult = { readonly ok: true } | { readonly ok: false; readonly error: NetlinkError };

/** A virtual server with its real servers, as one listing shows it. */
export interface VirtualServerEntry {
  readonly vs: VirtualServer;
  readonly dests: readonly RealServer[];
}

/**
 * The kernel's IPVS table. Implemented over generic netlink (IpvsNetlink) and in memory
 * (FakeIpvs, which raises the same errno the kernel does).
 *
 * Errors are NetlinkError with a positive errno: NEW on an existing object EEXIST; SET/DEL/GET
 * of a missing virtual server ESRCH; SET/DEL of a missing real server ENOENT; an unknown
 * scheduler or persistence engine ENOENT; malformed attributes EINVAL; no CAP_NET_ADMIN EPERM.
 */
export interface Ipvs {
  /** GET_INFO: version code and connection-table size */
  info(): Promise<IpvsInfo>;
  /** GET_CONFIG */
  timeouts(): Promise<IpvsTimeouts>;
  /** GET_SERVICE dump, in kernel (hash) order */
  listServices(): Promise<VirtualServer[]>;
  /** GET_SERVICE of one; ESRCH when missing */
  getService(id: VirtualServerId): Promise<VirtualServer>;
  /** GET_DEST dump of one service (empty when the service is missing) */
  listRealServers(id: VirtualServerId): Promise<RealServer[]>;
  /** every service with its real servers (one service dump + pipelined dest dumps) */
  listAll(): Promise<VirtualServerEntry[]>;
  /** Applies one op; throws its NetlinkError. */
  apply(op: IpvsOp): Promise<void>;
  /**
   * Applies many ops, pipelined, in order. Never throws for a kernel refusal: each op gets
   * its own result (a later op still runs after an earlier one failed, as the kernel would
   * for separate requests).
   */
  run(ops: readonly IpvsOp[]): Promise<IpvsOpResult[]>;
  close(): void;
}
