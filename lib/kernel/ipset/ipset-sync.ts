/** The Ipset logic shared by the real implementation and the twin: delta, one restore, memory. */
import { DesiredIpsets } from '../../plan/ipsets';
import { KnownSet, diffIpsets } from './diff-ipsets';
import { Ipset, IpsetRunner, IpsetState, IpsetSyncResult } from './ipset';
import { parseIpsetSave } from './ipset-text';

export class IpsetSync implements Ipset {
  /** What the kernel holds, as far as we know; undefined = must observe first. */
  private known: Map<string, KnownSet> | undefined;

  constructor(private readonly runner: IpsetRunner) {}

  async observe(): Promise<IpsetState> {
    const state = parseIpsetSave(await this.runner.save());
    this.known = new Map(state);
    return state;
  }

  invalidate(): void {
    this.known = undefined;
  }

  async sync(desired: DesiredIpsets): Promise<IpsetSyncResult> {
    let execs = 0;
    if (!this.known) {
      await this.observe();
      execs++;
    }
    const known = this.known!;
    const delta = diffIpsets(known, desired);
    if (delta.lines.length === 0) {
      return { execs, created: [], added: 0, deleted: 0, restoreText: '' };
    }
    const text = delta.lines.join('\n') + '\n';
    try {
      execs++;
      await this.runner.restore(text);
    } catch (e) {
      // ipset restore is not transactional: some lines may have been applied.
      this.known = undefined;
      throw e;
    }
    for (const [name, want] of desired) {
      // snapshot: the caller may mutate its sets after sync returns
      known.set(name, { type: want.type, family: want.family, members: new Set(want.members) });
    }
    return { execs, created: delta.created, added: delta.added, deleted: delta.deleted, restoreText: text };
  }
}
