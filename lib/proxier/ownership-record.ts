/**
 * The life of kube-ipvs's ownership record (what it holds: model/ownership-record.ts) across a
 * sync's IPVS changes:
 *  - before a batch of IPVS ops: the creates are recorded with what they program, the edits
 *    with both the old and the new state;
 *  - after it: the deletes that went through (or found nothing) are forgotten, the edits
 *    narrowed to the state the kernel has, a create the kernel refused forgotten;
 *  - each full sync, once the table is classified: the record becomes exactly the kernel
 *    virtual servers kube-ipvs owns, with the kernel's state (a record an earlier kube-ipvs
 *    wrote without comments, or one too small for the frontends, is rebuilt beside it and
 *    swapped in: `ipset swap` is atomic).
 * Each write is one `ipset restore -exist` that completes before the IPVS op it precedes, so a
 * SIGKILL at any point leaves a record true of the kernel: a member for a virtual server not made
 * yet (the next full sync forgets it), or for one made and recorded. A write that fails fails the
 * sync before any IPVS op runs: nothing is created that the record does not name.
 */
import { constants as osConstants } from 'node:os';
import { Ipset, IpsetState } from '../kernel/ipset/ipset';
import { KubeIpvsError } from '../errors';
import { familyKeyword } from '../kernel/ipset/ipset-text';
import { IpvsOp, IpvsOpResult } from '../kernel/ipvs/ipvs';
import { IpFamily, fromAddressFamily } from '../model/ip-family';
import { entryFrontend } from '../model/ipset';
import { VirtualServerId, VirtualServerSpec } from '../model/ipvs';
import { SetName, ipsetName } from '../model/names';
import {
  RecordedState,
  formatRecordedStates,
  parseRecordedStates,
  recordMaxelem,
  recordedStateOf,
} from '../model/ownership-record';
import { faultPoint } from './fault-points';
import type { ProxierDeps } from './types';

const E = osConstants.errno;

/** One family's record: what the kernel holds (as last read or written) and what it is to hold. */
interface RecordSet {
  readonly name: string;
  /** the kernel's set: undefined when it does not exist (or is unknown) */
  kernel: { commented: boolean; maxelem: number; readonly entries: Map<string, string> } | undefined;
  /** member -> comment, as the record is to be */
  readonly entries: Map<string, string>;
}

/** The record's kernel name for a family, and the name a rebuild fills before the swap. */
export function recordSetName(family: IpFamily): { name: string; rebuild: string } {
  const name = ipsetName(SetName.IPVS_OWNED, family);
  return { name, rebuild: `${name}-NEW` };
}

type Counts = { execs?: number };

/** The ownership record's life (see the file comment). */
export class OwnershipRecord {
  private readonly sets = new Map<IpFamily, RecordSet>();

  constructor(private readonly deps: Pick<ProxierDeps, 'log'> & Partial<Pick<ProxierDeps, 'ipsets'>>) {}

  /** The sets as a full sync read them (undefined: not read): the record as the kernel holds it. */
  load(state: IpsetState | undefined, families: readonly IpFamily[]): void {
    this.sets.clear();
    for (const family of families) {
      const { name } = recordSetName(family);
      const observed = state?.get(name);
      const entries = new Map<string, string>();
      for (const m of observed?.members ?? []) entries.set(m, observed?.comments?.get(m) ?? '');
      this.sets.set(family, {
        name,
        // unread: as if missing, so the first write makes sure it exists
        kernel: observed && {
          commented: observed.comments !== undefined,
          maxelem: Number(/(?:^| )maxelem (\d+)/.exec(observed.options)?.[1] ?? 0),
          entries: new Map(entries),
        },
        entries,
      });
    }
  }

  /**
   * A full sync, after classification: the record is to become exactly `owned` (the kernel's
   * virtual servers kube-ipvs owns, as the kernel holds them). Written with the sync's `before`,
   * which always comes (one write, none when the kernel's record already says it).
   */
  rewrite(owned: Iterable<VirtualServerSpec>): void {
    for (const set of this.sets.values()) set.entries.clear();
    for (const vs of owned) {
      const member = memberOf(vs);
      if (member)
        this.sets.get(fromAddressFamily(vs.af))?.entries.set(member, formatRecordedStates([recordedStateOf(vs)]));
    }
  }

  /**
   * Before IPVS ops run: the creates and edits they make (`applied`: the kernel's spec now) and
   * what a full sync's rewrite changed, in one write per Ipset; `planned` virtual servers size
   * the record's room.
   */
  async before(
    ops: readonly IpvsOp[],
    applied: (vs: VirtualServerSpec) => VirtualServerSpec | undefined,
    planned: number,
    counts: Counts,
  ): Promise<void> {
    for (const op of ops) {
      if (op.kind !== 'newService' && op.kind !== 'setService') continue;
      const member = memberOf(op.vs);
      const set = this.sets.get(fromAddressFamily(op.vs.af));
      if (!member || !set) continue;
      const states: RecordedState[] = [recordedStateOf(op.vs)];
      if (op.kind === 'setService') {
        // true of the kernel before the edit and after it
        const now = applied(op.vs);
        if (now) states.unshift(recordedStateOf(now));
        states.unshift(...(parseRecordedStates(set.entries.get(member) ?? '') ?? []));
      }
      set.entries.set(member, formatRecordedStates(states));
    }
    await this.flush(planned, counts);
  }

  /** After IPVS ops ran: the deletes forgotten, the edits narrowed, refused creates forgotten. */
  async after(ops: readonly IpvsOp[], results: readonly IpvsOpResult[], counts: Counts): Promise<void> {
    // one result per op (Ipvs.run's contract): a shorter list would forget what the kernel holds
    if (results.length !== ops.length)
      throw new Error(`ownership record: ${results.length} IPVS results for ${ops.length} ops`);
    ops.forEach((op, i) => {
      if (op.kind !== 'newService' && op.kind !== 'setService' && op.kind !== 'delService') return;
      const member = memberOf(op.vs);
      const set = this.sets.get(fromAddressFamily(op.vs.af));
      if (!member || !set) return;
      const r = results[i]!;
      if (op.kind === 'delService') {
        if (r.ok || r.error.errno === E.ESRCH) set.entries.delete(member);
      } else if (op.kind === 'newService') {
        if (!r.ok) set.entries.delete(member);
      } else {
        const states = parseRecordedStates(set.entries.get(member) ?? '') ?? [];
        const done = formatRecordedStates([recordedStateOf(op.vs)]);
        // refused: the kernel kept the state before the edit (the other one recorded)
        const kept = r.ok ? undefined : states.find((st) => formatRecordedStates([st]) !== done);
        set.entries.set(member, kept ? formatRecordedStates([kept]) : done);
      }
    });
    await this.flush(0, counts);
  }

  /**
   * Brings the kernel's record to what it is to be: the members that differ, or, for a record
   * missing, without comments (an earlier kube-ipvs's) or without room for twice `planned` (and
   * its members), a new set filled beside it and swapped in. One restore per Ipset.
   */
  private async flush(planned: number, counts: Counts): Promise<void> {
    const writes = new Map<Ipset, { families: IpFamily[]; lines: string[] }>();
    for (const [family, set] of this.sets) {
      const ipset = this.deps.ipsets?.[family];
      if (!ipset) continue;
      const lines = this.linesOf(family, set, planned);
      if (lines.length === 0) continue;
      const w = writes.get(ipset);
      if (w) {
        w.families.push(family);
        w.lines.push(...lines);
      } else writes.set(ipset, { families: [family], lines });
    }
    for (const [ipset, w] of writes) await this.write(ipset, w, counts);
  }

  private linesOf(family: IpFamily, set: RecordSet, planned: number): string[] {
    const k = set.kernel;
    const maxelem = recordMaxelem(Math.max(planned, set.entries.size));
    if (!k || !k.commented || k.maxelem < maxelem) return this.rebuild(family, set, Math.max(maxelem, k?.maxelem ?? 0));
    const lines: string[] = [];
    for (const [m, c] of set.entries) if (k.entries.get(m) !== c) lines.push(addLine(set.name, m, c));
    for (const m of k.entries.keys()) if (!set.entries.has(m)) lines.push(`del ${set.name} ${m}`);
    return lines;
  }

  /** The lines that fill a new set and swap it in (or create the record when there is none). */
  private rebuild(family: IpFamily, set: RecordSet, maxelem: number): string[] {
    const { name, rebuild } = recordSetName(family);
    const k = set.kernel;
    const create = (n: string) =>
      `create ${n} hash:ip,port family ${familyKeyword(family)} hashsize 1024 maxelem ${maxelem} comment`;
    const adds = [...set.entries].map(([m, c]) => addLine(k ? rebuild : name, m, c));
    this.deps.log.info(
      k
        ? `rebuilding ownership record ${name} (${k.commented ? '' : 'with comments, '}maxelem ${maxelem}, ${set.entries.size} members)`
        : `creating ownership record ${name} (maxelem ${maxelem}, ${set.entries.size} members)`,
      { set: name, maxelem, members: set.entries.size },
    );
    // (a rebuild set a killed kube-ipvs left is flushed first)
    return k
      ? [create(rebuild), `flush ${rebuild}`, ...adds, `swap ${rebuild} ${name}`, `destroy ${rebuild}`]
      : [create(name), ...adds];
  }

  private async write(ipset: Ipset, w: { families: IpFamily[]; lines: string[] }, counts: Counts): Promise<void> {
    faultPoint('ownership record');
    try {
      const execs = await ipset.write(w.lines.join('\n') + '\n');
      if (counts.execs !== undefined) counts.execs += execs;
    } catch (e) {
      // unknown what went in: rebuilt at the next write (and read again by the next full sync)
      for (const f of w.families) this.sets.get(f)!.kernel = undefined;
      throw new OwnershipRecordError(
        `could not write ownership record ${w.families.map((f) => recordSetName(f).name).join(', ')}: ${(e as Error).message}; no virtual server is created or changed until it can be written`,
        { cause: e },
      );
    }
    for (const f of w.families) {
      const set = this.sets.get(f)!;
      const { name } = recordSetName(f);
      const created = w.lines.find((l) => l.startsWith(`create ${name} `) || l.startsWith(`create ${name}-NEW `));
      const maxelem = created ? Number(/ maxelem (\d+)/.exec(created)?.[1]) : set.kernel!.maxelem;
      set.kernel = { commented: true, maxelem, entries: new Map(set.entries) };
    }
  }
}

/** The record could not be written: the IPVS ops after it did not run. */
export class OwnershipRecordError extends KubeIpvsError {
  readonly code = 'KIPVS_OWNERSHIP_RECORD' as const;
}

function addLine(set: string, member: string, comment: string): string {
  return `add ${set} ${member} comment "${comment}"`;
}

/** The record's member of a virtual server; undefined for a fwmark one (or a protocol ipset cannot hold). */
function memberOf(vs: VirtualServerId): string | undefined {
  if (vs.fwmark > 0) return undefined;
  try {
    return entryFrontend(vs);
  } catch {
    return undefined;
  }
}
