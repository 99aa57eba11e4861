/**
 * The kernel's ipsets, as kube-ipvs manages them. Implemented over the `ipset` binary
 * (ipset-restore.ts: one `ipset save` to observe, one `ipset restore -exist` per changing sync)
 * and in memory (fake-ipset.ts, which parses the same restore text and fails like ipset does).
 */
import { DesiredIpsets } from '../../plan/ipsets';
import { IpFamily } from '../../plan/names';

export type { DesiredIpsets, DesiredSet } from '../../plan/ipsets';

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
  /** the restore text applied, '' when nothing was applied */
  readonly restoreText: string;
}

/**
 * kube-ipvs's view of the ipsets it owns.
 *
 * - `observe()` reads every set and its members with ONE `ipset save`, and remembers the result
 *   as the baseline for the next `sync`.
 * - `sync(desired)` creates missing sets, adds new members and deletes stale ones with at most
 *   ONE `ipset restore -exist`, for all sets together; nothing runs when nothing changed. A
 *   member in both the old and the new state is never touched (no flush-and-refill). Sets not
 *   in `desired` are left alone. Throws IpsetTypeMismatchError (before running anything) when a
 *   set exists with another type or family; ExecError (with `line`) when ipset refuses, after
 *   which the remembered state is dropped and the next sync re-observes.
 */
export interface Ipset {
  observe(): Promise<IpsetState>;
  sync(desired: DesiredIpsets): Promise<IpsetSyncResult>;
  /** Forget what was applied: the next sync starts with `observe()` (after a failure, or
   * when someone else may have changed the sets). */
  invalidate(): void;
}

/** The two operations of the `ipset` binary that Ipset needs; real (exec) or fake (memory). */
export interface IpsetRunner {
  /** `ipset save` output */
  save(): Promise<string>;
  /** `ipset restore -exist` with `text` on stdin; throws ExecError */
  restore(text: string): Promise<void>;
}
