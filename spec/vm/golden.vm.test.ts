// The step files (spec/golden/cases/NAME.yaml) against the real kernel: per case, the real
// kube-ipvs process in a network namespace of its own, listing and watching the case's objects
// from the fake API server (started once per case; restart steps aside, the daemon too). Each
// step's changes go to the API server (or, for another program's kernel state, to the real
// ipvsadm and ipset); then the namespace's tables, read by the real ipvsadm, ipset,
// iptables-save and ip, and the daemon's service list, must equal NAME.expected.txt, which the
// unit suite holds the twins to (spec/golden/golden.test.ts). Waiting is on the daemon's
// `sync done` lines, never on a clock.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import type { V1Node } from '@kubernetes/client-node';
import { LoggedProcess, LogLine, startFixtureApiServer, startKubeIpvs } from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';
import { OUTPUT_COMMANDS, formatDummyAddresses, normaliseOutput } from '../../testkit/golden';
import {
  OUTPUTS,
  ObjectRef,
  Step,
  StepCase,
  StepObject,
  StepOutputs,
  loadStepCase,
  objectKey,
  CASES_DIR,
  readExpected,
  refTo,
  stepCaseNames,
} from '../../testkit/steps';
import { familyOfAddress } from '../../lib/model/ip-family';
import { formatServiceList } from '../../lib/cli/views/format-service-list';
import { DEFAULT_VIEWS_SERVER, ServiceListResponse, VIEW_PATHS } from '../../lib/model/views';

const API = '127.0.0.1:18481';
const isSync = (l: LogLine) => l.message === 'sync done';
/** (generous: the daemon's start alone can take minutes in the TCG guest on a busy host) */
const START_MS = 280_000;
/** how long a step may take to reach its expected tables, re-read after every sync */
const STEP_MS = 30_000;
/**
 * Node's compile cache, shared by every case's daemon and API server: under TCG, compiling the
 * same JavaScript again is much of a process's start.
 */
const COMPILE_CACHE = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-golden-cache-'));
process.env.NODE_COMPILE_CACHE = COMPILE_CACHE;

const inNs = (ns: string, argv: readonly string[]) => run('ip', ['netns', 'exec', ns, ...argv]);

/** The case's node: a dummy eth0 with the Node's InternalIP addresses, and lo up. */
function nodeNamespace(ns: string, node: V1Node): void {
  run('ip', ['netns', 'add', ns]);
  run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  run('ip', ['-n', ns, 'link', 'add', 'eth0', 'type', 'dummy']);
  for (const a of node.status?.addresses ?? []) {
    if (a.type !== 'InternalIP') continue;
    const v6 = familyOfAddress(a.address) === 'ipv6';
    run('ip', ['-n', ns, 'addr', 'add', `${a.address}/${v6 ? 64 : 24}`, 'dev', 'eth0', ...(v6 ? ['nodad'] : [])]);
  }
  run('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
}

/** An object's path on the API server: its collection, or itself with `item`. */
function apiPath(o: StepObject | ObjectRef, item: boolean): string {
  const ref = refTo(o);
  const name = item ? `/${ref.name}` : '';
  if (ref.kind === 'Node') return `/api/v1/nodes${name}`;
  if (ref.kind === 'Service') return `/api/v1/namespaces/${ref.namespace}/services${name}`;
  return `/apis/discovery.k8s.io/v1/namespaces/${ref.namespace}/endpointslices${name}`;
}

/** One request to the fake API server in `ns` (curl: the server listens on the namespace's loopback). */
function api(ns: string, method: string, p: string, body?: unknown): void {
  const argv = ['curl', '-sS', '--fail-with-body', '-X', method, `http://${API}${p}`];
  if (body !== undefined) argv.push('-H', 'Content-Type: application/json', '--data-binary', '@-');
  const r = tryRun('ip', ['netns', 'exec', ns, ...argv], body === undefined ? undefined : JSON.stringify(body));
  if (r.status !== 0) throw new Error(`${method} ${p}: ${r.stdout}${r.stderr}`);
}

/** The node's tables now, normalised; the service list only when asked (reading it numbers frontends). */
function readTables(ns: string): Omit<StepOutputs, 'kube-ipvs service list'> {
  const out = {} as StepOutputs;
  for (const [what, argv] of Object.entries(OUTPUT_COMMANDS))
    out[what as keyof typeof OUTPUT_COMMANDS] = normaliseOutput(what as keyof typeof OUTPUT_COMMANDS, inNs(ns, argv));
  const shown = tryRun('ip', ['-n', ns, '-j', 'addr', 'show', 'dev', 'kube-ipvs0']);
  const links =
    shown.status === 0 ? (JSON.parse(shown.stdout) as { addr_info: { local: string; prefixlen: number }[] }[]) : [];
  out['kube-ipvs0'] = formatDummyAddresses(
    links.length > 0 ? links.flatMap((l) => l.addr_info.map((a) => `${a.local}/${a.prefixlen}`)) : null,
  );
  return out;
}

function serviceList(ns: string): string {
  const json = inNs(ns, ['curl', '-sS', '--fail-with-body', `${DEFAULT_VIEWS_SERVER}${VIEW_PATHS.services}`]);
  return normaliseOutput('kube-ipvs service list', formatServiceList(JSON.parse(json) as ServiceListResponse));
}

const sameTables = (a: Partial<StepOutputs>, b: StepOutputs) =>
  OUTPUTS.every((o) => o === 'kube-ipvs service list' || a[o] === b[o]);

/** One case's node: its namespace, API server and daemon. */
class VmNode {
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-golden-'));
  private apiserver: LoggedProcess | undefined;
  daemon: LoggedProcess | undefined;
  private readonly known = new Set<string>();

  constructor(
    private readonly ns: string,
    private readonly c: StepCase,
  ) {}

  private async startDaemon(): Promise<void> {
    const config = path.join(this.dir, 'config.conf');
    fs.writeFileSync(
      config,
      yaml.dump({ ...this.c.config, clientConnection: { kubeconfig: path.join(this.dir, 'kubeconfig') } }),
    );
    this.daemon = startKubeIpvs(['--config', config, '--v=2'], { NODE_COMPILE_CACHE: COMPILE_CACHE }, this.ns);
    await this.daemon.waitFor(isSync, 'the first sync', 0, START_MS);
  }

  /** Runs `step`: the first starts the API server (with the step's objects) and the daemon. */
  async step(step: Step, first: boolean): Promise<void> {
    if (step.restart) await this.daemon?.kill('SIGTERM');
    if (first) nodeNamespace(this.ns, this.c.node);
    for (const command of step.kernel) inNs(this.ns, command.trim().split(/\s+/));
    if (first) {
      const objects = [this.c.node as StepObject, ...step.apply];
      for (const o of objects) this.known.add(objectKey(o));
      this.apiserver = await startFixtureApiServer(this.dir, Number(API.split(':')[1]), objects, this.ns);
      return this.startDaemon();
    }
    for (const o of step.apply) {
      const key = objectKey(o);
      if (this.known.has(key)) api(this.ns, 'PUT', apiPath(o, true), o);
      else api(this.ns, 'POST', apiPath(o, false), o);
      this.known.add(key);
    }
    for (const ref of step.delete) {
      api(this.ns, 'DELETE', apiPath(ref, true));
      this.known.delete(objectKey(ref));
    }
    if (step.restart) await this.startDaemon();
  }

  /** The tables once they equal `expected`, re-read after each sync; as they are when STEP_MS passes without. */
  async settled(expected: StepOutputs): Promise<StepOutputs> {
    const end = Date.now() + STEP_MS;
    for (;;) {
      const from = this.daemon!.lines.length;
      const now = readTables(this.ns);
      if (sameTables(now, expected) || Date.now() >= end)
        return { ...now, 'kube-ipvs service list': serviceList(this.ns) };
      await this.daemon!.waitFor(isSync, 'a sync', from, end - Date.now()).catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    await this.daemon?.kill('SIGTERM');
    await this.apiserver?.kill('SIGTERM');
    tryRun('ip', ['netns', 'del', this.ns]);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The cases to run: GOLDEN_VM_CASES (comma-separated, in that order; `all` for every one) or
 * those spec/golden/vm-cases.txt lists. A listed name with no case fails the file. */
function vmCaseNames(): string[] {
  const only = process.env.GOLDEN_VM_CASES;
  if (only === 'all') return stepCaseNames();
  const names = only
    ? only.split(',')
    : fs
        .readFileSync(path.join(CASES_DIR, '..', 'vm-cases.txt'), 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.startsWith('#'));
  const unknown = names.filter((n) => !stepCaseNames().includes(n));
  if (unknown.length > 0) throw new Error(`golden.vm: no step file for ${unknown.join(', ')}`);
  return names;
}

/** Cases at once, each in its own namespace (the guest's CPUs idle while a daemon waits). */
const LANES = Number(process.env.GOLDEN_VM_LANES ?? 2);

/** Runs at most `n` of the functions given to it at once. */
function limiter(n: number): <T>(f: () => Promise<T>) => Promise<T> {
  let active = 0;
  const queue: (() => void)[] = [];
  return async (f) => {
    if (active >= n) await new Promise<void>((r) => queue.push(r));
    active++;
    try {
      return await f();
    } finally {
      active--;
      queue.shift()?.();
    }
  };
}
const lane = limiter(LANES);

describe('step files, real daemon and kernel', () => {
  afterAll(() => fs.rmSync(COMPILE_CACHE, { recursive: true, force: true }));

  it.concurrent.each(vmCaseNames().map((name, i) => [name, i] as const))(
    '%s: programs, step by step, the tables its expected file holds',
    (name, i) =>
      lane(async () => {
        const c = loadStepCase(name);
        const expected = readExpected(c);
        const node = new VmNode(`golden${i}`, c);
        const t0 = Date.now();
        const laps: string[] = [];
        let verdict = 'FAIL';
        try {
          for (const [n, step] of c.steps.entries()) {
            let t = Date.now();
            await node.step(step, n === 0);
            laps.push(`step ${n + 1} ${Date.now() - t} ms`);
            t = Date.now();
            const now = await node.settled(expected[n]!);
            laps.push(`settled ${Date.now() - t} ms`);
            expect({ step: step.title, ...now }).toEqual({ step: step.title, ...expected[n] });
          }
          expect(node.daemon!.text.filter((l) => /"level":"error"/.test(l))).toEqual([]);
          verdict = 'PASS';
        } finally {
          await node.stop();
          // the per-case figures, for the time table (not asserted)
          process.stderr.write(`golden.vm ${verdict} ${name}: ${Date.now() - t0} ms (${laps.join(', ')})\n`);
        }
      }),
    // (queued behind the other lanes: the timer runs while a case waits for one)
    3_600_000,
  );
});
