/**
 * Which services changed since the proxier last took them, with kube-proxy's change-tracker
 * semantics (K8S pkg/proxy/servicechangetracker.go, endpointschangetracker.go): a service is
 * pending while its state differs from what it was at the last take, so a change undone
 * before the next sync (add then delete, update then update back) leaves nothing pending.
 * States are compared structurally (`sameStructure`), bailing at the first difference: the
 * trackers' states are immutable, so the state at the last take is kept as the object itself
 * (the trackers have dropped it otherwise), never as a copy or a digest. (A SHA-256 of each
 * state's JSON was a large share of the daemon's CPU under heavy endpoint churn.)
 */

/**
 * Whether two JSON-like values (primitives, arrays, plain objects, Maps) are equal: arrays and
 * Maps in order (the trackers keep theirs sorted), objects by key whatever the key order, a
 * key whose value is undefined as absent (as JSON has it). The same object is equal at once.
 */
export function sameStructure(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameStructure(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  if (a instanceof Map) {
    if (!(b instanceof Map) || a.size !== b.size) return false;
    const ib = b.entries();
    for (const [ka, va] of a) {
      const [kb, vb] = ib.next().value as [unknown, unknown];
      if (ka !== kb || !sameStructure(va, vb)) return false;
    }
    return true;
  }
  if (b instanceof Map) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  let defined = 0;
  for (const k in ra) {
    const va = ra[k];
    if (va === undefined) continue;
    defined++;
    if (!sameStructure(va, rb[k])) return false;
  }
  for (const k in rb) if (rb[k] !== undefined) defined--;
  return defined === 0;
}

/** The Services whose state differs from the last take (see the file comment). */
export class PendingChanges<S> {
  /** name -> its state at the last take (null: absent), for names changed since */
  private readonly previous = new Map<string, S | null>();
  /** events that changed a service's state (kubeproxy_sync_proxy_rules_*_changes_total) */
  changesTotal = 0;

  /** `same`: whether two states are equal (the proxy would program the same). */
  constructor(private readonly same: (a: S, b: S) => boolean) {}

  /** Is `a` (null: absent) the same state as `b` (undefined: absent)? */
  private sameState(a: S | null, b: S | undefined): boolean {
    if (a === null || b === undefined) return a === null && b === undefined;
    return a === b || this.same(a, b);
  }

  /**
   * Records one event that moved `name` from state `before` to `after` (undefined = absent).
   * Returns whether the event changed anything (false for a no-op update). States are
   * compared only where both exist; `before` must not be mutated afterwards (it may be kept).
   */
  record(name: string, before: S | undefined, after: S | undefined): boolean {
    if (this.sameState(before ?? null, after)) return false;
    this.changesTotal++;
    const prev = this.previous.get(name);
    if (prev === undefined) this.previous.set(name, before ?? null);
    else if (this.sameState(prev, after)) this.previous.delete(name);
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
export abstract class ChangeTracker<S> {
  protected readonly changes: PendingChanges<S>;

  constructor(same: (a: S, b: S) => boolean) {
    this.changes = new PendingChanges(same);
  }

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
