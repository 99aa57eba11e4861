/**
 * The daemon's data path: the trackers and the proxier over the kernel surfaces, and the
 * informers that feed them (Services, EndpointSlices, this Node). Also the sync metrics the
 * proxier reports after each sync.
 */
import { ProxyConfig } from '../config/proxy-config';
import { componentLog } from '../log';
import { readProcText } from '../kernel/ipvs/read-proc-ip-vs';
import { planServicePort } from '../plan/plan-service-port';
import { EventSink, NodeState, Proxier, ProxierSettings } from '../proxier/proxier';
import { systemClock } from '../proxier/clock';
import { ServiceTracker } from '../tracker/service-tracker';
import { EndpointSliceTracker } from '../tracker/endpoint-slice-tracker';
import { TrackerSource } from '../tracker/tracker-source';
import { nodeInfo } from '../k8s/convert';
import { RunningInformers, startInformers, watchListClient } from '../k8s/informers';
import { IpFamily } from '../model/ip-family';
import { proxyHealth } from './health-server';
import { ServiceHealthServer } from './service-health-server';
import { ProxyMetrics } from './metrics';
import { kubeProxyNodeIPs } from './families';
import { FamilyState } from './family-state';
import { KernelSurfaces } from './kernel-surfaces';

/** The EndpointSlice controller's annotation kube-proxy measures network programming latency from. */
const LAST_CHANGE_TRIGGER_TIME = 'endpoints.kubernetes.io/last-change-trigger-time';

/** /healthz's timeout; the HealthCheckNodePort answers follow the same proxy health */
export const healthTimeoutMs = (config: ProxyConfig): number => 2 * config.ipvs.syncPeriodMs;

/** The proxier with its trackers and HealthCheckNodePort servers, as wireProxier builds them. */
export interface ProxierWiring {
  readonly proxier: Proxier;
  readonly services: ServiceTracker;
  readonly slices: EndpointSliceTracker;
  readonly serviceHealth: ServiceHealthServer;
  /** notes an EndpointSlice's trigger time, for the network programming latency */
  trigger(slice: { metadata?: { annotations?: Record<string, string> } }): void;
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

/** The trackers, the HealthCheckNodePort servers and the proxier, with its sync metrics. */
export function wireProxier(deps: ProxierWiringDeps): ProxierWiring {
  const { kernel, config, nodeName: name, metrics, events } = deps;
  const services = new ServiceTracker();
  const slices = new EndpointSliceTracker(name);
  const source = new TrackerSource(services, slices);
  // kube-proxy's node IPs: bindAddress (when an IP) until the Node object names its addresses
  const node: NodeState = { name, zone: '', nodeIPs: kubeProxyNodeIPs(config.bindAddress, []), podCIDRs: [] };
  let triggers: { triggeredAt: number; receivedAt: number }[] = [];
  const timeoutMs = healthTimeoutMs(config);
  const serviceHealth: ServiceHealthServer = new ServiceHealthServer({
    nodeName: name,
    events,
    log: componentLog('healthcheck'),
    proxyHealthy: (): boolean => proxyHealth(proxier, systemClock.now(), timeoutMs).healthy,
  });
  const { ipvs, link, ipsets, iptables, conntrack, nftables } = kernel;
  const proxier: Proxier = new Proxier(
    {
      ipvs,
      link,
      ipsets,
      iptables,
      nftables,
      source,
      events,
      randomFully: deps.randomFully,
      // a full sync reads every real server from here: one read, not one dump per service
      readProcIpVs: async () => readProcText(),
      serviceHealth,
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
    deps.settings,
    node,
  );
  metrics.tableCounts = () => proxier.counts();
  metrics.refusedFrontends = () => proxier.refusedFrontends();
  const trigger = (slice: { metadata?: { annotations?: Record<string, string> } }) => {
    const at = Date.parse(slice.metadata?.annotations?.[LAST_CHANGE_TRIGGER_TIME] ?? '');
    if (Number.isFinite(at)) triggers.push({ triggeredAt: at, receivedAt: Date.now() });
  };
  return { proxier, services, slices, serviceHealth, trigger };
}

/** Whether this Node may receive load-balancer traffic (/healthz answers 503 when not). */
export interface NodeEligibility {
  eligible: boolean;
}

/** What wireInformers connects: the API client, the proxier's wiring, metrics, families, the Node. */
export interface InformerWiringDeps {
  readonly kc: Parameters<typeof startInformers>[0];
  readonly config: ProxyConfig;
  readonly nodeName: string;
  readonly wiring: ProxierWiring;
  readonly metrics: ProxyMetrics;
  readonly families: FamilyState;
  readonly node: NodeEligibility;
  /** the Node's addresses moved the primary family to one this node cannot proxy */
  readonly onPrimaryUnsupported: () => void;
}

/** The informers, feeding the trackers (each change asks the proxier for a sync) and the node state. */
export function wireInformers(deps: InformerWiringDeps): RunningInformers {
  const { config, nodeName: name, metrics, families } = deps;
  const { proxier, services, slices, trigger } = deps.wiring;
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
  const changed = (kind: 'service' | 'endpoints', n: ReadonlySet<string>) => {
    if (n.size === 0) return;
    (kind === 'service' ? metrics.serviceChangesTotal : metrics.endpointChangesTotal).inc(n.size);
    metrics.lastQueued.set(Date.now() / 1000);
    proxier.sync();
  };
  // the start-up phases (the bench reads them): both lists done, before the first sync starts
  const informersLog = componentLog('informers');
  let listed = 0;
  const synced = (then: () => void) => () => {
    if (++listed === 2) informersLog.info('informers synced', { sinceStartMs: Math.round(performance.now()) });
    then();
  };
  return startInformers(deps.kc, {
    nodeName: name,
    log: informersLog,
    streamingLists: watchListClient(process.env, informersLog),
    handlers: {
      service: {
        onServiceAdd: (s) => changed('service', services.onAdd(s)),
        onServiceUpdate: (o, s) => changed('service', services.onUpdate(o, s)),
        onServiceDelete: (s) => changed('service', services.onDelete(s)),
        onServicesSynced: synced(() => proxier.onServicesSynced()),
      },
      endpointSlice: {
        onEndpointSliceAdd: (s) => (trigger(s), changed('endpoints', slices.onAdd(s))),
        onEndpointSliceUpdate: (o, s) => (trigger(s), changed('endpoints', slices.onUpdate(o, s))),
        onEndpointSliceDelete: (s) => changed('endpoints', slices.onDelete(s)),
        onEndpointSlicesSynced: synced(() => proxier.onEndpointSlicesSynced()),
      },
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
