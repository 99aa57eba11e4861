/**
 * The proxy process: wiring only. Informers (lib/k8s) feed the proxier (lib/proxier), whose
 * handlers give each object to its trackers (lib/tracker) and learn which Services changed;
 * at each sync the proxier takes their changes, plans (lib/plan), diffs
 * (lib/reconcile) and drives the kernel surfaces (lib/kernel), then feeds the HealthCheckNodePort
 * servers (service-health-server.ts). Also the health and metrics servers, the live
 * configuration reload (live-reload.ts) and the shutdown.
 *
 * runDaemon only sequences the start-up, in this order: the API client's kubeconfig (before
 * anything touches the kernel), the kernel surfaces (kernel-surfaces.ts), the families
 * (family-state.ts), the trackers, proxier and informers (proxier-wiring.ts), the servers, the
 * config watch and the signals.
 */
import os from 'node:os';
import http from 'node:http';
import { ProxyConfig } from '../config/proxy-config';
import { componentLog } from '../log';
import { ChildProcessExec, ObservedExec } from '../kernel/exec';
import { EventSink, Proxier, ProxierSettings } from '../proxier/proxier';
import { systemClock } from '../proxier/clock';
import type { ApiKubeConfig } from '../k8s/api-request';
import { KubeConfigError, loadDaemonKubeConfig } from './api-config';
import { EventRecorder } from '../k8s/event-recorder';
import { IpFamily } from '../model/ip-family';
import type { BuildInfo } from '../model/build-info';
import type { RunningInformers } from '../k8s/informers';
import { createHealthServer, listen } from './health-server';
import { ProxyMetrics } from './metrics';
import { createMetricsServer } from './metrics-server';
import { createViewsHandler } from './views-server';
import { DaemonLog, detectRandomFully, openIpvsAndLink, openKernelSurfaces } from './kernel-surfaces';
import { chooseDaemonFamilies } from './family-state';
import { NodeEligibility, healthTimeoutMs, wireInformers, wireProxier } from './proxier-wiring';
import { RunningConfig, watchLiveConfig } from './live-reload';

/** What runDaemon takes besides the configuration: the config file, --v, build info, kubeconfig. */
export interface DaemonOptions {
  /** --config FILE, watched for live changes; undefined when flags only */
  readonly configFile?: string;
  /** re-reads and re-validates the config file (for live reload) */
  readonly reloadConfig?: () => Promise<ProxyConfig>;
  /** --v */
  readonly verbosity: number;
  /** kube_ipvs_build_info's and the User-Agent's (default 0.0.0 on this platform) */
  readonly build?: BuildInfo;
  /** the kubeconfig, already loaded and checked (lib/daemon/api-config.ts); else loaded first thing */
  readonly kubeConfig?: ApiKubeConfig;
}

/**
 * The proxier's part of the configuration. `families` come from the node (families.ts), never
 * from clusterCIDR, which feeds only local-traffic detection (a family without a clusterCIDR of
 * its own gets no detect-local rule, as in kube-proxy).
 */
export function proxierSettings(config: ProxyConfig, families: readonly IpFamily[]): ProxierSettings {
  return {
    families,
    scheduler: config.ipvs.scheduler,
    syncPeriodMs: config.ipvs.syncPeriodMs,
    minSyncPeriodMs: config.ipvs.minSyncPeriodMs,
    excludeCIDRs: config.ipvs.excludeCIDRs,
    excludeClusterCIDRs: config.ipvs.excludeClusterCIDRs,
    schedulerFlags: config.ipvs.schedulerFlags,
    nodePortAddresses: config.nodePortAddresses,
    masqueradeAll: config.iptables.masqueradeAll,
    masqueradeBit: config.iptables.masqueradeBit,
    clusterCIDRs: config.clusterCIDR,
    detectLocalMode: config.detectLocalMode,
    bridgeInterface: config.detectLocal.bridgeInterface,
    interfaceNamePrefix: config.detectLocal.interfaceNamePrefix,
  };
}

/** kube-proxy's node name: --hostname-override, else the host name, lower-cased. */
export function nodeName(config: ProxyConfig): string {
  return (config.hostnameOverride || os.hostname()).trim().toLowerCase();
}

interface ServerDeps {
  readonly config: ProxyConfig;
  readonly running: RunningConfig;
  readonly proxier: Proxier;
  readonly metrics: ProxyMetrics;
  readonly node: NodeEligibility;
  readonly informers: RunningInformers;
  readonly log: DaemonLog;
}

/** The health server, then the metrics server (with the views); a server that cannot listen is logged and left off. */
async function startServers(deps: ServerDeps): Promise<http.Server[]> {
  const { config, running, proxier, metrics, log } = deps;
  const servers: http.Server[] = [];
  const serve = async (what: string, server: http.Server, bind: string) => {
    if (!bind) return; // an empty bind address turns the server off
    try {
      await listen(server, bind);
      servers.push(server);
    } catch (e) {
      log.error(`${what} server on ${bind}: ${(e as Error).message}`);
    }
  };
  await serve(
    'health',
    createHealthServer({
      source: proxier,
      timeoutMs: healthTimeoutMs(config),
      clock: systemClock,
      nodeEligible: () => deps.node.eligible,
      notWatching: () => deps.informers.notWatching(),
      onRequest: (p, code) => (p === 'healthz' ? metrics.healthzTotal : metrics.livezTotal).inc({ code: String(code) }),
    }),
    config.healthzBindAddress,
  );
  const current = () => running.current;
  await serve(
    'metrics',
    createMetricsServer(metrics.registry, current, createViewsHandler(proxier, current)),
    config.metricsBindAddress,
  );
  return servers;
}

/**
 * The start-up line: which kube-ipvs (the version), where its configuration came from (the
 * file, or the flags alone), the mode it runs and the node; "kube-ipvs starting: node NAME,"
 * first, as the bench and the VM tests read it.
 */
export function startingLine(config: ProxyConfig, options: DaemonOptions, node: string): string {
  const version = options.build ? `v${options.build.version}` : 'version unknown';
  const file = options.configFile ?? 'none (flags and defaults only)';
  return `kube-ipvs starting: node ${node}, ${version}, config ${file}, mode ${config.mode}, scheduler ${config.ipvs.scheduler || 'rr'}`;
}

/** Runs until SIGTERM/SIGINT; resolves to the process exit code. */
export async function runDaemon(config: ProxyConfig, options: DaemonOptions): Promise<number> {
  const log = componentLog('daemon');
  const name = nodeName(config);
  log.info(startingLine(config, options, name), {
    node: name,
    ...(options.build ? { version: `v${options.build.version}` } : {}),
    config: options.configFile ?? '',
    mode: config.mode,
    verbosity: options.verbosity,
    // ms since the process started: Node's own start and the module loading
    sinceStartMs: Math.round(performance.now()),
  });

  // ---- API configuration, before anything touches the kernel ----
  const api = apiConfig(config, options, log);
  if (!api) return 1;
  const { kc, metrics } = api;

  // ---- kernel and families ----
  const opened = await openIpvsAndLink(config, log);
  if (!opened) return 1;
  const exec = new ObservedExec(new ChildProcessExec(), (o) => metrics.recordExec(o));
  const kernel = openKernelSurfaces(opened.ipvs, opened.link, exec, log);
  const families = await chooseDaemonFamilies(kernel, config, log);
  if (!families) return 1;
  const settings = proxierSettings(config, families.choice.families);
  const randomFully = await detectRandomFully(kernel, settings.families, log);

  let resolveExit!: (code: number) => void;
  const exit = new Promise<number>((r) => (resolveExit = r));
  families.logDetectLocal();

  // ---- API ----
  const recorder = new EventRecorder(kc, { nodeName: name, log: componentLog('events') });
  const events: EventSink = { warn: (ref, reason, message) => void recorder.warn(ref, reason, message) };

  // ---- trackers, proxier, informers ----
  const wiring = wireProxier({ kernel, config, nodeName: name, settings, randomFully, events, metrics });
  const { proxier } = wiring;
  // not eligible until this Node is seen (kube-proxy: a nil Node is not eligible, /healthz 503)
  const node: NodeEligibility = { eligible: false };
  const informers = wireInformers({
    kc,
    config,
    nodeName: name,
    wiring,
    families,
    node,
    onPrimaryUnsupported: () => resolveExit(1),
    metrics,
  });

  // ---- servers ----
  metrics.notWatching = () =>
    informers.notWatching().map((n) => ({ resource: n.resource, seconds: Math.max(0, Date.now() - n.sinceMs) / 1000 }));
  const running: RunningConfig = { current: config };
  const servers = await startServers({ config, running, proxier, metrics, node, informers, log });

  // ---- live configuration ----
  const watcher =
    options.configFile && options.reloadConfig
      ? watchLiveConfig({
          configFile: options.configFile,
          reloadConfig: options.reloadConfig,
          running,
          ipvs: kernel.ipvs,
          settingsFor: (next) => proxierSettings(next, settings.families),
          updateSettings: (s) => proxier.updateSettings(s),
          exit: resolveExit,
          log,
        })
      : undefined;

  exitOnSignal(log, resolveExit);
  const code = await exit;
  await shutDown({ watcher, wiring, informers, servers, kernel });
  return code;
}

/**
 * The kubeconfig (the flags', the file's, or in-cluster) and the metrics its requests are
 * counted in; undefined (logged) when the kubeconfig cannot be used.
 */
function apiConfig(
  config: ProxyConfig,
  options: DaemonOptions,
  log: DaemonLog,
): { kc: ApiKubeConfig; metrics: ProxyMetrics } | undefined {
  let kc: ApiKubeConfig;
  try {
    kc = options.kubeConfig ?? loadDaemonKubeConfig(config, options.build);
  } catch (e) {
    if (!(e instanceof KubeConfigError)) throw e;
    log.error(e.message);
    return undefined;
  }
  const metrics = new ProxyMetrics(options.build);
  kc.observer = (c) => metrics.recordApiCall(c);
  return { kc, metrics };
}

/** SIGTERM and SIGINT end the daemon with 0. */
function exitOnSignal(log: DaemonLog, exit: (code: number) => void): void {
  const onSignal = (sig: string) => {
    log.info(`${sig}: stopping (the kernel state stays as programmed)`);
    exit(0);
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
}

/** Shutdown: stop syncing, stop watching, let the last sync finish, then close. */
async function shutDown(d: {
  readonly watcher: { close(): void } | undefined;
  readonly wiring: ReturnType<typeof wireProxier>;
  readonly informers: { stop(): Promise<void> };
  readonly servers: readonly { close(): void }[];
  readonly kernel: { close(): void };
}): Promise<void> {
  const { proxier } = d.wiring;
  d.watcher?.close();
  proxier.stop();
  d.wiring.collector.stop();
  await d.informers.stop();
  await proxier.idle();
  for (const s of d.servers) s.close();
  await d.wiring.serviceHealth.close();
  d.kernel.close();
}
