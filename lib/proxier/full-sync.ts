/**
 * A full sync's IPVS phase: read the table, classify what was not seen before (ownership.ts),
 * re-guard the frontends a newly foreign (or gone) virtual server withholds, adopt the draining
 * real servers the kernel shows, and diff the whole table against the plan, touching only what
 * kube-ipvs owns.
 */
import { IpvsOp } from '../kernel/ipvs/ipvs';
import { VirtualServerSpec, virtualServerKey } from '../model/ipvs';
import { TableEntry, tableFromDump } from '../reconcile/ipvs-table';
import { diffIpvsTable } from '../reconcile/diff-ipvs';
import { DesiredState } from './desired-state';
import { IpvsApplier } from './ipvs-applier';
import { NodeContext } from './node-context';
import { ownsVirtualServer } from './ownership';
import { RefusalReports } from './refusal-reports';
import { SyncRun } from './sync-run';
import { driftOps } from '../reconcile/diff-ipvs';

/** The netfilter sync of this run: start it (once), and whether it has started. */
export interface Netfilter {
  readonly start: () => unknown;
  readonly started: () => boolean;
}

/** The parts of the proxier a full sync's IPVS phase works with. */
export interface FullSyncParts {
  readonly applier: IpvsApplier;
  readonly node: NodeContext;
  readonly desired: DesiredState;
  readonly reports: RefusalReports;
}

/** What the sequence hears from a full sync's IPVS phase, as it happens. */
export interface FullSyncHooks {
  /** frontend keys to re-guard at the next sync, and whether one must come soon */
  readonly later: (keys: readonly string[], rerun: boolean) => void;
  /** a full sync has run before: ops beyond what the tracked state says are drift */
  readonly tracked: boolean;
  /** the drift repaired (called before the table read replaces the applied one) */
  readonly drift: (ops: IpvsOp[]) => void;
}

/** The ops of a full sync. */
export async function fullSyncOps(
  parts: FullSyncParts,
  run: SyncRun,
  netfilter: Netfilter,
  hooks: FullSyncHooks,
): Promise<IpvsOp[]> {
  const { applier, node, desired, reports } = parts;
  const dump = await applier.readTable(run.counts);
  run.lap('ipvsRead');
  const applied = applier.applied;
  let observed = tableFromDump(dump, desired.index.virtualServers(), applied);
  const { claimed, gone } = node.classifyTable(
    observed,
    (k) => applied.has(k),
    (k) => applier.created(k, (f) => node.isForeign(f)),
    desired.virtualServer,
  );
  applier.forgetUncertainCreates();
  // claimed ones are withheld now, before the netfilter sync starts; a gone one is given
  // back now when the netfilter sync has not started yet, else next sync
  const now = netfilter.started() ? claimed : [...claimed, ...gone];
  if (now.length > 0) {
    desired.reguard(now, run.touched);
    reports.conflictsOf(desired.index, run.touched);
    observed = tableFromDump(dump, desired.index.virtualServers(), applied);
  }
  if (netfilter.started()) {
    // (claimed is empty here, as wantsUnknown() was false: were it not, the sets
    // the netfilter sync in flight writes would be withdrawn by the next sync)
    hooks.later(
      gone.filter((k) => desired.index.claimed(k)),
      claimed.length > 0,
    );
  }
  netfilter.start();
  const desiredVs = desired.index.virtualServers();
  const facts = node.ownershipFacts();
  const owned = (e: TableEntry) => ownsVirtualServer(virtualServerKey(e.vs), e.vs, facts);
  const ops = diffIpvsTable(observed, desiredVs, owned);
  if (ops.length > 0 && hooks.tracked) {
    // drift: what the kernel needs beyond what the tracked state says it needs (a config
    // change re-plans everything; those ops are not drift)
    const drift = driftOps(ops, diffIpvsTable(applied, desiredVs, owned));
    if (drift.length > 0) hooks.drift(drift);
  }
  applier.replaceApplied(observed);
  applier.adoptDraining(desired.virtualServer, facts);
  // the record: exactly what kube-ipvs owns in the kernel now, before this sync's creates
  applier.record.load(node.observedIpsets, node.settings.families);
  // (the table's own keys: no key made again per entry)
  const ownedNow: VirtualServerSpec[] = [];
  observed.forEach((e, k) => {
    if (ownsVirtualServer(k, e.vs, facts)) ownedNow.push(e.vs);
  });
  applier.record.rewrite(ownedNow);
  return ops;
}
