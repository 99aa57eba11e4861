/**
 * The kernel's ipsets, as kube-ipvs manages them. Implemented over the `ipset` binary
 * (ipset-restore.ts: one `ipset save` to observe, one `ipset restore -exist` per changing sync)
 * and in memory (fake-ipset.ts, which parses the same restore text and fails like ipset does).
 */

import { IpFamily } from '../../model/ip-family';
import { DesiredIpsets } from '../../model/ipset';
import { KubeIpvsError } from '../../errors';

/** One set as `ipset save` shows it. */
export interface ObservedSet {
  readonly name: string;
  /** "hash:ip,port", ...; any type ipset knows (foreign sets too) */
  readonly type: string;
  /** absent for bitmap types, which have no family */
  readonly family?: IpFamily;
  /** the create options after the type, verbatim ("family inet hashsize 1024 ...") */
  readonly options: string;
  /** in ipset's own spelling (lower-case proto, canonical IPv6) */
  readonly members: ReadonlySet<string>;
  /** a set created with `comment`: each member's comment ('' when it has none) */
  readonly comments?: ReadonlyMap<string, string>;
}

/** Every set in the kernel, by name. */
export type IpsetState = ReadonlyMap<string, ObservedSet>;

/** What one `sync` did. */
export interface IpsetSyncResult {
  /** processes started (0 when nothing changed, else 1; +1 for an implicit first observe) */
  readonly execs: number;
  /** sets created */
  readonly created: readonly string[];
  /** members added / deleted, over all sets */
  readonly added: number;
  readonly deleted: number;
  /** the restore text applied last (the one that succeeded), '' when nothing was applied */
  readonly restoreText: string;
  /** lines newly quarantined by this sync (each also logged once) */
  readonly quarantined: readonly QuarantinedLine[];
}

/**
 * A restore line kube-ipvs stopped sending: ipset refused it (or its member does not fit the
 * set). It is retried when the desired members of its set change, or after `invalidate()`.
 */
export interface QuarantinedLine {
  readonly set: string;
  readonly verb: 'create' | 'add' | 'del';
  /** the member of an add/del line */
  readonly member?: string;
  /** ipset's complaint ("The value of the CIDR parameter of the IP address is invalid") or ours */
  readonly reason: string;
}

/**
 * kube-ipvs's view of the ipsets it owns.
 *
 * - `observe()` reads every set and its members with ONE netlink dump when the runner can
 *   (`list`), else with ONE `ipset save`, and remembers the result as the baseline for the
 *   next `sync`.
 * - `sync(desired)` creates missing sets, adds new members and deletes stale ones with ONE
 *   `ipset restore -exist`, for all sets together; nothing runs when nothing changed. A
 *   member in both the old and the new state is never touched (no flush-and-refill). Sets not
 *   in `desired` are left alone. Throws IpsetTypeMismatchError (before running anything) when a
 *   set exists with another type or family.
 * - One bad line never stalls the others: when ipset refuses a line (ExecError with `line`;
 *   halving the text when it names none), that line is quarantined (logged once, with the set
 *   and the member) and the rest is sent again (every line is idempotent under -exist), then
 *   the sets are re-read with one `ipset save` so the remembered state is exact. A quarantined
 *   line is not sent again until the desired members of its set change (or `invalidate()`). A
 *   failed `create`, or more than 8 refused lines in one set in one sync, quarantines the
 *   whole set. Only a failure to run ipset at all throws (then the next sync re-observes).
 */
export interface Ipset {
  observe(): Promise<IpsetState>;
  /** observe(), saying how many processes it started (0 when the runner listed over netlink) */
  observeCounted(): Promise<IpsetObservation>;
  sync(desired: DesiredIpsets): Promise<IpsetSyncResult>;
  /**
   * One `ipset restore -exist` of text written outside `sync`, for sets `sync` is never given
   * (kube-ipvs's ownership record); resolves to the processes started (1). Throws ExecError.
   */
  write(text: string): Promise<number>;
  /** Forget what was applied and what was quarantined: the next sync starts with
   * `observe()` and retries every line (after a failure, or when someone else may have
   * changed the sets). */
  invalidate(): void;
}

/** What one observe read, and the processes it took. */
export interface IpsetObservation {
  readonly state: IpsetState;
  /** 1 for an `ipset save`, 0 for a netlink read */
  readonly execs: number;
}

/**
 * The operations on the kernel's sets that Ipset needs: the two of the `ipset` binary (real
 * exec or fake memory) and, optionally, a read without a process.
 */
export interface IpsetRunner {
  /** `ipset save` output */
  save(): Promise<string>;
  /**
   * Every set, as parseIpsetSave(save()) would give it, without a process (netlink). When
   * present, observe uses it; IpsetNetlinkUnavailableError makes observe fall back to save.
   */
  readonly list?: () => Promise<IpsetState>;
  /** `ipset restore -exist` with `text` on stdin; throws ExecError */
  restore(text: string): Promise<void>;
}
/**
 * The netlink read cannot serve here (no NETLINK_NETFILTER socket, a kernel refusing the
 * protocol, or a set type whose members the codec cannot spell); `ipset save` can.
 */
export class IpsetNetlinkUnavailableError extends KubeIpvsError {
  readonly code = 'KIPVS_IPSET_NETLINK_UNAVAILABLE' as const;
}
