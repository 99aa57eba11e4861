/** (known, desired) -> the restore lines that turn one into the other. Pure. */
import { IpsetTypeMismatchError } from '../../errors';
import { familyKeyword, formatCreate } from './ipset-text';
import { IpFamily } from '../../model/ip-family';
import { DesiredIpsets, ipsetMemberMismatch } from '../../model/ipset';

/** What kube-ipvs knows about a set: from `observe()` or from its own last restore. */
export interface KnownSet {
  readonly type: string;
  readonly family?: IpFamily;
  readonly members: ReadonlySet<string>;
}

/** One restore line and what it is about. */
export interface DeltaLine {
  readonly set: string;
  readonly verb: 'create' | 'add' | 'del';
  /** for add/del */
  readonly member?: string;
  /** the restore line, without newline */
  readonly text: string;
}

/** A desired member that cannot go into its set (see ipsetMemberMismatch); never written. */
export interface MisfitMember {
  readonly set: string;
  readonly member: string;
  readonly reason: string;
}

/** The restore lines that turn the known sets into the desired ones, with counts and misfits. */
export interface IpsetDelta {
  readonly created: string[];
  readonly added: number;
  readonly deleted: number;
  /** restore lines, without trailing newline; empty when nothing changes */
  readonly lines: string[];
  /** the same lines, with the set and member each is about */
  readonly ops: DeltaLine[];
  readonly misfits: MisfitMember[];
}

/**
 * Per desired set, in the order given: `create` when the set is unknown, then `add` for new
 * members and `del` for stale ones. Members in both are never named, so a restore can never
 * make them absent. A new member that does not fit its set's type or family is left out and
 * reported in `misfits`; `skip(line)` true leaves a line out silently (quarantined lines).
 * Throws IpsetTypeMismatchError when a known set has another type, or another family (hash
 * types only; bitmap:port has none).
 */
export function diffIpsets(
  known: ReadonlyMap<string, KnownSet>,
  desired: DesiredIpsets,
  skip: (line: DeltaLine) => boolean = () => false,
): IpsetDelta {
  const ops: DeltaLine[] = [];
  const misfits: MisfitMember[] = [];
  const created: string[] = [];
  let added = 0;
  let deleted = 0;
  const push = (l: DeltaLine): boolean => {
    if (skip(l)) return false;
    ops.push(l);
    return true;
  };
  for (const [name, want] of desired) {
    const have = known.get(name);
    if (have) {
      const familyDiffers = want.type !== 'bitmap:port' && have.family !== undefined && have.family !== want.family;
      if (have.type !== want.type || familyDiffers) {
        const desc = (t: string, f?: IpFamily) => (f && t !== 'bitmap:port' ? `${t} family ${familyKeyword(f)}` : t);
        throw new IpsetTypeMismatchError(name, desc(have.type, have.family), desc(want.type, want.family));
      }
    } else if (push({ set: name, verb: 'create', text: formatCreate(name, want.type, want.family) })) {
      created.push(name);
    }
    for (const m of want.members) {
      if (have?.members.has(m)) continue;
      const misfit = ipsetMemberMismatch(want.type, want.family, m);
      if (misfit) misfits.push({ set: name, member: m, reason: misfit });
      else if (push({ set: name, verb: 'add', member: m, text: `add ${name} ${m}` })) added++;
    }
    if (have) {
      const wanted: ReadonlySet<string> = want.members;
      for (const m of have.members) {
        if (!wanted.has(m) && push({ set: name, verb: 'del', member: m, text: `del ${name} ${m}` })) deleted++;
      }
    }
  }
  return { created, added, deleted, lines: ops.map((o) => o.text), ops, misfits };
}
