/**
 * A rule as iptables-save prints it back, for FakeIptables: the kernel keeps a rule as
 * matches and a target, not as text, so iptables-save spells it its own way (iptables 1.8.9 on
 * Linux 6.1, pinned by spec/vm/golden.vm.test.ts and spec/kernel/iptables/fake-iptables.test.ts):
 * - `-s`, `-d`, `-i`, `-o`, `-p` first, in that order, each with its `!`; an address with its
 *   prefix length (`/32`, `/128`);
 * - `-m mark --mark` in plain hex (`0x004000` is `0x4000`);
 * - `-j MARK`: `--set-mark`, `--or-mark`, `--xor-mark`, `--and-mark` as `--set-xmark VALUE/MASK`;
 * - `-j REJECT` with its default `--reject-with icmp-port-unreachable` (`icmp6-` for IPv6);
 * - `-m ipvs`: its options in libxt_ipvs's order (`--vproto` as the protocol's number, then
 *   `--vaddr` without a full-length prefix, `--vport`, `--vdir`, `--vmethod`, `--vportctl`);
 * - a `--comment` as libxtables' xtables_save_string prints it: bare when it is only letters,
 *   digits, `_` and `-`, else in double quotes with `"`, `\` and `'` escaped by a backslash
 *   (the VM printed kube-proxy's SCTP NodePort comment as `... type \'hash ip:port\'`).
 * Only the spellings the proxy's rules (and kube-proxy's) use are known; anything else is printed
 * as written.
 */
import type { IpFamily } from '../../lib/model/ip-family';

const HEADER = ['-s', '-d', '-i', '-o', '-p'] as const;
type Header = (typeof HEADER)[number];
const isHeader = (t: string | undefined): t is Header => (HEADER as readonly (string | undefined)[]).includes(t);
const PROTOCOL_NUMBER: Readonly<Record<string, string>> = { tcp: '6', udp: '17', sctp: '132' };

/** libxt_ipvs prints its options in this order, whatever order they were given in. */
const IPVS_ORDER = ['--ipvs', '--vproto', '--vaddr', '--vport', '--vdir', '--vmethod', '--vportctl'];

/** `-m ipvs`'s option units (`[!] --opt [value]`) as libxt_ipvs prints them. */
function ipvsOptions(units: string[][], family: IpFamily): string[] {
  const full = family === 'ipv6' ? '/128' : '/32';
  const spelled = units.map((u) => {
    const opt = u.find((t) => t.startsWith('--'))!;
    const i = u.indexOf(opt);
    const value = u[i + 1];
    if (opt === '--vproto' && value !== undefined)
      return [...u.slice(0, i + 1), PROTOCOL_NUMBER[value.toLowerCase()] ?? value];
    if (opt === '--vaddr' && value?.endsWith(full)) return [...u.slice(0, i + 1), value.slice(0, -full.length)];
    return u;
  });
  const rank = (u: string[]) => IPVS_ORDER.indexOf(u.find((t) => t.startsWith('--'))!);
  return spelled.sort((a, b) => rank(a) - rank(b)).flat();
}

const hex = (n: number): string => `0x${(n >>> 0).toString(16)}`;
/** `V` or `V/M` in plain hex (iptables reads decimal or 0x-prefixed hex). */
const hexPair = (text: string): string =>
  text
    .split('/')
    .map((x) => hex(Number(x)))
    .join('/');
const withPrefix = (address: string, family: IpFamily): string =>
  address.includes('/') ? address : `${address}/${family === 'ipv6' ? 128 : 32}`;

/** MARK's options as the one iptables-save prints: `--set-xmark VALUE/MASK`. */
function xmark(option: string, value: string): string {
  const [v, m] = value.split('/').map((x) => Number(x)) as [number, number | undefined];
  switch (option) {
    case '--set-mark':
      return `${hex(v)}/${hex(m ?? 0xffffffff)}`;
    case '--or-mark':
      return `${hex(v)}/${hex(v)}`;
    case '--xor-mark':
      return `${hex(v)}/0x0`;
    case '--and-mark':
      return `0x0/${hex(~v)}`;
    default:
      return hexPair(value);
  }
}

/** The tokens of one rule (after `-A CHAIN`) as iptables-save prints them. */
export function saveSpelling(rule: readonly string[], family: IpFamily): string[] {
  const header = new Map<Header, string[]>();
  const rest: string[] = [];
  let target = '';
  for (let i = 0; i < rule.length; i++) {
    const t = rule[i]!;
    const negated = t === '!' && isHeader(rule[i + 1]);
    const opt = negated ? rule[i + 1]! : t;
    if (isHeader(opt)) {
      const value = rule[i + (negated ? 2 : 1)] ?? '';
      const spelled =
        opt === '-s' || opt === '-d' ? withPrefix(value, family) : opt === '-p' ? value.toLowerCase() : value;
      header.set(opt, [...(negated ? ['!'] : []), opt, spelled]);
      i += negated ? 2 : 1;
      continue;
    }
    if (t === '-j' || t === '-g') target = rule[i + 1] ?? '';
    const next = rule[i + 1];
    if (next !== undefined && t === '--mark') {
      rest.push(t, hexPair(next));
      i++;
    } else if (next !== undefined && target === 'MARK' && /^--(set|or|xor|and|set-x)-?mark$/.test(t)) {
      rest.push('--set-xmark', xmark(t, next));
      i++;
    } else if (t === '-m' && next === 'ipvs') {
      // its options up to the next match or target, as units of `[!] --opt [value]`
      const units: string[][] = [];
      let j = i + 2;
      while (j < rule.length && !['-m', '-j', '-g'].includes(rule[j]!)) {
        const unit = rule[j] === '!' ? ['!', rule[j + 1]!] : [rule[j]!];
        j += unit.length;
        if (j < rule.length && !rule[j]!.startsWith('-') && rule[j] !== '!') unit.push(rule[j++]!);
        units.push(unit);
      }
      rest.push(t, next, ...ipvsOptions(units, family));
      i = j - 1;
    } else rest.push(t);
  }
  if (target === 'REJECT' && !rest.includes('--reject-with'))
    rest.push('--reject-with', family === 'ipv6' ? 'icmp6-port-unreachable' : 'icmp-port-unreachable');
  return [...HEADER.flatMap((h) => header.get(h) ?? []), ...rest];
}

/** A comment's text as libxtables' xtables_save_string prints it. */
export function saveComment(text: string): string {
  if (/^[_\-0-9A-Za-z]+$/.test(text)) return text;
  return `"${text.replace(/["\\']/g, (c) => `\\${c}`)}"`;
}

/** One rule's tokens (after `-A CHAIN`) as one iptables-save line's text. */
export function saveText(rule: readonly string[], family: IpFamily): string {
  const tokens = saveSpelling(rule, family);
  return tokens
    .map((t, i) => (tokens[i - 1] === '--comment' ? saveComment(t) : t === '' || /[\s"]/.test(t) ? `"${t}"` : t))
    .join(' ');
}
