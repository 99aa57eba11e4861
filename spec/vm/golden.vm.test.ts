// The golden cases (spec/golden/cases) against the real kernel: for each case, the real
// kube-ipvs process in a network namespace of its own, with the case's KubeProxyConfiguration,
// listing and watching the case's objects from the fake API server; once it has synced, the
// namespace's tables as ipvsadm, ipset and iptables-save print them, normalised, must equal the
// files the unit suite holds the fakes to (spec/golden/golden.test.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { LoggedProcess, LogLine, startFixtureApiServer, startKubeIpvs } from '../../testkit/processes';
import { run, tryRun } from '../../testkit/netns';
import {
  GOLDEN_FILES,
  GoldenCase,
  GoldenFile,
  goldenCaseNames,
  loadGoldenCase,
  normaliseGolden,
  readGolden,
} from '../../testkit/golden';
import { eventually } from '../../testkit/wait-for';

const API_PORT = 18481;
const isSync = (l: LogLine) => l.message === 'sync done';

/** The case's node: a dummy eth0 with the Node's InternalIP addresses, and lo up. */
function nodeNamespace(ns: string, c: GoldenCase): void {
  run('ip', ['netns', 'add', ns]);
  run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  run('ip', ['-n', ns, 'link', 'add', 'eth0', 'type', 'dummy']);
  for (const a of c.node.status?.addresses ?? []) {
    if (a.type !== 'InternalIP') continue;
    const v6 = a.address.includes(':');
    run('ip', ['-n', ns, 'addr', 'add', `${a.address}/${v6 ? 64 : 24}`, 'dev', 'eth0', ...(v6 ? ['nodad'] : [])]);
  }
  run('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
}

/** Every golden file's text as the namespace's tools print it now, normalised. */
function tables(ns: string): Record<GoldenFile, string> {
  const out = {} as Record<GoldenFile, string>;
  for (const [file, argv] of Object.entries(GOLDEN_FILES) as [GoldenFile, readonly string[]][])
    out[file] = normaliseGolden(file, run('ip', ['netns', 'exec', ns, ...argv]));
  return out;
}

describe.each(goldenCaseNames())('golden case %s, real daemon and kernel', (name) => {
  const c = loadGoldenCase(name);
  const ns = `golden-${name}`.slice(0, 15);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-golden-'));
  let apiserver: LoggedProcess | undefined;
  let daemon: LoggedProcess | undefined;

  beforeAll(async () => {
    nodeNamespace(ns, c);
    apiserver = await startFixtureApiServer(dir, API_PORT, [c.node, ...c.services, ...c.slices], ns);
    const config = path.join(dir, 'config.conf');
    fs.writeFileSync(
      config,
      yaml.dump({ ...c.config, clientConnection: { kubeconfig: path.join(dir, 'kubeconfig') } }),
    );
    daemon = startKubeIpvs(['--config', config, '--v=2'], {}, ns);
    // (generous: the daemon's start alone can take minutes in the TCG guest on a busy host)
    await daemon.waitFor(isSync, 'the first sync', 0, 280_000);
  });

  afterAll(async () => {
    await daemon?.kill('SIGTERM');
    await apiserver?.kill('SIGTERM');
    tryRun('ip', ['netns', 'del', ns]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('programs the tables its files hold', async () => {
    // read until two reads agree: every sync the objects ask for has run
    let last = '';
    const now = await eventually(
      'the tables settled',
      async () => {
        await new Promise((r) => setTimeout(r, 1500));
        const t = tables(ns);
        const key = JSON.stringify(t);
        const stable = key === last;
        last = key;
        return { t, stable };
      },
      (v) => v.stable,
      120_000,
    );
    const files = Object.keys(GOLDEN_FILES) as GoldenFile[];
    expect(now.t).toEqual(Object.fromEntries(files.map((f) => [f, readGolden(c, f)])));
    expect(daemon!.text.filter((l) => /"level":"(warn|error)"/.test(l))).toEqual([]);
  });
});
