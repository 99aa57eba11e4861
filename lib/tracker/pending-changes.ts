/**
 * Which services changed since the proxier last took them, with kube-proxy's change-tracker
 * semantics (K8S pkg/proxy/servicechangetracker.go, endpointschangetracker.go): a service is
 * pending while its state differs from what it was at the last take, so a change undone
 * before the next sync (add then delete, update then update back) leaves nothing pending.
 * States are compared as snapshots: digests of the state (`stateSnapshot`), made only when two
 * states are compared (`Snapshot`).
 */
import { hash } from 'node:crypto';

/**
 * The snapshot of a state: a SHA-256 of its JSON, not the JSON itself, which at 10,000
 * Services x 10 endpoints held about 14 MB of strings for nothing but comparison.
 */
export function stateSnapshot(state: unknown): string {
  // the one-shot hash: half the cost of createHash().update().digest() for a 1 KB state
  return hash('sha256', JSON.stringify(state), 'base64');
}

/**
 * A state's snapshot, made the first time it is compared. A Service that is only added never
 * is: nothing is compared with its state until it changes again. (At 10,000 Services x 10
 * endpoints the digests made on the initial list were about a second of the daemon's start in
 * the VM.) `state` must return the same state every time: the tracker's own, never mutated.
 */
export class Snapshot {
  private digest: string | undefined;
  constructor(private readonly state: () => unknown) {}

  get value(): string {
    return (this.digest ??= stateSnapshot(this.state()));
  }
}

/** Is `a` (null: absent) the same state as `b` (undefined: absent)? */
function sameState(a: Snapshot | null, b: Snapshot | undefined): boolean {
  if (a === null || b === undefined) return a === null && b === undefined;
  return a === b || a.value === b.value;
}

export class PendingChanges {
  /** name -> its state at the last take (null: absent), for names changed since */
  private readonly previous = new Map<string, Snapshot | null>();
  /** events that changed a service's state (kubeproxy_sync_proxy_rules_*_changes_total) */
  changesTotal = 0;

  /**
   * Records one event that moved `name` from state `before` to `after` (undefined = absent).
   * Returns whether the event changed anything (false for a no-op update). Digests are made
   * only where two states are compared.
   */
  record(name: string, before: Snapshot | undefined, after: Snapshot | undefined): boolean {
    if (sameState(before ?? null, after)) return false;
    this.changesTotal++;
    const prev = this.previous.get(name);
    if (prev === undefined) this.previous.set(name, before ?? null);
    else if (sameState(prev, after)) this.previous.delete(name);
    return true;
  }

  /** The names pending since the last take; clears them. */
  take(): Set<string> {
    const out = new Set(this.previous.keys());
    this.previous.clear();
    return out;
  }

  /** Services pending now (kubeproxy_sync_proxy_rules_*_changes_pending). */
  get pending(): number {
    return this.previous.size;
  }
}

/**
 * What both trackers (Services, EndpointSlices) keep of their changes and show of them: the
 * proxier takes the names at each sync, the metrics read the two counts.
 */
export abstract class ChangeTracker {
  protected readonly changes = new PendingChanges();

  /** Names changed since the last take (kube-proxy: the change trackers applied at sync start). */
  takeChanges(): Set<string> {
    return this.changes.take();
  }

  /** Services with a change not yet taken. */
  get pendingChanges(): number {
    return this.changes.pending;
  }

  /** Events that changed a Service, since start. */
  get changesTotal(): number {
    return this.changes.changesTotal;
  }
}
