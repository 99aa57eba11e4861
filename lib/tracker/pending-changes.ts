/**
 * Which services changed since the proxier last drained, with kube-proxy's change-tracker
 * semantics (K8S pkg/proxy/servicechangetracker.go, endpointschangetracker.go): a service is
 * pending while its state differs from what it was at the last drain, so a change undone
 * before the next sync (add then delete, update then update back) leaves nothing pending.
 * States are compared as snapshots: digests of the state (`stateSnapshot`).
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

export class PendingChanges {
  /** name -> snapshot at the last drain, for names changed since */
  private readonly previous = new Map<string, string>();
  /** events that changed a service's state (kubeproxy_sync_proxy_rules_*_changes_total) */
  changesTotal = 0;

  /**
   * Records one event that moved `name` from snapshot `before` to `after` ('' = absent).
   * Returns whether the event changed anything (false for a no-op update).
   */
  record(name: string, before: string, after: string): boolean {
    if (before === after) return false;
    this.changesTotal++;
    const prev = this.previous.get(name);
    if (prev === undefined) this.previous.set(name, before);
    else if (prev === after) this.previous.delete(name);
    return true;
  }

  /** The names pending since the last drain; clears them. */
  drain(): Set<string> {
    const out = new Set(this.previous.keys());
    this.previous.clear();
    return out;
  }

  /** Services pending now (kubeproxy_sync_proxy_rules_*_changes_pending). */
  get pending(): number {
    return this.previous.size;
  }
}
