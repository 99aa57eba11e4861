/**
 * One sync in progress (its kind, counts and phase clock) and the running figures of all of
 * them: what a sync reports, not what it does (netfilter-sync.ts, full-sync.ts).
 */
import { Clock } from './clock';
import { SyncSummary } from '../model/views';
import { EndpointTrigger, SyncCounts, SyncPhase, SyncPhases, SyncResult } from './types';

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
  /** the EndpointSlice changes this sync took in: trigger times and families */
  triggered: EndpointTrigger[];
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
    triggered: [],
  };
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
