// Flags over file: parseProxyFlags + loadProxyConfig (with an in-memory file), and the
// --write-config-to round trip.
import { ConfigError, UsageError } from '../../lib/errors';
import { decodeProxyConfig, defaultProxyConfig } from '../../lib/config/decode-config';
import { formatProxyConfig } from '../../lib/config/format-config';
import { loadProxyConfig } from '../../lib/config/load-config';
import { CONFIG_FLAG_NAMES, parseProxyFlags } from '../../lib/config/proxy-flags';

const FILE = '/var/lib/kube-proxy/config.conf';
const CONFIG = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
clusterCIDR: 10.244.0.0/16
hostnameOverride: from-file
ipvs:
  scheduler: wrr
  syncPeriod: 1m
  excludeCIDRs: [10.9.0.0/16]
  strictARP: true
iptables:
  masqueradeAll: true
featureGates:
  ContextualLogging: true
  LoggingBetaOptions: true
`;

const files =
  (content: Record<string, string>) =>
  async (path: string): Promise<string> => {
    if (!(path in content)) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    return content[path]!;
  };

const load = (argv: string[], text = CONFIG) => loadProxyConfig(parseProxyFlags(argv), files({ [FILE]: text }));

async function configError(argv: string[], text = CONFIG): Promise<ConfigError> {
  try {
    await load(argv, text);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('loaded without a ConfigError');
}

describe('parseProxyFlags', () => {
  it('--flag=value and --flag value, booleans bare or =true/false, -v / --v', () => {
    const f = parseProxyFlags([
      '--config',
      FILE,
      '--ipvs-scheduler=lc',
      '--masquerade-all',
      '--ipvs-strict-arp=false',
      '--v=4',
    ]);
    expect(f.configFile).toBe(FILE);
    expect(f.verbosity).toBe(4);
    expect(f.cleanup).toBe(false);
    expect([...f.given]).toEqual([
      ['--masquerade-all', true],
      ['--ipvs-scheduler', 'lc'],
      ['--ipvs-strict-arp', false],
    ]);
    expect(parseProxyFlags(['-v', '2']).verbosity).toBe(2);
    expect(parseProxyFlags(['-v=3']).verbosity).toBe(3);
    expect(parseProxyFlags(['--masquerade-all=0']).given.get('--masquerade-all')).toBe(false);
  });

  it('lists are comma-separated and repeated flags append; --feature-gates is a map', () => {
    const f = parseProxyFlags([
      '--ipvs-exclude-cidrs=10.0.0.0/8,10.1.0.0/16',
      '--ipvs-exclude-cidrs',
      'fd00::/8',
      '--feature-gates=A=true,B=false',
      '--feature-gates',
      'C=true',
    ]);
    expect(f.given.get('--ipvs-exclude-cidrs')).toEqual(['10.0.0.0/8', '10.1.0.0/16', 'fd00::/8']);
    expect(f.given.get('--feature-gates')).toEqual({ A: true, B: false, C: true });
  });

  it('--help gives the help text', () => {
    expect(parseProxyFlags(['--help']).help).toMatch(/--ipvs-scheduler/);
  });

  it.each<[string[], RegExp]>([
    [['--foo'], /unknown option '--foo'/],
    [['--config'], /'--config <file>' argument missing/],
    [['stray'], /unexpected argument 'stray'/],
    [['--masquerade-all=maybe'], /argument 'maybe' is invalid/],
    [['--iptables-masquerade-bit=x'], /--iptables-masquerade-bit.*'x' is invalid/],
    [['--ipvs-sync-period=soon'], /--ipvs-sync-period.*invalid duration "soon"/],
    [['--feature-gates=A'], /"A" is not NAME=true\|false/],
    [['--v=high'], /--v <level>.*'high' is invalid/],
    [['--kube-api-qps=lots'], /'lots' is invalid/],
  ])('%j is a UsageError: %s', (argv, message) => {
    let error: unknown;
    try {
      parseProxyFlags(argv);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).toMatch(message);
  });
});

describe('loadProxyConfig: flags over file', () => {
  it('the file alone', async () => {
    const { config, warnings } = await load(['--config', FILE]);
    // no mode in the file: kube-proxy would run iptables (issue 25 item 10)
    expect(warnings.filter((w) => w.level !== 'info').map((w) => w.field)).toEqual(['mode']);
    expect(config).toEqual(decodeProxyConfig(CONFIG).config);
  });

  it('no --config: kube-proxy defaults with the flags on top', async () => {
    const { config } = await loadProxyConfig(parseProxyFlags(['--cluster-cidr=10.244.0.0/16']), files({}));
    expect(config).toEqual({ ...defaultProxyConfig(), clusterCIDR: ['10.244.0.0/16'] });
  });

  const EVERY_FLAG = [
    `--config=${FILE}`,
    '--hostname-override=node-7',
    '--kubeconfig=/etc/kubeconfig',
    '--master=https://10.0.0.1:6443',
    '--cluster-cidr=10.100.1.1/16,fd00:100::/56',
    '--ipvs-scheduler',
    'sh',
    '--ipvs-sync-period=2m',
    '--ipvs-min-sync-period=1s',
    '--ipvs-exclude-cidrs=10.50.0.0/16',
    '--ipvs-strict-arp=false',
    '--ipvs-tcp-timeout=900s',
    '--ipvs-tcpfin-timeout=2m',
    '--ipvs-udp-timeout=300s',
    '--masquerade-all=false',
    '--iptables-masquerade-bit=15',
    '--nodeport-addresses=primary',
    '--detect-local-mode=InterfaceNamePrefix',
    '--pod-interface-name-prefix=veth',
    '--pod-bridge-interface=cbr0',
    '--healthz-bind-address=0.0.0.0:10266',
    '--metrics-bind-address=0.0.0.0',
    '--bind-address=10.0.0.5',
    '--config-sync-period=5m',
    '--feature-gates=LoggingBetaOptions=false,LoggingAlphaOptions=true',
    '--exclude-cluster-cidr=10.99.0.0/16,fd99::/64',
    '--kube-api-qps=20',
    '--kube-api-burst=40',
    '--kube-api-content-type=application/json',
  ];

  // kube-proxy's newer names for the flags above (each wins over the older one) and the
  // node settings
  const NEWER_FLAGS = [
    '--node-ip-override=10.0.0.6,fd00::6',
    '--cluster-cidrs=10.101.0.0/16',
    '--sync-period=3m',
    '--min-sync-period=2s',
    '--ipvs-masquerade-bit=16',
    '--conntrack-max-per-core=0',
    '--conntrack-min=5',
    '--conntrack-tcp-timeout-established=2h30m',
    '--conntrack-tcp-timeout-close-wait=90s',
    '--conntrack-tcp-be-liberal',
    '--conntrack-udp-timeout=31s',
    '--conntrack-udp-timeout-stream=121s',
    '--oom-score-adj=-500',
  ];

  it('the override tests below cover every config flag (--proxy-mode: warning test)', () => {
    const covered = new Set(
      [...EVERY_FLAG, ...NEWER_FLAGS].filter((a) => a.startsWith('--')).map((a) => a.split('=')[0]!),
    );
    expect(CONFIG_FLAG_NAMES.filter((f) => !covered.has(f))).toEqual(['--proxy-mode']);
  });

  it("kube-proxy's newer flag names win over the deprecated ones; conntrack and oom flags override the file", async () => {
    const { config } = await load([...EVERY_FLAG, ...NEWER_FLAGS]);
    expect(config.bindAddress).toBe('10.0.0.6');
    expect(config.clusterCIDR).toEqual(['10.101.0.0/16']);
    expect([config.ipvs.syncPeriodMs, config.ipvs.minSyncPeriodMs]).toEqual([180_000, 2000]);
    expect(config.iptables.masqueradeBit).toBe(16);
    expect(config.conntrack).toEqual({
      maxPerCore: 0,
      min: 5,
      tcpEstablishedTimeoutSec: 9000,
      tcpCloseWaitTimeoutSec: 90,
      tcpBeLiberal: true,
      udpTimeoutSec: 31,
      udpStreamTimeoutSec: 121,
    });
    expect(config.oomScoreAdj).toBe(-500);
  });

  it('every flag given overrides the file, the rest of the file stays', async () => {
    const { config } = await load(EVERY_FLAG);
    expect(config).toEqual({
      mode: 'ipvs',
      hostnameOverride: 'node-7',
      bindAddress: '10.0.0.5',
      healthzBindAddress: '0.0.0.0:10266',
      metricsBindAddress: '0.0.0.0:10249',
      clientConnection: { kubeconfig: '/etc/kubeconfig', qps: 20, burst: 40, contentType: 'application/json' },
      master: 'https://10.0.0.1:6443',
      clusterCIDR: ['10.100.0.0/16', 'fd00:100::/56'],
      detectLocalMode: 'InterfaceNamePrefix',
      detectLocal: { bridgeInterface: 'cbr0', interfaceNamePrefix: 'veth' },
      nodePortAddresses: ['primary'],
      iptables: { masqueradeAll: false, masqueradeBit: 15 },
      ipvs: {
        scheduler: 'sh',
        syncPeriodMs: 120_000,
        minSyncPeriodMs: 1000,
        excludeCIDRs: ['10.50.0.0/16'],
        strictARP: false,
        tcpTimeoutSec: 900,
        tcpFinTimeoutSec: 120,
        udpTimeoutSec: 300,
        excludeClusterCIDRs: ['10.99.0.0/16', 'fd99::/64'],
        schedulerFlags: null,
      },
      configSyncPeriodMs: 300_000,
      conntrack: defaultProxyConfig().conntrack,
      oomScoreAdj: -999,
      logging: { format: 'text', verbosity: 0 },
      featureGates: { ContextualLogging: true, LoggingBetaOptions: false, LoggingAlphaOptions: true },
    });
  });

  it('an empty --healthz-bind-address / --metrics-bind-address disables the server', async () => {
    const { config } = await load([`--config=${FILE}`, '--healthz-bind-address=', '--metrics-bind-address', '']);
    expect(config.healthzBindAddress).toBe('');
    expect(config.metricsBindAddress).toBe('');
  });

  it('the mode is warned about once: the flag given wins over the file (issue 25 item 10)', async () => {
    const both = await load(['--config', FILE, '--proxy-mode=nftables'], CONFIG + 'mode: iptables\n');
    expect(both.warnings.filter((w) => /mode/.test(w.field))).toEqual([
      { field: '--proxy-mode', message: expect.stringMatching(/kube-proxy would run nftables/) },
    ]);
    const fileOnly = await load(['--config', FILE], CONFIG);
    expect(fileOnly.warnings.filter((w) => /mode/.test(w.field))).toEqual([
      { field: 'mode', message: expect.stringMatching(/kube-proxy would run iptables/) },
    ]);
  });

  it('--proxy-mode other than ipvs and ignored kube-proxy flags are warnings', async () => {
    const { config, warnings } = await load(['--proxy-mode=iptables', '--oom-score-adj=-999', '--profiling']);
    expect(config.mode).toBe('ipvs');
    expect(warnings.map((w) => w.field)).toEqual(['--proxy-mode', '--profiling']);
    expect(warnings[0]!.message).toContain('kube-ipvs always runs IPVS');
    expect((await load(['--proxy-mode=ipvs'])).warnings).toEqual([]);
  });

  it.each<[string[], string, string]>([
    [['--ipvs-scheduler=foo'], '--ipvs-scheduler', '"foo"'],
    [['--cluster-cidr=10.0.0.0/40'], '--cluster-cidr', '10.0.0.0/40'],
    [['--ipvs-exclude-cidrs=10.0.0.0/8,bad'], '--ipvs-exclude-cidrs', '"bad"'],
    [['--exclude-cluster-cidr=bad'], '--exclude-cluster-cidr', '"bad"'],
    [['--iptables-masquerade-bit=32'], '--iptables-masquerade-bit', '32'],
    [['--ipvs-sync-period=-1s'], '--ipvs-sync-period', '-1s'],
    [['--nodeport-addresses=eth0'], '--nodeport-addresses[0]', 'eth0'],
    [['--detect-local-mode=Magic'], '--detect-local-mode', 'Magic'],
    [['--healthz-bind-address=host:1'], '--healthz-bind-address', 'host:1'],
    [['--bind-address=nope'], '--bind-address', 'nope'],
    [['--ipvs-sync-period=0s'], 'ipvs.syncPeriod', '0s'],
    [['--ipvs-min-sync-period=2m'], 'ipvs.syncPeriod', '2m0s'],
    [['--detect-local-mode=BridgeInterface'], 'detectLocal.bridgeInterface', 'BridgeInterface'],
  ])('%j is a ConfigError naming %s', async (argv, field, value) => {
    const e = await configError([`--config=${FILE}`, ...argv]);
    expect(e.field).toBe(field);
    expect(e.message).toContain(field);
    expect(e.message).toContain(value);
  });

  it('a missing file is a ConfigError naming --config and the path', async () => {
    const e = await configError(['--config=/nope.yaml']);
    expect(e.message).toBe('--config: cannot read /nope.yaml: ENOENT');
  });

  it('a bad file names the file and the field', async () => {
    const e = await configError([`--config=${FILE}`], CONFIG.replace('scheduler: wrr', 'scheduler: best'));
    expect(e.message).toMatch(/^\/var\/lib\/kube-proxy\/config.conf: ipvs.scheduler: unknown IPVS scheduler "best"/);
  });
});

describe('--write-config-to output (formatProxyConfig)', () => {
  it.each<[string, string[]]>([
    ['defaults', []],
    ['file', [`--config=${FILE}`]],
    [
      'file and flags',
      [
        `--config=${FILE}`,
        '--cluster-cidr=10.100.0.0/16,fd00:100::/56',
        '--ipvs-tcp-timeout=15m',
        '--ipvs-min-sync-period=500ms',
        '--exclude-cluster-cidr=10.99.0.0/16',
        '--nodeport-addresses=10.0.0.0/8,fd00::/8',
        '--bind-address=::',
        '--detect-local-mode=NodeCIDR',
        '--kube-api-qps=7.5',
        '--iptables-masquerade-bit=0',
      ],
    ],
  ])('decoding what is written gives the same config (%s)', async (_name, argv) => {
    const { config } = await load(argv);
    const written = formatProxyConfig(config);
    const again = decodeProxyConfig(written);
    expect(again.warnings.filter((w) => w.level !== 'info')).toEqual([]);
    expect(again.config).toEqual(config);
  });

  it('is a kube-proxy document: apiVersion, kind, mode ipvs, Go durations, no extension field unless used', async () => {
    const text = formatProxyConfig((await load([`--config=${FILE}`])).config);
    expect(text).toMatch(/^apiVersion: kubeproxy.config.k8s.io\/v1alpha1$/m);
    expect(text).toMatch(/^kind: KubeProxyConfiguration$/m);
    expect(text).toMatch(/^mode: ipvs$/m);
    expect(text).toMatch(/^ {2}syncPeriod: 1m0s$/m);
    expect(text).toMatch(/^configSyncPeriod: 15m0s$/m);
    expect(text).not.toContain('excludeClusterCIDRs');
    expect(formatProxyConfig((await load(['--exclude-cluster-cidr=10.1.0.0/16'])).config)).toMatch(
      /^ {2}excludeClusterCIDRs:\n {4}- 10.1.0.0\/16$/m,
    );
  });

  it.each<[string, string]>([
    ['a list', '[mh-port, mh-fallback]'],
    ['[] (no flag)', '[]'],
  ])('ipvs.schedulerFlags as %s: written, and read back the same', async (_name, list) => {
    const { config } = await load(
      [`--config=${FILE}`],
      CONFIG.replace('  strictARP: true\n', `  strictARP: true\n  schedulerFlags: ${list}\n`),
    );
    const written = formatProxyConfig(config);
    expect(written).toContain('schedulerFlags:');
    expect(decodeProxyConfig(written).config).toEqual(config);
  });
});
