/**
 * The golden cases (spec/golden/cases/NAME/): `objects.yaml` holds a KubeProxyConfiguration, this
 * node's Node, and Services and EndpointSlices; beside it, the node's tables as the kernel's own
 * tools print them, normalised (GOLDEN_FILES). The unit suite runs each case over the kernel
 * fakes (spec/golden/golden.test.ts), the VM runs the real daemon against the real kernel with
 * the same files (spec/vm/golden.vm.test.ts): a fake that drifts from the kernel fails there.
 */
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import type { V1EndpointSlice, V1Node, V1Service } from '@kubernetes/client-node';

const ROOT = path.resolve(__dirname, '..', '..');
/** Where the cases live: the source tree (the YAML and text are not compiled). */
export const GOLDEN_DIR = path.join(ROOT, 'spec', 'golden', 'cases');

/** The files beside objects.yaml: the tool each is read with, in the kernel's netns. */
export const GOLDEN_FILES = {
  'ipvsadm-Sn.txt': ['ipvsadm', '-Sn'],
  'ipset-save.txt': ['ipset', 'save'],
  'iptables-save.txt': ['iptables-save'],
  'ip6tables-save.txt': ['ip6tables-save'],
} as const;
export type GoldenFile = keyof typeof GOLDEN_FILES;

/** One case: its objects by kind, and its KubeProxyConfiguration as a plain object. */
export interface GoldenCase {
  readonly name: string;
  readonly dir: string;
  readonly config: Record<string, unknown>;
  readonly node: V1Node;
  readonly services: V1Service[];
  readonly slices: V1EndpointSlice[];
}

/** The case names, sorted. */
export function goldenCaseNames(): string[] {
  return fs
    .readdirSync(GOLDEN_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
}

/** Reads one case's objects.yaml; throws on a document of another kind, or a missing config or Node. */
export function loadGoldenCase(name: string): GoldenCase {
  const dir = path.join(GOLDEN_DIR, name);
  const docs = yaml.loadAll(fs.readFileSync(path.join(dir, 'objects.yaml'), 'utf8')) as Record<string, unknown>[];
  let config: Record<string, unknown> | undefined;
  let node: V1Node | undefined;
  const services: V1Service[] = [];
  const slices: V1EndpointSlice[] = [];
  for (const d of docs.filter((x) => x !== null && x !== undefined)) {
    if (d.kind === 'KubeProxyConfiguration') config = d;
    else if (d.kind === 'Node') node = d as V1Node;
    else if (d.kind === 'Service') services.push(d as V1Service);
    else if (d.kind === 'EndpointSlice') slices.push(d as unknown as V1EndpointSlice);
    else throw new Error(`${name}/objects.yaml: a ${String(d.kind)} is not a golden case's kind`);
  }
  if (!config || !node) throw new Error(`${name}/objects.yaml: needs a KubeProxyConfiguration and a Node`);
  return { name, dir, config, node, services, slices };
}

/** The expected text of one file of a case. */
export function readGolden(c: GoldenCase, file: GoldenFile): string {
  return fs.readFileSync(path.join(c.dir, file), 'utf8');
}

/** Writes one file of a case (GOLDEN_UPDATE=1 in the unit suite). */
export function writeGolden(c: GoldenCase, file: GoldenFile, text: string): void {
  fs.writeFileSync(path.join(c.dir, file), text);
}

/** A tool's output as its golden file holds it. */
export function normaliseGolden(file: GoldenFile, text: string): string {
  switch (file) {
    case 'ipvsadm-Sn.txt':
      // ipvsadm sorts services and real servers itself: its order is kept
      return joinLines(text.split('\n').filter((l) => l !== ''));
    case 'ipset-save.txt':
      return normaliseIpsetSave(text);
    case 'iptables-save.txt':
    case 'ip6tables-save.txt':
      return normaliseIptablesSave(text);
  }
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
