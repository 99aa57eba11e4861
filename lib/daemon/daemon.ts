/**
 * The proxy process: wiring only. Informers (lib/k8s) feed the trackers (lib/tracker), which
 * tell the proxier (lib/proxier) which Services changed; the proxier plans (lib/plan), diffs
 * (lib/reconcile) and drives the kernel surfaces (lib/kernel), then feeds the HealthCheckNodePort
 * servers (service-health-server.ts). Also the health server and the
 * live configuration reload.
 *
 * Live reload: kube-proxy exits when its mounted config file changes and waits for the kubelet
 * to restart it. kube-ipvs applies every field `classifyConfigChange` calls live (scheduler,
 * sync periods, excludeCIDRs, excludeClusterCIDRs, IPVS timeouts, strictARP, masqueradeAll,
 * clusterCIDR, detect-local settings, nodePortAddresses, conntrack.*, oomScoreAdj, logging) without a restart, and exits (code 0,
 * for the kubelet to restart it, as kube-proxy does) only when a field that needs a restart
 * changed (API connection, node name, bind addresses, masqueradeBit, mode, feature gates).
 */
import { Conntrack } from '../kernel/conntrack/conntrack';
import { openConntrack } from '../kernel/conntrack/conntrack-netlink';
import os from 'node:os';
import http from 'node:http';
import { ProxyConfig } from '../config/proxy-config';
import { classifyConfigChange } from '../config/classify-change';
import { watchConfigFile } from '../config/watch-config';
import { componentLog, setLogFormat, setVerbosity } from '../log';
import { applyNodeSettings } from './node-settings';
import { openIpvs, IpvsUnavailableError } from '../kernel/ipvs/ipvs-netlink';
import { readProcText } from '../kernel/ipvs/read-proc-ip-vs';
import { Ipvs } from '../kernel/ipvs/ipvs';
import { openLink } from '../kernel/link/link-rtnetlink';
import { Link } from '../kernel/link/link';
import { ChildProcessExec, ObservedExec } from '../kernel/exec';
import { createIpset } from '../kernel/ipset/ipset-restore';
import { listIpsets } from '../kernel/ipset/ipset-netlink';
import { createIptables } from '../kernel/iptables/iptables-restore';
import { LazyNftGeneration } from '../kernel/iptables/nft-generation';
import { iptablesVersion, supportsRandomFully } from '../kernel/iptables/detect-backend';
import { ProcSysctl } from '../kernel/sysctl/sysctl';
import { ensureIpvsSysctls } from '../kernel/sysctl/ipvs-sysctls';
import { planServicePort } from '../plan/plan-service-port';
import { Ipset } from '../kernel/ipset/ipset';
import { Iptables } from '../kernel/iptables/iptables';
import { EventSink, NodeState, Proxier, ProxierSettings } from '../proxier/proxier';
import { systemClock } from '../proxier/clock';
import { ServiceTracker } from '../tracker/service-tracker';
import { EndpointSliceTracker } from '../tracker/endpoint-slice-tracker';
import { TrackerSource } from '../tracker/tracker-source';
import { nodeInfo } from '../k8s/convert';
import { loadKubeConfig } from '../k8s/kubeconfig';
import { startInformers } from '../k8s/informers';
import { EventRecorder } from '../k8s/event-recorder';
import { createHealthServer, listen, proxyHealth } from './health-server';
import { ServiceHealthServer } from './service-health-server';
import { ProxyMetrics } from './metrics';
import { createMetricsServer } from './metrics-server';
import { createViewsHandler } from './views-server';
import { IpFamily } from '../model/ip-family';
import { KernelFamilySupport } from '../kernel/family-support';
import { FamilyChoice, FamilySupportError, checkPrimaryFamily, chooseFamilies, kubeProxyNodeIPs, primaryFamily, primarySourceText } from './families';

export interface DaemonOptions {
  /** --config FILE, watched for live changes; undefined when flags only */
  readonly configFile?: string;
  /** re-reads and re-validates the config file (for live reload) */
  readonly reloadConfig?: () => Promise<ProxyConfig>;
  /** --v */
  readonly verbosity: number;
}

/** The EndpointSlice controller's annotation kube-proxy measures network programming latency from. */
const LAST_CHANGE_TRIGGER_TIME = 'endpoints.kubernetes.io/last-change-trigger-time';

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

async function applyIpvsTimeouts(ipvs: Ipvs, config: ProxyConfig, log: ReturnType<typeof componentLog>): Promise<void> {
  const { tcpTimeoutSec: tcp, tcpFinTimeoutSec: tcpFin, udpTimeoutSec: udp } = config.ipvs;
  if (tcp <= 0 && tcpFin <= 0 && udp <= 0) return;
  try {
    await ipvs.apply({ kind: 'setConfig', timeouts: { tcp, tcpFin, udp } });
  } catch (e) {
    log.error(`setting IPVS timeouts (tcp ${tcp}s, tcpfin ${tcpFin}s, udp ${udp}s): ${(e as Error).message}`);
  }
}

/** Runs until SIGTERM/SIGINT; resolves to the process exit code. */
export async function runDaemon(config: ProxyConfig, options: DaemonOptions): Promise<number> {
  const log = componentLog('daemon');
  const name = nodeName(config);
  log.info(`kube-ipvs starting: node ${name}, scheduler ${config.ipvs.scheduler || 'rr'}`, { node: name, verbosity: options.verbosity });

  // ---- kernel ----
  let ipvs: Ipvs;
  try {
    ipvs = await openIpvs();
  } catch (e) {
    if (e instanceof IpvsUnavailableError) {
      log.error(`${e.message}: load the ip_vs module (modprobe ip_vs) or run on a kernel with IPVS`);
      return 1;
    }
    throw e;
  }
  const link: Link = await openLink();
  try {
    await ensureIpvsSysctls(new ProcSysctl(), { strictARP: config.ipvs.strictARP }, componentLog('sysctl'));
  } catch (e) {
    log.error(`sysctl: ${(e as Error).message}`);
    ipvs.close();
    link.close();
    return 1;
  }
  // conntrack.* and oomScoreAdj, as kube-proxy sets them before it proxies
  await applyNodeSettings(config, componentLog('sysctl'));
  await applyIpvsTimeouts(ipvs, config, log);
  const metrics = new ProxyMetrics();
  const exec = new ObservedExec(new ChildProcessExec(), (o) => metrics.recordExec(o));
  // stale UDP/SCTP conntrack cleanup over ctnetlink; without ctnetlink the proxy runs without the cleanup
  let conntrack: Conntrack | undefined;
  try {
    conntrack = openConntrack();
  } catch (e) {
    log.error(`${(e as Error).message}; stale UDP conntrack entries will not be cleaned`);
  }
  // one instance for both families: its one read (a netlink dump; `ipset save` where netlink
  // cannot serve) sees every set, and each family's sync touches only its own sets
  const ipset = createIpset(exec, undefined, undefined, () => listIpsets());
  const ipsets: Partial<Record<IpFamily, Ipset>> = { ipv4: ipset, ipv6: ipset };
  const iptables: Partial<Record<IpFamily, Iptables>> = {};
  const randomFully: Partial<Record<IpFamily, boolean>> = {};
  // iptables-nft: the nf_tables generation (one per network namespace, both families) lets
  // the periodic verify skip its two iptables-save per family while nobody has committed
  // anything since the rules were proven ours. Read only when the backend is nft (the socket
  // opens on the first read); iptables-legacy has no generation or change notification (a
  // table is one blob swapped by setsockopt), so there the verify keeps reading the tables.
  const nftGeneration = new LazyNftGeneration();
  const closeKernel = () => {
    ipvs.close();
    link.close();
    conntrack?.close();
    nftGeneration.close();
  };
  for (const f of ['ipv4', 'ipv6'] as IpFamily[]) {
    iptables[f] = createIptables({ family: f, backend: 'auto', exec, generation: nftGeneration });
  }
  // both families whenever the node supports both (kube-proxy's dual-stack MetaProxier)
  let choice: FamilyChoice;
  try {
    choice = await chooseFamilies(new KernelFamilySupport({ iptables }));
  } catch (e) {
    if (!(e instanceof FamilySupportError)) throw e;
    log.error(e.message);
    closeKernel();
    return 1;
  }
  const settings = proxierSettings(config, choice.families);
  let primary = primaryFamily(config.bindAddress, []);
  log.info(
    `${choice.dualStack ? 'dual-stack' : 'single-stack'}: families ${settings.families.join(',')}, ` +
      `primary family ${primary.family} (${primarySourceText(primary)})`,
    { families: settings.families, dualStack: choice.dualStack, primaryFamily: primary.family, primaryFrom: primary.source },
  );
  for (const f of ['ipv4', 'ipv6'] as const) {
    if (!choice.checks[f].supported) log.warn(`${f} is not proxied: ${choice.checks[f].reason}`, { family: f, reason: choice.checks[f].reason });
  }
  const primaryChecked = (): boolean => {
    try {
      checkPrimaryFamily(choice, primary);
      return true;
    } catch (e) {
      log.error((e as Error).message);
      return false;
    }
  };
  if (!primaryChecked()) {
    closeKernel();
    return 1;
  }
  for (const f of settings.families) {
    try {
      randomFully[f] = supportsRandomFully(await iptablesVersion(exec, f, await iptables[f]!.backend()));
    } catch (e) {
      log.warn(`${f}: cannot tell the iptables version (${(e as Error).message}); MASQUERADE without --random-fully`);
      randomFully[f] = false;
    }
  }

  let resolveExit!: (code: number) => void;
  const exit = new Promise<number>((r) => (resolveExit = r));
  // kube-proxy's getLocalDetectors: a note when the primary family has no clusterCIDR
  const logDetectLocal = () => {
    if (config.detectLocalMode === 'ClusterCIDR' && !config.clusterCIDR.some((c) => c.includes(':') === (primary.family === 'ipv6'))) {
      log.info(`detect-local-mode ClusterCIDR, but no clusterCIDR of the primary family ${primary.family}: no local-traffic rule for it`, {
        primaryFamily: primary.family, clusterCIDRs: config.clusterCIDR,
      });
    }
  };
  logDetectLocal();

  // ---- API ----
  const kc = loadKubeConfig({
    ...(config.clientConnection.kubeconfig ? { kubeconfig: config.clientConnection.kubeconfig } : {}),
    ...(config.master ? { master: config.master } : {}),
    observer: (c) => metrics.recordApiCall(c),
    log: componentLog('api'),
  });
  const recorder = new EventRecorder(kc, { nodeName: name, log: componentLog('events') });
  const events: EventSink = { warn: (ref, reason, message) => void recorder.warn(ref, reason, message) };

  // ---- trackers and proxier ----
  const services = new ServiceTracker();
  const slices = new EndpointSliceTracker(name);
  const source = new TrackerSource(services, slices);
  // kube-proxy's node IPs: bindAddress (when an IP) until the Node object names its addresses
  let node: NodeState = { name, zone: '', nodeIPs: kubeProxyNodeIPs(config.bindAddress, []), podCIDRs: [] };
  let nodeEligible = true;
  let triggers: { triggeredAt: number; receivedAt: number }[] = [];
  const trigger = (slice: { metadata?: { annotations?: Record<string, string> } }) => {
    const at = Date.parse(slice.metadata?.annotations?.[LAST_CHANGE_TRIGGER_TIME] ?? '');
    if (Number.isFinite(at)) triggers.push({ triggeredAt: at, receivedAt: Date.now() });
  };
  // /healthz's timeout; the HealthCheckNodePort answers follow the same proxy health
  const healthTimeoutMs = 2 * config.ipvs.syncPeriodMs;
  const serviceHealth: ServiceHealthServer = new ServiceHealthServer({
    nodeName: name,
    events,
    log: componentLog('healthcheck'),
    proxyHealthy: (): boolean => proxyHealth(proxier, systemClock.now(), healthTimeoutMs).healthy,
  });
  const proxier: Proxier = new Proxier(
    {
      ipvs, link, ipsets, iptables, source, events, randomFully,
      // a full sync reads every real server from here: one read, not one dump per service
      readProcIpVs: async () => readProcText(), serviceHealth,
      ...(conntrack ? { conntrack } : {}),
      planner: { planServicePort },
      clock: systemClock,
      log: componentLog('proxier'),
      onSync: (r, drift) => {
        const now = Date.now();
        metrics.recordSync(r, drift, now);
        // network programming latency: from each EndpointSlice's trigger time to the end of
        // the first sync that started after the event arrived
        const syncStart = now - r.durationMs;
        triggers = triggers.filter((t) => {
          if (t.receivedAt > syncStart) return true;
          metrics.networkProgramming.observe(Math.max(0, now - t.triggeredAt) / 1000);
          return false;
        });
        metrics.noLocalEndpoints.set({ traffic_policy: 'internal' }, proxier.noLocalEndpoints.internal);
        metrics.noLocalEndpoints.set({ traffic_policy: 'external' }, proxier.noLocalEndpoints.external);
        metrics.serviceChangesPending.set(services.pendingChanges);
        metrics.endpointChangesPending.set(slices.pendingChanges);
      },
    },
    settings,
    node,
  );
  metrics.tableCounts = () => proxier.counts();

  const onNode = (n: Parameters<typeof nodeInfo>[0]) => {
    const info = nodeInfo(n);
    nodeEligible = info.eligible;
    node = { name, zone: info.zone, nodeIPs: kubeProxyNodeIPs(config.bindAddress, info.nodeIPs), podCIDRs: info.podCIDRs };
    const next = primaryFamily(config.bindAddress, info.nodeIPs);
    if (next.family !== primary.family || next.source !== primary.source) {
      primary = next;
      log.info(`primary IP family ${primary.family} (${primarySourceText(primary)}); node IPs ${node.nodeIPs.join(', ') || 'none'}`, {
        primaryFamily: primary.family, primaryFrom: primary.source, nodeIPs: node.nodeIPs,
      });
      logDetectLocal();
      // kube-proxy refuses to start on a node that cannot proxy its primary family
      if (!primaryChecked()) resolveExit(1);
    }
    proxier.onNodeChange(node);
  };
  const changed = (kind: 'service' | 'endpoints', n: ReadonlySet<string>) => {
    if (n.size === 0) return;
    (kind === 'service' ? metrics.serviceChangesTotal : metrics.endpointChangesTotal).inc(n.size);
    metrics.lastQueued.set(Date.now() / 1000);
    proxier.sync();
  };
  const informers = startInformers(kc, {
    nodeName: name,
    log: componentLog('informers'),
    handlers: {
      service: {
        onServiceAdd: (s) => changed('service', services.onAdd(s)),
        onServiceUpdate: (o, s) => changed('service', services.onUpdate(o, s)),
        onServiceDelete: (s) => changed('service', services.onDelete(s)),
        onServicesSynced: () => proxier.onServicesSynced(),
      },
      endpointSlice: {
        onEndpointSliceAdd: (s) => (trigger(s), changed('endpoints', slices.onAdd(s))),
        onEndpointSliceUpdate: (o, s) => (trigger(s), changed('endpoints', slices.onUpdate(o, s))),
        onEndpointSliceDelete: (s) => changed('endpoints', slices.onDelete(s)),
        onEndpointSlicesSynced: () => proxier.onEndpointSlicesSynced(),
      },
      node: {
        onNodeAdd: onNode,
        onNodeUpdate: (_o, n) => onNode(n),
        onNodeDelete: () => {
          nodeEligible = false;
        },
        onNodeSynced: () => undefined,
      },
    },
  });

  // ---- health ----
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
      timeoutMs: healthTimeoutMs,
      clock: systemClock,
      nodeEligible: () => nodeEligible,
      onRequest: (p, code) => (p === 'healthz' ? metrics.healthzTotal : metrics.livezTotal).inc({ code: String(code) }),
    }),
    config.healthzBindAddress,
  );
  let current = config;
  await serve('metrics', createMetricsServer(metrics.registry, () => current, createViewsHandler(proxier, () => current)), config.metricsBindAddress);

  // ---- live configuration ----
  const watcher =
    options.configFile && options.reloadConfig
      ? watchConfigFile(options.configFile, () => {
          options.reloadConfig!().then(
            async (next) => {
              const change = classifyConfigChange(current, next);
              if (change.restart.length > 0) {
                log.warn(`configuration changed (${change.restart.join(', ')}): these need a restart; exiting for the kubelet to restart kube-ipvs`);
                resolveExit(0);
                return;
              }
              if (change.live.length === 0) return;
              log.info(`configuration changed (${change.live.join(', ')}): applying live`);
              if (next.ipvs.strictARP !== current.ipvs.strictARP) {
                await ensureIpvsSysctls(new ProcSysctl(), { strictARP: next.ipvs.strictARP }, componentLog('sysctl')).catch((e: Error) =>
                  log.error(`sysctl: ${e.message}`),
                );
              }
              if (
                next.ipvs.tcpTimeoutSec !== current.ipvs.tcpTimeoutSec ||
                next.ipvs.tcpFinTimeoutSec !== current.ipvs.tcpFinTimeoutSec ||
                next.ipvs.udpTimeoutSec !== current.ipvs.udpTimeoutSec
              ) {
                await applyIpvsTimeouts(ipvs, next, log);
              }
              // kube-proxy re-applies these when the kubelet restarts it after the change
              await applyNodeSettings(next, componentLog('sysctl'), undefined, current);
              if (next.logging.format !== current.logging.format) setLogFormat(next.logging.format);
              if (next.logging.verbosity !== current.logging.verbosity) setVerbosity(next.logging.verbosity);
              current = next;
              proxier.updateSettings(proxierSettings(next, settings.families));
            },
            (e: Error) => log.error(`configuration file ${options.configFile} changed but is invalid, keeping the running configuration: ${e.message}`),
          );
        })
      : undefined;

  const onSignal = (sig: string) => {
    log.info(`${sig}: stopping (the kernel state stays as programmed)`);
    resolveExit(0);
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));

  const code = await exit;
  watcher?.close();
  proxier.stop();
  await informers.stop();
  await proxier.idle();
  for (const s of servers) s.close();
  await serviceHealth.close();
  closeKernel();
  return code;
}
