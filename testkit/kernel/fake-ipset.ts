/**
 * In-memory fake of the kernel's ipsets behind the `ipset` binary. It parses the same
 * `ipset restore` text the real implementation sends and fails like ipset 7.x on a 6.1 kernel
 * does (ExecError, exit code, "Error in line N: ..." and `line`), pinned by
 * spec/vm/ipset.vm.test.ts.
 *
 * Emulated: create (name length, unknown type, same name with another type = "already exists",
 * even with -exist; another family or size with -exist is silently accepted, as the kernel
 * does), add/del (missing set; entry syntax per type; IPv4/IPv6 per family; without -exist:
 * "already added" / "not added"), flush, destroy (missing set; a set referenced by an iptables
 * rule: "in use by a kernel component", when references are registered with `addReference`,
 * e.g. by FakeIptables), unknown commands (exit 2, no line).
 * Restore is not transactional, like ipset: create/destroy/flush apply at once; consecutive
 * add/del lines for one set are batched and a syntax error discards the unsent batch, while
 * a kernel refusal (already added / not added) keeps the elements before it.
 * A hash:ip,port,net network with a /0 prefix passes the tool and is refused by the kernel
 * (a kernel refusal); a prefix beyond 32/128 is a syntax error.
 * Comments (a set created with `comment`: `add S M comment "x"`, updated by an -exist add,
 * printed by save), maxelem (an add beyond it: "Hash is full"), and `swap` (same type and family).
 * Not emulated: hash:ip CIDR/range expansion, timeouts, counters, hashsize limits, other set
 * types (refused as unknown).
 */
import { isIPv4, isIPv6 } from 'node:net';
import { ExecError } from '../../lib/errors';
import { ExecResult, Execer } from '../../lib/kernel/exec';
import {
  Ipset,
  IpsetObservation,
  IpsetRunner,
  IpsetState,
  IpsetSyncResult,
  ObservedSet,
} from '../../lib/kernel/ipset/ipset';
import { familyKeyword, formatIpsetState } from '../../lib/kernel/ipset/ipset-text';
import { IpsetSync, WarnLogger } from '../../lib/kernel/ipset/ipset-sync';
import { IpFamily } from '../../lib/model/ip-family';
import { IPSET_MAX_NAME_LENGTH } from '../../lib/model/names';
import { DesiredIpsets, IpsetType, ipsetAddress } from '../../lib/model/ipset';

const TYPES: readonly string[] = Object.values(IpsetType);
const PROTOS: readonly string[] = ['tcp', 'udp', 'sctp', 'udplite', 'icmp', 'icmpv6'];

interface FakeSet {
  readonly name: string;
  readonly type: IpsetType;
  readonly family?: IpFamily;
  readonly options: string;
  members: Set<string>;
  /** created with `comment`: member -> comment ('' for none) */
  comments?: Map<string, string>;
  maxelem: number;
}

/** A refusal: `line` false = ipset prints no line number for it (bitmap port parsing). */
class Refusal {
  constructor(
    readonly message: string,
    readonly exitCode = 1,
    readonly withLine = true,
  ) {}
}

export class FakeIpset implements IpsetRunner, Ipset {
  private readonly sets = new Map<string, FakeSet>();
  private readonly refs = new Map<string, number>();
  private readonly refSources: (() => Iterable<string>)[] = [];
  private readonly sync_: IpsetSync;
  /** every restore text received (also through `exec`) */
  readonly restores: string[] = [];
  /** number of `save` calls */
  saves = 0;
  /** number of `list` calls (the netlink read: no process) */
  lists = 0;

  /** `log` receives the quarantine notices of its Ipset side (default: the "ipset" component log). */
  constructor(opts: { readonly log?: WarnLogger } = {}) {
    this.sync_ = new IpsetSync(this, opts.log);
  }

  // ---- Ipset ----
  observe(): Promise<IpsetState> {
    return this.sync_.observe();
  }
  observeCounted(): Promise<IpsetObservation> {
    return this.sync_.observeCounted();
  }
  sync(desired: DesiredIpsets): Promise<IpsetSyncResult> {
    return this.sync_.sync(desired);
  }
  invalidate(): void {
    this.sync_.invalidate();
  }
  write(text: string): Promise<number> {
    return this.sync_.write(text);
  }

  // ---- IpsetRunner ----
  async save(): Promise<string> {
    this.saves++;
    const out: string[] = [];
    for (const s of this.sets.values()) {
      out.push(`create ${s.name} ${s.type} ${s.options}`);
      for (const m of s.members) {
        const c = s.comments?.get(m);
        out.push(`add ${s.name} ${m}${c ? ` comment "${c}"` : ''}`);
      }
    }
    return out.join('\n') + (out.length ? '\n' : '');
  }

  async restore(text: string): Promise<void> {
    this.applyRestore(text, true);
  }

  /** The state parseIpsetSave(save()) gives, read as the kernel's netlink dump would be: no exec. */
  readonly list = async (): Promise<IpsetState> => {
    this.lists++;
    const out = new Map<string, ObservedSet>();
    for (const s of this.sets.values()) {
      out.set(s.name, {
        name: s.name,
        type: s.type,
        ...(s.family ? { family: s.family } : {}),
        options: s.options,
        members: new Set(s.members),
        ...(s.comments ? { comments: new Map(s.comments) } : {}),
      });
    }
    return out;
  };

  // ---- the binary, for ExecIpsetRunner and tests ----
  /** An Execer that answers `ipset save`, `ipset restore [-exist]`, `ipset destroy NAME`. */
  readonly exec: Execer = {
    run: async (cmd: string, args: readonly string[], stdin?: string): Promise<ExecResult> => {
      if (cmd !== 'ipset') throw new Error(`FakeIpset.exec: not ipset: ${cmd}`);
      try {
        if (args.length === 1 && args[0] === 'save') return { stdout: await this.save(), stderr: '', exitCode: 0 };
        if (args[0] === 'restore' && args.length <= 2) {
          this.applyRestore(stdin ?? '', args[1] === '-exist');
          return { stdout: '', stderr: '', exitCode: 0 };
        }
        if (args[0] === 'destroy' && args.length === 2) {
          this.destroy(args[1]!);
          return { stdout: '', stderr: '', exitCode: 0 };
        }
      } catch (e) {
        if (e instanceof ExecError) return { stdout: '', stderr: e.stderr, exitCode: e.exitCode };
        throw e;
      }
      throw new Error(`FakeIpset.exec: unsupported: ipset ${args.join(' ')}`);
    },
  };

  /**
   * Applies restore text like `ipset restore [-exist]`. Throws ExecError whose stderr, exit code
   * and `line` match ipset's.
   */
  applyRestore(text: string, exist: boolean): void {
    this.restores.push(text);
    const cmd = `ipset restore${exist ? ' -exist' : ''}`;
    let batch:
      { set: FakeSet; verb: 'add' | 'del'; entries: { entry: string; comment?: string; line: number }[] } | undefined;
    const send = (): void => {
      if (!batch) return;
      const b = batch;
      batch = undefined;
      for (const { entry, comment, line } of b.entries) {
        try {
          this.applyElement(b.set, b.verb, entry, exist, comment);
        } catch (e) {
          if (e instanceof Refusal) throw fail(cmd, e, line);
          throw e;
        }
      }
    };
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const lineNo = i + 1;
      const words = lines[i]!.trim()
        .split(/\s+/)
        .filter((w) => w !== '');
      if (words.length === 0 || words[0]!.startsWith('#')) continue;
      try {
        const [verb, name] = words;
        if (verb === 'add' || verb === 'del') {
          const set = this.sets.get(name ?? '');
          if (!set) throw new Refusal('The set with the given name does not exist');
          const entry = parseEntry(set, words[2] ?? '');
          const comment = parseComment(set, verb, words.slice(3));
          if (!batch || batch.set !== set || batch.verb !== verb) {
            send();
            batch = { set, verb, entries: [] };
          }
          batch.entries.push({ entry, ...(comment !== undefined ? { comment } : {}), line: lineNo });
          continue;
        }
        send();
        if (verb === 'create') this.create(words.slice(1), exist);
        else if (verb === 'swap' || verb === 'w') this.swap(name, words[2]);
        else if (verb === 'destroy' || verb === 'x') this.destroyOne(name);
        else if (verb === 'flush') this.flushOne(name);
        else throw new Refusal(`No command specified: unknown argument ${verb}`, 2, false);
      } catch (e) {
        if (e instanceof Refusal) throw fail(cmd, e, lineNo);
        throw e;
      }
    }
    send();
  }

  /** `ipset destroy NAME` (throws ExecError like ipset, without a line). */
  destroy(name: string): void {
    try {
      this.destroyOne(name);
    } catch (e) {
      if (e instanceof Refusal) throw fail(`ipset destroy ${name}`, e, undefined);
      throw e;
    }
  }

  /** An iptables rule now uses the set (`-m set --match-set NAME`). */
  addReference(name: string): void {
    this.refs.set(name, (this.refs.get(name) ?? 0) + 1);
  }
  dropReference(name: string): void {
    const n = (this.refs.get(name) ?? 0) - 1;
    if (n > 0) this.refs.set(name, n);
    else this.refs.delete(name);
  }
  /** Something (FakeIptables) whose rules reference sets; consulted by destroy. */
  addReferenceSource(source: () => Iterable<string>): void {
    this.refSources.push(source);
  }
  /** Referenced by an iptables rule (or `addReference`). */
  isReferenced(name: string): boolean {
    if (this.refs.has(name)) return true;
    return this.refSources.some((src) => [...src()].includes(name));
  }
  has(name: string): boolean {
    return this.sets.has(name);
  }
  /** Members of one set (undefined when missing). */
  members(name: string): ReadonlySet<string> | undefined {
    return this.sets.get(name)?.members;
  }
  /** Sorted `create NAME TYPE [family F]` / `add NAME ENTRY` lines, comparable with the kernel's. */
  dump(): string {
    const state = new Map<string, ObservedSet>();
    for (const s of this.sets.values()) state.set(s.name, s);
    return formatIpsetState(state);
  }

  private create(words: string[], exist: boolean): void {
    const [name, type, ...opts] = words;
    if (!name || !type) throw new Refusal('Syntax error: Missing mandatory argument: setname and typename');
    if (name.length > IPSET_MAX_NAME_LENGTH) {
      throw new Refusal(`Syntax error: setname '${name}' is longer than ${IPSET_MAX_NAME_LENGTH} characters`);
    }
    if (!TYPES.includes(type)) throw new Refusal(`Syntax error: Unknown settype: \`${type}'`);
    let family: IpFamily | undefined;
    if (type !== 'bitmap:port') {
      const fi = opts.indexOf('family');
      const f = fi >= 0 ? opts[fi + 1] : 'inet';
      if (f !== 'inet' && f !== 'inet6') throw new Refusal(`Syntax error: Unknown protocol family ${f}`);
      family = f === 'inet' ? 'ipv4' : 'ipv6';
    } else if (!opts.includes('range')) {
      throw new Refusal('Syntax error: Missing mandatory option: range');
    }
    const existing = this.sets.get(name);
    if (existing) {
      // the kernel compares type (and revision) only; -exist hides a same-type duplicate
      if (existing.type !== type || !exist)
        throw new Refusal('Set cannot be created: set with the same name already exists');
      return;
    }
    const commented = opts.includes('comment');
    const maxelem = type === 'bitmap:port' ? 65536 : optNum(opts, 'maxelem', 65536);
    // the order ipset save prints (lib/netlink/ipset-codec.ts formatOptions, pinned in the VM)
    const options =
      type === 'bitmap:port'
        ? `range ${opts[opts.indexOf('range') + 1] ?? ''}${commented ? ' comment' : ''}`
        : `family ${familyKeyword(family!)} hashsize ${optNum(opts, 'hashsize', 1024)} maxelem ${maxelem}${commented ? ' comment' : ''} bucketsize 12 initval 0x00000000`;
    this.sets.set(name, {
      name,
      type: type as IpsetType,
      ...(family ? { family } : {}),
      options,
      members: new Set(),
      ...(commented ? { comments: new Map() } : {}),
      maxelem,
    });
  }

  /** `swap A B`: the two sets exchange their contents (and create options), as the kernel does. */
  private swap(a: string | undefined, b: string | undefined): void {
    const x = this.sets.get(a ?? '');
    const y = this.sets.get(b ?? '');
    if (!x || !y) throw new Refusal('The set with the given name does not exist');
    if (x.type !== y.type || x.family !== y.family)
      throw new Refusal('The sets cannot be swapped: their type does not match');
    this.sets.set(x.name, { ...y, name: x.name });
    this.sets.set(y.name, { ...x, name: y.name });
  }

  private destroyOne(name: string | undefined): void {
    if (name === undefined) {
      for (const n of [...this.sets.keys()]) if (!this.isReferenced(n)) this.sets.delete(n);
      return;
    }
    if (!this.sets.has(name)) throw new Refusal('The set with the given name does not exist');
    if (this.isReferenced(name)) throw new Refusal('Set cannot be destroyed: it is in use by a kernel component');
    this.sets.delete(name);
  }

  private flushOne(name: string | undefined): void {
    if (name === undefined) {
      for (const s of this.sets.values()) {
        s.members.clear();
        s.comments?.clear();
      }
      return;
    }
    const s = this.sets.get(name);
    if (!s) throw new Refusal('The set with the given name does not exist');
    s.members.clear();
    s.comments?.clear();
  }

  private applyElement(set: FakeSet, verb: 'add' | 'del', entry: string, exist: boolean, comment?: string): void {
    if (set.type === 'hash:ip,port,net' && entry.endsWith('/0')) {
      throw new Refusal('The value of the CIDR parameter of the IP address is invalid');
    }
    if (verb === 'add') {
      if (set.members.has(entry) && !exist) throw new Refusal("Element cannot be added to the set: it's already added");
      if (!set.members.has(entry) && set.members.size >= set.maxelem)
        throw new Refusal('Hash is full, cannot add more elements');
      set.members.add(entry);
      // an -exist add replaces the comment (none given: none kept), as the kernel's overwrite does
      set.comments?.set(entry, comment ?? '');
    } else {
      if (!set.members.has(entry) && !exist)
        throw new Refusal("Element cannot be deleted from the set: it's not added");
      set.members.delete(entry);
      set.comments?.delete(entry);
    }
  }
}

function optNum(opts: string[], key: string, dflt: number): number {
  const i = opts.indexOf(key);
  return i >= 0 ? Number(opts[i + 1]) : dflt;
}

function fail(cmd: string, r: Refusal, line: number | undefined): ExecError {
  const at = r.withLine && line !== undefined ? `Error in line ${line}: ` : '';
  return new ExecError(cmd, r.exitCode, `ipset v7.17: ${at}${r.message}\n`, r.withLine ? line : undefined);
}

function parseIp(s: string, family: IpFamily | undefined): string {
  const v4 = isIPv4(s);
  const v6 = isIPv6(s);
  if (family === 'ipv6' ? !v6 : !v4) {
    throw new Refusal(
      `Syntax error: cannot parse ${s}: resolving to ${family === 'ipv6' ? 'IPv6' : 'IPv4'} address failed`,
    );
  }
  return ipsetAddress(s);
}

function parseProtoPort(s: string): string {
  const colon = s.indexOf(':');
  const proto = colon < 0 ? 'tcp' : s.slice(0, colon).toLowerCase();
  const port = colon < 0 ? s : s.slice(colon + 1);
  if (!PROTOS.includes(proto)) throw new Refusal(`Syntax error: cannot parse '${s}' as a protocol`);
  if (!/^\d+$/.test(port) || Number(port) > 65535)
    throw new Refusal(`Syntax error: cannot parse '${port}' as a ${proto} port`);
  return `${proto}:${Number(port)}`;
}

function parseNet(s: string, family: IpFamily | undefined): string {
  const slash = s.indexOf('/');
  if (slash < 0) return parseIp(s, family);
  const prefix = s.slice(slash + 1);
  const bits = family === 'ipv6' ? 128 : 32;
  // the tool accepts 0..bits; a zero prefix is refused by the kernel (see applyElement)
  if (!/^\d+$/.test(prefix) || Number(prefix) > bits) {
    throw new Refusal(`Syntax error: '${prefix}' is out of range 0-${bits}`);
  }
  parseIp(s.slice(0, slash), family);
  // ipset masks host bits and prints a host route without prefix
  const masked = maskNet(s.slice(0, slash), Number(prefix), family);
  return Number(prefix) === bits ? masked : `${masked}/${Number(prefix)}`;
}

function maskNet(ip: string, prefix: number, family: IpFamily | undefined): string {
  if (family !== 'ipv6') {
    const n = ip.split('.').map(Number);
    const v = ((n[0]! << 24) | (n[1]! << 16) | (n[2]! << 8) | n[3]!) >>> 0;
    const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
    const m = (v & mask) >>> 0;
    return [m >>> 24, (m >>> 16) & 255, (m >>> 8) & 255, m & 255].join('.');
  }
  const full = ipsetAddress(ip);
  const groups = expand6(full);
  for (let g = 0; g < 8; g++) {
    const keep = Math.max(0, Math.min(16, prefix - g * 16));
    groups[g] = groups[g]! & ((0xffff << (16 - keep)) & 0xffff);
  }
  return ipsetAddress(groups.map((x) => x.toString(16)).join(':'));
}

function expand6(ip: string): number[] {
  const [head, tail] = ip.includes('::') ? ip.split('::') : [ip, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const mid = tail === undefined ? [] : Array(8 - h.length - t.length).fill('0');
  return [...h, ...mid, ...t].map((x) => parseInt(x, 16));
}

/** The `comment "x"` after an add's entry (undefined: none); refused for a set without comments. */
function parseComment(set: FakeSet, verb: 'add' | 'del', words: readonly string[]): string | undefined {
  if (words.length === 0) return undefined;
  if (words[0] !== 'comment' || words.length !== 2 || verb !== 'add')
    throw new Refusal(`Syntax error: Unknown argument: '${words[0]}'`);
  if (!set.comments) throw new Refusal('Comment cannot be used: set was created without comment support');
  return words[1]!.replace(/^"(.*)"$/, '$1');
}

/** Validates an entry for the set's type and returns it in ipset's spelling. */
function parseEntry(set: FakeSet, raw: string): string {
  if (set.type === 'bitmap:port') {
    if (!/^\d+$/.test(raw)) throw new Refusal(`Syntax error: '${raw}' is invalid as number`, 1, false);
    if (Number(raw) > 65535) throw new Refusal(`Syntax error: '${raw}' is out of range 0-65535`, 1, false);
    return String(Number(raw));
  }
  const parts = raw.split(',');
  const want = set.type === 'hash:ip' ? 1 : set.type === 'hash:ip,port' ? 2 : 3;
  if (parts.length > want) {
    if (want === 1) throw new Refusal(`Syntax error: Elem separator in ${raw}, but settype ${set.type} supports none.`);
    const n = parts.length - 1 === 2 ? 'Two' : String(parts.length - 1);
    throw new Refusal(
      `Syntax error: ${n} elem separators in ${raw}, but settype ${set.type} supports ${want === 2 ? 'one' : 'two'}.`,
    );
  }
  if (parts.length < want) {
    throw new Refusal(`Syntax error: ${parts.length === 1 ? 'Second' : 'Third'} element is missing from ${raw}.`);
  }
  const ip = parseIp(parts[0]!, set.family);
  if (want === 1) return ip;
  const pp = parseProtoPort(parts[1]!);
  if (want === 2) return `${ip},${pp}`;
  const third = set.type === 'hash:ip,port,ip' ? parseIp(parts[2]!, set.family) : parseNet(parts[2]!, set.family);
  return `${ip},${pp},${third}`;
}
