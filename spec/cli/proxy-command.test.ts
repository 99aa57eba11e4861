import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../lib/errors';
import { DaemonOptions } from '../../lib/daemon/daemon';
import { decodeProxyConfig, defaultProxyConfig } from '../../lib/config/decode-config';
import { ProxyConfig } from '../../lib/config/proxy-config';
import { proxyMain, ProxyCommandDeps, runInitOnly } from '../../lib/cli/proxy-command';
import { NodeSettingsTargets } from '../../lib/daemon/node-settings';
import { CONNTRACK_HASHSIZE, CONNTRACK_SYSCTL as K } from '../../lib/kernel/sysctl/conntrack-sysctls';
import { FakeSysctl } from '../../testkit/kernel/fake-sysctl';
import { IGNORED_FLAG_NAMES } from '../../lib/config/proxy-flags';

const FILE = '/var/lib/kube-proxy/config.conf';
const GOOD = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clusterCIDR: 10.244.0.0/16
mode: ipvs
ipvs:
  scheduler: wrr
  trictARP: true
`;

interface Harness {
  deps: ProxyCommandDeps;
  files: Map<string, string>;
  daemonCalls: { config: ProxyConfig; options: DaemonOptions }[];
  cleanupCalls: (readonly string[])[];
  verbosity: number[];
  formats: string[];
  warnings: { message: string; meta: unknown }[];
  notes: { message: string; meta: unknown }[];
  stdout: () => string;
  stderr: () => string;
}

function harness(daemonExit = 0): Harness {
  const files = new Map([[FILE, GOOD]]);
  const out: string[] = [];
  const err: string[] = [];
  const h: Harness = {
    files,
    daemonCalls: [],
    cleanupCalls: [],
    verbosity: [],
    formats: [],
    warnings: [],
    notes: [],
    stdout: () => out.join(''),
    stderr: () => err.join(''),
    deps: undefined as unknown as ProxyCommandDeps,
  };
  h.deps = {
    runDaemon: async (config, options) => {
      h.daemonCalls.push({ config, options });
      return daemonExit;
    },
    // the kubeconfig check is its own test below (the real loader)
    loadKubeConfig: () => undefined,
    runCleanup: async (argv) => {
      h.cleanupCalls.push(argv);
      return 0;
    },
    stdout: { write: (s: string) => out.push(s) },
    stderr: { write: (s: string) => err.push(s) },
    readFile: async (path) => {
      const text = files.get(path);
      if (text === undefined) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
      return text;
    },
    writeFile: async (path, text) => {
      files.set(path, text);
    },
    log: {
      warn: ((message: string, meta: unknown) => {
        h.warnings.push({ message, meta });
      }) as never,
      info: ((message: string, meta: unknown) => {
        h.notes.push({ message, meta });
      }) as never,
    },
    setVerbosity: (v) => h.verbosity.push(v),
    setLogFormat: (f) => h.formats.push(f),
  };
  return h;
}

describe('--init-only without root (issue 41 item 9)', () => {
  const targets = (privileged: boolean): NodeSettingsTargets => ({
    sysctl: new FakeSysctl(
      {
        [K.MAX]: '65536',
        [K.TCP_TIMEOUT_ESTABLISHED]: '432000',
        [K.TCP_TIMEOUT_CLOSE_WAIT]: '60',
        [K.TCP_BE_LIBERAL]: '0',
        [K.UDP_TIMEOUT]: '30',
        [K.UDP_TIMEOUT_STREAM]: '120',
      },
      { privileged },
    ),
    modules: new FakeSysctl({ [CONNTRACK_HASHSIZE]: '16384' }, { privileged }),
    proc: new FakeSysctl({ 'self/oom_score_adj': '0' }, { privileged }),
    numCPU: async () => 2,
  });

  it('EACCES from the sysctls: one line naming what it needed, exit 1, no "init done"', async () => {
    const err: string[] = [];
    expect(await runInitOnly(defaultProxyConfig(), { write: (s: string) => err.push(s) }, targets(false))).toBe(1);
    expect(err).toEqual([
      "kube-ipvs needs root (CAP_NET_ADMIN) for --init-only's conntrack sysctls: write sysctl net/netfilter/nf_conntrack_max = 131072: EACCES\n",
    ]);
  });

  it('as root: the settings applied, exit 0, nothing on stderr', async () => {
    const err: string[] = [];
    expect(await runInitOnly(defaultProxyConfig(), { write: (s: string) => err.push(s) }, targets(true))).toBe(0);
    expect(err).toEqual([]);
  });
});

describe('feature gates as kube-proxy checks them (issue 41 item 7)', () => {
  const withGates = (gates: string): string => `${GOOD}\nfeatureGates:\n${gates}\n`;

  it('an unknown gate in the file is refused: exit 1, the daemon never called', async () => {
    const h = harness();
    h.files.set(FILE, withGates('  NoSuchGate: true'));
    expect(await proxyMain([`--config=${FILE}`], h.deps)).toBe(1);
    expect(h.stderr().split('\n').slice(0, 2)).toEqual([
      `kube-ipvs: ${FILE}: 1 error, and 1 unknown field:`,
      `  ${FILE}: featureGates: unrecognized feature gate: NoSuchGate`,
    ]);
    expect(h.daemonCalls).toEqual([]);
  });

  it('an unknown gate in --feature-gates is refused the same way', async () => {
    const h = harness();
    expect(await proxyMain([`--config=${FILE}`, '--feature-gates=Bogus=true'], h.deps)).toBe(1);
    expect(h.stderr()).toBe('kube-ipvs: --feature-gates: unrecognized feature gate: Bogus\n');
    expect(h.daemonCalls).toEqual([]);
  });

  it("a gate locked to its default cannot be set to the other value, as kube-proxy's", async () => {
    const h = harness();
    expect(await proxyMain([`--config=${FILE}`, '--feature-gates=NFTablesProxyMode=false'], h.deps)).toBe(1);
    expect(h.stderr()).toBe(
      'kube-ipvs: --feature-gates: cannot set feature gate NFTablesProxyMode to false, feature is locked to true\n',
    );
  });

  it('a gate kube-proxy knows is accepted with one info line each, not a warning', async () => {
    const h = harness();
    h.files.set(FILE, withGates('  KubeProxyIPVS: true'));
    expect(await proxyMain([`--config=${FILE}`, '--feature-gates=ContextualLogging=false'], h.deps)).toBe(0);
    expect(h.daemonCalls[0]!.config.featureGates).toEqual({ KubeProxyIPVS: true, ContextualLogging: false });
    expect(h.notes.map((n) => n.message)).toEqual([
      'feature gate KubeProxyIPVS=true (DEPRECATED in kube-proxy) has no effect in kube-ipvs; accepted',
      'feature gate ContextualLogging=false (BETA in kube-proxy) has no effect in kube-ipvs; accepted',
    ]);
    expect(h.warnings.map((w) => w.message).filter((m) => m.includes('feature gate'))).toEqual([]);
  });
});

describe('proxyMain', () => {
  it('runs the daemon with the file plus flags, warnings logged, exit code passed through', async () => {
    const h = harness(3);
    expect(await proxyMain([`--config=${FILE}`, '--hostname-override=node-1', '--v=4'], h.deps)).toBe(3);
    expect(h.daemonCalls).toHaveLength(1);
    const { config, options } = h.daemonCalls[0]!;
    expect(config).toEqual({
      ...decodeProxyConfig(GOOD).config,
      hostnameOverride: 'node-1',
      logging: { format: 'text', verbosity: 4 },
    });
    expect(options).toEqual({
      configFile: FILE,
      reloadConfig: expect.any(Function),
      verbosity: 4,
      build: { version: expect.stringMatching(/^\d+\.\d+\.\d+/), platform: expect.stringMatching(/^\w+\/\w+$/) },
    });
    expect(h.verbosity).toEqual([4]);
    expect(h.formats).toEqual(['text']); // kube-proxy's default
    expect(h.warnings).toEqual([
      { message: expect.stringContaining('ipvs.trictARP'), meta: { field: 'ipvs.trictARP', file: FILE } },
    ]);
    expect(h.stderr()).toBe('');
  });

  it('reloadConfig re-reads the file and re-applies the same flags; a bad file rejects with ConfigError', async () => {
    const h = harness();
    await proxyMain([`--config=${FILE}`, '--ipvs-scheduler=lc'], h.deps);
    const reload = h.daemonCalls[0]!.options.reloadConfig!;
    h.files.set(FILE, GOOD.replace('clusterCIDR: 10.244.0.0/16', 'clusterCIDR: 10.245.0.0/16'));
    const next = await reload();
    expect(next.clusterCIDR).toEqual(['10.245.0.0/16']);
    expect(next.ipvs.scheduler).toBe('lc'); // the flag still wins over the file's wrr
    h.files.set(FILE, GOOD.replace('scheduler: wrr', 'scheduler: nope'));
    await expect(reload()).rejects.toThrow(ConfigError);
  });

  it('without --config: defaults and flags, no reload, verbosity 0 and the log level left alone', async () => {
    const h = harness();
    expect(await proxyMain(['--cluster-cidr=10.244.0.0/16'], h.deps)).toBe(0);
    expect(h.daemonCalls[0]!.options).toEqual({
      verbosity: 0,
      build: { version: expect.any(String), platform: expect.any(String) },
    });
    expect(h.daemonCalls[0]!.config.clusterCIDR).toEqual(['10.244.0.0/16']);
    expect(h.verbosity).toEqual([]);
  });

  it('logging.format and logging.verbosity from the file; --logging-format and --v win over them', async () => {
    const h = harness();
    h.files.set(FILE, `${GOOD}logging:\n  format: json\n  verbosity: 3\n  flushFrequency: 5s\n`);
    await proxyMain([`--config=${FILE}`], h.deps);
    expect(h.formats).toEqual(['text', 'json']); // text for any line before the file is read
    expect(h.verbosity).toEqual([3]);
    expect(h.daemonCalls[0]!.options.verbosity).toBe(3);
    const flagged = harness();
    flagged.files.set(FILE, h.files.get(FILE)!);
    await proxyMain([`--config=${FILE}`, '--logging-format=text', '--v=1'], flagged.deps);
    expect(flagged.formats).toEqual(['text']);
    expect(flagged.verbosity).toEqual([1]);
    expect(flagged.daemonCalls[0]!.config.logging).toEqual({ format: 'text', verbosity: 1 });
    const bad = harness();
    bad.files.set(FILE, `${GOOD}logging:\n  format: xml\n`);
    expect(await proxyMain([`--config=${FILE}`], bad.deps)).toBe(1);
    expect(bad.stderr()).toMatch(/logging.format: "xml": Unsupported log format/);
  });

  it('every kube-proxy flag kube-ipvs has no use for parses, warns once (not again on a reload) and runs the proxy', async () => {
    const h = harness();
    const argv = [
      `--config=${FILE}`,
      ...IGNORED_FLAG_NAMES.map(
        (f) =>
          `${f}=${/port|size/.test(f) ? '1' : /frequency|period/.test(f) ? '5s' : /stream|header|stderr$|profiling|nodeports|fail|one-output/.test(f) ? 'true' : 'x'}`,
      ),
    ];
    expect(await proxyMain(argv, h.deps)).toBe(0);
    expect(h.stderr()).toBe('');
    const flagWarnings = () =>
      h.warnings
        .filter((w) => (w.meta as { field: string }).field.startsWith('--'))
        .map((w) => (w.meta as { field: string }).field);
    expect(flagWarnings()).toEqual(IGNORED_FLAG_NAMES);
    await h.daemonCalls[0]!.options.reloadConfig!();
    expect(flagWarnings()).toEqual(IGNORED_FLAG_NAMES);
  });

  it('--init-only: the privileged init with the loaded config, then its exit code; the daemon never runs', async () => {
    const h = harness();
    const inits: ProxyConfig[] = [];
    h.deps = { ...h.deps, runInit: async (c) => (inits.push(c), 0) };
    expect(await proxyMain([`--config=${FILE}`, '--init-only', '--conntrack-max-per-core=0'], h.deps)).toBe(0);
    expect(inits.map((c) => c.conntrack.maxPerCore)).toEqual([0]);
    expect(h.daemonCalls).toEqual([]);
    h.deps = { ...h.deps, runInit: async () => 1 };
    expect(await proxyMain(['--init-only=true'], h.deps)).toBe(1);
    expect(await proxyMain(['--init-only=false'], h.deps)).toBe(0);
    expect(h.daemonCalls).toHaveLength(1);
  });

  it('--version reaching the proxy parser is not a usage error', async () => {
    const h = harness();
    expect(await proxyMain(['--version'], h.deps)).not.toBe(2);
    expect(await proxyMain(['--version=raw'], h.deps)).not.toBe(2);
  });

  it('--logging-format json is applied before the config is read; an unknown format is a usage error', async () => {
    const h = harness();
    expect(await proxyMain(['--logging-format=json'], h.deps)).toBe(0);
    expect(h.formats).toEqual(['json']);
    const bad = harness();
    expect(await proxyMain(['--logging-format', 'xml'], bad.deps)).toBe(2);
    expect(bad.stderr()).toMatch(
      /^kube-ipvs: option '--logging-format <format>' argument 'xml' is invalid. expected one of text, json\n/,
    );
    expect(bad.daemonCalls).toEqual([]);
  });

  it.each<[string, string[], string | undefined, RegExp]>([
    [
      'a bad value in the file',
      [`--config=${FILE}`],
      GOOD.replace('scheduler: wrr', 'scheduler: fast'),
      // with it, the file's typo (ipvs.trictARP), one line each
      /^kube-ipvs: \/var\/lib\/kube-proxy\/config.conf: 1 error, and 1 unknown field:\n {2}\/var\/lib\/kube-proxy\/config.conf: ipvs.scheduler: unknown IPVS scheduler "fast".*\n {2}\/var\/lib\/kube-proxy\/config.conf: unknown field "ipvs.trictARP"/,
    ],
    [
      'a bad flag value',
      [`--config=${FILE}`, '--iptables-masquerade-bit=40'],
      undefined,
      /^kube-ipvs: --iptables-masquerade-bit: 40 is outside the range 0-31\n$/,
    ],
    ['a missing file', ['--config=/nope'], undefined, /^kube-ipvs: --config: cannot read \/nope: ENOENT\n$/],
    [
      'a wrong kind',
      [`--config=${FILE}`],
      GOOD.replace('KubeProxyConfiguration', 'KubeletConfiguration'),
      /kind: string "KubeletConfiguration" is not supported/,
    ],
  ])('%s: exit 1, message on stderr, the daemon never called', async (_name, argv, file, message) => {
    const h = harness();
    if (file !== undefined) h.files.set(FILE, file);
    expect(await proxyMain(argv, h.deps)).toBe(1);
    expect(h.stderr()).toMatch(message);
    expect(h.daemonCalls).toEqual([]);
  });

  it.each<[string[], RegExp]>([
    [['--no-such-flag'], /^kube-ipvs: unknown option '--no-such-flag'\nRun 'kube-ipvs --help' for usage.\n$/],
    [['--ipvs-sync-period=often'], /invalid duration "often"/],
    [['extra'], /unknown command 'extra'/],
  ])('%j: exit 2, the daemon never called', async (argv, message) => {
    const h = harness();
    expect(await proxyMain(argv, h.deps)).toBe(2);
    expect(h.stderr()).toMatch(message);
    expect(h.daemonCalls).toEqual([]);
  });

  it('--help: exit 0, help on stdout', async () => {
    const h = harness();
    expect(await proxyMain(['--help'], h.deps)).toBe(0);
    expect(h.stdout()).toMatch(/^Usage: kube-ipvs/);
    expect(h.stdout()).toContain('--exclude-cluster-cidr');
    for (const f of [
      '--vmodule',
      '--log-flush-frequency',
      '--init-only',
      '--conntrack-min',
      '--oom-score-adj',
      '--sync-period',
    ])
      expect(h.stdout()).toContain(f);
    expect(h.daemonCalls).toEqual([]);
  });

  it('--write-config-to writes the effective config and exits 0 without running the daemon', async () => {
    const h = harness();
    expect(await proxyMain([`--config=${FILE}`, '--write-config-to=/tmp/out.yaml', '--masquerade-all'], h.deps)).toBe(
      0,
    );
    expect(h.daemonCalls).toEqual([]);
    const written = decodeProxyConfig(h.files.get('/tmp/out.yaml')!);
    expect(written.config).toEqual({
      ...decodeProxyConfig(GOOD).config,
      iptables: { masqueradeAll: true, masqueradeBit: 14 },
    });
    expect(written.warnings).toEqual([]); // the typo is not carried over
  });

  it('--write-config-to with a bad config writes nothing and exits 1', async () => {
    const h = harness();
    expect(await proxyMain(['--write-config-to=/tmp/out.yaml', '--ipvs-scheduler=x'], h.deps)).toBe(1);
    expect(h.files.has('/tmp/out.yaml')).toBe(false);
  });

  it.each<[string[], string[]]>([
    [['--cleanup'], ['--cleanup']],
    [
      ['--cleanup=true', '--iptables-backend=nft'],
      ['--cleanup', '--iptables-backend=nft'],
    ],
    [[`--config=${FILE}`, '--cleanup', '--v=2'], ['--cleanup']],
    [
      ['--cleanup', '--dry-run', '--families', 'ipv4', '--hostname-override=n1'],
      ['--cleanup', '--dry-run', '--families', 'ipv4'],
    ],
  ])('%j runs cleanup with its own options, never the daemon', async (argv, cleanupArgv) => {
    const h = harness();
    expect(await proxyMain(argv, h.deps)).toBe(0);
    expect(h.cleanupCalls).toEqual([cleanupArgv]);
    expect(h.daemonCalls).toEqual([]);
  });

  it.each([[['--cleanup', '--bogus']], [['--cleanup', 'extra-argument']], [['--cleanup', '--v=notanumber']]])(
    '%j: an unknown or bad kube-proxy flag with --cleanup exits 2 and cleans nothing',
    async (argv) => {
      const h = harness();
      expect(await proxyMain(argv, h.deps)).toBe(2);
      expect(h.cleanupCalls).toEqual([]);
      expect(h.stderr()).toMatch(/^kube-ipvs: /);
    },
  );

  it.each([
    [
      'a tokenFile that is not there',
      (dir: string) =>
        `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\nusers:\n- name: u\n  user:\n    tokenFile: ${dir}/nope\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`,
    ],
    ['bad YAML', () => `apiVersion: v1\nusers:\n- name: u\n  user:\n    token: s3cret\n\tbad: [\n`],
    [
      'an unknown user',
      () =>
        `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\nusers: []\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`,
    ],
  ])(
    'a kubeconfig that cannot be used (%s): exit 1 with one line, before the daemon (and the kernel) starts (issue 25 item 9)',
    async (_what, text) => {
      const dir = mkdtempSync(join(tmpdir(), 'kc-'));
      try {
        writeFileSync(join(dir, 'kubeconfig'), text(dir));
        const h = harness();
        h.files.set(FILE, GOOD + `clientConnection:\n  kubeconfig: ${join(dir, 'kubeconfig')}\n`);
        expect(await proxyMain([`--config=${FILE}`], { ...h.deps, loadKubeConfig: undefined })).toBe(1);
        expect(h.daemonCalls).toEqual([]);
        expect(h.stderr()).toMatch(new RegExp(`^kube-ipvs: kubeconfig ${join(dir, 'kubeconfig')}: [^\n]+\n$`));
        expect(h.stderr()).not.toMatch(/s3cret|\bat \S+:\d+/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('--cleanup=false runs the proxy', async () => {
    const h = harness();
    expect(await proxyMain(['--cleanup=false'], h.deps)).toBe(0);
    expect(h.cleanupCalls).toEqual([]);
    expect(h.daemonCalls).toHaveLength(1);
  });
});
