// A small emulation of how libpopt (as ipvsadm 1.31 configures it) splits argv into options:
// short clusters ("-Lnt 10.0.0.1:80"), "--long", "--long=value", an argument-taking short
// option takes the rest of its cluster or else the next word whatever it looks like
// ("-t -s" gives "-s" to -t), an optional argument ("-p [timeout]") takes the next word only
// when it does not start with '-', "--" ends the options, other words are left-over args.

/** Whether an option takes no argument, a required one, or an optional one. */
export type ArgKind = 'none' | 'required' | 'optional';

/** One entry of the option table (popt's struct poptOption). */
export interface OptionDef {
  readonly long: string;
  readonly short?: string;
  readonly arg: ArgKind;
  /** what the parser switches on (ipvsadm's `val`): the short letter or a TAG name */
  readonly key: string;
}

/** What nextOpt() yields: an option with its argument, or an error naming the word. */
export type PoptEvent =
  | { readonly type: 'option'; readonly key: string; readonly arg: string | undefined; readonly word: string }
  | { readonly type: 'error'; readonly word: string; readonly message: string };

/** popt's error strings (poptStrerror) for the errors this table can produce */
export const POPT_ERROR = {
  BADOPT: 'unknown option',
  NOARG: 'missing argument',
  UNWANTEDARG: 'option does not take an argument',
} as const;

interface OptionIndex {
  readonly long: ReadonlyMap<string, OptionDef>;
  readonly short: ReadonlyMap<string, OptionDef>;
}

// one index per option table (a restore parses 100,000+ lines with the same table); the
// first definition of a name wins, as a linear search of the table would find it
const indexes = new WeakMap<readonly OptionDef[], OptionIndex>();

function indexOf(table: readonly OptionDef[]): OptionIndex {
  let index = indexes.get(table);
  if (!index) {
    const long = new Map<string, OptionDef>();
    const short = new Map<string, OptionDef>();
    for (const d of table) {
      if (!long.has(d.long)) long.set(d.long, d);
      if (d.short !== undefined && !short.has(d.short)) short.set(d.short, d);
    }
    index = { long, short };
    indexes.set(table, index);
  }
  return index;
}

/** Walks argv against an option table as popt does (poptGetContext / poptGetNextOpt). */
export class PoptContext {
  private next = 0;
  private cluster: { word: string; rest: string } | undefined;
  private readonly leftovers: string[] = [];
  private done = false;
  private readonly index: OptionIndex;

  constructor(
    private readonly argv: readonly string[],
    table: readonly OptionDef[],
  ) {
    this.index = indexOf(table);
  }

  /** The next option, an error, or undefined at the end (as poptGetNextOpt returning -1). */
  nextOpt(): PoptEvent | undefined {
    for (;;) {
      if (this.cluster && this.cluster.rest !== '') return this.shortOpt();
      this.cluster = undefined;
      if (this.next >= this.argv.length) return undefined;
      const word = this.argv[this.next++]!;
      if (this.done || word === '-' || !word.startsWith('-')) {
        this.leftovers.push(word);
        continue;
      }
      if (word === '--') {
        this.done = true;
        continue;
      }
      if (word.startsWith('--')) return this.longOpt(word);
      this.cluster = { word, rest: word.slice(1) };
    }
  }

  /** The left-over (non-option) arguments, in order, as poptGetArg returns them. */
  args(): string[] {
    // popt collects leftovers while scanning; the caller reads them after the options
    while (this.next < this.argv.length && this.done) this.leftovers.push(this.argv[this.next++]!);
    return [...this.leftovers];
  }

  private longOpt(word: string): PoptEvent {
    const eq = word.indexOf('=');
    const name = eq >= 0 ? word.slice(2, eq) : word.slice(2);
    const inline = eq >= 0 ? word.slice(eq + 1) : undefined;
    const def = this.index.long.get(name);
    if (!def) return { type: 'error', word, message: POPT_ERROR.BADOPT };
    if (def.arg === 'none') {
      if (inline !== undefined) return { type: 'error', word, message: POPT_ERROR.UNWANTEDARG };
      return { type: 'option', key: def.key, arg: undefined, word };
    }
    if (inline !== undefined) return { type: 'option', key: def.key, arg: inline, word };
    return this.takeNext(def, word);
  }

  private shortOpt(): PoptEvent {
    const c = this.cluster!;
    const ch = c.rest[0]!;
    c.rest = c.rest.slice(1);
    const def = this.index.short.get(ch);
    if (!def) {
      c.rest = '';
      return { type: 'error', word: c.word, message: POPT_ERROR.BADOPT };
    }
    if (def.arg === 'none') return { type: 'option', key: def.key, arg: undefined, word: c.word };
    if (c.rest !== '') {
      const arg = c.rest;
      c.rest = '';
      return { type: 'option', key: def.key, arg, word: c.word };
    }
    return this.takeNext(def, `-${ch}`);
  }

  private takeNext(def: OptionDef, word: string): PoptEvent {
    const nextWord = this.argv[this.next];
    if (def.arg === 'optional') {
      if (nextWord === undefined || nextWord.startsWith('-'))
        return { type: 'option', key: def.key, arg: undefined, word };
      this.next++;
      return { type: 'option', key: def.key, arg: nextWord, word };
    }
    if (nextWord === undefined) return { type: 'error', word, message: POPT_ERROR.NOARG };
    this.next++;
    return { type: 'option', key: def.key, arg: nextWord, word };
  }
}
