// kube-proxy's command-line flags, under kube-proxy's names.
//
// Precedence: every flag given explicitly is applied ON TOP of the config file. kube-proxy's
// help says many of these are "ignored if a config file is specified by --config"; kube-ipvs
// deliberately applies them anyway (a flag on the command line is never silently dropped), so
// `--config=/var/lib/kube-proxy/config.conf --hostname-override=$(NODE_NAME)` and any other
// mix behaves the same.
//
// Every flag of kube-proxy's `--help` (cmd/kube-proxy/app/options.go, component-base logs and
// the Go flags it adds) parses: a flag kube-ipvs has no use for is warned about once and
// ignored, never a usage error, so a DaemonSet written for kube-proxy starts. `--version` is
// answered by lib/cli/main.ts; if it reaches this parser it is recorded, not refused.
//
// Exit codes: a command line that cannot be parsed (unknown flag, missing value, positional
// argument, an int/bool/duration/map that does not parse) is a UsageError (exit 2); a value
// that parses but is invalid (bad CIDR, unknown scheduler, negative duration, bit out of range)
// is a ConfigError naming the flag (exit 1), as kube-proxy's validation does after parsing.
import { LOG_FORMATS, LogFormat } from '../log';
import { Command, InvalidArgumentError, Option } from 'commander';
import { UnexpectedArgumentError, UsageError } from '../errors';
import { normalizeFlagNames } from './flag-names';
import {
  parseBindAddress,
  configCidr,
  parseClusterCidrs,
  parseConntrackCount,
  parseDetectLocalMode,
  parseDuration,
  parseDurationSec,
  parseIP,
  parseMasqueradeBit,
  parseNodePortAddresses,
  parseOomScoreAdj,
  parseProxyMode,
  parseScheduler,
} from './config-values';
import { ConfigErrors, ConfigWarning, HEALTHZ_PORT, METRICS_PORT, modeWarning } from './decode-config';
import { checkFeatureGates } from './feature-gates';
import { parseDurationNs } from './duration';
import { ProxyConfig } from './proxy-config';

type DeepMutable<T> = { -readonly [K in keyof T]: T[K] extends object ? DeepMutable<T[K]> : T[K] };
type MutableConfig = DeepMutable<ProxyConfig>;

type FlagType = 'string' | 'bool' | 'int' | 'float' | 'duration' | 'list' | 'map';
type FlagValue = string | boolean | number | string[] | Record<string, boolean>;

interface FlagSpec {
  readonly flag: string;
  readonly type: FlagType;
  readonly help: string;
  /** applies the value onto the config; absent = kube-proxy flag accepted and ignored (warned) */
  readonly apply?: Apply<never>;
}

type Apply<V> = (c: MutableConfig, value: V, flag: string, warnings: ConfigWarning[]) => void;

function flag<V>(name: string, type: FlagType, help: string, apply: Apply<V>): FlagSpec {
  return { flag: name, type, help, apply: apply as FlagSpec['apply'] };
}

/**
 * The flags that override the configuration, in the order they are applied: a newer flag
 * comes after the deprecated one it replaces and wins, as in kube-proxy (--sync-period over
 * --ipvs-sync-period, --node-ip-override over --bind-address, --cluster-cidrs over
 * --cluster-cidr, --ipvs-masquerade-bit over --iptables-masquerade-bit in ipvs mode).
 */
const CONFIG_FLAGS: readonly FlagSpec[] = [
  flag<string>('--kubeconfig', 'string', 'path to a kubeconfig file (clientConnection.kubeconfig)', (c, v) => {
    c.clientConnection.kubeconfig = v;
  }),
  flag<string>('--master', 'string', "API server address, overrides the kubeconfig's", (c, v) => {
    c.master = v;
  }),
  flag<number>('--kube-api-qps', 'float', 'QPS to the API server (clientConnection.qps)', (c, v) => {
    c.clientConnection.qps = v;
  }),
  flag<number>('--kube-api-burst', 'int', 'burst to the API server (clientConnection.burst)', (c, v) => {
    c.clientConnection.burst = v;
  }),
  flag<string>('--kube-api-content-type', 'string', 'content type of requests to the API server', (c, v) => {
    c.clientConnection.contentType = v;
  }),
  flag<string>('--hostname-override', 'string', 'the node name to use instead of the hostname', (c, v) => {
    c.hostnameOverride = v;
  }),
  flag<string>(
    '--proxy-mode',
    'string',
    "iptables, ipvs, nftables or '' are accepted; kube-ipvs always runs ipvs",
    (_c, v, f, w) => {
      if (parseProxyMode(v, f) !== 'ipvs') w.push(modeWarning(f, v));
    },
  ),
  flag<string>('--bind-address', 'string', 'the node IP hint (bindAddress)', (c, v, f) => {
    c.bindAddress = parseIP(v, f);
  }),
  flag<string[]>(
    '--node-ip-override',
    'list',
    "the node's primary IPs (the first is taken as bindAddress)",
    (c, v, f) => {
      const ips = v.map((x) => parseIP(x, f));
      if (ips.length > 0) c.bindAddress = ips[0]!;
    },
  ),
  flag<string>(
    '--healthz-bind-address',
    'string',
    `health server IP:port (default 0.0.0.0:${HEALTHZ_PORT}); empty disables it`,
    (c, v, f) => {
      c.healthzBindAddress = v === '' ? '' : parseBindAddress(v, f, HEALTHZ_PORT);
    },
  ),
  flag<string>(
    '--metrics-bind-address',
    'string',
    `metrics server IP:port (default 127.0.0.1:${METRICS_PORT}); empty disables it`,
    (c, v, f) => {
      c.metricsBindAddress = v === '' ? '' : parseBindAddress(v, f, METRICS_PORT);
    },
  ),
  flag<string>('--cluster-cidr', 'string', 'the pod CIDR, or a dual-stack pair, comma-separated', (c, v, f) => {
    c.clusterCIDR = parseClusterCidrs(v.split(','), f);
  }),
  flag<string[]>('--cluster-cidrs', 'list', 'the pod CIDR, or a dual-stack pair (clusterCIDR)', (c, v, f) => {
    c.clusterCIDR = parseClusterCidrs(v, f);
  }),
  flag<string>(
    '--detect-local-mode',
    'string',
    'ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix',
    (c, v, f) => {
      c.detectLocalMode = parseDetectLocalMode(v, f);
    },
  ),
  flag<string>('--pod-bridge-interface', 'string', 'bridge name (detect-local-mode BridgeInterface)', (c, v) => {
    c.detectLocal.bridgeInterface = v;
  }),
  flag<string>(
    '--pod-interface-name-prefix',
    'string',
    'interface name prefix (detect-local-mode InterfaceNamePrefix)',
    (c, v) => {
      c.detectLocal.interfaceNamePrefix = v;
    },
  ),
  flag<string[]>('--nodeport-addresses', 'list', 'CIDRs NodePorts listen on, or "primary"; default all', (c, v, f) => {
    c.nodePortAddresses = parseNodePortAddresses(v, f);
  }),
  flag<boolean>('--masquerade-all', 'bool', 'SNAT all traffic sent via Service IPs', (c, v) => {
    c.iptables.masqueradeAll = v;
  }),
  flag<number>('--iptables-masquerade-bit', 'int', 'fwmark bit for packets to SNAT, 0-31 (default 14)', (c, v, f) => {
    c.iptables.masqueradeBit = parseMasqueradeBit(v, f);
  }),
  flag<number>(
    '--ipvs-masquerade-bit',
    'int',
    'fwmark bit for packets to SNAT, 0-31 (same as --iptables-masquerade-bit)',
    (c, v, f) => {
      c.iptables.masqueradeBit = parseMasqueradeBit(v, f);
    },
  ),
  flag<string>('--ipvs-scheduler', 'string', 'IPVS scheduler (default rr)', (c, v, f) => {
    c.ipvs.scheduler = parseScheduler(v, f);
  }),
  flag<string>('--ipvs-sync-period', 'duration', 'maximum interval between full syncs (default 30s)', (c, v, f) => {
    c.ipvs.syncPeriodMs = parseDuration(v, f);
  }),
  flag<string>('--ipvs-min-sync-period', 'duration', 'minimum interval between syncs (default 0s)', (c, v, f) => {
    c.ipvs.minSyncPeriodMs = parseDuration(v, f);
  }),
  flag<string>(
    '--sync-period',
    'duration',
    'maximum interval between full syncs (ipvs.syncPeriod; wins over --ipvs-sync-period)',
    (c, v, f) => {
      c.ipvs.syncPeriodMs = parseDuration(v, f);
    },
  ),
  flag<string>(
    '--min-sync-period',
    'duration',
    'minimum interval between syncs (ipvs.minSyncPeriod; wins over --ipvs-min-sync-period)',
    (c, v, f) => {
      c.ipvs.minSyncPeriodMs = parseDuration(v, f);
    },
  ),
  flag<string[]>('--ipvs-exclude-cidrs', 'list', 'CIDRs whose virtual servers kube-ipvs never touches', (c, v, f) => {
    c.ipvs.excludeCIDRs = v.map((x) => configCidr(x, f));
  }),
  flag<boolean>('--ipvs-strict-arp', 'bool', 'arp_ignore=1, arp_announce=2', (c, v) => {
    c.ipvs.strictARP = v;
  }),
  flag<string>('--ipvs-tcp-timeout', 'duration', 'IPVS TCP timeout (0 leaves the kernel value)', (c, v, f) => {
    c.ipvs.tcpTimeoutSec = parseDurationSec(v, f);
  }),
  flag<string>('--ipvs-tcpfin-timeout', 'duration', 'IPVS TCP FIN_WAIT timeout', (c, v, f) => {
    c.ipvs.tcpFinTimeoutSec = parseDurationSec(v, f);
  }),
  flag<string>('--ipvs-udp-timeout', 'duration', 'IPVS UDP timeout', (c, v, f) => {
    c.ipvs.udpTimeoutSec = parseDurationSec(v, f);
  }),
  flag<string[]>(
    '--exclude-cluster-cidr',
    'list',
    'kube-ipvs (multi-CNI): ignore endpoints in these CIDRs (ipvs.excludeClusterCIDRs)',
    (c, v, f) => {
      c.ipvs.excludeClusterCIDRs = v.map((x) => configCidr(x, f));
    },
  ),
  flag<string>('--config-sync-period', 'duration', 'informer resync period (default 15m)', (c, v, f) => {
    c.configSyncPeriodMs = parseDuration(v, f);
  }),
  flag<number>(
    '--conntrack-max-per-core',
    'int',
    'nf_conntrack_max per CPU (0 leaves the limit and ignores --conntrack-min)',
    (c, v, f) => {
      c.conntrack.maxPerCore = parseConntrackCount(v, f);
    },
  ),
  flag<number>('--conntrack-min', 'int', 'lowest nf_conntrack_max to set (default 131072)', (c, v, f) => {
    c.conntrack.min = parseConntrackCount(v, f);
  }),
  flag<string>(
    '--conntrack-tcp-timeout-established',
    'duration',
    'nf_conntrack_tcp_timeout_established (default 24h; 0 leaves it)',
    (c, v, f) => {
      c.conntrack.tcpEstablishedTimeoutSec = parseDurationSec(v, f);
    },
  ),
  flag<string>(
    '--conntrack-tcp-timeout-close-wait',
    'duration',
    'nf_conntrack_tcp_timeout_close_wait (default 1h; 0 leaves it)',
    (c, v, f) => {
      c.conntrack.tcpCloseWaitTimeoutSec = parseDurationSec(v, f);
    },
  ),
  flag<boolean>('--conntrack-tcp-be-liberal', 'bool', 'nf_conntrack_tcp_be_liberal=1', (c, v) => {
    c.conntrack.tcpBeLiberal = v;
  }),
  flag<string>(
    '--conntrack-udp-timeout',
    'duration',
    'nf_conntrack_udp_timeout (0, the default, leaves it)',
    (c, v, f) => {
      c.conntrack.udpTimeoutSec = parseDurationSec(v, f);
    },
  ),
  flag<string>(
    '--conntrack-udp-timeout-stream',
    'duration',
    'nf_conntrack_udp_timeout_stream (0, the default, leaves it)',
    (c, v, f) => {
      c.conntrack.udpStreamTimeoutSec = parseDurationSec(v, f);
    },
  ),
  flag<number>('--oom-score-adj', 'int', 'oom_score_adj of the process, -1000 to 1000 (default -999)', (c, v, f) => {
    c.oomScoreAdj = parseOomScoreAdj(v, f);
  }),
  flag<Record<string, boolean>>(
    '--feature-gates',
    'map',
    "A=true,B=false (merged over the file's featureGates; kube-proxy's gates, none used)",
    (c, v, f, w) => {
      const { errors, notes } = checkFeatureGates(v, f);
      if (errors.length === 1) throw errors[0]!;
      if (errors.length > 1) throw new ConfigErrors(errors);
      w.push(...notes.map((n) => ({ ...n, level: 'info' as const })));
      c.featureGates = { ...c.featureGates, ...v };
    },
  ),
];

const ignored = (type: FlagType, names: readonly string[]): FlagSpec[] =>
  names.map((name) => ({ flag: name, type, help: 'kube-proxy flag, ignored' }));

/**
 * kube-proxy flags kube-ipvs accepts (with one warning) so existing DaemonSets start, but does
 * not use: iptables-mode settings, the profiling and hidden-metrics switches, the newer
 * CIDR-chosen bind addresses (use --healthz-bind-address / --metrics-bind-address), the
 * deprecated port flags, component-base's logging options beyond --v and --logging-format, the
 * Go flags kube-proxy adds (--boot-id-file, --machine-id-file), and klog's flags removed in
 * Kubernetes 1.26 (still in older DaemonSets).
 */
const IGNORED_FLAGS: readonly FlagSpec[] = [
  ...ignored('int', [
    '--healthz-port',
    '--metrics-port',
    '--healthz-bind-port',
    '--metrics-bind-port',
    '--log-file-max-size',
  ]),
  ...ignored('duration', ['--iptables-sync-period', '--iptables-min-sync-period', '--log-flush-frequency']),
  ...ignored('bool', [
    '--iptables-localhost-nodeports',
    '--profiling',
    '--bind-address-hard-fail',
    '--log-json-split-stream',
    '--log-text-split-stream',
    '--add-dir-header',
    '--alsologtostderr',
    '--logtostderr',
    '--one-output',
    '--skip-headers',
    '--skip-log-headers',
  ]),
  ...ignored('list', ['--healthz-bind-addresses', '--metrics-bind-addresses']),
  ...ignored('string', [
    '--show-hidden-metrics-for-version',
    '--proxy-port-range',
    '--vmodule',
    '--log-json-info-buffer-size',
    '--log-text-info-buffer-size',
    '--boot-id-file',
    '--machine-id-file',
    '--log-backtrace-at',
    '--log-dir',
    '--log-file',
    '--stderrthreshold',
  ]),
];

/** The command line, parsed. Config overrides are applied by applyProxyFlags. */
export interface ProxyFlags {
  /** --config */
  readonly configFile?: string;
  /** --write-config-to */
  readonly writeConfigTo?: string;
  /** --cleanup */
  readonly cleanup: boolean;
  /** --init-only: the privileged setup (conntrack sysctls), then exit 0 */
  readonly initOnly?: boolean;
  /** --version[=raw]: printed by lib/cli/main.ts; recorded here if it gets this far */
  readonly version?: string;
  /** --v (klog verbosity); undefined when not given */
  readonly verbosity?: number;
  /** --logging-format text|json; undefined when not given (kube-proxy's default is text) */
  readonly loggingFormat?: LogFormat;
  /** --help was given: the help text to print (exit 0) */
  readonly help?: string;
  /** the explicitly given config flags and their parsed values, by flag */
  readonly given: ReadonlyMap<string, FlagValue>;
}

const camel = (flag: string): string => flag.slice(2).replace(/-([a-z])/g, (_, ch: string) => ch.toUpperCase());

function parseBool(text: string): boolean {
  // Go's strconv.ParseBool
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(text)) return false;
  throw new InvalidArgumentError('expected true or false');
}

function parseInt10(text: string): number {
  if (!/^[+-]?[0-9]+$/.test(text)) throw new InvalidArgumentError('expected an integer');
  return Number(text);
}

function syntaxParser(type: FlagType): (value: string, previous: unknown) => FlagValue {
  switch (type) {
    case 'string':
      return (v) => v;
    case 'bool':
      return (v) => parseBool(v);
    case 'int':
      return (v) => parseInt10(v);
    case 'float':
      return (v) => {
        const n = Number(v);
        if (v.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError('expected a number');
        return n;
      };
    case 'duration':
      return (v) => {
        try {
          // negative values parse (as in Go) and are refused by validation, naming the flag
          parseDurationNs(v.replace(/^-/, ''));
        } catch (e) {
          throw new InvalidArgumentError((e as Error).message);
        }
        return v;
      };
    case 'list':
      // pflag StringSlice: comma-separated, repeated flags append
      return (v, prev) => [
        ...((prev as string[] | undefined) ?? []),
        ...v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== ''),
      ];
    case 'map':
      return (v, prev) => {
        const out: Record<string, boolean> = { ...((prev as Record<string, boolean> | undefined) ?? {}) };
        for (const pair of v
          .split(',')
          .map((s) => s.trim())
          .filter((s) => s !== '')) {
          const eq = pair.indexOf('=');
          if (eq <= 0) throw new InvalidArgumentError(`"${pair}" is not NAME=true|false`);
          out[pair.slice(0, eq).trim()] = parseBool(pair.slice(eq + 1).trim());
        }
        return out;
      };
  }
}

function buildProgram(): Command {
  const program = new Command('kube-ipvs')
    .description(
      'A drop-in replacement for kube-proxy --proxy-mode=ipvs, taking its flags and its\n' +
        'KubeProxyConfiguration file; every flag given is applied on top of the file.',
    )
    .exitOverride()
    .helpOption('-h, --help', 'show this help')
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  program.addOption(new Option('--config <file>', 'KubeProxyConfiguration file (YAML or JSON), watched for changes'));
  program.addOption(new Option('--write-config-to <file>', 'write the effective configuration to FILE and exit'));
  program.addOption(
    new Option('--cleanup [bool]', 'remove IPVS services, kube-ipvs0, KUBE-* chains and sets, then exit').argParser(
      parseBool,
    ),
  );
  program.addOption(
    new Option('--init-only [bool]', 'do the privileged setup (conntrack sysctls), then exit').argParser(parseBool),
  );
  program.addOption(new Option('--version [value]', 'print the version and exit (true or raw)'));
  program.addOption(
    new Option('-v, --v <level>', 'log verbosity: 0-1 info, 2-3 verbose, 4+ debug').argParser((v) => {
      const n = parseInt10(v.replace(/^=/, '')); // pflag takes `-v=4` too
      if (n < 0) throw new InvalidArgumentError('expected a non-negative integer');
      return n;
    }),
  );
  program.addOption(
    new Option('--logging-format <format>', 'log line format: text (klog, the default) or json').argParser((v) => {
      if (!(LOG_FORMATS as readonly string[]).includes(v))
        throw new InvalidArgumentError(`expected one of ${LOG_FORMATS.join(', ')}`);
      return v;
    }),
  );
  for (const spec of [...CONFIG_FLAGS, ...IGNORED_FLAGS]) {
    const arg = spec.type === 'bool' ? ' [bool]' : ' <value>';
    program.addOption(new Option(spec.flag + arg, spec.help).argParser(syntaxParser(spec.type)));
  }
  return program;
}

/**
 * Parses kube-proxy's command line (arguments after the program name), every flag name
 * normalised as kube-proxy's are (`--hostname_override` is `--hostname-override`). Throws
 * UsageError; UnexpectedArgumentError for a word that is no flag (kube-proxy takes none).
 */
export function parseProxyFlags(argv: readonly string[]): ProxyFlags {
  const program = buildProgram();
  try {
    program.parse(normalizeFlagNames(argv), { from: 'user' });
  } catch (e) {
    const ce = e as { code?: string; message?: string };
    if (ce.code === 'commander.helpDisplayed' || ce.code === 'commander.help') {
      return { cleanup: false, help: program.helpInformation(), given: new Map() };
    }
    if (ce.code === 'commander.excessArguments' && program.args.length > 0)
      throw new UnexpectedArgumentError(program.args[0]!, { cause: e });
    throw new UsageError(String(ce.message ?? e).replace(/^error: /, ''), { cause: e });
  }
  const opts = program.opts<Record<string, unknown>>();
  const given = new Map<string, FlagValue>();
  for (const spec of [...CONFIG_FLAGS, ...IGNORED_FLAGS]) {
    const value = opts[camel(spec.flag)];
    if (value !== undefined) given.set(spec.flag, value as FlagValue);
  }
  const result: { -readonly [K in keyof ProxyFlags]: ProxyFlags[K] } = { cleanup: opts.cleanup === true, given };
  if (opts.initOnly === true) result.initOnly = true;
  if (opts.version !== undefined) result.version = opts.version === true ? 'true' : String(opts.version);
  if (typeof opts.config === 'string') result.configFile = opts.config;
  if (typeof opts.writeConfigTo === 'string') result.writeConfigTo = opts.writeConfigTo;
  if (typeof opts.v === 'number') result.verbosity = opts.v;
  if (typeof opts.loggingFormat === 'string') result.loggingFormat = opts.loggingFormat as LogFormat;
  return result;
}

/**
 * The config with every explicitly given flag applied on top. Throws ConfigError naming the
 * flag; returns warnings (--proxy-mode other than ipvs, ignored kube-proxy flags).
 */
export function applyProxyFlags(
  config: ProxyConfig,
  flags: ProxyFlags,
): { config: ProxyConfig; warnings: ConfigWarning[] } {
  const c = structuredClone(config) as MutableConfig;
  const warnings: ConfigWarning[] = [];
  for (const spec of CONFIG_FLAGS) {
    if (flags.given.has(spec.flag)) spec.apply!(c, flags.given.get(spec.flag) as never, spec.flag, warnings);
  }
  for (const spec of IGNORED_FLAGS) {
    if (flags.given.has(spec.flag))
      warnings.push({ field: spec.flag, message: `${spec.flag} is a kube-proxy flag kube-ipvs does not use; ignored` });
  }
  // the logging flags win over the file's logging section, as in kube-proxy (copyLogsFromFlags)
  if (flags.verbosity !== undefined) c.logging.verbosity = flags.verbosity;
  if (flags.loggingFormat !== undefined) c.logging.format = flags.loggingFormat;
  return { config: c, warnings };
}

/** Every config flag kube-ipvs applies (for docs and tests). */
export const CONFIG_FLAG_NAMES: readonly string[] = CONFIG_FLAGS.map((s) => s.flag);

/** The kube-proxy flags kube-ipvs accepts and ignores with a warning (for docs and tests). */
export const IGNORED_FLAG_NAMES: readonly string[] = IGNORED_FLAGS.map((s) => s.flag);
