/** (known, desired) -> the restore text that turns one into the other. Pure. */
import { IpsetTypeMismatchError } from '../../errors';
import { DesiredIpsets } from '../../plan/ipsets';
import { IpFamily } from '../../plan/names';
import { familyKeyword, formatCreate } from './ipset-text';

/** What kube-ipvs knows about a set: from `observe()` or from its own last restore. */
export interface KnownSet {
  readonly type: string;
  readonly family?: IpFamily;
  readonly members: ReadonlySet<string>;
}

export interface IpsetDelta {
  readonly created: string[];
  readonly added: number;
  readonly deleted: number;
  /** restore lines, without trailing newline; empty when nothing changes */
  readonly lines: string[];
}

/**
 * Per desired set, in the order given: `create` when the set is unknown, then `add` for new
 * members and `del` for stale ones. Members in both are never named, so a restore can never
 * make them absent. Throws IpsetTypeMismatchError when a known set has another type, or
 * another family (hash types only; bitmap:port has none).
 */
export function diffIpsets(known: ReadonlyMap<string, KnownSet>, desired: DesiredIpsets): IpsetDelta {
  const lines: string[] = [];
  const created: string[] = [];
  let added = 0;
  let deleted = 0;
  for (const [name, want] of desired) {
    const have = known.get(name);
    if (have) {
      const familyDiffers = want.type !== 'bitmap:port' && have.family !== undefined && have.family !== want.family;
      if (have.type !== want.type || familyDiffers) {
        const desc = (t: string, f?: IpFamily) => (f && t !== 'bitmap:port' ? `${t} family ${familyKeyword(f)}` : t);
        throw new IpsetTypeMismatchError(name, desc(have.type, have.family), desc(want.type, want.family));
      }
    } else {
      lines.push(formatCreate(name, want.type, want.family));
      created.push(name);
    }
    for (const m of want.members) {
      if (!have?.members.has(m)) {
        lines.push(`add ${name} ${m}`);
        added++;
      }
    }
    if (have) {
      for (const m of have.members) {
        if (!want.members.has(m)) {
          lines.push(`del ${name} ${m}`);
          deleted++;
        }
      }
    }
  }
  return { created, added, deleted, lines };
}
