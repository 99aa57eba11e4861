/**
 * The daemon's data path: the proxier (which owns the trackers and is the informers' Service and
 * EndpointSlice handler) over the kernel surfaces, and the informers that feed it (Services,
 * EndpointSlices, this Node). Also the metrics the proxier reports: per change and per sync.
 */
import { ProxyConfig } from '../config/proxy-config';
import { componentLog } from '../log';
import { procTextReader } from '../kernel/ipvs/read-proc-ip-vs';
import { planServicePort } from '../plan/plan-service-port';
import { EventSink, NodeState, Proxier, ProxierSettings } from '../proxier/proxier';
import { systemClock } from '../proxier/clock';
import { nodeInfo } from '../k8s/convert';
import {
  FIRST_LIST_SPREAD_MS,
  RunningInformers,
  startInformers,
  listPageSize,
  informerBackoff,
  watchListClient,
  intakeHoldMaxMs,
  intakeSliceMs,
} from '../k8s/informers';
import { IntakeGate } from '../k8s/intake-gate';
import { IpFamily } from '../model/ip-family';
import { proxyHealth } from './health-server';
import { ServiceHealthServer } from './service-health-server';
import { ProxyMetrics } from './metrics';
import { kubeProxyNodeIPs } from './families';
import { FamilyState } from './family-state';
import { KernelSurfaces } from './kernel-surfaces';
import { GcOptions, IdleCollector, youngGenerationResident } from './idle-collector';
import { mallocTrim } from './malloc-trim';

/** IdleCollector: how long no Service or EndpointSlice change must come after a burst. */
export const IDLE_COLLECT_QUIET_MS = 5000;
/** IdleCollector: the least time between collections no burst asked for (the periodic full sync's). */
export const IDLE_COLLECT_INTERVAL_MS = 30_000;
/** IdleCollector: the growth of resident memory since the last collection it waits for. */
export const IDLE_COLLECT_MIN_GROWTH_BYTES = 32 * 2 ** 20;

/** /healthz's timeout; the HealthCheckNodePort answers follow the same proxy health */
export const healthTimeoutMs = (config: ProxyConfig): number => 2 * config.ipvs.syncPeriodMs;

/** The proxier (with its trackers) and the HealthCheckNodePort servers, as wireProxier builds them. */
export interface ProxierWiring {
  readonly proxier: Proxier;
  readonly serviceHealth: ServiceHealthServer;
  readonly collector: IdleCollector;
  /** each sync holds it; the informers' watches wait on it */
  readonly intakeGate: IntakeGate;
}

/** What wireProxier builds the proxier from. */
export interface ProxierWiringDeps {
  readonly kernel: KernelSurfaces;
  readonly config: ProxyConfig;
  readonly nodeName: string;
  readonly settings: ProxierSettings;
  readonly randomFully: Partial<Record<IpFamily, boolean>>;
  readonly events: EventSink;
  readonly metrics: ProxyMetrics;
}

/** The HealthCheckNodePort servers and the proxier, with its sync metrics. */
export function wireProxier(deps: ProxierWiringDeps): ProxierWiring {
  const { kernel, config, nodeName: name, metrics, events } = deps;
  // the families the metrics' ip_family label takes (kube-proxy: one proxier per family)
  metrics.families = deps.settings.families;
  // kube-proxy's node IPs: bindAddress (when an IP) until the Node object names its addresses
  const node: NodeState = { name, zone: '', nodeIPs: kubeProxyNodeIPs(config.bindAddress, []), podCIDRs: [] };
  const timeoutMs = healthTimeoutMs(config);
  const serviceHealth: ServiceHealthServer = new ServiceHealthServer({
    nodeName: name,
    events,
    log: componentLog('healthcheck'),
    proxyHealthy: (): boolean => proxyHealth(proxier, systemClock.now(), timeoutMs).healthy,
  });
  const { ipvs, link, ipsets, iptables, conntrack, nftables } = kernel;
  const trim = mallocTrim();
  if (trim instanceof Error)
    componentLog('memory').info(`the C heap is not trimmed after a quiet-time collection: ${trim.message}`);
  const collector: IdleCollector = new IdleCollector({
    gc: (globalThis as { gc?: (o?: GcOptions) => void }).gc,
    trim: trim instanceof Error ? undefined : trim,
    resident: () => process.memoryUsage.rss(),
    young: youngGenerationResident,
    clock: systemClock,
    quietMs: IDLE_COLLECT_QUIET_MS,
    idleIntervalMs: IDLE_COLLECT_INTERVAL_MS,
    minGrowthBytes: IDLE_COLLECT_MIN_GROWTH_BYTES,
    busy: () => proxier.syncing,
    log: componentLog('memory'),
    collected: (ms) => metrics.idleCollections.observe(ms / 1000),
  });
  const proxierLog = componentLog('proxier');
  const intakeGate = new IntakeGate(
    intakeHoldMaxMs(process.env, componentLog('informers')),
    intakeSliceMs(process.env, componentLog('informers')),
    (ms) => proxierLog.verbose(`a sync has held the watches' intake ${ms} ms, the most it may: they go on beside it`),
  );
  const proxier: Proxier = new Proxier(
    {
      ipvs,
      link,
      ipsets,
      iptables,
      nftables,
      events,
      randomFully: deps.randomFully,
      // a full sync reads every real server from here: one read, not one dump per service
      readProcIpVs: procTextReader(),
      serviceHealth,
      ...(conntrack ? { conntrack } : {}),
      planner: { planServicePort },
      clock: systemClock,
      log: proxierLog,
      intakeGate,
      onSync: (r, drift, triggered) => {
        const now = Date.now();
        metrics.recordSync(r, drift, now);
        // network programming latency: from each EndpointSlice's trigger time to the end of
        // the sync that took the change in
        metrics.recordProgrammed(triggered, now);
        metrics.noLocalEndpoints.set({ traffic_policy: 'internal' }, proxier.noLocalEndpoints.internal);
        metrics.noLocalEndpoints.set({ traffic_policy: 'external' }, proxier.noLocalEndpoints.external);
        metrics.serviceChangesPending.set(proxier.services.pendingChanges);
        metrics.endpointChangesPending.set(proxier.slices.pendingChanges);
      },
      // not from onSync: a collection deferred by the sync would find it still running there
      syncEnded: () => collector.afterSync(proxier.lastResult?.full === true),
      onChanges: (kind, n) => {
        (kind === 'service' ? metrics.serviceChangesTotal : metrics.endpointChangesTotal).inc(n);
        metrics.recordQueued(Date.now());
        collector.changed();
      },
    },
    deps.settings,
    node,
  );
  metrics.tableCounts = () => proxier.counts();
  metrics.refusedFrontends = () => proxier.refusedFrontends();
  return { proxier, serviceHealth, collector, intakeGate };
}

/** Whether this Node may receive load-balancer traffic (/healthz answers 503 when not). */
export interface NodeEligibility {
  eligible: boolean;
}

/** What wireInformers connects: the API client, the proxier's wiring, families, the Node. */
export interface InformerWiringDeps {
  readonly kc: Parameters<typeof startInformers>[0];
  readonly config: ProxyConfig;
  readonly nodeName: string;
  readonly wiring: ProxierWiring;
  readonly families: FamilyState;
  readonly node: NodeEligibility;
  /** the Node's addresses moved the primary family to one this node cannot proxy */
  readonly onPrimaryUnsupported: () => void;
  /** counts the informers' relists after watch events that did not decode */
  readonly metrics?: Pick<ProxyMetrics, 'watchDecodeRelists'>;
}

/** The informers: Services and EndpointSlices go to the proxier (its handlers), this Node to the node state. */
export function wireInformers(deps: InformerWiringDeps): RunningInformers {
  const { config, nodeName: name, families } = deps;
  const { proxier } = deps.wiring;
  const onNode = (n: Parameters<typeof nodeInfo>[0]) => {
    const info = nodeInfo(n);
    deps.node.eligible = info.eligible;
    const node: NodeState = {
      name,
      zone: info.zone,
      nodeIPs: kubeProxyNodeIPs(config.bindAddress, info.nodeIPs),
      podCIDRs: info.podCIDRs,
    };
    // kube-proxy refuses to start on a node that cannot proxy its primary family
    if (!families.onNodeIPs(info.nodeIPs, node.nodeIPs)) deps.onPrimaryUnsupported();
    proxier.onNodeChange(node);
  };
  const informersLog = componentLog('informers');
  return startInformers(deps.kc, {
    nodeName: name,
    log: informersLog,
    streamingLists: watchListClient(process.env, informersLog),
    listPageSize: listPageSize(process.env, informersLog),
    backoff: informerBackoff(process.env, informersLog),
    firstListSpreadMs: FIRST_LIST_SPREAD_MS,
    onDecodeRelist: (resource) => deps.metrics?.watchDecodeRelists.inc({ resource }),
    intakeGate: deps.wiring.intakeGate,
    handlers: {
      service: proxier,
      endpointSlice: proxier,
      node: {
        onNodeAdd: onNode,
        onNodeUpdate: (_o, n) => onNode(n),
        onNodeDelete: () => {
          deps.node.eligible = false;
        },
        onNodeSynced: () => undefined,
      },
    },
  });
}
