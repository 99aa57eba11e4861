// `kube-ipvs cleanup` (and kube-proxy's `--cleanup` flag): remove every trace of kube-proxy's
// IPVS mode from the node (lib/kernel/cleanup.ts) and exit 0, or 1 when a step failed.
import { Command, Option } from 'commander';
import { componentLog } from '../log';
import { cleanup, CleanupDeps } from '../kernel/cleanup';
import { Ipvs } from '../kernel/ipvs/ipvs';
import { IpvsUnavailableError, openIpvs } from '../kernel/ipvs/ipvs-netlink';
import { openLink } from '../kernel/link/link-rtnetlink';
import { ExecIptablesRunner } from '../kernel/iptables/iptables-restore';
import { IptablesBackendMode } from '../kernel/iptables/iptables';
import { ExecIpsetRunner } from '../kernel/ipset/ipset-restore';
import { ChildProcessExec } from '../kernel/exec';
import { IpFamily } from '../plan/names';

/** When IPVS is not loaded there is no table to flush: flushing is then a no-op. */
async function ipvsOrNothing(log: ReturnType<typeof componentLog>): Promise<{ ipvs: Pick<Ipvs, 'apply'>; close(): void }> {
  try {
    const ipvs = await openIpvs();
    return { ipvs, close: () => ipvs.close() };
  } catch (e) {
    if (!(e instanceof IpvsUnavailableError)) throw e;
    log.info(`cleanup: ${e.message}; no IPVS table to flush`);
    return { ipvs: { apply: async () => undefined }, close: () => undefined };
  }
}

/**
 * argv: the arguments after `cleanup` (or kube-proxy's whole argv when `--cleanup` was given;
 * unknown kube-proxy flags are accepted and ignored).
 */
export async function runCleanup(argv: readonly string[]): Promise<number> {
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

  const log = componentLog('cleanup');
  const exec = new ChildProcessExec();
  const { ipvs, close } = await ipvsOrNothing(log);
  const link = await openLink();
  const deps: CleanupDeps = {
    ipvs,
    link,
    iptables: families.map((family) => new ExecIptablesRunner({ family, backend: opts.iptablesBackend, exec })),
    ipset: new ExecIpsetRunner(exec),
    log,
  };
  try {
    const report = await cleanup(deps);
    log.info(
      `cleanup done: kube-ipvs0 ${report.linkDeleted ? 'deleted' : 'absent'}, ${report.iptablesDone.length} iptables changes, ` +
        `${report.setsDestroyed.length} sets destroyed, ${report.failures.length} failures`,
    );
    return report.failures.length === 0 ? 0 : 1;
  } finally {
    close();
    link.close();
  }
}
