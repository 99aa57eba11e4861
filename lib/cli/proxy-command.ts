// `kube-ipvs [kube-proxy flags]`: the proxy process, started the way kube-proxy is
// (`--config=/var/lib/kube-proxy/config.conf --hostname-override=$(NODE_NAME)`).
// Parses the flags, loads and validates the configuration, then hands over to runDaemon.
// Nothing here touches the kernel but `--init-only` (the conntrack sysctls, then exit, as
// kube-proxy's init container does): a bad flag exits 2, a bad configuration exits 1, before
// the daemon starts. The log format and verbosity come from the file's `logging` section,
// the --logging-format and --v flags winning (applied by applyProxyFlags).
import { writeFile as fsWriteFile } from 'node:fs/promises';
import type winston from 'winston';
import { asNeedsRoot, ConfigError, UnexpectedArgumentError, UsageError } from '../errors';
import { LogFormat, componentLog, setLogFormat, setVerbosity as setLogVerbosity } from '../log';
import { ConfigWarning } from '../config/decode-config';
import { applyConntrack, NodeSettingsTargets } from '../daemon/node-settings';
import { formatProxyConfig } from '../config/format-config';
import { loadProxyConfig, ReadConfigFile } from '../config/load-config';
import { ProxyConfig } from '../config/proxy-config';
import { normalizeFlagNames } from '../config/flag-names';
import { parseProxyFlags, ProxyFlags } from '../config/proxy-flags';
import type { DaemonOptions } from '../daemon/daemon';
import { cleanupOptionsFromProxyFlags, runCleanup, splitCleanupArgv } from './cleanup';
import { readPackageInfo } from './version';
import { BuildInfo, goPlatform } from '../model/build-info';
import { formatTopHelp, unknownCommandMessage } from './top-help';

interface Writer {
  write(text: string): unknown;
}

/** What the proxy command (kube-proxy's flags) runs: the daemon, stdio, file access, logs. */
export interface ProxyCommandDeps {
  /** the daemon (lib/daemon/daemon.ts runDaemon); resolves to the exit code */
  readonly runDaemon: (config: ProxyConfig, options: DaemonOptions) => Promise<number>;
  readonly stdout: Writer;
  readonly stderr: Writer;
  /** `--cleanup` (lib/cli/cleanup.ts runCleanup), given the whole argv */
  readonly runCleanup?: (argv: readonly string[]) => Promise<number>;
  readonly readFile?: ReadConfigFile;
  readonly writeFile?: (path: string, text: string) => Promise<void>;
  /** where configuration warnings go (default: the process logger, component "config") */
  readonly log?: Pick<winston.Logger, 'warn' | 'info'>;
  /** applies --v (default: lib/log.ts setVerbosity) */
  readonly setVerbosity?: (v: number) => void;
  /** applies --logging-format, text when not given (default: lib/log.ts setLogFormat) */
  readonly setLogFormat?: (format: LogFormat) => void;
  /**
   * loads and checks the kubeconfig before the daemon starts (default: lib/daemon/api-config.ts);
   * throws KubeConfigError for one that cannot be used
   */
  readonly loadKubeConfig?: (config: ProxyConfig, build: BuildInfo) => DaemonOptions['kubeConfig'];
  /** `--init-only`: the privileged setup; resolves to the exit code (default: runInitOnly) */
  readonly runInit?: (config: ProxyConfig) => Promise<number>;
}

/**
 * kube-proxy's --init-only on Linux: the conntrack sysctls (platformSetup), then exit. Refused
 * for want of privilege (EACCES/EPERM), it is one line saying kube-ipvs needs root, exit 1.
 */
export async function runInitOnly(config: ProxyConfig, stderr: Writer, targets?: NodeSettingsTargets): Promise<number> {
  const log = componentLog('sysctl');
  const { changed, failed } = await applyConntrack(config, log, targets);
  const root = failed.map((e) => asNeedsRoot(e, "--init-only's conntrack sysctls")).find((r) => r !== undefined);
  if (root) {
    stderr.write(`${root.message}\n`);
    return 1;
  }
  for (const e of failed)
    stderr.write(`kube-ipvs: --init-only: could not set conntrack parameters from the configuration: ${e.message}\n`);
  log.info(`init done: ${changed.length} conntrack setting(s) changed`, {
    changed: [...changed],
    failed: failed.length,
  });
  return failed.length === 0 ? 0 : 1;
}

/** The real dependencies: the daemon (loaded only when run), process stdout and stderr. */
export const defaultProxyCommandDeps = (): ProxyCommandDeps => ({
  // loaded only when the proxy runs: @kubernetes/client-node takes seconds to load (tens in
  // the TCG guest), which `kube-ipvs ipvsadm` and `--cleanup` must not pay
  runDaemon: (config, options) =>
    (require('../daemon/daemon') as typeof import('../daemon/daemon')).runDaemon(config, options),
  stdout: process.stdout,
  stderr: process.stderr,
});

/**
 * `--cleanup` (or `--cleanup=true`) before any `--`: kube-proxy's cleanup mode. runCleanup's
 * own options (`--iptables-backend`, `--families`, `--dry-run`) are taken out; the rest must
 * parse as kube-proxy's flags (an unknown or bad one exits 2 before anything is cleaned, as
 * kube-proxy's parse does) and is otherwise ignored.
 */
function cleanupArgv(argv: readonly string[]): string[] | undefined {
  const end = argv.indexOf('--');
  const head = end < 0 ? argv : argv.slice(0, end);
  const truthy = [
    '--cleanup',
    '--cleanup=true',
    '--cleanup=1',
    '--cleanup=t',
    '--cleanup=TRUE',
    '--cleanup=True',
    '--cleanup=T',
  ];
  if (!head.some((a) => truthy.includes(a))) return undefined;
  return argv.map((a) => (truthy.includes(a) ? '--cleanup' : a));
}

// loaded only when the proxy runs (client-node)
const defaultLoadKubeConfig = (config: ProxyConfig, build: BuildInfo): DaemonOptions['kubeConfig'] =>
  (require('../daemon/api-config') as typeof import('../daemon/api-config')).loadDaemonKubeConfig(config, build);

/** A usage error's lines on stderr (an unexpected word: the nearest command suggested). */
function writeUsageError(e: UsageError, stderr: Writer): void {
  const what = e instanceof UnexpectedArgumentError ? unknownCommandMessage(e.argument) : e.message;
  stderr.write(`kube-ipvs: ${what}\nRun 'kube-ipvs --help' for usage.\n`);
}

/** `--cleanup`: the proxy's flags checked (a bad one is a usage error), then the cleanup. */
async function cleanupMain(cleanup: readonly string[], deps: ProxyCommandDeps): Promise<number> {
  const { own, rest } = splitCleanupArgv(cleanup);
  let flags: ProxyFlags;
  try {
    flags = parseProxyFlags(rest);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    writeUsageError(e, deps.stderr);
    return 2;
  }
  return (deps.runCleanup ?? runCleanup)([...own, ...cleanupOptionsFromProxyFlags(flags)]);
}

/**
 * Loads the configuration (the file under the flags), at start and at each reload: the
 * first load sets the log's format and verbosity; each warning is logged once.
 */
function configLoader(flags: ProxyFlags, deps: ProxyCommandDeps): () => Promise<ProxyConfig> {
  const log = deps.log ?? componentLog('config');
  // once each: a reload re-applies the same flags (and mostly the same file)
  const warned = new Set<string>();
  const warn = (warnings: readonly ConfigWarning[]): void => {
    for (const w of warnings) {
      if (warned.has(`${w.field}\0${w.message}`)) continue;
      warned.add(`${w.field}\0${w.message}`);
      const meta = { field: w.field, ...(flags.configFile ? { file: flags.configFile } : {}) };
      if (w.level === 'info') log.info(w.message, meta);
      else log.warn(w.message, meta);
    }
  };
  let loaded = false;
  return async (): Promise<ProxyConfig> => {
    const result = await loadProxyConfig(flags, deps.readFile);
    if (!loaded) {
      loaded = true;
      // logging.format / logging.verbosity, the flags already applied on top; the level is
      // left alone (KUBE_IPVS_LOG_LEVEL) unless --v or the file asks for one
      const { format, verbosity } = result.config.logging;
      if (format !== (flags.loggingFormat ?? 'text')) (deps.setLogFormat ?? setLogFormat)(format);
      if (flags.verbosity !== undefined || verbosity > 0) (deps.setVerbosity ?? setLogVerbosity)(verbosity);
    }
    warn(result.warnings);
    return result.config;
  };
}

/** Runs the proxy; argv is what follows the program name. Resolves to the exit code. */
export async function proxyMain(given: readonly string[], deps: ProxyCommandDeps): Promise<number> {
  // kube-proxy's names: `--init_only`, `--iptables_backend` (with --cleanup) are theirs too
  const argv = normalizeFlagNames(given);
  const cleanup = cleanupArgv(argv);
  if (cleanup) return cleanupMain(cleanup, deps);

  let flags: ProxyFlags;
  try {
    flags = parseProxyFlags(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    writeUsageError(e, deps.stderr);
    return 2;
  }
  if (flags.help !== undefined) {
    deps.stdout.write(formatTopHelp(flags.help));
    return 0;
  }
  // the format of any line before the file is read (a bad file is reported on stderr)
  (deps.setLogFormat ?? setLogFormat)(flags.loggingFormat ?? 'text');
  const load = configLoader(flags, deps);

  let config: ProxyConfig;
  try {
    config = await load();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    deps.stderr.write(`kube-ipvs: ${e.message}\n`);
    return 1;
  }

  if (flags.writeConfigTo !== undefined) {
    try {
      await (deps.writeFile ?? ((p, t) => fsWriteFile(p, t, 'utf8')))(flags.writeConfigTo, formatProxyConfig(config));
    } catch (e) {
      deps.stderr.write(`kube-ipvs: --write-config-to ${flags.writeConfigTo}: ${(e as Error).message}\n`);
      return 1;
    }
    return 0;
  }
  if (flags.initOnly) return (deps.runInit ?? ((c) => runInitOnly(c, deps.stderr)))(config);

  // the kubeconfig before the daemon: one that cannot be used stops the start with one line,
  // before anything touches the kernel (sysctls, conntrack, oom_score_adj)
  const build: BuildInfo = { version: readPackageInfo().version, platform: goPlatform() };
  let kubeConfig: DaemonOptions['kubeConfig'];
  try {
    kubeConfig = (deps.loadKubeConfig ?? defaultLoadKubeConfig)(config, build);
  } catch (e) {
    if ((e as { code?: unknown })?.code !== 'KIPVS_KUBECONFIG') throw e;
    deps.stderr.write(`kube-ipvs: ${(e as Error).message}\n`);
    return 1;
  }

  const options: DaemonOptions = {
    ...(flags.configFile !== undefined ? { configFile: flags.configFile, reloadConfig: load } : {}),
    verbosity: config.logging.verbosity,
    build,
    ...(kubeConfig ? { kubeConfig } : {}),
  };
  return deps.runDaemon(config, options);
}
