/**
 * The `iptables-restore --noflush` text of an IptablesPlan (model/iptables.ts), with every
 * rule line checked before it reaches iptables-restore. Pure.
 */
import { UnsafeRuleTextError } from '../../errors';
import { IptablesPlan, JumpRule, jumpRuleSpec } from '../../model/iptables';

/**
 * The `iptables-restore --noflush` payload: `*nat`, `:CHAIN - [0:0]` per KUBE-* chain (which
 * flushes it), the `-I` lines of `insertJumps` (jump rules found missing; they come after the
 * declarations so their target exists), the rules, `COMMIT`; then the same for `*filter`.
 */
export function formatIptablesRestore(plan: IptablesPlan, insertJumps: readonly JumpRule[] = []): string {
  const out: string[] = [];
  for (const table of ['nat', 'filter'] as const) {
    const t = plan[table];
    out.push(`*${table}`);
    for (const c of t.chains) out.push(`:${c} - [0:0]`);
    for (const j of insertJumps) if (j.table === table) out.push(`-I ${j.from} ${jumpRuleSpec(j)}`);
    for (const r of t.rules) {
      const problem = ruleTextProblem(r, t.chains);
      if (problem) throw new UnsafeRuleTextError(r, problem);
      out.push(r);
    }
    out.push('COMMIT');
  }
  return out.join('\n') + '\n';
}

/**
 * Why `rule` is not one safe `-A` line of a declared KUBE-* chain, or undefined. Only jump rules
 * (JUMP_RULES, written by formatIptablesRestore itself) ever touch a built-in chain.
 */
export function ruleTextProblem(rule: string, chains: readonly string[]): string | undefined {
  if (!/^[\x20-\x7e]*$/.test(rule)) return 'holds a newline, control or non-ASCII character';
  const m = /^-A (\S+) /.exec(rule);
  if (!m) return "not an '-A CHAIN ...' rule";
  if (!chains.includes(m[1]!)) return `chain ${m[1]} is not one of this table's KUBE-* chains`;
  if ((rule.match(/"/g)?.length ?? 0) % 2 !== 0) return 'unbalanced quote';
  return undefined;
}
