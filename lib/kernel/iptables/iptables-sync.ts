/** The Iptables logic shared by the real implementation and the twin. */
import { componentLog } from '../../log';
import { Iptables, IptablesBackend, IptablesRunner, IptablesSyncOptions, IptablesSyncResult } from './iptables';
import { joinTokens, parseSaveRules, tokenize } from './parse-restore';
import { IpFamily } from '../../model/ip-family';
import { Table } from '../../model/names';
import { IptablesPlan, JumpRule, jumpRuleSpec } from '../../model/iptables';
import { formatIptablesRestore } from './format-restore';

const TABLES = ['nat', 'filter'] as const;

/** chain -> number of `-A` rules the plan writes into it */
function plannedCounts(plan: IptablesPlan, table: Table): Map<string, number> {
  const counts = new Map<string, number>(plan[table].chains.map((c) => [c, 0]));
  for (const rule of plan[table].rules) {
    const chain = rule.slice(3, rule.indexOf(' ', 3));
    counts.set(chain, (counts.get(chain) ?? 0) + 1);
  }
  return counts;
}

/**
 * How a table's save differs from what the plan wrote: KUBE-* chains missing or with another
 * rule count. Counts, not rule text: iptables-save prints rules in its own canonical form,
 * which differs between backends and versions.
 */
function chainDrift(plan: IptablesPlan, table: Table, save: string, rules: Map<string, string[]>): string[] {
  const declared = new Set<string>();
  for (const line of save.split('\n')) if (line.startsWith(':')) declared.add(line.slice(1).split(' ')[0]!);
  const out: string[] = [];
  for (const [chain, want] of plannedCounts(plan, table)) {
    if (!declared.has(chain)) out.push(`${table} ${chain}: missing`);
    else {
      const have = rules.get(chain)?.length ?? 0;
      if (have !== want) out.push(`${table} ${chain}: ${have} of ${want} rules`);
    }
  }
  return out;
}

export class IptablesSync implements Iptables {
  /** text of the last successful write (without jump lines) */
  private lastText: string | undefined;
  /** the jump rules are known to be in place */
  private jumpsChecked = false;

  constructor(private readonly runner: IptablesRunner) {}

  get family(): IpFamily {
    return this.runner.family;
  }
  backend(): Promise<IptablesBackend> {
    return this.runner.backend();
  }
  save(table: Table): Promise<string> {
    return this.runner.save(table);
  }
  invalidate(): void {
    this.lastText = undefined;
    this.jumpsChecked = false;
  }

  async sync(plan: IptablesPlan, opts: IptablesSyncOptions = {}): Promise<IptablesSyncResult> {
    if (plan.family !== this.family) throw new TypeError(`plan for ${plan.family} given to the ${this.family} Iptables`);
    const text = formatIptablesRestore(plan);
    const unchanged = this.jumpsChecked && text === this.lastText;
    if (!opts.force && !opts.verify && unchanged) {
      return { execs: 0, wrote: false, insertedJumps: [], restoreText: '' };
    }
    let execs = 0;
    let missing: JumpRule[] = [];
    const repaired: string[] = [];
    if (opts.force || opts.verify || !this.jumpsChecked) {
      const existing = new Map<Table, Map<string, string[]>>();
      for (const table of TABLES) {
        const check = opts.verify || plan.jumps.some((j) => j.table === table);
        if (!check) continue;
        execs++;
        const save = await this.runner.save(table);
        const rules = parseSaveRules(save);
        existing.set(table, rules);
        // drift matters only for text we believe is in place; a changed text is written anyway
        if (opts.verify && unchanged) repaired.push(...chainDrift(plan, table, save, rules));
      }
      missing = plan.jumps.filter((j) => {
        const want = joinTokens(tokenize(jumpRuleSpec(j)));
        return !(existing.get(j.table)?.get(j.from) ?? []).includes(want);
      });
      if (opts.verify && unchanged) repaired.push(...missing.map((j) => `${j.table} ${j.from}: jump to ${j.to} missing`));
      if (!opts.force && unchanged && repaired.length === 0) {
        return { execs, wrote: false, insertedJumps: [], restoreText: '', repaired };
      }
    }
    if (repaired.length > 0) {
      componentLog('iptables').warn(`${this.family} iptables changed behind our back, rewriting: ${repaired.join('; ')}`, {
        family: this.family,
        repaired,
      });
    }
    const payload = missing.length ? formatIptablesRestore(plan, missing) : text;
    try {
      execs++;
      await this.runner.restore(payload);
    } catch (e) {
      this.invalidate();
      throw e;
    }
    this.lastText = text;
    this.jumpsChecked = true;
    return { execs, wrote: true, insertedJumps: missing, restoreText: payload, ...(opts.verify ? { repaired } : {}) };
  }
}
