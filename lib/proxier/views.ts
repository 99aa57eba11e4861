/**
 * The read-only views (`kube-ipvs service list`, `status`, `diff`) over a snapshot of the
 * proxier's parts. They change nothing the proxier keeps; the dry run reads the kernel with
 * the sync's own read code (readNodeAddresses, readTable, planService) into scratch state.
 */
import { IpvsOp } from '../kernel/ipvs/ipvs';
import { KUBE_IPVS0, Link } from '../kernel/link/link';
import { selectNodePortAddresses } from '../kernel/link/node-addresses';
import { virtualServerKey } from '../model/ipvs';
import { ServicePort, servicePortKey } from '../model/service';
import { FrontendRow, RefusedFrontend, StatusResponse } from '../model/views';
import { IP_VS_SVC_F } from '../uapi/ip_vs';
import { ServicePortPlan } from '../plan/service-plan';
import { TableEntry, tableFromDump } from '../reconcile/ipvs-table';
import { diffIpvsTable } from '../reconcile/diff-ipvs';
import { NotSyncedError } from '../errors';
import { DesiredIndex } from './desired-index';
import { IpvsApplier, serviceOf } from './ipvs-applier';
import { NodeContext, findKubeIpvs0, readNodeAddresses } from './node-context';
import { firstSightReason, ownsVirtualServer } from './ownership';
import { BoundAddresses } from './bound-addresses';
import { FrontendIds, buildServiceList } from './service-list';
import { SyncFigures } from './sync-run';
import { ProxySource } from './types';

/** What the views read: the proxier's parts and figures, as they are now. */
export interface ProxierSnapshot {
  readonly node: NodeContext;
  readonly applier: IpvsApplier;
  readonly bound: BoundAddresses;
  readonly index: DesiredIndex;
  /** service name -> its plans */
  readonly plans: ReadonlyMap<string, readonly ServicePortPlan[]>;
  readonly source: ProxySource;
  readonly link: Link;
  readonly frontendIds: FrontendIds;
  readonly initialized: boolean;
  readonly figures: SyncFigures;
  readonly counts: () => { virtualServers: number; realServers: number; draining: number; boundAddresses: number };
  /** the frontends Services asked for that are not programmed now */
  readonly refused: () => RefusedFrontend[];
}

/** The Service port a plan key names, as the trackers hold it now. */
function servicePortOf(source: ProxySource, key: string): ServicePort | undefined {
  return source
    .servicePorts(serviceOf(key))
    .find((sp) => servicePortKey(sp.namespace, sp.name, sp.portName, sp.family) === key);
}

/** `kube-ipvs service list`: every desired virtual server with its backends' states. */
export function serviceList(s: ProxierSnapshot): FrontendRow[] {
  return buildServiceList({
    desired: s.index.virtualServers(),
    applied: s.applier.applied,
    servicePort: (k) => servicePortOf(s.source, k),
    endpoints: (sp) => s.source.endpoints(sp),
    ids: s.frontendIds,
  });
}

/** The devices `status` lists: kube-ipvs0 and the links holding NodePort addresses (one rtnetlink dump). */
async function devices(s: ProxierSnapshot, npAddresses: readonly string[]): Promise<StatusResponse['devices']> {
  const names = new Map((await s.link.listLinks()).map((l) => [l.index, l.name]));
  const byLink = new Map<number, string[]>();
  for (const a of s.node.localAddresses) {
    if (!npAddresses.includes(a.address)) continue;
    const list = byLink.get(a.ifindex) ?? [];
    if (!list.includes(a.address)) list.push(a.address);
    byLink.set(a.ifindex, list);
  }
  return [
    { name: KUBE_IPVS0, addresses: s.bound.list(), role: 'kube-ipvs0' },
    ...[...byLink]
      .sort(([a], [b]) => a - b)
      .map(([ifindex, addresses]) => ({
        name: names.get(ifindex) ?? `if${ifindex}`,
        addresses,
        role: 'NodePort' as const,
      })),
  ];
}

/**
 * `kube-ipvs status`, the proxier's part: node, devices, features, syncs and counts. Reads the
 * link names of the NodePort addresses (one rtnetlink dump); changes nothing.
 */
export async function status(s: ProxierSnapshot): Promise<Omit<StatusResponse, 'mode' | 'config'>> {
  const npAddresses = selectNodePortAddresses(
    s.node.localAddresses,
    s.node.settings.nodePortAddresses,
    s.node.node.nodeIPs,
  );
  const devs = await devices(s, npAddresses);
  const { settings, node } = s.node;
  let persistent = 0;
  for (const d of s.index.virtualServers().values())
    if (((d.vs.flags ?? 0) & IP_VS_SVC_F.PERSISTENT) !== 0) persistent++;
  let overridden = 0;
  let servicePorts = 0;
  const nodePorts = new Set<number>();
  for (const [name, plans] of s.plans) {
    const sps = s.source.servicePorts(name);
    if (sps.some((sp) => sp.scheduler !== '')) overridden++;
    for (const sp of sps) if (sp.nodePort !== 0) nodePorts.add(sp.nodePort);
    servicePorts += plans.length;
  }
  const c = s.counts();
  const t = s.figures.totals;
  return {
    node: { name: node.name, ips: node.nodeIPs, zone: node.zone, podCIDRs: node.podCIDRs },
    families: settings.families,
    devices: devs,
    scheduler: { default: settings.scheduler || 'rr', overriddenBy: overridden },
    sessionAffinity: { enabled: true, frontends: persistent },
    gracefulTermination: {
      enabled: true,
      protocols: ['TCP'],
      drainTimeoutSeconds: Math.round(s.applier.drainTimeoutMs / 1000),
      checkIntervalSeconds: Math.round(s.applier.drainCheckIntervalMs / 1000),
      draining: c.draining,
    },
    services: {
      clusterIP: true,
      nodePort: { enabled: true, addresses: npAddresses, portsInUse: [...nodePorts].sort((a, b) => a - b) },
      loadBalancer: true,
      externalIPs: true,
    },
    initialized: s.initialized,
    lastFullSync: s.figures.lastFull,
    lastPartialSync: s.figures.lastPartial,
    driftRepairs: t.driftRepairs,
    refusedFrontends: s.refused(),
    counts: { services: s.plans.size, servicePorts, ...c },
    totals: {
      syncs: t.syncs,
      fullSyncs: t.fullSyncs,
      ipvsWrites: t.ipvsWrites,
      ipvsFailures: t.ipvsFailures,
      execs: t.execs,
    },
  };
}

/**
 * `kube-ipvs diff`: the IPVS ops a full sync would run now, without running them and
 * without changing anything the proxier keeps. Reads the kernel as a full sync does (the IPVS
 * table, kube-ipvs0 and the node's addresses), re-plans every Service from the trackers into
 * a scratch index, and diffs with the same ownership rules. Which VIP:ports the ipsets say
 * kube-proxy programmed comes from the last full sync's `ipset save` (no exec here).
 * Throws NotSyncedError before Services and EndpointSlices have been listed.
 */
export async function dryRunFullSync(s: ProxierSnapshot): Promise<IpvsOp[]> {
  if (!s.initialized)
    throw new NotSyncedError('Services and EndpointSlices have not been listed yet: nothing is planned');
  const { bound, local } = await readNodeAddresses(s.link, await findKubeIpvs0(s.link));
  const contexts = s.node.planContexts(local);
  const index = new DesiredIndex(s.node.settings.families, s.node.frontendFacts);
  for (const name of new Set(s.source.serviceNames())) {
    const { ports, plans } = s.node.planService(s.source.service(name), contexts);
    index.replace([], plans, ports);
  }
  const desiredVs = index.virtualServers();
  const observed = tableFromDump(await s.applier.readTable({ ipvsReads: 0 }), desiredVs);
  // as classifyTable would, without remembering: a virtual server not seen before is
  // kube-ipvs's only if it created it (or, before the adoption read, a set names it)
  const facts = s.node.ownershipFacts();
  const first = s.node.firstSightFacts(
    (k) => s.applier.created(k, (f) => s.node.isForeign(f)),
    (k) => index.virtualServer(k),
    bound,
  );
  const owned = (e: TableEntry) => {
    const k = virtualServerKey(e.vs);
    if (!ownsVirtualServer(k, e.vs, facts)) return false;
    return s.applier.applied.has(k) || firstSightReason(k, e, first) === null;
  };
  return diffIpvsTable(observed, desiredVs, owned);
}
