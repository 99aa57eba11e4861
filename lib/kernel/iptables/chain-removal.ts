/**
 * The `iptables-restore --noflush` lines that remove a set of chains from one table, computed
 * from that table's `iptables-save` text: `kube-ipvs cleanup` (kube-proxy's IPVS-mode chains)
 * and the removal of kube-proxy's iptables-mode leftovers (model/iptables.ts) use it. Pure.
 *
 * The order the kernel requires: delete every rule of a built-in chain that jumps into one of
 * them, flush them all (one may jump to another), then delete them. A chain still jumped to
 * from a chain outside the set (a foreign one) is flushed but kept: deleting it would fail the
 * whole table's restore.
 */
import { BuiltinChain } from '../../model/names';
import { tokenize } from './parse-restore';

const BUILTINS: ReadonlySet<string> = new Set(Object.values(BuiltinChain));

/** The restore lines that remove the chains, and the chains only flushed (still referenced). */
export interface ChainRemoval {
  /** restore lines: `-D <built-in> ...`, `-F <chain>`, `-X <chain>` */
  readonly lines: string[];
  /** chains flushed but kept: a chain outside the set still jumps to them */
  readonly kept: string[];
}

/** Which chains planChainRemoval removes, in what order, and what else it deletes. */
export interface ChainRemovalSpec {
  /** the chains to remove (those the save declares and this accepts) */
  readonly remove: (chain: string) => boolean;
  /** their order in `lines`: these first (cleanup lists kube-proxy's), then the save's order */
  readonly order?: readonly string[];
  /** also delete a built-in rule this accepts (its tokens after `-A`), whatever it jumps to */
  readonly alsoDelete?: (tokens: readonly string[]) => boolean;
  /** chains whose rules do not count as references: rewritten before these lines run */
  readonly rewritten?: ReadonlySet<string>;
}

/** The jump target of a rule's tokens (`-j`, `-g` and their long forms), if any. */
function jumpTarget(t: readonly string[]): string | undefined {
  let target: string | undefined;
  for (let i = 2; i < t.length - 1; i++)
    if (t[i] === '-j' || t[i] === '-g' || t[i] === '--jump' || t[i] === '--goto') target = t[i + 1];
  return target;
}

/** Plans the removal of chains from one table's iptables-save text (see the file comment). */
export function planChainRemoval(saveText: string, spec: ChainRemovalSpec): ChainRemoval {
  const existing: string[] = [];
  const rules: { chain: string; line: string; tokens: string[] }[] = [];
  for (const raw of saveText.split('\n')) {
    const line = raw.trim();
    if (line.startsWith(':')) {
      const name = line.slice(1).split(/\s+/)[0]!;
      if (spec.remove(name)) existing.push(name);
    } else if (line.startsWith('-A ')) {
      const tokens = tokenize(line);
      rules.push({ chain: tokens[1]!, line, tokens });
    }
  }
  const removing = new Set(existing);
  const jumps: string[] = [];
  const foreignRefs = new Set<string>();
  for (const r of rules) {
    if (removing.has(r.chain) || spec.rewritten?.has(r.chain)) continue;
    const target = jumpTarget(r.tokens);
    const intoSet = target !== undefined && removing.has(target);
    if (BUILTINS.has(r.chain)) {
      if (intoSet || spec.alsoDelete?.(r.tokens)) jumps.push(`-D ${r.chain} ${r.line.slice(3 + r.chain.length + 1)}`);
    } else if (intoSet) foreignRefs.add(target);
  }
  const listed = spec.order?.filter((c) => removing.has(c)) ?? [];
  const chains = [...listed, ...existing.filter((c) => !listed.includes(c))];
  const kept = chains.filter((c) => foreignRefs.has(c));
  return {
    lines: [
      ...jumps,
      ...chains.map((c) => `-F ${c}`),
      ...chains.filter((c) => !foreignRefs.has(c)).map((c) => `-X ${c}`),
    ],
    kept,
  };
}
