// `kube-ipvs cleanup` (and kube-proxy's `--cleanup` flag): remove every trace of kube-proxy's
// IPVS mode from the node (lib/cleanup/cleanup.ts) and exit 0, or 1 when a step failed (IPVS
// unreachable for any reason but "ip_vs not loaded" is a failure), naming what was left behind.
import { Command, Option } from 'commander';
import { componentLog } from '../log';
import { cleanup, CleanupDeps, CleanupFailure, CleanupLog } from '../cleanup/cleanup';
import { KUBE_IPVS0, Link } from '../kernel/link/link';
import { Ipvs } from '../kernel/ipvs/ipvs';
import { IpvsUnavailableError, openIpvs } from '../kernel/ipvs/ipvs-netlink';
import { openLink } from '../kernel/link/link-rtnetlink';
import { ExecIptablesRunner } from '../kernel/iptables/iptables-restore';
import { IptablesBackendMode, IptablesRunner } from '../kernel/iptables/iptables';
import { IpsetRunner } from '../kernel/ipset/ipset';
import { ExecIpsetRunner } from '../kernel/ipset/ipset-restore';
import { ChildProcessExec } from '../kernel/exec';
import { IpFamily } from '../model/ip-family';

/** What the command opens; tests give fakes. */
export interface CleanupEnv {
  openIpvs(): Promise<Pick<Ipvs, 'apply' | 'close'>>;
  openLink(): Promise<Link>;
  iptables(family: IpFamily, backend: IptablesBackendMode): IptablesRunner;
  ipset(): IpsetRunner;
  log: CleanupLog;
}

function realEnv(): CleanupEnv {
  const exec = new ChildProcessExec();
  return {
    openIpvs: () => openIpvs(),
    openLink: () => openLink(),
    iptables: (family, backend) => new ExecIptablesRunner({ family, backend, exec }),
    ipset: () => new ExecIpsetRunner(exec),
    log: componentLog('cleanup'),
  };
}

/** When IPVS is not loaded there is no table to flush: flushing is then a no-op. */
async function ipvsOrNothing(env: CleanupEnv): Promise<{ ipvs: Pick<Ipvs, 'apply'>; close(): void }> {
  const { log } = env;
  try {
    const ipvs = await env.openIpvs();
    return { ipvs, close: () => ipvs.close() };
  } catch (e) {
    if (!(e instanceof IpvsUnavailableError)) {
      // unreachable for another reason (EPERM, timeout, ...): the table may hold services;
      // the flush step fails with this error, the other steps still run, and the exit is 1
      return { ipvs: { apply: () => Promise.reject(e) }, close: () => undefined };
    }
    log.info(`cleanup: ${e.message}; no IPVS table to flush`);
    return { ipvs: { apply: async () => undefined }, close: () => undefined };
  }
}

/** What a failed step leaves on the node, in words. */
function leftBehind(f: CleanupFailure): string {
  const what = f.step === 'ipvs' ? 'the IPVS table' : f.step === 'link' ? KUBE_IPVS0 : f.step === 'iptables' ? `KUBE-* ${f.what}` : 'KUBE-* ipsets';
  return `${what} (${f.step} ${f.what}: ${(f.error as Error)?.message ?? String(f.error)})`;
}

/**
 * argv: the arguments after `cleanup` (or kube-proxy's whole argv when `--cleanup` was given;
 * unknown kube-proxy flags are accepted and ignored).
 */
export async function runCleanup(argv: readonly string[], env: CleanupEnv = realEnv()): Promise<number> {
  const program = new Command('kube-ipvs cleanup')
    .description('remove IPVS services, kube-ipvs0, KUBE-* chains and sets left by kube-proxy (IPVS mode) or kube-ipvs')
    .addOption(new Option('--iptables-backend <mode>', 'iptables backend').choices(['auto', 'nft', 'legacy']).default('auto'))
    .addOption(new Option('--families <list>', 'comma-separated: ipv4,ipv6').default('ipv4,ipv6'))
    .option('--cleanup', 'kube-proxy compatibility: the same as the cleanup subcommand')
    .allowUnknownOption()
    .allowExcessArguments()
    .exitOverride();
  try {
    program.parse([...argv], { from: 'user' });
  } catch (e) {
    const code = (e as { exitCode?: unknown }).exitCode;
    return typeof code === 'number' ? code : 2;
  }
  const opts = program.opts<{ iptablesBackend: IptablesBackendMode; families: string }>();
  const families = opts.families.split(',').map((f) => f.trim()) as IpFamily[];
  if (families.some((f) => f !== 'ipv4' && f !== 'ipv6')) {
    process.stderr.write(`kube-ipvs cleanup: --families takes ipv4 and/or ipv6, got ${opts.families}\n`);
    return 2;
  }

  const { log } = env;
  const { ipvs, close } = await ipvsOrNothing(env);
  const link = await env.openLink();
  const deps: CleanupDeps = {
    ipvs,
    link,
    iptables: families.map((family) => env.iptables(family, opts.iptablesBackend)),
    ipset: env.ipset(),
    log,
  };
  try {
    const report = await cleanup(deps);
    log.info(
      `cleanup done: kube-ipvs0 ${report.linkDeleted ? 'deleted' : 'absent'}, ${report.iptablesDone.length} iptables changes, ` +
        `${report.setsDestroyed.length} sets destroyed, ${report.failures.length} failures`,
    );
    if (report.failures.length === 0) return 0;
    log.error(`cleanup incomplete; left behind: ${report.failures.map(leftBehind).join('; ')}`);
    return 1;
  } finally {
    close();
    link.close();
  }
}
