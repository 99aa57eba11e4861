/**
 * The outputs of a step (testkit/steps.ts) normalised to what NAME.expected.txt holds, from the
 * text the kernel's tools print (or the fakes print the same way). Pure.
 */
import { familyOfAddress } from '../lib/model/ip-family';
import { Output } from './steps';

/** The command each kernel-table output is read with, in the node's namespace (the VM). */
export const OUTPUT_COMMANDS = {
  'ipvsadm -Sn': ['ipvsadm', '-Sn'],
  'ipset save': ['ipset', 'save'],
  'iptables-save': ['iptables-save'],
  'ip6tables-save': ['ip6tables-save'],
} as const satisfies Partial<Record<Output, readonly string[]>>;

/** One output's text as NAME.expected.txt holds it. */
export function normaliseOutput(what: Output, text: string): string {
  switch (what) {
    case 'ipvsadm -Sn':
      // ipvsadm sorts services and real servers itself: its order is kept
      return joinLines(text.split('\n').filter((l) => l !== ''));
    case 'ipset save':
      return normaliseIpsetSave(text);
    case 'iptables-save':
    case 'ip6tables-save':
      return normaliseIptablesSave(text);
    case 'kube-ipvs0':
    case 'kube-ipvs service list':
      return text;
  }
}

/** kube-ipvs0's addresses ("10.96.0.1/32"), IPv4 first, each family sorted; null: no kube-ipvs0. */
export function formatDummyAddresses(addresses: readonly string[] | null): string {
  if (addresses === null) return '(no kube-ipvs0)\n';
  const of = (f: string) => addresses.filter((a) => familyOfAddress(a.split('/')[0]!) === f).sort();
  const [v4, v6] = [of('ipv4'), of('ipv6')];
  return joinLines([...v4, ...v6]);
}

const joinLines = (lines: readonly string[]): string => lines.map((l) => `${l}\n`).join('');

/**
 * `ipset save`: the sets by name, each `create` line (without the kernel's sizing and hash seed:
 * hashsize, maxelem, bucketsize, initval) and then its members, sorted (the kernel lists a hash
 * in bucket order).
 */
function normaliseIpsetSave(text: string): string {
  const sets = new Map<string, { create: string; members: string[] }>();
  for (const line of text.split('\n')) {
    const [verb, name] = line.split(' ', 2);
    if (verb === 'create' && name) {
      const create = line.replace(/ (hashsize|maxelem|bucketsize) \d+| initval 0x[0-9a-f]+/g, '');
      sets.set(name, { create, members: sets.get(name)?.members ?? [] });
    } else if (verb === 'add' && name) {
      const s = sets.get(name) ?? { create: '', members: [] };
      s.members.push(line);
      sets.set(name, s);
    }
  }
  const out: string[] = [];
  for (const name of [...sets.keys()].sort()) {
    const s = sets.get(name)!;
    out.push(s.create, ...s.members.sort());
  }
  return joinLines(out);
}

/**
 * `iptables-save` of the filter and nat tables, in that order: no comment lines or counters; each
 * table's chain declarations sorted, then its rules chain by chain in that order, each chain's
 * rules in the kernel's order (the order they match in).
 */
function normaliseIptablesSave(text: string): string {
  const tables = new Map<string, string[]>();
  let table = '';
  let chains: string[] = [];
  let rules = new Map<string, string[]>();
  for (const raw of text.split('\n')) {
    const line = raw.replace(/ \[\d+:\d+\]$/, '');
    if (line.startsWith('*')) {
      table = line.slice(1);
      chains = [];
      rules = new Map();
    } else if (line.startsWith(':')) {
      chains.push(line);
    } else if (line.startsWith('-A ')) {
      const chain = line.split(' ', 2)[1]!;
      rules.set(chain, [...(rules.get(chain) ?? []), line]);
    } else if (line === 'COMMIT') {
      chains.sort();
      const lines = [`*${table}`, ...chains];
      for (const decl of chains) lines.push(...(rules.get(decl.slice(1).split(' ')[0]!) ?? []));
      tables.set(table, [...lines, 'COMMIT']);
    }
  }
  // iptables-save prints the tables the kernel has loaded, in its own order
  return joinLines(IPTABLES_TABLES.flatMap((t) => tables.get(t) ?? []));
}

/** The tables a golden file holds (the proxy writes no other). */
export const IPTABLES_TABLES = ['filter', 'nat'] as const;
