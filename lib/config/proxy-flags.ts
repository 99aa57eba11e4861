// kube-proxy's command-line flags, under kube-proxy's names.
//
// Precedence: every flag given explicitly is applied ON TOP of the config file. kube-proxy's
// help says many of these are "ignored if a config file is specified by --config"; kube-ipvs
// deliberately applies them anyway (a flag on the command line is never silently dropped), so
// `--config=/var/lib/kube-proxy/config.conf --hostname-override=$(NODE_NAME)` and any other
// mix behaves the same.
//
// Exit codes: a command line that cannot be parsed (unknown flag, missing value, positional
// argument, an int/bool/duration/map that does not parse) is a UsageError (exit 2); a value
// that parses but is invalid (bad CIDR, unknown scheduler, negative duration, bit out of range)
// is a ConfigError naming the flag (exit 1), as kube-proxy's validation does after parsing.
import { Command, InvalidArgumentError, Option } from 'commander';
import { UsageError } from '../errors';
import {
  parseBindAddress,
  parseCidr,
  parseClusterCidrs,
  parseDetectLocalMode,
  parseDuration,
  parseDurationSec,
  parseIP,
  parseMasqueradeBit,
  parseNodePortAddresses,
  parseScheduler,
} from './config-values';
import { ConfigWarning, HEALTHZ_PORT, METRICS_PORT, modeWarning } from './decode-config';
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
  readonly apply?: (c: MutableConfig, value: never, flag: string, warnings: ConfigWarning[]) => void;
}

const str = (apply: (c: MutableConfig, v: string, flag: string, w: ConfigWarning[]) => void) => apply;

/** The flags that override the configuration, in the order they are applied. */
const CONFIG_FLAGS: readonly FlagSpec[] = [
  { flag: '--kubeconfig', type: 'string', help: 'path to a kubeconfig file (clientConnection.kubeconfig)', apply: str((c, v) => (c.clientConnection.kubeconfig = v)) },
  { flag: '--master', type: 'string', help: 'API server address, overrides the kubeconfig\'s', apply: str((c, v) => (c.master = v)) },
  { flag: '--kube-api-qps', type: 'float', help: 'QPS to the API server (clientConnection.qps)', apply: (c, v: number) => (c.clientConnection.qps = v) },
  { flag: '--kube-api-burst', type: 'int', help: 'burst to the API server (clientConnection.burst)', apply: (c, v: number) => (c.clientConnection.burst = v) },
  { flag: '--kube-api-content-type', type: 'string', help: 'content type of requests to the API server', apply: str((c, v) => (c.clientConnection.contentType = v)) },
  { flag: '--hostname-override', type: 'string', help: 'the node name to use instead of the hostname', apply: str((c, v) => (c.hostnameOverride = v)) },
  {
    flag: '--proxy-mode', type: 'string', help: 'accepted for compatibility; kube-ipvs always runs ipvs',
    apply: str((_c, v, flag, w) => {
      if (v !== '' && v !== 'ipvs') w.push(modeWarning(flag, v));
    }),
  },
  { flag: '--bind-address', type: 'string', help: 'the node IP hint (bindAddress)', apply: str((c, v, f) => (c.bindAddress = parseIP(v, f))) },
  {
    flag: '--healthz-bind-address', type: 'string', help: `IP:port of the health server (default 0.0.0.0:${HEALTHZ_PORT}); empty disables it`,
    apply: str((c, v, f) => (c.healthzBindAddress = v === '' ? '' : parseBindAddress(v, f, HEALTHZ_PORT))),
  },
  {
    flag: '--metrics-bind-address', type: 'string', help: `IP:port of the metrics server (default 127.0.0.1:${METRICS_PORT}); empty disables it`,
    apply: str((c, v, f) => (c.metricsBindAddress = v === '' ? '' : parseBindAddress(v, f, METRICS_PORT))),
  },
  { flag: '--cluster-cidr', type: 'string', help: 'the pod CIDR, or a dual-stack pair, comma-separated', apply: str((c, v, f) => (c.clusterCIDR = parseClusterCidrs(v.split(','), f))) },
  { flag: '--detect-local-mode', type: 'string', help: 'ClusterCIDR, NodeCIDR, BridgeInterface or InterfaceNamePrefix', apply: str((c, v, f) => (c.detectLocalMode = parseDetectLocalMode(v, f))) },
  { flag: '--pod-bridge-interface', type: 'string', help: 'bridge interface name (detect-local-mode BridgeInterface)', apply: str((c, v) => (c.detectLocal.bridgeInterface = v)) },
  { flag: '--pod-interface-name-prefix', type: 'string', help: 'interface name prefix (detect-local-mode InterfaceNamePrefix)', apply: str((c, v) => (c.detectLocal.interfaceNamePrefix = v)) },
  { flag: '--nodeport-addresses', type: 'list', help: 'CIDRs NodePorts listen on, or "primary"; default all', apply: (c, v: string[], f) => (c.nodePortAddresses = parseNodePortAddresses(v, f)) },
  { flag: '--masquerade-all', type: 'bool', help: 'SNAT all traffic sent via Service IPs', apply: (c, v: boolean) => (c.iptables.masqueradeAll = v) },
  { flag: '--iptables-masquerade-bit', type: 'int', help: 'fwmark bit for packets to SNAT, 0-31 (default 14)', apply: (c, v: number, f) => (c.iptables.masqueradeBit = parseMasqueradeBit(v, f)) },
  { flag: '--ipvs-scheduler', type: 'string', help: 'IPVS scheduler (default rr)', apply: str((c, v, f) => (c.ipvs.scheduler = parseScheduler(v, f))) },
  { flag: '--ipvs-sync-period', type: 'duration', help: 'maximum interval between full syncs (default 30s)', apply: str((c, v, f) => (c.ipvs.syncPeriodMs = parseDuration(v, f))) },
  { flag: '--ipvs-min-sync-period', type: 'duration', help: 'minimum interval between syncs (default 0s)', apply: str((c, v, f) => (c.ipvs.minSyncPeriodMs = parseDuration(v, f))) },
  { flag: '--ipvs-exclude-cidrs', type: 'list', help: 'CIDRs whose virtual servers kube-ipvs never touches', apply: (c, v: string[], f) => (c.ipvs.excludeCIDRs = v.map((x) => parseCidr(x, f))) },
  { flag: '--ipvs-strict-arp', type: 'bool', help: 'arp_ignore=1, arp_announce=2', apply: (c, v: boolean) => (c.ipvs.strictARP = v) },
  { flag: '--ipvs-tcp-timeout', type: 'duration', help: 'IPVS TCP timeout (0 leaves the kernel value)', apply: str((c, v, f) => (c.ipvs.tcpTimeoutSec = parseDurationSec(v, f))) },
  { flag: '--ipvs-tcpfin-timeout', type: 'duration', help: 'IPVS TCP FIN_WAIT timeout', apply: str((c, v, f) => (c.ipvs.tcpFinTimeoutSec = parseDurationSec(v, f))) },
  { flag: '--ipvs-udp-timeout', type: 'duration', help: 'IPVS UDP timeout', apply: str((c, v, f) => (c.ipvs.udpTimeoutSec = parseDurationSec(v, f))) },
  {
    flag: '--exclude-cluster-cidr', type: 'list', help: 'kube-ipvs (multi-CNI): ignore endpoints inside these CIDRs (ipvs.excludeClusterCIDRs)',
    apply: (c, v: string[], f) => (c.ipvs.excludeClusterCIDRs = v.map((x) => parseCidr(x, f))),
  },
  { flag: '--config-sync-period', type: 'duration', help: 'informer resync period (default 15m)', apply: str((c, v, f) => (c.configSyncPeriodMs = parseDuration(v, f))) },
  { flag: '--feature-gates', type: 'map', help: 'A=true,B=false (merged over the file\'s featureGates)', apply: (c, v: Record<string, boolean>) => (c.featureGates = { ...c.featureGates, ...v }) },
];

/** kube-proxy flags kube-ipvs accepts so existing DaemonSets start, but does not use. */
const IGNORED_FLAGS: readonly FlagSpec[] = [
  ...['--conntrack-max-per-core', '--conntrack-min', '--oom-score-adj', '--healthz-port', '--metrics-port'].map((flag) => ({ flag, type: 'int' as const, help: 'kube-proxy flag, ignored' })),
  ...['--conntrack-tcp-timeout-established', '--conntrack-tcp-timeout-close-wait', '--conntrack-udp-timeout', '--conntrack-udp-timeout-stream', '--iptables-sync-period', '--iptables-min-sync-period'].map((flag) => ({ flag, type: 'duration' as const, help: 'kube-proxy flag, ignored' })),
  ...['--conntrack-tcp-be-liberal', '--iptables-localhost-nodeports', '--profiling', '--bind-address-hard-fail'].map((flag) => ({ flag, type: 'bool' as const, help: 'kube-proxy flag, ignored' })),
  ...['--show-hidden-metrics-for-version', '--proxy-port-range', '--logging-format'].map((flag) => ({ flag, type: 'string' as const, help: 'kube-proxy flag, ignored' })),
];

/** The command line, parsed. Config overrides are applied by applyProxyFlags. */
export interface ProxyFlags {
  /** --config */
  readonly configFile?: string;
  /** --write-config-to */
  readonly writeConfigTo?: string;
  /** --cleanup */
  readonly cleanup: boolean;
  /** --v (klog verbosity); undefined when not given */
  readonly verbosity?: number;
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
      return (v, prev) => [...((prev as string[] | undefined) ?? []), ...v.split(',').map((s) => s.trim()).filter((s) => s !== '')];
    case 'map':
      return (v, prev) => {
        const out: Record<string, boolean> = { ...((prev as Record<string, boolean> | undefined) ?? {}) };
        for (const pair of v.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
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
        'KubeProxyConfiguration file; every flag given is applied on top of the file.\n' +
        'Subcommands: kube-ipvs ipvsadm ARGS (ipvsadm 1.31), kube-ipvs cleanup.',
    )
    .exitOverride()
    .helpOption('-h, --help', 'show this help')
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  program.addOption(new Option('--config <file>', 'KubeProxyConfiguration file (YAML or JSON), watched for changes'));
  program.addOption(new Option('--write-config-to <file>', 'write the effective configuration to FILE and exit'));
  program.addOption(new Option('--cleanup [bool]', 'remove IPVS services, kube-ipvs0, KUBE-* chains and sets, then exit').argParser(parseBool));
  program.addOption(new Option('-v, --v <level>', 'log verbosity: 0-1 info, 2-3 verbose, 4+ debug').argParser((v) => {
    const n = parseInt10(v.replace(/^=/, '')); // pflag takes `-v=4` too
    if (n < 0) throw new InvalidArgumentError('expected a non-negative integer');
    return n;
  }));
  for (const spec of [...CONFIG_FLAGS, ...IGNORED_FLAGS]) {
    const arg = spec.type === 'bool' ? ' [bool]' : ' <value>';
    program.addOption(new Option(spec.flag + arg, spec.help).argParser(syntaxParser(spec.type)));
  }
  return program;
}

/** Parses kube-proxy's command line (arguments after the program name). Throws UsageError. */
export function parseProxyFlags(argv: readonly string[]): ProxyFlags {
  const program = buildProgram();
  try {
    program.parse([...argv], { from: 'user' });
  } catch (e) {
    const ce = e as { code?: string; message?: string };
    if (ce.code === 'commander.helpDisplayed' || ce.code === 'commander.help') {
      return { cleanup: false, help: program.helpInformation(), given: new Map() };
    }
    throw new UsageError(String(ce.message ?? e).replace(/^error: /, ''), { cause: e });
  }
  const opts = program.opts<Record<string, unknown>>();
  const given = new Map<string, FlagValue>();
  for (const spec of [...CONFIG_FLAGS, ...IGNORED_FLAGS]) {
    const value = opts[camel(spec.flag)];
    if (value !== undefined) given.set(spec.flag, value as FlagValue);
  }
  const result: { -readonly [K in keyof ProxyFlags]: ProxyFlags[K] } = { cleanup: opts.cleanup === true, given };
  if (typeof opts.config === 'string') result.configFile = opts.config;
  if (typeof opts.writeConfigTo === 'string') result.writeConfigTo = opts.writeConfigTo;
  if (typeof opts.v === 'number') result.verbosity = opts.v;
  return result;
}

/**
 * The config with every explicitly given flag applied on top. Throws ConfigError naming the
 * flag; returns warnings (--proxy-mode other than ipvs, ignored kube-proxy flags).
 */
export function applyProxyFlags(config: ProxyConfig, flags: ProxyFlags): { config: ProxyConfig; warnings: ConfigWarning[] } {
  const c = structuredClone(config) as MutableConfig;
  const warnings: ConfigWarning[] = [];
  for (const spec of CONFIG_FLAGS) {
    if (flags.given.has(spec.flag)) spec.apply!(c, flags.given.get(spec.flag) as never, spec.flag, warnings);
  }
  for (const spec of IGNORED_FLAGS) {
    if (flags.given.has(spec.flag)) warnings.push({ field: spec.flag, message: `${spec.flag} is a kube-proxy flag kube-ipvs does not use; ignored` });
  }
  return { config: c, warnings };
}

/** Every config flag kube-ipvs applies (for docs and tests). */
export const CONFIG_FLAG_NAMES: readonly string[] = CONFIG_FLAGS.map((s) => s.flag);
