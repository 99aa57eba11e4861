/**
 * The real servers the proxier set to weight 0 and waits to delete (graceful termination),
 * by virtual server. A virtual server's drains are read together, so it is due when its
 * oldest unread drain is; virtual servers are kept in the order they fall due (a new one is
 * due last, a checked one goes to the back), and finding the due ones reads only those. A
 * flat list scanned per sync cost most of a sync's JavaScript under churn, when thousands
 * of real servers drain at once.
 */

/** One real server draining (at weight 0). */
export interface Drain {
  /** when it was set to weight 0 (the drain timeout counts from here) */
  readonly since: number;
}

interface VirtualServerDrains {
  /**
   * when its real servers' connection counts were last read, or when the oldest unread one
   * started draining: the virtual server is due one interval later
   */
  checkedAt: number;
  readonly realServers: Map<string, Drain>;
}

/** The virtual servers whose draining real servers are due a read, and when the next one is. */
export interface DueDrains {
  /** virtual server keys to read now, oldest first */
  readonly due: string[];
  /** more were due than `limit` */
  readonly more: boolean;
  /** when the first one not yet due falls due (Infinity: none) */
  readonly nextDue: number;
}

/** The draining real servers, by virtual server, in the order they fall due (see the file comment). */
export class DrainingRealServers {
  private readonly byVs = new Map<string, VirtualServerDrains>();
  private total = 0;

  /** Real servers draining, over every virtual server. */
  get size(): number {
    return this.total;
  }

  /** `rsKey` of `vsKey` started draining at `now` (again, if it was: the timeout restarts). */
  start(vsKey: string, rsKey: string, now: number): void {
    let vs = this.byVs.get(vsKey);
    if (!vs) this.byVs.set(vsKey, (vs = { checkedAt: now, realServers: new Map() }));
    if (!vs.realServers.has(rsKey)) this.total++;
    vs.realServers.set(rsKey, { since: now });
  }

  /** `rsKey` of `vsKey` is no longer draining (deleted, or given weight). */
  stop(vsKey: string, rsKey: string): void {
    const vs = this.byVs.get(vsKey);
    if (!vs?.realServers.delete(rsKey)) return;
    this.total--;
    if (vs.realServers.size === 0) this.byVs.delete(vsKey);
  }

  /** The virtual server is gone, and its real servers with it. */
  dropVirtualServer(vsKey: string): void {
    const vs = this.byVs.get(vsKey);
    if (!vs) return;
    this.total -= vs.realServers.size;
    this.byVs.delete(vsKey);
  }

  /** Has the virtual server real servers draining? */
  hasVirtualServer(vsKey: string): boolean {
    return this.byVs.has(vsKey);
  }

  get(vsKey: string, rsKey: string): Drain | undefined {
    return this.byVs.get(vsKey)?.realServers.get(rsKey);
  }

  /** The draining real servers of one virtual server. */
  realServersOf(vsKey: string): ReadonlyMap<string, Drain> {
    return this.byVs.get(vsKey)?.realServers ?? new Map();
  }

  /** Virtual servers whose oldest unread drain is `interval` old at `now`, at most `limit`. */
  due(now: number, interval: number, limit: number): DueDrains {
    const due: string[] = [];
    for (const [vsKey, vs] of this.byVs) {
      const at = vs.checkedAt + interval;
      if (at > now) return { due, more: false, nextDue: at };
      if (due.length >= limit) return { due, more: true, nextDue: at };
      due.push(vsKey);
    }
    return { due, more: false, nextDue: Infinity };
  }

  /** The virtual server's drains were read at `now`: it goes to the back of the order. */
  checked(vsKey: string, now: number): void {
    const vs = this.byVs.get(vsKey);
    if (!vs) return;
    vs.checkedAt = now;
    this.byVs.delete(vsKey);
    this.byVs.set(vsKey, vs);
  }

  /**
   * Replaces everything (after a kernel read) with these drains; one not seen before started
   * at `now`. A virtual server keeps when it was last read (a new one: `now`), so it falls due
   * when it did before.
   */
  replaceAll(drains: Iterable<readonly [vsKey: string, rsKey: string]>, now: number): void {
    const next = new Map<string, VirtualServerDrains>();
    let total = 0;
    for (const [vsKey, rsKey] of drains) {
      let vs = next.get(vsKey);
      if (!vs) next.set(vsKey, (vs = { checkedAt: this.byVs.get(vsKey)?.checkedAt ?? now, realServers: new Map() }));
      if (!vs.realServers.has(rsKey)) total++;
      vs.realServers.set(rsKey, this.get(vsKey, rsKey) ?? { since: now });
    }
    this.byVs.clear();
    for (const [k, v] of [...next].sort((a, b) => a[1].checkedAt - b[1].checkedAt)) this.byVs.set(k, v);
    this.total = total;
  }
}
