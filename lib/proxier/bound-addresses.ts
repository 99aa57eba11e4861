/**
 * The addresses bound on kube-ipvs0: as a full sync read them, moved forward by the binds and
 * unbinds that went through. A failed bind or unbind asks for a full sync (it re-reads them).
 */
import type winston from 'winston';
import { KUBE_IPVS0, Link } from '../kernel/link/link';
import { bindAddresses, unbindAddresses } from '../kernel/link/dummy-device';
import { NetlinkError } from '../errors';

/** Binds and unbinds the addresses on kube-ipvs0, and remembers those bound (see the file comment). */
export class BoundAddresses {
  private dummyIndex: number | undefined;
  private bound = new Set<string>();

  constructor(private readonly deps: { readonly link: Link; readonly log: winston.Logger }) {}

  /** What a full sync read: kube-ipvs0's index and its addresses. */
  observed(dummyIndex: number, bound: Set<string>): void {
    this.dummyIndex = dummyIndex;
    this.bound = bound;
  }

  /** The bound addresses, sorted. */
  list(): string[] {
    return [...this.bound].sort();
  }

  get size(): number {
    return this.bound.size;
  }

  /**
   * Binds what `want` has and kube-ipvs0 lacks, unbinds the rest (many requests to a datagram:
   * a cold node binds every VIP). Returns whether one failed (then a full sync re-reads them).
   */
  async sync(want: ReadonlySet<string>, counts: { linkOps: number }): Promise<boolean> {
    const index = this.dummyIndex;
    if (index === undefined) return false;
    const { link, log } = this.deps;
    const toBind = [...want].filter((a) => !this.bound.has(a));
    const toUnbind = [...this.bound].filter((a) => !want.has(a));
    counts.linkOps += toBind.length + toUnbind.length;
    let failed = false;
    const steps = [
      { what: 'bind', prep: 'to', addresses: toBind, run: bindAddresses, done: (a: string) => this.bound.add(a) },
      {
        what: 'unbind',
        prep: 'from',
        addresses: toUnbind,
        run: unbindAddresses,
        done: (a: string) => this.bound.delete(a),
      },
    ];
    for (const { what, prep, addresses, run, done } of steps) {
      if (addresses.length === 0) continue;
      let results: (NetlinkError | null)[];
      try {
        results = await run(link, index, addresses);
      } catch (e) {
        log.error(`${what} ${addresses.length} addresses ${prep} ${KUBE_IPVS0}: ${(e as Error).message}`);
        failed = true;
        continue;
      }
      // one result per address (Link's contract): more would name no address
      if (results.length !== addresses.length)
        throw new Error(`${what} on ${KUBE_IPVS0}: ${results.length} results for ${addresses.length} addresses`);
      results.forEach((e, i) => {
        const a = addresses[i]!;
        if (!e) {
          done(a);
          return;
        }
        log.error(`${what} ${a} ${prep} ${KUBE_IPVS0}: ${e.message}`);
        failed = true;
      });
    }
    return failed;
  }
}
