/** The Iptables logic shared by the real implementation and the twin. */
import { IptablesPlan, JumpRule, formatIptablesRestore, jumpRuleSpec } from '../../plan/iptables';
import { IpFamily, Table } from '../../plan/names';
import { Iptables, IptablesBackend, IptablesRunner, IptablesSyncOptions, IptablesSyncResult } from './iptables';
import { joinTokens, parseSaveRules, tokenize } from './parse-restore';

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
    if (!opts.force && this.jumpsChecked && text === this.lastText) {
      return { execs: 0, wrote: false, insertedJumps: [], restoreText: '' };
    }
    let execs = 0;
    let missing: JumpRule[] = [];
    if (opts.force || !this.jumpsChecked) {
      const existing = new Map<Table, Map<string, string[]>>();
      for (const table of ['nat', 'filter'] as const) {
        if (!plan.jumps.some((j) => j.table === table)) continue;
        execs++;
        existing.set(table, parseSaveRules(await this.runner.save(table)));
      }
      missing = plan.jumps.filter((j) => {
        const want = joinTokens(tokenize(jumpRuleSpec(j)));
        return !(existing.get(j.table)?.get(j.from) ?? []).includes(want);
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
    return { execs, wrote: true, insertedJumps: missing, restoreText: payload };
  }
}
