/**
 * In-memory fake of one family's iptables (tables nat, filter, mangle, raw) behind
 * iptables-restore / iptables-save. It parses the same restore text and refuses what the kernel
 * and the binaries refuse, with their exit codes and blamed lines, in the `legacy` or `nft`
 * flavour (pinned by spec/vm/iptables.vm.test.ts against iptables 1.8.9 on Linux 6.1):
 *
 * - each `*table` ... `COMMIT` block applies atomically; earlier committed tables stay when a
 *   later one fails; a block without COMMIT is dropped;
 * - `--noflush`: a declared `:CHAIN` is created or flushed, undeclared chains are kept;
 *   without it the table is reset to its built-in chains first;
 * - `-A`/`-I`/`-D`/`-F` on a missing chain, `-N` of an existing one, `-X` of a missing,
 *   built-in, non-empty or referenced chain fail;
 * - a jump (`-j`/`-g`) to an unknown target that is not a chain fails (legacy: at that line;
 *   nft: at the COMMIT line, checked against the table as committed);
 * - `-m set --match-set NAME` fails when a linked FakeIpset lacks NAME, and committed rules
 *   count as references of that set (so `ipset destroy` refuses, as the kernel does).
 * - the nf_tables generation (nft flavour; `generation`, read through `rulesetGeneration`):
 *   +1 per committed `*table` block that changed anything (a rule added, deleted or flushed,
 *   a chain created, flushed non-empty or deleted, a policy set), as each COMMIT is one
 *   nf_tables transaction and an empty one commits nothing; a failed block adds nothing, the
 *   blocks committed before it stay counted. `foreignCommit()` is someone else's commit
 *   elsewhere (another table, `nft`). One counter per network namespace, as the kernel's:
 *   FakeIptables of several families given one `FakeNftGeneration` (`netns`) all move it.
 * - save prints each rule as iptables-save spells it (iptables-save-spelling.ts), and `-D`
 *   finds a rule by that spelling, as the kernel compares rules by what they match, not by text.
 * Not emulated: match/target option syntax, counters, `-R`, `-P`, `-Z`, `-E`.
 */
import { ExecError } from '../../lib/errors';
import { ExecResult, Execer } from '../../lib/kernel/exec';
import type { FakeIpset } from './fake-ipset';
import { iptablesBinary } from '../../lib/kernel/iptables/detect-backend';
import {
  Iptables,
  IptablesBackend,
  IptablesRunner,
  IptablesSyncOptions,
  IptablesSyncResult,
} from '../../lib/kernel/iptables/iptables';
import { GenerationPeers, IptablesSync, genPlus } from '../../lib/kernel/iptables/iptables-sync';
import { RulesetGeneration } from '../../lib/kernel/iptables/nft-generation';
import { RestoreLine, joinTokens, parseRestore } from '../../lib/kernel/iptables/parse-restore';
import { saveText } from './iptables-save-spelling';
import { IpFamily } from '../../lib/model/ip-family';
import { Table } from '../../lib/model/names';
import { IptablesPlan } from '../../lib/model/iptables';

const BUILTIN: Readonly<Record<string, readonly string[]>> = {
  filter: ['INPUT', 'FORWARD', 'OUTPUT'],
  nat: ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'],
  mangle: ['PREROUTING', 'INPUT', 'FORWARD', 'OUTPUT', 'POSTROUTING'],
  raw: ['PREROUTING', 'OUTPUT'],
};
const TARGETS: ReadonlySet<string> = new Set([
  'ACCEPT',
  'DROP',
  'RETURN',
  'REJECT',
  'MASQUERADE',
  'MARK',
  'SNAT',
  'DNAT',
  'REDIRECT',
  'LOG',
  'QUEUE',
  'NFQUEUE',
  'CONNMARK',
  'CT',
  'NOTRACK',
  'TRACE',
  'TPROXY',
]);

interface FakeChain {
  readonly builtin: boolean;
  policy: string;
  rules: string[][];
}
type FakeTable = Map<string, FakeChain>;

class Refusal {
  constructor(
    readonly message: string,
    readonly exitCode: number,
    readonly line: number,
  ) {}
}

/**
 * One network namespace's nf_tables generation, shared by the FakeIptables of each family in
 * it (every family's commits move it, as in the kernel), and the GenerationPeers their syncs
 * share, as the daemon wires them (kernel-surfaces.ts).
 */
export class FakeNftGeneration {
  /** the generation (starts at 1, as a fresh network namespace's) */
  value = 1;
  /** failure to raise on the next reads (errno set), for tests of the fallback */
  error: Error | undefined;
  /** reads of the generation */
  reads = 0;
  readonly peers = new GenerationPeers();
  /** NFT_MSG_GETGEN */
  readonly reader: RulesetGeneration = {
    read: async () => {
      this.reads++;
      if (this.error) throw this.error;
      return this.value;
    },
    close: () => undefined,
  };
}

export interface FakeIptablesOptions {
  readonly family?: IpFamily;
  readonly flavor?: IptablesBackend;
  /** validate `--match-set` names and register references */
  readonly ipsets?: FakeIpset;
  /**
   * give this fake's own Iptables (sync) the generation reader, as the daemon does for the
   * nft backend (default false: the verify reads the tables, as on legacy)
   */
  readonly readGeneration?: boolean;
  /** the network namespace's generation, shared with the other families' fakes (default: its own) */
  readonly netns?: FakeNftGeneration;
}

export class FakeIptables implements IptablesRunner, Iptables {
  readonly family: IpFamily;
  readonly flavor: IptablesBackend;
  private readonly tables = new Map<string, FakeTable>();
  private readonly ipsets: FakeIpset | undefined;
  private readonly sync_: IptablesSync;
  /** every restore payload received */
  readonly restores: string[] = [];
  /** number of save calls */
  saves = 0;
  /** this network namespace's nf_tables generation (shared with the other families' fakes given the same) */
  readonly netns: FakeNftGeneration;
  /** the nf_tables ruleset generation (starts at 1, as a fresh network namespace's) */
  get generation(): number {
    return this.netns.value;
  }
  set generation(g: number) {
    this.netns.value = g;
  }
  /** failure to raise on the next generation reads (errno set), for tests of the fallback */
  get generationError(): Error | undefined {
    return this.netns.error;
  }
  set generationError(e: Error | undefined) {
    this.netns.error = e;
  }
  /** reads of the generation (by any family of the namespace) */
  get generationReads(): number {
    return this.netns.reads;
  }
  /** NFT_MSG_GETGEN of this fake's network namespace */
  get rulesetGeneration(): RulesetGeneration {
    return this.netns.reader;
  }

  constructor(opts: FakeIptablesOptions = {}) {
    this.family = opts.family ?? 'ipv4';
    this.flavor = opts.flavor ?? 'nft';
    this.ipsets = opts.ipsets;
    this.netns = opts.netns ?? new FakeNftGeneration();
    this.sync_ = new IptablesSync(
      this,
      opts.readGeneration ? { generation: this.netns.reader, peers: this.netns.peers } : {},
    );
    this.ipsets?.addReferenceSource(() => this.referencedSets());
  }

  // ---- Iptables ----
  sync(plan: IptablesPlan, opts?: IptablesSyncOptions): Promise<IptablesSyncResult> {
    return this.sync_.sync(plan, opts);
  }
  invalidate(): void {
    this.sync_.invalidate();
  }

  // ---- IptablesRunner ----
  async backend(): Promise<IptablesBackend> {
    return this.flavor;
  }
  async save(table: Table | 'mangle' | 'raw'): Promise<string> {
    this.saves++;
    return this.dump(table);
  }
  async restore(text: string): Promise<void> {
    this.applyRestore(text, true);
  }

  /** Answers `<prefix>-<flavor>-save -t T` and `<prefix>-<flavor>-restore [--noflush] ...` */
  readonly exec: Execer = {
    run: async (cmd: string, args: readonly string[], stdin?: string): Promise<ExecResult> => {
      if (cmd === iptablesBinary(this.family, this.flavor, 'save') && args.length === 2 && args[0] === '-t') {
        return { stdout: await this.save(args[1] as Table), stderr: '', exitCode: 0 };
      }
      if (cmd === iptablesBinary(this.family, this.flavor, 'restore')) {
        try {
          this.applyRestore(stdin ?? '', args.includes('--noflush') || args.includes('-n'));
          return { stdout: '', stderr: '', exitCode: 0 };
        } catch (e) {
          if (e instanceof ExecError) return { stdout: '', stderr: e.stderr, exitCode: e.exitCode };
          throw e;
        }
      }
      throw new Error(`FakeIptables.exec: unsupported: ${cmd} ${args.join(' ')}`);
    },
  };

  /** Someone else's nf_tables commit (nft flavour): the generation moves, our tables do not. */
  foreignCommit(): void {
    if (this.flavor === 'nft') this.generation = genPlus(this.generation, 1);
  }

  /** Applies restore text as `iptables-restore [--noflush]` would. Throws ExecError. */
  applyRestore(text: string, noflush: boolean): void {
    this.restores.push(text);
    const tool = `${this.family === 'ipv4' ? 'iptables' : 'ip6tables'}-${this.flavor === 'nft' ? 'nft-' : ''}restore`;
    const cmd = `${tool}${noflush ? ' --noflush' : ''}`;
    let lines: RestoreLine[];
    try {
      lines = parseRestore(text);
    } catch (e) {
      const line = (e as { line?: number }).line ?? 0;
      throw this.error(cmd, tool, new Refusal(`Bad argument \`${String((e as Error).message)}'`, 2, line));
    }
    let name: string | undefined;
    let work: FakeTable | undefined;
    let pendingJumps: { target: string; line: number }[] = [];
    /** the block holds a change: its COMMIT is a non-empty nf_tables transaction */
    let changes = false;
    try {
      for (const l of lines) {
        if (l.kind === 'table') {
          if (work) throw new Refusal(`COMMIT expected at line ${l.line}`, 1, l.line);
          name = l.table;
          if (!BUILTIN[name]) throw new Refusal(`table '${name}' does not exist`, 1, l.line);
          work = noflush ? clone(this.table(name)) : fresh(name);
          changes = !noflush;
          pendingJumps = [];
          continue;
        }
        if (!work || !name) throw new Refusal(`no command specified`, 1, l.line);
        if (l.kind === 'commit') {
          for (const p of pendingJumps) {
            if (!work.has(p.target)) throw new Refusal(`Chain '${p.target}' does not exist`, 2, l.line);
          }
          this.tables.set(name, work);
          if (changes && this.flavor === 'nft') this.generation = genPlus(this.generation, 1);
          work = undefined;
          continue;
        }
        if (l.kind === 'chain') {
          const c = work.get(l.chain);
          if (c?.builtin) {
            if (l.policy !== '-') {
              c.policy = l.policy;
              changes = true;
            }
          } else if (c) {
            if (c.rules.length > 0) changes = true;
            c.rules = [];
          } else {
            work.set(l.chain, { builtin: false, policy: '-', rules: [] });
            changes = true;
          }
          continue;
        }
        // -F of empty chains deletes nothing; every other rule line that succeeds changes
        if (
          l.op !== '-F' ||
          (l.chain === undefined
            ? [...work.values()].some((c) => c.rules.length > 0)
            : (work.get(l.chain)?.rules.length ?? 0) > 0)
        ) {
          changes = true;
        }
        this.applyRule(work, l, pendingJumps);
      }
      if (work)
        throw new Refusal(`COMMIT expected at line ${(lines.at(-1)?.line ?? 0) + 1}`, 1, (lines.at(-1)?.line ?? 0) + 1);
    } catch (e) {
      if (e instanceof Refusal) throw this.error(cmd, tool, e);
      throw e;
    }
  }

  private applyRule(
    work: FakeTable,
    l: Extract<RestoreLine, { kind: 'rule' }>,
    pendingJumps: { target: string; line: number }[],
  ): void {
    const failed = (nftWhy: string) =>
      new Refusal(this.flavor === 'nft' ? `line ${l.line} failed: ${nftWhy}` : `line ${l.line} failed`, 1, l.line);
    const chain = l.chain !== undefined ? work.get(l.chain) : undefined;
    switch (l.op) {
      case '-N':
        if (chain) throw failed('Chain already exists.');
        work.set(l.chain!, { builtin: false, policy: '-', rules: [] });
        return;
      case '-X': {
        if (l.chain === undefined) {
          for (const [n, c] of [...work])
            if (!c.builtin && c.rules.length === 0 && !referenced(work, n)) work.delete(n);
          return;
        }
        if (!chain || chain.builtin) throw failed('No chain/target/match by that name.');
        if (chain.rules.length > 0 || referenced(work, l.chain)) {
          if (this.flavor === 'nft')
            throw new Refusal(
              `line ${l.line}: CHAIN_DEL failed (Device or resource busy): chain ${l.chain}`,
              4,
              l.line,
            );
          throw failed('');
        }
        work.delete(l.chain);
        return;
      }
      case '-F':
        if (l.chain === undefined) {
          for (const c of work.values()) c.rules = [];
          return;
        }
        if (!chain) throw failed('No chain/target/match by that name.');
        chain.rules = [];
        return;
      case '-A':
      case '-I':
      case '-D': {
        this.checkRule(work, l, pendingJumps);
        if (!chain) throw failed('No chain/target/match by that name.');
        if (l.op === '-A') chain.rules.push([...l.spec]);
        else if (l.op === '-I') {
          const pos = (l.position ?? 1) - 1;
          if (pos > chain.rules.length) throw failed('Index of insertion too big.');
          chain.rules.splice(pos, 0, [...l.spec]);
        } else {
          const want = this.spelled(l.spec);
          const i = chain.rules.findIndex((r) => this.spelled(r) === want);
          if (i < 0) throw failed('Bad rule (does a matching rule exist in that chain?).');
          chain.rules.splice(i, 1);
        }
        return;
      }
    }
  }

  /** Target and set checks, done by the binaries while parsing a rule. */
  private checkRule(
    work: FakeTable,
    l: Extract<RestoreLine, { kind: 'rule' }>,
    pendingJumps: { target: string; line: number }[],
  ): void {
    const s = l.spec;
    for (let i = 0; i < s.length - 1; i++) {
      if (s[i] === '--match-set' && this.ipsets && !this.ipsets.has(s[i + 1]!)) {
        throw new Refusal(`Set ${s[i + 1]} doesn't exist.\n`, 2, l.line);
      }
      if ((s[i] === '-j' || s[i] === '-g' || s[i] === '--jump' || s[i] === '--goto') && !TARGETS.has(s[i + 1]!)) {
        const target = s[i + 1]!;
        // nft resolves targets at COMMIT; a deleted rule's target need not exist then (a
        // cleanup payload deletes the jump, then the chain)
        if (this.flavor === 'nft') {
          if (l.op !== '-D') pendingJumps.push({ target, line: l.line });
        } else if (!work.has(target))
          throw new Refusal(`Couldn't load target \`${target}':No such file or directory\n`, 2, l.line);
      }
    }
  }

  private error(cmd: string, tool: string, r: Refusal): ExecError {
    const version = `v1.8.9 (${this.flavor === 'nft' ? 'nf_tables' : 'legacy'})`;
    let stderr: string;
    if (r.exitCode === 2) {
      stderr = `${tool} ${version}: ${r.message}\nError occurred at line: ${r.line}\nTry \`${tool} -h' or '${tool} --help' for more information.\n`;
    } else if (r.exitCode === 4) {
      stderr = `${tool} ${version}: \n${r.message}\n`;
    } else {
      stderr = `${tool}: ${r.message}\n`;
    }
    return new ExecError(cmd, r.exitCode, stderr, r.line);
  }

  private table(name: string): FakeTable {
    let t = this.tables.get(name);
    if (!t) {
      t = fresh(name);
      this.tables.set(name, t);
    }
    return t;
  }

  /** Set names used by committed rules, one per rule. */
  referencedSets(): string[] {
    const out: string[] = [];
    for (const t of this.tables.values()) {
      for (const c of t.values()) {
        for (const r of c.rules) {
          const i = r.indexOf('--match-set');
          if (i >= 0 && r[i + 1] !== undefined) out.push(r[i + 1]!);
        }
      }
    }
    return out;
  }

  /** Chains of a table (built-ins first, in kernel order, then user chains sorted). */
  chains(table: string): string[] {
    const t = this.table(table);
    return [...t.entries()]
      .filter(([, c]) => c.builtin)
      .map(([n]) => n)
      .concat(
        [...t.entries()]
          .filter(([, c]) => !c.builtin)
          .map(([n]) => n)
          .sort(),
      );
  }

  /** One rule's tokens as iptables-save prints them. */
  private spelled(rule: readonly string[]): string {
    return saveText(rule, this.family);
  }

  /** Rules of one chain as `-A CHAIN spec` lines, as written (undefined when the chain is missing). */
  rules(table: string, chain: string): string[] | undefined {
    return this.table(table)
      .get(chain)
      ?.rules.map((r) => `-A ${chain} ${joinTokens(r)}`);
  }

  /** iptables-save's text of one table (no header comments, counters [0:0]). */
  dump(table: string): string {
    const t = this.table(table);
    const out = [`*${table}`];
    const names = this.chains(table);
    for (const n of names) out.push(`:${n} ${t.get(n)!.policy === '-' ? '-' : t.get(n)!.policy} [0:0]`);
    for (const n of names) for (const r of t.get(n)!.rules) out.push(`-A ${n} ${this.spelled(r)}`);
    out.push('COMMIT');
    return out.join('\n') + '\n';
  }
}

function fresh(name: string): FakeTable {
  const t: FakeTable = new Map();
  for (const c of BUILTIN[name] ?? []) t.set(c, { builtin: true, policy: 'ACCEPT', rules: [] });
  return t;
}

function clone(t: FakeTable): FakeTable {
  const out: FakeTable = new Map();
  for (const [n, c] of t) out.set(n, { builtin: c.builtin, policy: c.policy, rules: c.rules.map((r) => [...r]) });
  return out;
}

function referenced(t: FakeTable, chain: string): boolean {
  for (const c of t.values()) {
    for (const r of c.rules) {
      for (let i = 0; i < r.length - 1; i++) {
        if ((r[i] === '-j' || r[i] === '-g' || r[i] === '--jump' || r[i] === '--goto') && r[i + 1] === chain)
          return true;
      }
    }
  }
  return false;
}
