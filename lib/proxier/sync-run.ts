/**
 * One sync's working parts that hold no proxier state: its figures and phase clock, the
 * netfilter sync that runs beside the IPVS work, and the pure helpers the sequence uses.
 */
import { IpvsOp } from '../kernel/ipvs/ipvs';
import { realServerKey } from '../model/ipvs';
import { opVirtualServerKey } from '../reconcile/diff-ipvs';
import { Clock } from './clock';
import { DesiredIndex } from './desired-index';
import { NodeContext } from './node-context';
import { SyncSummary } from '../model/views';
import { ProxierDeps, SyncCounts, SyncPhase, SyncPhases, SyncResult } from './types';

/** One sync in progress: its kind, figures and phase clock. */
export interface SyncRun {
  readonly full: boolean;
  readonly start: number;
  readonly counts: SyncCounts;
  readonly phasesMs: SyncPhases;
  /** charges the time since the last lap to `phase` */
  readonly lap: (phase: SyncPhase) => void;
  /** the next lap counts from now */
  readonly restartLap: () => void;
  /** virtual server keys the re-plans touched */
  readonly touched: Set<string>;
  /** Services whose retry was due */
  dueRetries: string[];
  replanned: number;
  drift: boolean;
}

/** A sync starting now: `full` decides from its start time. */
export function newSyncRun(clock: Clock, full: (start: number) => boolean): SyncRun {
  const start = clock.now();
  const phasesMs: SyncPhases = {};
  let mark = start;
  return {
    full: full(start),
    start,
    counts: {
      ipvsWrites: 0,
      ipvsReads: 0,
      ipvsFailures: 0,
      linkOps: 0,
      execs: 0,
      conntrackOps: 0,
      conntrackDeleted: 0,
    },
    phasesMs,
    lap: (phase) => {
      const t = clock.now();
      phasesMs[phase] = (phasesMs[phase] ?? 0) + (t - mark);
      mark = t;
    },
    restartLap: () => {
      mark = clock.now();
    },
    touched: new Set(),
    dueRetries: [],
    replanned: 0,
    drift: false,
  };
}

/** An op as text (for comparing op lists and for logs). */
export function opKey(op: IpvsOp): string {
  const vs = opVirtualServerKey(op) ?? '';
  const rs = 'rs' in op ? ` ${realServerKey(op.rs)} w${'weight' in op.rs ? op.rs.weight : '-'}` : '';
  const sched =
    op.kind === 'newService' || op.kind === 'setService'
      ? ` ${op.vs.scheduler}/${op.vs.flags ?? 0}/${op.vs.timeout ?? 0}`
      : '';
  return `${op.kind} ${vs}${rs}${sched}`;
}

/**
 * Drift: the ops the kernel needs beyond what the tracked state says it needs (`expected`,
 * the diff against what kube-ipvs applied; a config change re-plans everything, and those
 * ops are not drift).
 */
export function driftOps(ops: readonly IpvsOp[], expected: readonly IpvsOp[]): IpvsOp[] {
  const keys = new Set(expected.map(opKey));
  return ops.filter((o) => !keys.has(opKey(o)));
}

/**
 * The families' ipsets, one sync after another (they may share one Ipset), then their
 * iptables; no iptables after a failed ipset sync. Resolves, never rejects: with the failure,
 * if one happened. Sets phasesMs.ipsets and phasesMs.iptables to their own durations, which
 * overlap the IPVS read, the IPVS writes and the binds.
 */
export async function syncNetfilter(
  deps: Pick<ProxierDeps, 'clock' | 'ipsets' | 'iptables'>,
  index: DesiredIndex,
  node: NodeContext,
  run: Pick<SyncRun, 'full' | 'counts' | 'phasesMs'>,
): Promise<{ error: unknown } | undefined> {
  const { full, counts, phasesMs } = run;
  const clock = deps.clock;
  const families = node.settings.families;
  let start = clock.now();
  let phase: 'ipsets' | 'iptables' = 'ipsets';
  try {
    for (const family of families) {
      const ipset = deps.ipsets[family];
      // a partial sync that changed no member skips even the in-memory diff of every set
      const membersChanged = index.takeIpsetsChanged(family);
      if (ipset && (full || membersChanged)) counts.execs += (await ipset.sync(index.ipsets(family))).execs;
    }
    phasesMs.ipsets = clock.now() - start;
    start = clock.now();
    phase = 'iptables';
    for (const family of families) {
      const ipt = deps.iptables[family];
      if (ipt)
        counts.execs += (await ipt.sync(index.iptables(family, node.iptablesOptions(family)), { verify: full })).execs;
    }
    phasesMs.iptables = clock.now() - start;
    return undefined;
  } catch (error) {
    phasesMs[phase] = clock.now() - start;
    return { error };
  }
}

/** The running totals and the last syncs, for `kube-ipvs status` and metrics. */
export class SyncFigures {
  readonly totals = {
    syncs: 0,
    fullSyncs: 0,
    ipvsWrites: 0,
    ipvsFailures: 0,
    execs: 0,
    driftRepairs: 0,
    conntrackDeleted: 0,
  };
  private last: SyncResult | undefined;
  private full: SyncSummary | null = null;
  private partial: SyncSummary | null = null;

  get lastResult(): SyncResult | undefined {
    return this.last;
  }

  get lastFull(): SyncSummary | null {
    return this.full;
  }

  get lastPartial(): SyncSummary | null {
    return this.partial;
  }

  /** One sync ended; `lastSyncAt`: the last one that went through. */
  record(result: SyncResult, lastSyncAt: number): void {
    this.last = result;
    const t = this.totals;
    t.syncs++;
    if (result.full) t.fullSyncs++;
    t.ipvsWrites += result.ipvsWrites;
    t.ipvsFailures += result.ipvsFailures;
    t.execs += result.execs;
    const summary: SyncSummary = {
      at: new Date(lastSyncAt).toISOString(),
      durationMs: result.durationMs,
      ipvsWrites: result.ipvsWrites,
      ipvsFailures: result.ipvsFailures,
      execs: result.execs,
    };
    if (result.full) this.full = summary;
    else this.partial = summary;
  }
}
