/**
 * kube-ipvs's KUBE-* chains in iptables/ip6tables. Implemented over the iptables-restore family
 * of binaries (iptables-restore.ts; backend nft or legacy detected as iptables-wrappers does)
 * and in memory (fake-iptables.ts).
 */
import { IpFamily } from '../../model/ip-family';
import { Table } from '../../model/names';
import { IptablesPlan, JumpRule } from '../../model/iptables';

/** The iptables backend: iptables-nft or iptables-legacy. */
export type IptablesBackend = 'nft' | 'legacy';
/** Backend override: 'auto' detects (see detect-backend.ts). */
export type IptablesBackendMode = IptablesBackend | 'auto';

/** What one iptables sync did: processes started, restore written, jumps inserted, drift found. */
export interface IptablesSyncResult {
  /** processes started by this sync (0 when the text is unchanged) */
  readonly execs: number;
  /** a restore ran */
  readonly wrote: boolean;
  /** jump rules that were missing and were inserted by this restore */
  readonly insertedJumps: readonly JumpRule[];
  /** the restore payload sent ('' when nothing was written) */
  readonly restoreText: string;
  /**
   * with `verify`: what was found changed behind our back and rewritten ("nat KUBE-SERVICES:
   * 0 of 4 rules", "filter KUBE-FORWARD: missing", "nat OUTPUT: jump to KUBE-SERVICES missing")
   */
  readonly repaired?: readonly string[];
  /**
   * kube-proxy's iptables-mode leftovers found in the tables this sync read and removed by
   * one more restore after its own ("nat -X KUBE-SVC-...", "filter -D OUTPUT ..."); absent
   * when there were none
   */
  readonly leftoversRemoved?: readonly string[];
}

/** Options of one iptables sync: force a write, verify against the kernel. */
export interface IptablesSyncOptions {
  /** write even when the text is unchanged, and re-check the jump rules (periodic full sync) */
  readonly force?: boolean;
  /**
   * the periodic check (kube-proxy notices flushed tables with its canary chains): read the
   * tables (one iptables-save per table) and, when a KUBE-* chain is missing or holds another
   * number of rules than written, or a jump rule is missing, rewrite. Two execs when nothing
   * changed; none on iptables-nft with the generation reader (iptables-sync.ts) while the
   * nf_tables generation is still the one at which the rules were proven ours.
   */
  readonly verify?: boolean;
}

/**
 * - `sync(plan)` writes every KUBE-* chain of `plan` atomically per table with ONE
 *   `iptables-restore --noflush -w` (nat then filter; each table commits on its own), and
 *   inserts jump rules from the built-in chains in the same payload when they are missing (the
 *   first sync, a forced one, or after `invalidate()`, read with one `iptables-save -t nat` and
 *   one `-t filter`). Nothing runs when the generated text equals the last written one.
 *   Foreign chains and rules are never named, so never touched. Throws ExecError (with `line`).
 *   After a failure the next sync re-checks everything.
 * - `save(table)` is `iptables-save -t <table>` of the chosen backend (for tests and debugging).
 */
export interface Iptables {
  readonly family: IpFamily;
  backend(): Promise<IptablesBackend>;
  sync(plan: IptablesPlan, opts?: IptablesSyncOptions): Promise<IptablesSyncResult>;
  save(table: Table): Promise<string>;
  /** forget the last written text and the jump-rule check */
  invalidate(): void;
}

/** The binaries' two operations Iptables needs; real (exec) or fake (memory). */
export interface IptablesRunner {
  readonly family: IpFamily;
  backend(): Promise<IptablesBackend>;
  /** `iptables-save -t <table>` (mangle: for `kube-ipvs cleanup` alone) */
  save(table: Table | 'mangle'): Promise<string>;
  /** `iptables-restore --noflush -w` with `text` on stdin; throws ExecError */
  restore(text: string): Promise<void>;
}
