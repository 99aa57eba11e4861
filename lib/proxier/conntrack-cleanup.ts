/**
 * Stale conntrack entries (kube-proxy's conntrack.CleanStaleEntries): a re-plan that takes a
 * real server from a UDP/SCTP virtual server (or gives one its first) marks the family's
 * protocol table; after the sync's IPVS changes, each marked table is dumped once and its
 * stale entries deleted in one batch.
 */
import type winston from 'winston';
import { Conntrack } from '../kernel/conntrack/conntrack';
import { PROTOCOL_NAMES } from '../model/ipvs';
import { IpFamily } from '../model/ip-family';
import { DesiredVirtualServer } from '../plan/service-plan';
import { conntrackCleanupTriggers, conntrackFrontends, staleConntrackFlows } from '../reconcile/stale-conntrack';

/** Deletes stale conntrack entries after IPVS changes (see the file comment). */
export class ConntrackCleanup {
  /** conntrack tables ("ipv4/17") to clean of stale entries after this sync's IPVS changes */
  private readonly pending = new Set<string>();

  constructor(private readonly deps: { readonly conntrack?: Conntrack; readonly log: winston.Logger }) {}

  /** The virtual servers given to a Service went from `before` to `after`. */
  replanned(before: readonly DesiredVirtualServer[], after: readonly DesiredVirtualServer[]): void {
    if (!this.deps.conntrack) return;
    for (const t of conntrackCleanupTriggers(before, after)) this.pending.add(t);
  }

  get hasPending(): boolean {
    return this.pending.size > 0;
  }

  /**
   * Deletes the stale entries of the pending tables, given the desired virtual servers: one
   * filtered dump per family and protocol, then one batch of deletes. Returns how many were
   * deleted. Never throws: a failure is logged and the IPVS sync stands.
   */
  async clean(
    desired: Iterable<DesiredVirtualServer>,
    counts: { conntrackOps: number; conntrackDeleted: number },
  ): Promise<number> {
    const ct = this.deps.conntrack;
    const log = this.deps.log;
    const tables = [...this.pending].sort();
    this.pending.clear();
    if (!ct) return 0;
    const frontends = conntrackFrontends(desired);
    let deleted = 0;
    let gone = 0;
    let examined = 0;
    for (const table of tables) {
      const [family, proto] = table.split('/') as [IpFamily, string];
      const protocol = Number(proto);
      const name = `${family} ${PROTOCOL_NAMES[protocol] ?? protocol}`;
      try {
        counts.conntrackOps++;
        const flows = await ct.listFlows(family, protocol);
        examined += flows.length;
        const stale = staleConntrackFlows(
          flows,
          frontends.filter((f) => f.family === family && f.protocol === protocol),
        );
        if (stale.length === 0) continue;
        counts.conntrackOps += stale.length;
        const r = await ct.deleteFlows(stale);
        deleted += r.deleted;
        gone += r.gone;
        for (const f of r.failures.slice(0, 5)) log.error(f.error.message, { errno: f.error.errnoName });
        if (r.failures.length > 5) log.error(`conntrack ${name}: ${r.failures.length - 5} more deletes refused`);
      } catch (e) {
        log.error(`conntrack ${name}: stale entry cleanup failed (IPVS is synced): ${(e as Error).message}`, {
          code: (e as { code?: string }).code,
        });
      }
    }
    counts.conntrackDeleted += deleted;
    const names = tables.map((t) => `${t.split('/')[0]} ${PROTOCOL_NAMES[Number(t.split('/')[1])] ?? t}`);
    log.info(`conntrack: deleted ${deleted} stale entries (${names.join(', ')})`, {
      tables,
      examined,
      deleted,
      alreadyGone: gone,
    });
    return deleted;
  }
}
