// The node-wide settings kube-proxy makes before it proxies: conntrack sysctls
// (conntrack.*) and its own oom_score_adj (oomScoreAdj). Used at the daemon's start, on a
// live reload that changes them, and by `--init-only`.
//
// Failures: kube-proxy logs an oom_score_adj failure and goes on, but exits when a conntrack
// sysctl cannot be written (a read-only nf_conntrack_max in a container's network namespace
// is the usual cause; kind sets maxPerCore: 0 for it). The daemon logs the conntrack failure
// as an error naming the sysctl and proxies anyway: Services keep working with the kernel's
// conntrack limits. `--init-only`, whose whole job this is, exits 1 as kube-proxy does.
import { ProxyConfig } from '../config/proxy-config';
import { ConntrackSysctlResult, ensureConntrackSysctls, onlineCpus } from '../kernel/sysctl/conntrack-sysctls';
import { applyOomScoreAdj } from '../kernel/sysctl/oom-score-adj';
import { ProcSysctl, Sysctl } from '../kernel/sysctl/sysctl';
import type { SysctlLog } from '../kernel/sysctl/ipvs-sysctls';

/** Where node settings are logged: the sysctl log, and errors. */
export interface NodeSettingsLog extends SysctlLog {
  error(msg: string, meta?: Record<string, unknown>): unknown;
}

/** The kernel files, real by default (tests pass a FakeSysctl). */
export interface NodeSettingsTargets {
  /** /proc/sys */
  readonly sysctl: Sysctl;
  /** /sys/module */
  readonly modules: Sysctl;
  /** /proc */
  readonly proc: Sysctl;
  readonly numCPU: () => Promise<number>;
}

/** The real kernel files: /proc/sys, /sys/module, /proc, and the online CPU count. */
export const realNodeSettingsTargets = (): NodeSettingsTargets => ({
  sysctl: new ProcSysctl('/proc/sys'),
  modules: new ProcSysctl('/sys/module'),
  proc: new ProcSysctl('/proc'),
  numCPU: () => onlineCpus(),
});

/** conntrack.* as kube-proxy applies them; every failure is returned, none thrown. */
export async function applyConntrack(
  config: ProxyConfig,
  log: SysctlLog,
  t: NodeSettingsTargets = realNodeSettingsTargets(),
): Promise<ConntrackSysctlResult> {
  return ensureConntrackSysctls(
    { sysctl: t.sysctl, modules: t.modules, numCPU: await t.numCPU() },
    config.conntrack,
    log,
  );
}

/**
 * oomScoreAdj and conntrack.* (only what differs from `previous`, on a reload). Never throws:
 * every failure is one error line. Resolves to true when everything applied.
 */
export async function applyNodeSettings(
  config: ProxyConfig,
  log: NodeSettingsLog,
  t: NodeSettingsTargets = realNodeSettingsTargets(),
  previous?: ProxyConfig,
): Promise<boolean> {
  let ok = true;
  if (previous === undefined || previous.oomScoreAdj !== config.oomScoreAdj) {
    try {
      if (await applyOomScoreAdj(t.proc, config.oomScoreAdj))
        log.info(`oom_score_adj set to ${config.oomScoreAdj}`, { oomScoreAdj: config.oomScoreAdj });
    } catch (e) {
      ok = false;
      log.error(`oomScoreAdj ${config.oomScoreAdj} not applied: ${(e as Error).message}`);
    }
  }
  if (previous === undefined || JSON.stringify(previous.conntrack) !== JSON.stringify(config.conntrack)) {
    const { failed } = await applyConntrack(config, log, t);
    for (const e of failed) {
      ok = false;
      log.error(
        `conntrack setting not applied, proxying with the kernel's: ${e.message}` +
          ' (conntrack.maxPerCore: 0 leaves nf_conntrack_max and hashsize alone; a 0 timeout leaves that timeout)',
        { sysctl: e.key, errno: e.errnoName },
      );
    }
  }
  return ok;
}
