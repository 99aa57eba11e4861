/** The Ipset logic shared by the real implementation and the fake: delta, restore, quarantine, memory. */
import { ExecError } from '../../errors';
import { componentLog } from '../../log';
import { DeltaLine, KnownSet, diffIpsets } from './diff-ipsets';
import {
  Ipset,
  IpsetNetlinkUnavailableError,
  IpsetObservation,
  IpsetRunner,
  IpsetState,
  IpsetSyncResult,
  QuarantinedLine,
} from './ipset';
import { parseIpsetSave } from './ipset-text';
import { DesiredIpsets } from '../../model/ipset';

/** Where quarantine notices go (winston's Logger fits). */
export interface WarnLogger {
  warn(message: string, meta?: Record<string, unknown>): unknown;
}

/** More refused lines than this in one set in one sync quarantine the whole set. */
export const MAX_REFUSED_LINES_PER_SET = 8;

/** The quarantined lines of one set, valid while the set's desired members stay these. */
interface SetQuarantine {
  readonly desired: ReadonlySet<string>;
  /** by restore line text */
  readonly lines: Map<string, QuarantinedLine>;
  /** every line of the set is held back (failed create, or too many refusals) */
  whole?: QuarantinedLine;
}

/** What IpsetSync.restoreAll sent: its restores, the last text that went through, whether ipset refused a line. */
interface Restored {
  readonly execs: number;
  readonly lastText: string;
  readonly refused: boolean;
}

/** Brings the kernel's sets to the desired ones through an IpsetRunner (see the file comment). */
export class IpsetSync implements Ipset {
  /** What the kernel holds, as far as we know; undefined = must observe first. */
  private known: Map<string, KnownSet> | undefined;
  private readonly quarantine = new Map<string, SetQuarantine>();
  /** the runner's list() said it cannot serve here (logged once): save() from then on */
  private listUnavailable = false;

  constructor(
    private readonly runner: IpsetRunner,
    private readonly log: WarnLogger = componentLog('ipset'),
  ) {}

  async observe(): Promise<IpsetState> {
    return (await this.observeCounted()).state;
  }

  async observeCounted(): Promise<IpsetObservation> {
    let state: IpsetState | undefined;
    let execs = 0;
    if (this.runner.list && !this.listUnavailable) {
      try {
        state = await this.runner.list();
      } catch (e) {
        if (!(e instanceof IpsetNetlinkUnavailableError)) throw e;
        this.listUnavailable = true;
        this.log.warn(
          `ipset: reading the sets over netlink is not possible here (${e.message}); using \`ipset save\` from now on`,
          {
            reason: e.message,
          },
        );
      }
    }
    if (!state) {
      state = parseIpsetSave(await this.runner.save());
      execs = 1;
    }
    this.known = new Map(state);
    return { state, execs };
  }

  async write(text: string): Promise<number> {
    await this.runner.restore(text);
    return 1;
  }

  invalidate(): void {
    this.known = undefined;
    this.quarantine.clear();
  }

  async sync(desired: DesiredIpsets): Promise<IpsetSyncResult> {
    let execs = 0;
    if (!this.known) execs += (await this.observeCounted()).execs;
    this.retryChangedSets(desired);
    const fresh: QuarantinedLine[] = [];
    const delta = diffIpsets(this.known!, desired, (l) => this.blocked(l));
    for (const m of delta.misfits) {
      const line: DeltaLine = { set: m.set, verb: 'add', member: m.member, text: `add ${m.set} ${m.member}` };
      if (!this.blocked(line)) this.hold(desired, fresh, line, m.reason, false);
    }
    if (delta.ops.length === 0) {
      return { execs, created: [], added: 0, deleted: 0, restoreText: '', quarantined: fresh };
    }
    let restored: Restored;
    try {
      restored = await this.restoreAll(delta.ops, desired, fresh);
    } catch (e) {
      // ipset restore is not transactional: some lines may have been applied.
      this.known = undefined;
      throw e;
    }
    execs += restored.execs;
    const applied = delta.ops.filter((l) => !this.blocked(l));
    if (restored.refused) {
      // lines before a refused one may or may not have been applied on the way: read the truth
      execs += (await this.observeCounted()).execs;
    } else {
      this.remember(desired);
    }
    return {
      execs,
      created: applied.filter((l) => l.verb === 'create').map((l) => l.set),
      added: applied.filter((l) => l.verb === 'add').length,
      deleted: applied.filter((l) => l.verb === 'del').length,
      restoreText: restored.lastText,
      quarantined: fresh,
    };
  }

  /** A set whose desired members changed gets its quarantined lines retried. */
  private retryChangedSets(desired: DesiredIpsets): void {
    for (const [name, q] of this.quarantine) {
      const want = desired.get(name);
      if (!want || !sameMembers(want.members, q.desired)) this.quarantine.delete(name);
    }
  }

  /**
   * Sends `ops` in as few restores as ipset allows: a line ipset refuses (named by its line
   * number, or the only one) is quarantined and the rest sent again; a refusal that names no
   * line halves the chunk (lines are idempotent). Throws what is not ipset's refusal.
   */
  private async restoreAll(ops: DeltaLine[], desired: DesiredIpsets, fresh: QuarantinedLine[]): Promise<Restored> {
    let execs = 0;
    let lastText = '';
    let refused = false;
    /** lines ipset refused in this sync, per set */
    const refusals = new Map<string, number>();
    // a stack of chunks still to apply, first chunk on top
    const stack: DeltaLine[][] = [ops];
    while (stack.length > 0) {
      let chunk = stack.pop()!.filter((l) => !this.blocked(l));
      while (chunk.length > 0) {
        const text = chunk.map((l) => l.text).join('\n') + '\n';
        try {
          execs++;
          await this.runner.restore(text);
          lastText = text;
          break;
        } catch (e) {
          if (!(e instanceof ExecError)) throw e;
          refused = true;
          const bad =
            e.line !== undefined && e.line >= 1 && e.line <= chunk.length
              ? chunk[e.line - 1]
              : chunk.length === 1
                ? chunk[0]
                : undefined;
          if (bad) {
            this.hold(
              desired,
              fresh,
              bad,
              ipsetComplaint(e.stderr),
              (refusals.get(bad.set) ?? 0) >= MAX_REFUSED_LINES_PER_SET,
            );
            refusals.set(bad.set, (refusals.get(bad.set) ?? 0) + 1);
            chunk = chunk.filter((l) => !this.blocked(l));
            continue;
          }
          // ipset named no line: halve, apply each half on its own (lines are idempotent)
          const mid = chunk.length >> 1;
          stack.push(chunk.slice(mid), chunk.slice(0, mid));
          chunk = [];
        }
      }
    }
    return { execs, lastText, refused };
  }

  /** The kernel now holds `desired`, except for quarantined lines, which were not sent. */
  private remember(desired: DesiredIpsets): void {
    const known = this.known!;
    for (const [name, want] of desired) {
      const q = this.quarantine.get(name);
      if (q?.whole) continue; // nothing of this set was sent
      // snapshot: the caller may mutate its sets after sync returns
      const members = new Set<string>(want.members);
      for (const l of q?.lines.values() ?? []) {
        if (l.verb === 'add') members.delete(l.member!);
        else if (l.verb === 'del') members.add(l.member!);
      }
      known.set(name, { type: want.type, family: want.family, members });
    }
  }

  private blocked(l: DeltaLine): boolean {
    const q = this.quarantine.get(l.set);
    return q !== undefined && (q.whole !== undefined || q.lines.has(l.text));
  }

  /** Quarantines `line` (its whole set when it is a create, or when `wholeSet`), logs once. */
  private hold(
    desired: DesiredIpsets,
    fresh: QuarantinedLine[],
    line: DeltaLine,
    reason: string,
    wholeSet: boolean,
  ): void {
    let q = this.quarantine.get(line.set);
    if (!q) {
      const members = desired.get(line.set)?.members ?? new Set<string>();
      q = { desired: new Set(members), lines: new Map() };
      this.quarantine.set(line.set, q);
    }
    const entry: QuarantinedLine = {
      set: line.set,
      verb: line.verb,
      ...(line.member !== undefined ? { member: line.member } : {}),
      reason,
    };
    fresh.push(entry);
    if (line.verb === 'create' || wholeSet) {
      q.whole = entry;
      this.log.warn(
        `ipset ${line.set}: ${line.verb === 'create' ? 'cannot be created' : `more than ${MAX_REFUSED_LINES_PER_SET} lines refused`} (${reason}); ` +
          'no line of this set is sent until its desired members change',
        { set: line.set, line: line.text, reason },
      );
      return;
    }
    q.lines.set(line.text, entry);
    this.log.warn(
      `ipset ${line.set}: member ${line.member} quarantined, not ${line.verb === 'add' ? 'added' : 'deleted'} (${reason}); ` +
        "the other members are applied; retried when the set's desired members change",
      { set: line.set, member: line.member, verb: line.verb, reason },
    );
  }
}

function sameMembers(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const m of a) if (!b.has(m)) return false;
  return true;
}

/** "ipset v7.17: Error in line 3: The value ... invalid\n" -> "The value ... invalid" */
export function ipsetComplaint(stderr: string): string {
  const first = stderr.trim().split('\n')[0] ?? '';
  return first.replace(/^ipset v[\d.]+: /, '').replace(/^Error in line \d+: /, '') || 'refused';
}
