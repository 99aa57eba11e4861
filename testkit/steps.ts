/**
 * Step files (spec/golden/cases/NAME.yaml): one node's story in steps. Each step changes the
 * cluster's objects (applied: created or replaced; deleted), restarts the daemon, or has another
 * program change the kernel (ipvsadm and ipset commands); after each step the node's tables must
 * read as NAME.expected.txt beside it says. The unit suite runs the files over the kernel fakes
 * (spec/golden/golden.test.ts), the VM over the real daemon and kernel (spec/vm/golden.vm.test.ts);
 * spec/golden/README.md is the contributor's guide.
 */
import fs from 'node:fs';
import path from 'node:path';
import yaml from 'js-yaml';
import { familyOfAddress } from '../lib/model/ip-family';
import type { V1EndpointSlice, V1Node, V1Service } from '@kubernetes/client-node';

const ROOT = path.resolve(__dirname, '..', '..');
/** Where the cases live: the source tree (the YAML and text are not compiled); GOLDEN_CASES_DIR for another folder. */
export const CASES_DIR = process.env.GOLDEN_CASES_DIR ?? path.join(ROOT, 'spec', 'golden', 'cases');
/** The config and Node every case starts from (a case's `config` is merged over it). */
export const BASE_FILE = path.join(ROOT, 'spec', 'golden', 'base.yaml');

export type StepObject = V1Service | V1EndpointSlice | V1Node;

/** An object to delete: its kind, namespace (default "default"; none for a Node) and name. */
export interface ObjectRef {
  readonly kind: 'Service' | 'EndpointSlice' | 'Node';
  readonly namespace: string;
  readonly name: string;
}

export interface Step {
  /** "1 start", "2 scale down": the index and the step's name */
  readonly title: string;
  /** stop the daemon first; it starts again after this step's other changes */
  readonly restart: boolean;
  /** commands another program runs on the node (`ipvsadm ...`, `ipset ...`), before the objects */
  readonly kernel: readonly string[];
  /** created, or replacing the object of the same kind, namespace and name */
  readonly apply: readonly StepObject[];
  readonly delete: readonly ObjectRef[];
}

export interface StepCase {
  readonly name: string;
  /** the KubeProxyConfiguration: base.yaml's with the case's merged over it */
  readonly config: Record<string, unknown>;
  readonly node: V1Node;
  readonly steps: readonly Step[];
}

/** What is printed after every step, in this order, each under its title in NAME.expected.txt. */
export const OUTPUTS = [
  'ipvsadm -Sn',
  'ipset save',
  'iptables-save',
  'ip6tables-save',
  'kube-ipvs0',
  'kube-ipvs service list',
] as const;
export type Output = (typeof OUTPUTS)[number];
export type StepOutputs = Record<Output, string>;

/** The case names (NAME of cases/NAME.yaml), sorted. */
export function stepCaseNames(): string[] {
  return fs
    .readdirSync(CASES_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}

const isPlain = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `over` merged into `base`: maps key by key, anything else (lists too) replaced. */
export function mergeConfig(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = isPlain(b) && isPlain(v) ? mergeConfig(b, v) : v;
  }
  return out;
}

const API_VERSIONS: Record<string, string> = {
  Service: 'v1',
  Node: 'v1',
  EndpointSlice: 'discovery.k8s.io/v1',
};

/**
 * What kube-apiserver would fill in, so a case stays short: apiVersion, the "default"
 * namespace, a Service's clusterIPs and ipFamilies from its clusterIP, ports' protocol TCP.
 */
function withDefaults(where: string, o: Record<string, unknown>): StepObject {
  const kind = String(o.kind);
  const apiVersion = API_VERSIONS[kind];
  if (!apiVersion) throw new Error(`${where}: a ${kind} is not a step file's kind (Service, EndpointSlice, Node)`);
  const metadata = { ...(o.metadata as Record<string, unknown>) };
  if (kind !== 'Node' && metadata.namespace === undefined) metadata.namespace = 'default';
  const out: Record<string, unknown> = { apiVersion, ...o, metadata };
  if (kind === 'Service') {
    const spec = { ...(o.spec as Record<string, unknown>) };
    const ip = spec.clusterIP;
    if (spec.clusterIPs === undefined && typeof ip === 'string' && ip !== 'None') spec.clusterIPs = [ip];
    const ips = (spec.clusterIPs as string[] | undefined) ?? [];
    if (spec.ipFamilies === undefined && ips.length > 0)
      spec.ipFamilies = ips.map((a) => (familyOfAddress(a) === 'ipv6' ? 'IPv6' : 'IPv4'));
    spec.ports = ((spec.ports as Record<string, unknown>[] | undefined) ?? []).map((p) => ({ protocol: 'TCP', ...p }));
    out.spec = spec;
  }
  return out as unknown as StepObject;
}

function refOf(where: string, r: Record<string, unknown>): ObjectRef {
  const kind = r.kind as ObjectRef['kind'];
  if (!API_VERSIONS[kind] || typeof r.name !== 'string') throw new Error(`${where}: delete needs a kind and a name`);
  return { kind, namespace: kind === 'Node' ? '' : String(r.namespace ?? 'default'), name: r.name };
}

const STEP_KEYS = new Set(['name', 'restart', 'kernel', 'apply', 'delete']);
const CASE_KEYS = new Set(['description', 'config', 'node', 'steps']);

/** Reads cases/NAME.yaml over base.yaml; throws on an unknown key or kind, naming where. */
export function loadStepCase(name: string): StepCase {
  const base = yaml.load(fs.readFileSync(BASE_FILE, 'utf8')) as { config: Record<string, unknown>; node: V1Node };
  const file = `${name}.yaml`;
  const doc = yaml.load(fs.readFileSync(path.join(CASES_DIR, file), 'utf8')) as Record<string, unknown>;
  for (const k of Object.keys(doc)) if (!CASE_KEYS.has(k)) throw new Error(`${file}: unknown key ${k}`);
  const steps = (doc.steps as Record<string, unknown>[] | undefined) ?? [];
  if (steps.length === 0) throw new Error(`${file}: no steps`);
  return {
    name,
    config: mergeConfig(base.config, (doc.config as Record<string, unknown> | undefined) ?? {}),
    node: withDefaults(
      file,
      ((doc.node as Record<string, unknown> | undefined) ?? base.node) as Record<string, unknown>,
    ) as V1Node,
    steps: steps.map((s, i) => {
      const where = `${file} step ${i + 1}`;
      for (const k of Object.keys(s)) if (!STEP_KEYS.has(k)) throw new Error(`${where}: unknown key ${k}`);
      const restart = s.restart === true;
      if (restart && i === 0) throw new Error(`${where}: the first step starts the daemon; it cannot restart it`);
      return {
        title: `${i + 1} ${String(s.name ?? (i === 0 ? 'start' : 'step'))}`,
        restart,
        kernel: ((s.kernel as string[] | undefined) ?? []).map(String),
        apply: ((s.apply as Record<string, unknown>[] | undefined) ?? []).map((o) => withDefaults(where, o)),
        delete: ((s.delete as Record<string, unknown>[] | undefined) ?? []).map((r) => refOf(where, r)),
      };
    }),
  };
}

/** An object's reference (a reference as is). */
export function refTo(o: StepObject | ObjectRef): ObjectRef {
  if (!('metadata' in o)) return o as ObjectRef;
  return { kind: o.kind as ObjectRef['kind'], namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' };
}

/** A kind/namespace/name key for an object or a reference. */
export function objectKey(o: StepObject | ObjectRef): string {
  const r = refTo(o);
  return `${r.kind}/${r.namespace}/${r.name}`;
}

// ---- NAME.expected.txt: every step's outputs under "=== <step title>: <output>" ----

const HEADER =
  '# Written by `make golden UPDATE=1` from the step file beside it, over the kernel fakes;\n' +
  '# the VM holds the real kernel to it. "(as before)": the same text as the step before.\n';
const SAME = '(as before)\n';

export const expectedFile = (name: string) => path.join(CASES_DIR, `${name}.expected.txt`);

/** The text of NAME.expected.txt for these steps' outputs. */
export function formatExpected(c: StepCase, outputs: readonly StepOutputs[]): string {
  let out = HEADER;
  outputs.forEach((o, i) => {
    for (const what of OUTPUTS) {
      const same = i > 0 && outputs[i - 1]![what] === o[what];
      out += `=== ${c.steps[i]!.title}: ${what}\n${same ? SAME : o[what]}`;
    }
  });
  return out;
}

/** NAME.expected.txt read back: per step, each output's text ("(as before)" resolved). */
export function readExpected(c: StepCase): StepOutputs[] {
  const file = expectedFile(c.name);
  if (!fs.existsSync(file)) return [];
  const sections = new Map<string, string>();
  let key = '';
  for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(0, -1)) {
    if (line.startsWith('=== ')) sections.set((key = line.slice(4)), '');
    else if (key) sections.set(key, sections.get(key)! + `${line}\n`);
  }
  const out: StepOutputs[] = [];
  c.steps.forEach((s, i) => {
    const o = {} as StepOutputs;
    for (const what of OUTPUTS) {
      const text = sections.get(`${s.title}: ${what}`) ?? '(missing)\n';
      o[what] = text === SAME && i > 0 ? out[i - 1]![what] : text;
    }
    out.push(o);
  });
  return out;
}

export function writeExpected(c: StepCase, outputs: readonly StepOutputs[]): void {
  fs.writeFileSync(expectedFile(c.name), formatExpected(c, outputs));
}
