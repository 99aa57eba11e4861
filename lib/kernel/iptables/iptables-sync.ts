/** The Iptables logic shared by the real implementation and the fake. */
import { componentLog } from '../../log';
import { RulesetGeneration } from './nft-generation';
import { Iptables, IptablesBackend, IptablesRunner, IptablesSyncOptions, IptablesSyncResult } from './iptables';
import { joinTokens, parseSaveRules, tokenize } from './parse-restore';
import { IpFamily } from '../../model/ip-family';
import { Table } from '../../model/names';
import {
  IptablesPlan,
  JumpRule,
  isIptablesModeChain,
  isIptablesModeFirewallJump,
  jumpRuleSpec,
} from '../../model/iptables';
import { formatIptablesRestore } from './format-restore';
import { planChainRemoval } from './chain-removal';

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

/**
 * How many nf_tables generations one iptables-nft-restore of `payload` commits when it
 * succeeds: one per `*table` block, as each COMMIT line is its own nf_tables transaction
 * (measured with iptables 1.8.9 on Linux 6.1, spec/vm/nft-generation.vm.test.ts: a nat+filter
 * payload moves the generation by 2, a nat-only one by 1). A transaction with nothing in it
 * commits nothing and moves nothing (`iptables -F` of an empty chain: +0), so the count is
 * only certain when every block writes at least one rule (its `:CHAIN` flushes and its `-A`
 * adds are then real changes); undefined otherwise.
 */
export function restoreCommits(payload: string): number | undefined {
  let blocks = 0;
  let rulesInBlock = 0;
  for (const line of payload.split('\n')) {
    if (line.startsWith('*')) rulesInBlock = 0;
    else if (line.startsWith('-A ') || line.startsWith('-I ')) rulesInBlock++;
    else if (line === 'COMMIT') {
      if (rulesInBlock === 0) return undefined;
      blocks++;
    }
  }
  return blocks;
}

/** Where the nf_tables generation comes from (iptables-nft only). */
export interface IptablesSyncDeps {
  /**
   * The ruleset generation reader; used only while the runner's backend is nft. With it a
   * verify of an unchanged plan at the generation where the rules were last proven ours runs
   * nothing.
   */
  readonly generation?: RulesetGeneration;
  /**
   * The other families' IptablesSync in the same network namespace (one per namespace, shared
   * by all of its families, as the generation is): see GenerationPeers.
   */
  readonly peers?: GenerationPeers;
}

/**
 * The IptablesSync of each family in one network namespace. They share its one nf_tables
 * generation: ip6tables-nft's commits (tables `ip6 nat`, `ip6 filter`) move it as iptables-nft's
 * (`ip nat`, `ip filter`) do, so after a dual-stack cold start (IPv4 restore, then IPv6) the
 * generation at which IPv4 proved its rules is already stale, and its first verify would read
 * both tables although nobody else touched them. A sync whose restore moved the generation
 * from `from` to `to` by exactly its own commits (so nobody else committed in between, and
 * its commits touched only its own family's tables) tells the others: one whose rules were
 * proven at `from` holds them unchanged at `to`.
 */
export class GenerationPeers {
  private readonly members = new Set<IptablesSync>();

  join(member: IptablesSync): void {
    this.members.add(member);
  }

  /**
   * `by`'s own commits, and nobody else's, moved the generation from `from` to `to`; `by`
   * undefined: commits of kube-ipvs's outside the iptables syncs, on tables none of them
   * writes (kube-proxy's nftables-mode tables deleted: kernel/nftables/peer-nftables.ts)
   */
  committedAlone(by: IptablesSync | undefined, from: number, to: number): void {
    for (const m of this.members) if (m !== by) m.peerCommitted(from, to);
  }
}

/** the generation `n` commits after `g` (the kernel skips 0 when it wraps) */
export function genPlus(g: number, n: number): number {
  for (let i = 0; i < n; i++) g = (g + 1) >>> 0 || 1;
  return g;
}

/** Writes the planned rules through an IptablesRunner and checks they stay (see the file comment). */
export class IptablesSync implements Iptables {
  /** text of the last successful write (without jump lines) */
  private lastText: string | undefined;
  /** the jump rules are known to be in place */
  private jumpsChecked = false;
  /**
   * kube-proxy's iptables-mode leftovers were looked for in tables read and none remain (none
   * found, or removed): never looked for again in this daemon's life. A chain by such a name made
   * later is another program's (every sync would delete it 30 s after it appeared).
   */
  private leftoversSettled = false;
  /**
   * The nf_tables generation at which the kernel was proven to hold exactly `lastText` and
   * the jumps of `verifiedJumps`: recorded after a verify whose saves saw no drift and no
   * commit by anyone while they ran, or after our own restore when the generation moved by
   * exactly our own commits from a state known to be ours. Any commit by anyone since moves
   * the generation, so a verify that finds it unmoved has nothing to read.
   */
  private verifiedGen: number | undefined;
  private verifiedJumps: string | undefined;
  /** a failed generation read was logged; reset by the next successful read */
  private genWarned = false;
  private readonly generation: RulesetGeneration | undefined;
  private readonly peers: GenerationPeers | undefined;

  constructor(
    private readonly runner: IptablesRunner,
    opts: IptablesSyncDeps = {},
  ) {
    this.generation = opts.generation;
    this.peers = opts.peers;
    this.peers?.join(this);
  }

  /**
   * Another family's sync in this network namespace moved the generation from `from` to `to`
   * by exactly its own commits, on its own family's tables only (GenerationPeers). Rules
   * proven ours at `from` are still ours at `to`. Anything else is left alone: a sync of ours
   * under way has cleared the record before its restore, and a verify under way records only
   * when the generation did not move while it read.
   */
  peerCommitted(from: number, to: number): void {
    if (this.verifiedGen === from) this.verifiedGen = to;
  }

  /**
   * The current nf_tables generation; undefined without a reader, on the legacy backend, or
   * when the read fails (logged once at warn, with the errno; the caller then reads the
   * tables as it would without a reader).
   */
  private async readGeneration(): Promise<number | undefined> {
    if (!this.generation) return undefined;
    try {
      if ((await this.runner.backend()) !== 'nft') return undefined;
    } catch {
      return undefined; // the save or restore that follows reports it
    }
    try {
      const g = await this.generation.read();
      this.genWarned = false;
      return g;
    } catch (e) {
      if (!this.genWarned) {
        this.genWarned = true;
        const errno = (e as { errno?: number }).errno;
        componentLog('iptables').warn(
          `${this.family}: cannot read the nf_tables generation (${(e as Error).message}); verifying with iptables-save`,
          {
            family: this.family,
            ...(errno !== undefined ? { errno } : {}),
          },
        );
      }
      return undefined;
    }
  }

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
    this.verifiedGen = undefined;
  }

  async sync(plan: IptablesPlan, opts: IptablesSyncOptions = {}): Promise<IptablesSyncResult> {
    if (plan.family !== this.family)
      throw new TypeError(`plan for ${plan.family} given to the ${this.family} Iptables`);
    const text = formatIptablesRestore(plan);
    const unchanged = this.jumpsChecked && text === this.lastText;
    if (!opts.force && !opts.verify && unchanged) {
      return { execs: 0, wrote: false, insertedJumps: [], restoreText: '' };
    }
    const jumpsKey = JSON.stringify(plan.jumps);
    // the generation before anything of ours runs: every save and restore below is after it
    const gen0 = await this.readGeneration();
    const provenAtGen0 = gen0 !== undefined && gen0 === this.verifiedGen && jumpsKey === this.verifiedJumps;
    if (!opts.force && opts.verify && unchanged && provenAtGen0) {
      return { execs: 0, wrote: false, insertedJumps: [], restoreText: '', repaired: [] };
    }
    /** the jump rules were read in this sync, after gen0 */
    const jumpsReadAfterGen0 = opts.force === true || opts.verify === true || !this.jumpsChecked;
    const read = jumpsReadAfterGen0 ? await this.readTables(plan, opts.verify === true, unchanged) : nothingRead();
    const { missing, repaired, leftovers } = read;
    let execs = read.execs;
    if (jumpsReadAfterGen0 && !opts.force && unchanged && repaired.length === 0)
      return this.inPlace(read, gen0, jumpsKey);
    if (repaired.length > 0) {
      componentLog('iptables').warn(
        `${this.family} iptables changed behind our back, rewriting: ${repaired.join('; ')}`,
        {
          family: this.family,
          repaired,
        },
      );
    }
    const payload = missing.length ? formatIptablesRestore(plan, missing) : text;
    this.verifiedGen = undefined;
    try {
      execs++;
      await this.runner.restore(payload);
    } catch (e) {
      this.invalidate();
      throw e;
    }
    this.lastText = text;
    this.jumpsChecked = true;
    await this.afterRestore(payload, gen0, jumpsKey, jumpsReadAfterGen0 || provenAtGen0);
    // after our own restore: nat KUBE-SERVICES no longer jumps to the KUBE-SVC-* chains
    const removed = leftovers.length > 0 ? await this.removeLeftovers(leftovers) : {};
    if (leftovers.length > 0) execs++;
    return {
      execs,
      wrote: true,
      insertedJumps: missing,
      restoreText: payload,
      ...(opts.verify ? { repaired } : {}),
      ...removed,
    };
  }

  /**
   * Reads the tables the plan's jumps leave from (every table on a verify): the jump rules
   * missing, what changed behind our back in a text believed in place (a verify of an
   * unchanged text), and kube-proxy's iptables-mode leftovers.
   */
  private async readTables(plan: IptablesPlan, verify: boolean, unchanged: boolean): Promise<TablesRead> {
    let execs = 0;
    const repaired: string[] = [];
    const leftovers: TableLines[] = [];
    const existing = new Map<Table, Map<string, string[]>>();
    for (const table of TABLES) {
      const check = verify || plan.jumps.some((j) => j.table === table);
      if (!check) continue;
      execs++;
      const save = await this.runner.save(table);
      const rules = parseSaveRules(save);
      existing.set(table, rules);
      if (!this.leftoversSettled) leftovers.push(...iptablesModeLeftovers(plan, table, save, rules));
      // drift matters only for text we believe is in place; a changed text is written anyway
      if (verify && unchanged) repaired.push(...chainDrift(plan, table, save, rules));
    }
    // looked for in every table: settled unless a removal is still to go through
    if (leftovers.length === 0 && TABLES.every((t) => existing.has(t))) this.leftoversSettled = true;
    const missing = plan.jumps.filter((j) => {
      const want = joinTokens(tokenize(jumpRuleSpec(j)));
      return !(existing.get(j.table)?.get(j.from) ?? []).includes(want);
    });
    if (verify && unchanged) repaired.push(...missing.map((j) => `${j.table} ${j.from}: jump to ${j.to} missing`));
    return { execs, missing, repaired, leftovers };
  }

  /** The tables read hold the text and its jumps: nothing to write but leftovers to remove. */
  private async inPlace(read: TablesRead, gen0: number | undefined, jumpsKey: string): Promise<IptablesSyncResult> {
    const { execs, repaired, leftovers } = read;
    if (leftovers.length > 0) {
      const removed = await this.removeLeftovers(leftovers);
      return { execs: execs + 1, wrote: false, insertedJumps: [], restoreText: '', repaired, ...removed };
    }
    // (a verify: `unchanged` without verify returned before.) Proven only when nobody
    // committed while the saves ran: then they read the state at gen0.
    if (gen0 !== undefined && (await this.readGeneration()) === gen0) {
      this.verifiedGen = gen0;
      this.verifiedJumps = jumpsKey;
    }
    return { execs, wrote: false, insertedJumps: [], restoreText: '', repaired };
  }

  /**
   * After our restore: ours at the new generation only when it moved by exactly our own
   * commits since gen0 (no one else committed in between) and the state at gen0 had the jumps
   * (`jumpsKnown`: read in this sync, so the inserted ones complete them, or proven at gen0 by
   * an earlier record). Our restore rewrites every KUBE-* chain of the plan whatever they
   * held. Either way, a move by exactly our commits is news for the other families
   * (GenerationPeers).
   */
  private async afterRestore(
    payload: string,
    gen0: number | undefined,
    jumpsKey: string,
    jumpsKnown: boolean,
  ): Promise<void> {
    const commits = restoreCommits(payload);
    if (gen0 === undefined || commits === undefined || !(jumpsKnown || this.peers)) return;
    const after = await this.readGeneration();
    if (after === undefined || after !== genPlus(gen0, commits)) return;
    if (jumpsKnown) {
      this.verifiedGen = after;
      this.verifiedJumps = jumpsKey;
    }
    this.peers?.committedAlone(this, gen0, after);
  }

  /**
   * One more restore removing kube-proxy's iptables-mode leftovers (model/iptables.ts), after
   * ours: a refusal is logged and never fails the sync (the rules of ours are in place); the
   * next check that reads the tables finds them again.
   */
  private async removeLeftovers(blocks: readonly TableLines[]): Promise<{ leftoversRemoved?: readonly string[] }> {
    const log = componentLog('iptables');
    const lines = blocks.flatMap((b) => b.lines.map((l) => `${b.table} ${l}`));
    // our own commits moved the generation; the next verify reads the tables
    this.verifiedGen = undefined;
    try {
      await this.runner.restore(blocks.map((b) => [`*${b.table}`, ...b.lines, 'COMMIT', ''].join('\n')).join(''));
    } catch (e) {
      log.warn(
        `${this.family}: kube-proxy's iptables-mode chains could not be removed (${(e as Error).message}); retried at the next check`,
        {
          family: this.family,
        },
      );
      return {};
    }
    const count = (op: string) => blocks.reduce((n, b) => n + b.lines.filter((l) => l.startsWith(op)).length, 0);
    log.info(
      `${this.family}: removed kube-proxy's iptables-mode leftovers: ${count('-X ')} chains, ${count('-D ')} jump rules (kube-proxy leaves them when a node moves to IPVS mode; its stale REJECTs would refuse Services)`,
      {
        family: this.family,
        removed: lines,
      },
    );
    this.leftoversSettled = true;
    return { leftoversRemoved: lines };
  }
}

/** A rule kube-proxy's iptables mode writes: commented, or a bare jump to one of its chains. */
function isIptablesModeRule(table: Table, rule: string): boolean {
  if (rule.includes('--comment ')) return true;
  const target = /(?:^| )-j (\S+)/.exec(rule)?.[1];
  return (
    target !== undefined &&
    (isIptablesModeChain(table, target) || target === 'KUBE-MARK-MASQ' || target === 'KUBE-MARK-DROP')
  );
}

/** restore lines of one table */
/** What a read of the tables found (IptablesSync.readTables). */
interface TablesRead {
  readonly execs: number;
  readonly missing: JumpRule[];
  readonly repaired: string[];
  readonly leftovers: TableLines[];
}
const nothingRead = (): TablesRead => ({ execs: 0, missing: [], repaired: [], leftovers: [] });

interface TableLines {
  readonly table: Table;
  readonly lines: readonly string[];
}

/**
 * The lines removing kube-proxy's iptables-mode chains and jumps found in `save` (`rules`: its
 * rules by chain, as the sync parsed them), or nothing. The plan's chains are rewritten by our
 * restore first, so their old rules (nat KUBE-SERVICES jumping to KUBE-SVC-*) do not keep a chain.
 */
function iptablesModeLeftovers(
  plan: IptablesPlan,
  table: Table,
  save: string,
  rules: ReadonlyMap<string, readonly string[]>,
): TableLines[] {
  const { lines, kept } = planChainRemoval(save, {
    // by name and by kube-proxy's own rules: it comments every rule of its iptables mode
    // ("ns/svc:port has no endpoints", "... -> 10.244.1.2:8080") but the bare jumps between its
    // own chains (KUBE-EXT-X -j KUBE-SVC-X); a chain by that name with another rule is another
    // program's
    remove: (c) => isIptablesModeChain(table, c) && (rules.get(c) ?? []).every((r) => isIptablesModeRule(table, r)),
    alsoDelete: isIptablesModeFirewallJump,
    rewritten: new Set(plan[table].chains),
  });
  // a kept chain already flushed is as clean as it gets: no restore, no warning, every check
  const flushed = new Set(kept.filter((c) => (rules.get(c)?.length ?? 0) === 0));
  const todo = lines.filter((l) => !(l.startsWith('-F ') && flushed.has(l.slice(3))));
  if (todo.length === 0) return [];
  if (kept.length > flushed.size) {
    componentLog('iptables').warn(
      `${plan.family} ${table}: kube-proxy's iptables-mode chains ${kept.join(', ')} are still jumped to by a foreign rule: flushed, not deleted`,
    );
  }
  return [{ table, lines: todo }];
}
