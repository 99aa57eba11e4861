/**
 * Live reload: kube-proxy exits when its mounted config file changes and waits for the kubelet
 * to restart it. kube-ipvs applies every field `classifyConfigChange` calls live (scheduler,
 * sync periods, excludeCIDRs, excludeClusterCIDRs, IPVS timeouts, strictARP, masqueradeAll,
 * clusterCIDR, detect-local settings, nodePortAddresses, conntrack.*, oomScoreAdj, logging) without a restart, and exits (code 0,
 * for the kubelet to restart it, as kube-proxy does) only when a field that needs a restart
 * changed (API connection, node name, bind addresses, masqueradeBit, mode, feature gates).
 */
import { ProxyConfig } from '../config/proxy-config';
import { classifyConfigChange } from '../config/classify-change';
import { watchConfigFile } from '../config/watch-config';
import { componentLog, setLogFormat, setVerbosity } from '../log';
import { applyNodeSettings } from './node-settings';
import { Ipvs } from '../kernel/ipvs/ipvs';
import { ProcSysctl } from '../kernel/sysctl/sysctl';
import { ensureIpvsSysctls } from '../kernel/sysctl/ipvs-sysctls';
import { ProxierSettings } from '../proxier/proxier';
import { applyIpvsTimeouts, DaemonLog } from './kernel-surfaces';

/** The configuration the daemon runs with now: replaced by each live reload. */
export interface RunningConfig {
  current: ProxyConfig;
}

/** What watchLiveConfig needs: the file, how to reload it, and how to apply or exit. */
export interface LiveReloadDeps {
  readonly configFile: string;
  readonly reloadConfig: () => Promise<ProxyConfig>;
  readonly running: RunningConfig;
  readonly ipvs: Ipvs;
  /** the proxier's settings for a configuration (the families stay those chosen at start-up) */
  readonly settingsFor: (config: ProxyConfig) => ProxierSettings;
  readonly updateSettings: (settings: ProxierSettings) => void;
  /** a field that needs a restart changed */
  readonly exit: (code: number) => void;
  readonly log: DaemonLog;
}

/** Applies a valid new configuration live, or exits when it needs a restart. */
export async function applyConfigChange(next: ProxyConfig, deps: LiveReloadDeps): Promise<void> {
  const { log, running } = deps;
  const current = running.current;
  const change = classifyConfigChange(current, next);
  if (change.restart.length > 0) {
    log.warn(
      `configuration changed (${change.restart.join(', ')}): these need a restart; exiting for the kubelet to restart kube-ipvs`,
    );
    deps.exit(0);
    return;
  }
  if (change.live.length === 0) return;
  log.info(`configuration changed (${change.live.join(', ')}): applying live`);
  if (next.ipvs.strictARP !== current.ipvs.strictARP) {
    await ensureIpvsSysctls(new ProcSysctl(), { strictARP: next.ipvs.strictARP }, componentLog('sysctl')).catch(
      (e: Error) => log.error(`sysctl: ${e.message}`),
    );
  }
  if (
    next.ipvs.tcpTimeoutSec !== current.ipvs.tcpTimeoutSec ||
    next.ipvs.tcpFinTimeoutSec !== current.ipvs.tcpFinTimeoutSec ||
    next.ipvs.udpTimeoutSec !== current.ipvs.udpTimeoutSec
  ) {
    await applyIpvsTimeouts(deps.ipvs, next, log);
  }
  // kube-proxy re-applies these when the kubelet restarts it after the change
  await applyNodeSettings(next, componentLog('sysctl'), undefined, current);
  if (next.logging.format !== current.logging.format) setLogFormat(next.logging.format);
  if (next.logging.verbosity !== current.logging.verbosity) setVerbosity(next.logging.verbosity);
  running.current = next;
  deps.updateSettings(deps.settingsFor(next));
}

/** Watches the config file; each change is re-read, re-validated and applied (an invalid file is logged and ignored). */
export function watchLiveConfig(deps: LiveReloadDeps): { close(): void } {
  return watchConfigFile(deps.configFile, () => {
    deps.reloadConfig().then(
      (next) => applyConfigChange(next, deps),
      (e: Error) =>
        deps.log.error(
          `configuration file ${deps.configFile} changed but is invalid, keeping the running configuration: ${e.message}`,
        ),
    );
  });
}
