/**
 * What the proxier tells operators about Services it cannot program as asked: refused fields
 * (the converters' and the planner's) and virtual servers claimed by several service ports.
 * Each is a log line and an Event, said once: again only when it changes.
 */
import type winston from 'winston';
import { Refusal, parseServicePortKey } from '../model/service';
import type { RefusedFrontend } from '../model/views';
import { whyWins } from '../plan/claim-rank';
import { DesiredIndex } from './desired-index';
import { EventSink } from './types';

/** Reports refused fields and contested virtual servers once each (see the file comment). */
export class RefusalReports {
  /** virtual servers claimed by several service ports: vsKey -> the winner and losers reported */
  private readonly conflicts = new Map<string, { winner: string; losers: ReadonlySet<string> }>();
  /** refusals already reported, per service (reported again only when they change) */
  private readonly refusals = new Map<string, string>();
  /** the refused frontends now: per service (its plans' refusals), per contested virtual server (its losers) */
  private readonly refusedByService = new Map<string, RefusedFrontend[]>();
  private readonly refusedByConflict = new Map<string, RefusedFrontend[]>();

  constructor(private readonly deps: { readonly log: winston.Logger; readonly events?: EventSink }) {}

  /**
   * Tells every service port that lost a virtual server to another (DesiredIndex.conflict) with
   * a log line and an Event on its Service, once per conflict: again only when the winner
   * changes or after the conflict ended.
   */
  conflictsOf(index: DesiredIndex, touched: Iterable<string>): void {
    const { log, events } = this.deps;
    for (const key of touched) {
      const c = index.conflict(key);
      const before = this.conflicts.get(key);
      if (!c) this.refusedByConflict.delete(key);
      else {
        this.refusedByConflict.set(
          key,
          c.losers.map((l) => {
            const { namespace, name, portName } = parseServicePortKey(l.key);
            return {
              service: `${namespace}/${name}`,
              field: `spec.ports[${portName}]`,
              value: key,
              reason: 'VirtualServerConflict',
              message: `virtual server ${key} (this Service's ${l.kind}) is kept by ${c.winner.key}: ${whyWins(c.winner, l)}`,
            };
          }),
        );
      }
      if (!c) {
        if (before) {
          this.conflicts.delete(key);
          log.info(`virtual server ${key}: no longer claimed by more than one Service (${before.winner} keeps it)`, {
            virtualServer: key,
          });
        }
        continue;
      }
      const same = before?.winner === c.winner.key;
      this.conflicts.set(key, { winner: c.winner.key, losers: new Set(c.losers.map((l) => l.key)) });
      for (const loser of c.losers) {
        if (same && before.losers.has(loser.key)) continue;
        const { namespace, name, portName } = parseServicePortKey(loser.key);
        const why = whyWins(c.winner, loser);
        log.warn(
          `Service ${namespace}/${name}: port ${portName || '(unnamed)'} claims virtual server ${key} (its ${loser.kind}), which ${c.winner.key} keeps: ${why}; not programmed for ${namespace}/${name}`,
          {
            service: `${namespace}/${name}`,
            virtualServer: key,
            winner: c.winner.key,
          },
        );
        events?.warn(
          { kind: 'Service', namespace, name },
          'VirtualServerConflict',
          `virtual server ${key} (this Service's ${loser.kind}) is kept by ${c.winner.key}: ${why}; kube-ipvs does not program it for this Service`,
        );
      }
    }
  }

  /** A Service's refusals now (the converters' and its plans'): said when they changed. */
  refusalsOf(name: string, refusals: readonly Refusal[]): void {
    const { log, events } = this.deps;
    const frontends = refusals
      .filter((r) => r.eventReason !== undefined && FRONTEND_REASONS.has(r.eventReason))
      .map((r): RefusedFrontend => ({
        service: `${r.namespace}/${r.name}`,
        field: r.field,
        value: r.value,
        reason: r.eventReason!,
        message: r.reason,
      }));
    if (frontends.length > 0) this.refusedByService.set(name, frontends);
    else this.refusedByService.delete(name);
    const text = refusals.map((r) => `${r.field}=${r.value}: ${r.reason}`).join('; ');
    if ((this.refusals.get(name) ?? '') === text) return;
    if (text) this.refusals.set(name, text);
    else this.refusals.delete(name);
    // each reason ends with what kube-ipvs does instead (ignored, a default used, the LB closed,
    // the slice's previous version kept): a generic "the rest is programmed" was wrong for some
    for (const r of refusals) {
      log.warn(`${r.kind} ${r.namespace}/${r.name}: refused ${r.field} '${r.value}': ${r.reason}`, {
        object: `${r.namespace}/${r.name}`,
        field: r.field,
      });
      events?.warn(
        { kind: r.kind, namespace: r.namespace, name: r.name },
        r.eventReason ?? 'InvalidField',
        `kube-ipvs ignored ${r.field} '${r.value}': ${r.reason}`,
      );
    }
  }

  /** Every frontend a Service asked for that is not programmed now, sorted by service, then value. */
  refusedFrontends(): RefusedFrontend[] {
    const all = [...this.refusedByService.values(), ...this.refusedByConflict.values()].flat();
    return all.sort((a, b) =>
      a.service < b.service ? -1 : a.service > b.service ? 1 : a.value < b.value ? -1 : a.value > b.value ? 1 : 0,
    );
  }
}

/** The Event reasons that refuse a Service one of its frontends (the rest refuse a field). */
const FRONTEND_REASONS: ReadonlySet<string> = new Set(['ForeignVirtualServer', 'VIPInExcludedCIDR']);
