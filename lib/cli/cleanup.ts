// `kube-ipvs cleanup` (and kube-proxy's `--cleanup` flag): remove what kube-proxy (its IPVS,
// iptables or nftables mode) or kube-ipvs left on the node, and only that
// (lib/cleanup/cleanup.ts), and exit 0, or 1 when
// a step failed (IPVS unreachable for any reason but "ip_vs not loaded" is a failure), naming
// what was left behind; every virtual server left in place is named with why. An unknown
// option or an argument exits 2 before anything is read or changed. `--dry-run` prints what
// would be removed (and what would be left) on stdout and changes nothing. Without root (the
// first reads refused with EPERM/EACCES) it is one line saying so, exit 1, nothing tried.
// Log lines are text (klog) unless --logging-format=json, as kube-proxy's.
import { Command, Option } from 'commander';
import { componentLog, LOG_FORMATS, LogFormat, setLogFormat } from '../log';
import { asNeedsRoot } from '../errors';
import { cleanup, CleanupDeps, CleanupFailure, CleanupLog, CleanupReport } from '../cleanup/cleanup';
import { KUBE_IPVS0, Link } from '../kernel/link/link';
import { Ipvs } from '../kernel/ipvs/ipvs';
import { IpvsUnavailableError, openIpvs } from '../kernel/ipvs/ipvs-netlink';
import { openLink } from '../kernel/link/link-rtnetlink';
import { ExecIptablesRunner } from '../kernel/iptables/iptables-restore';
import { IptablesBackendMode, IptablesRunner } from '../kernel/iptables/iptables';
import { IpsetRunner } from '../kernel/ipset/ipset';
import { ExecIpsetRunner } from '../kernel/ipset/ipset-restore';
import { ChildProcessExec } from '../kernel/exec';
import type { NftTables } from '../kernel/nftables/nftables';
import { LazyNftTables } from '../kernel/nftables/nftables-netlink';
import { IpFamily } from '../model/ip-family';

/** What the command opens; tests give fakes. */
export interface CleanupEnv {
  openIpvs(): Promise<Pick<Ipvs, 'apply' | 'listServices' | 'close'>>;
  openLink(): Promise<Link>;
  iptables(family: IpFamily, backend: IptablesBackendMode): IptablesRunner;
  ipset(): IpsetRunner;
  nftables(): NftTables;
  log: CleanupLog;
  /** where --dry-run's list goes (default: process.stdout) */
  stdout?: { write(text: string): unknown };
  /** where a usage error goes (default: process.stderr) */
  stderr?: { write(text: string): unknown };
  /** applies --logging-format, text when not given (default: lib/log.ts setLogFormat) */
  setLogFormat?: (format: LogFormat) => void;
}

function realEnv(): CleanupEnv {
  const exec = new ChildProcessExec();
  return {
    openIpvs: () => openIpvs(),
    openLink: () => openLink(),
    iptables: (family, backend) => new ExecIptablesRunner({ family, backend, exec }),
    ipset: () => new ExecIpsetRunner(exec),
    nftables: () => new LazyNftTables(),
    log: componentLog('cleanup'),
  };
}

/** When IPVS is not loaded there is no table to flush: flushing is then a no-op. */
async function ipvsOrNothing(
  env: CleanupEnv,
): Promise<{ ipvs: Pick<Ipvs, 'apply' | 'listServices'>; close(): void; unavailable?: string }> {
  try {
    const ipvs = await env.openIpvs();
    return { ipvs, close: () => ipvs.close() };
  } catch (e) {
    if (!(e instanceof IpvsUnavailableError)) {
      // unreachable for another reason (EPERM, timeout, ...): the table may hold services;
      // the flush step fails with this error, the other steps still run, and the exit is 1
      return {
        ipvs: { apply: () => Promise.reject(e), listServices: () => Promise.reject(e) },
        close: () => undefined,
      };
    }
    return {
      ipvs: { apply: async () => undefined, listServices: async () => [] },
      close: () => undefined,
      unavailable: `cleanup: ${e.message}; no IPVS table to clean`,
    };
  }
}

/** The needs-root line when a probe is refused for want of privilege (EPERM/EACCES); its other errors are the steps'. */
async function needsRoot(probes: readonly [string, () => Promise<unknown>][]): Promise<string | undefined> {
  for (const [what, probe] of probes) {
    try {
      await probe();
    } catch (e) {
      const root = asNeedsRoot(e, what);
      if (root) return root.message;
    }
  }
  return undefined;
}

/** What a failed step leaves on the node, in words. */
function leftBehind(f: CleanupFailure): string {
  const what =
    f.step === 'ipvs'
      ? 'IPVS virtual servers'
      : f.step === 'link'
        ? KUBE_IPVS0
        : f.step === 'iptables'
          ? `KUBE-* ${f.what}`
          : f.step === 'nftables'
            ? `nftables ${f.what}`
            : 'KUBE-* ipsets';
  return `${what} (${f.step} ${f.what}: ${(f.error as Error)?.message ?? String(f.error)})`;
}

/** The options runCleanup takes (kube-proxy's `--cleanup` hands these over, lib/cli/proxy-command.ts). */
export const CLEANUP_OPTIONS: readonly { readonly name: string; readonly takesValue: boolean }[] = [
  { name: '--iptables-backend', takesValue: true },
  { name: '--families', takesValue: true },
  { name: '--dry-run', takesValue: false },
  { name: '--cleanup', takesValue: false },
];

/** With kube-proxy's `--cleanup`, the proxy's flags runCleanup honours too (`--logging-format`). */
export function cleanupOptionsFromProxyFlags(flags: { readonly loggingFormat?: LogFormat }): string[] {
  return flags.loggingFormat === undefined ? [] : [`--logging-format=${flags.loggingFormat}`];
}

/**
 * Splits kube-proxy's argv given with `--cleanup` into runCleanup's own options and the rest
 * (kube-proxy's flags, parsed strictly by the caller).
 */
export function splitCleanupArgv(argv: readonly string[]): { own: string[]; rest: string[] } {
  const own: string[] = [];
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const opt = CLEANUP_OPTIONS.find((o) => a === o.name || (o.takesValue && a.startsWith(`${o.name}=`)));
    if (!opt) rest.push(a);
    else if (opt.takesValue && a === opt.name && i + 1 < argv.length) own.push(a, argv[++i]!);
    else own.push(a);
  }
  return { own, rest };
}

/** The dry run's list, one line per change or thing left. */
function formatDryRun(report: CleanupReport): string {
  const lines = [
    ...report.virtualServersRemoved.map((v) => `would remove IPVS ${v}`),
    ...report.virtualServersKept.map((k) => `would leave IPVS ${k.what}: ${k.reason}`),
    ...(report.linkDeleted ? [`would remove link ${KUBE_IPVS0}`] : []),
    ...report.iptablesDone.map((l) => `would run ${l}`),
    ...report.chainsKept.map((c) => `would keep ${c} (flushed): a foreign rule still jumps to it`),
    ...report.setsDestroyed.map((n) => `would remove ipset ${n}`),
    ...report.nftTablesDeleted.map((t) => `would remove nftables ${t}`),
  ];
  return lines.length === 0 ? 'nothing to remove\n' : lines.join('\n') + '\n';
}

/** What `kube-ipvs cleanup`'s command line asks for. */
interface CleanupRequest {
  readonly families: IpFamily[];
  readonly iptablesBackend: IptablesBackendMode;
  readonly dryRun: boolean;
}

/**
 * argv: the arguments after `cleanup` (or, from kube-proxy's `--cleanup`, the options of
 * CLEANUP_OPTIONS in it). The request, or the exit code: 0 after --help, 2 for unknown options
 * and arguments. Sets the log format it names.
 */
function parseCleanupArgs(argv: readonly string[], env: CleanupEnv): CleanupRequest | number {
  const stderr = env.stderr ?? process.stderr;
  const program = new Command('kube-ipvs cleanup')
    .description(
      'remove the IPVS virtual servers kube-proxy (IPVS mode) or kube-ipvs owns, kube-ipvs0, KUBE-* chains and sets, ' +
        "and what kube-proxy's iptables and nftables modes leave; fwmark and foreign virtual servers (keepalived, an admin) stay",
    )
    .addOption(
      new Option('--iptables-backend <mode>', 'iptables backend').choices(['auto', 'nft', 'legacy']).default('auto'),
    )
    .addOption(new Option('--families <list>', 'comma-separated: ipv4,ipv6').default('ipv4,ipv6'))
    .option('--dry-run', 'list what would be removed (and what would be left), change nothing')
    .option('--cleanup', 'kube-proxy compatibility: the same as the cleanup subcommand')
    .addOption(
      new Option('--logging-format <format>', 'log line format: text (klog, the default) or json')
        .choices(LOG_FORMATS)
        .default('text'),
    )
    .configureOutput({ writeErr: (s) => stderr.write(s), writeOut: (s) => (env.stdout ?? process.stdout).write(s) })
    .exitOverride();
  try {
    program.parse([...argv], { from: 'user' });
  } catch (e) {
    const code = (e as { exitCode?: unknown; code?: unknown }).exitCode;
    // --help prints and exits 0; every other parse error is a usage error, exit 2 (kube-proxy's)
    return code === 0 ? 0 : 2;
  }
  const opts = program.opts<{
    iptablesBackend: IptablesBackendMode;
    families: string;
    dryRun?: boolean;
    loggingFormat: LogFormat;
  }>();
  (env.setLogFormat ?? setLogFormat)(opts.loggingFormat);
  const families = opts.families.split(',').map((f) => f.trim()) as IpFamily[];
  if (families.some((f) => f !== 'ipv4' && f !== 'ipv6')) {
    stderr.write(`kube-ipvs cleanup: --families takes ipv4 and/or ipv6, got ${opts.families}\n`);
    return 2;
  }
  return { families, iptablesBackend: opts.iptablesBackend, dryRun: opts.dryRun === true };
}

/** The closing info line: what was (or, in a dry run, would be) removed and left. */
function cleanupSummary(report: CleanupReport, dryRun: boolean): string {
  return (
    `cleanup ${dryRun ? 'dry run ' : ''}done: ${report.virtualServersRemoved.length} virtual servers ${dryRun ? 'to remove' : 'removed'}, ` +
    `${report.virtualServersKept.length} left (not kube-proxy's), ` +
    `kube-ipvs0 ${report.linkDeleted ? (dryRun ? 'to delete' : 'deleted') : 'absent'}, ${report.iptablesDone.length} iptables changes, ` +
    `${report.setsDestroyed.length} sets ${dryRun ? 'to destroy' : 'destroyed'}, ` +
    `${report.nftTablesDeleted.length} nftables tables ${dryRun ? 'to delete' : 'deleted'}, ${report.failures.length} failures`
  );
}

/**
 * argv: the arguments after `cleanup` (or, from kube-proxy's `--cleanup`, the options of
 * CLEANUP_OPTIONS in it). Unknown options and arguments exit 2.
 */
export async function runCleanup(argv: readonly string[], env: CleanupEnv = realEnv()): Promise<number> {
  const request = parseCleanupArgs(argv, env);
  if (typeof request === 'number') return request;
  const { families, dryRun } = request;

  const { log } = env;
  const { ipvs, close, unavailable } = await ipvsOrNothing(env);
  const nftables = env.nftables();
  // the first reads that need CAP_NET_ADMIN (the IPVS table, nf_tables' tables): refused for
  // want of it, one line says so and nothing else is tried (each step would fail the same way)
  const refused = await needsRoot([
    ['cleanup (the IPVS table)', () => ipvs.listServices()],
    ["cleanup (nf_tables' tables)", () => nftables.listTables()],
  ]);
  if (refused) {
    log.error(refused);
    close();
    nftables.close();
    return 1;
  }
  if (unavailable !== undefined) log.info(unavailable);
  const link = await env.openLink();
  const deps: CleanupDeps = {
    ipvs,
    link,
    iptables: families.map((family) => env.iptables(family, request.iptablesBackend)),
    ipset: env.ipset(),
    nftables,
    log,
    dryRun,
  };
  try {
    const report = await cleanup(deps);
    if (dryRun) (env.stdout ?? process.stdout).write(formatDryRun(report));
    log.info(cleanupSummary(report, dryRun));
    if (report.failures.length === 0) return 0;
    log.error(`cleanup incomplete; left behind: ${report.failures.map(leftBehind).join('; ')}`);
    return 1;
  } finally {
    close();
    link.close();
    nftables.close();
  }
}
