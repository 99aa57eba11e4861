/**
 * The one stateful loop (kube-proxy's Proxier.syncProxyRules, IPVS mode), made incremental:
 *
 *  - a PARTIAL sync re-plans only the Services the trackers report as changed (plus those
 *    whose retry is due), diffs each touched virtual server against what kube-ipvs last
 *    applied, and sends only those ops: an endpoint change costs O(that Service's real
 *    servers) netlink ops and no exec (ipset/iptables run only when their text changed);
 *  - a FULL sync (the first, every `syncPeriod`, after a socket failure or a config change)
 *    reads the kernel (one IPVS dump, the addresses, `ipset save`), re-plans everything and
 *    repairs whatever differs — drift made behind our back included — touching only what
 *    kube-ipvs owns (see `ownsVirtualServer`).
 *
 * Nothing is ever flushed: a refused op is logged with the op and its Service, the Service is
 * retried with backoff, and every other Service stays as programmed.
 */
import { constants as osConstants } from 'node:os';
import { isIPv4 } from 'node:net';
import type winston from 'winston';
import { Ipvs, IpvsOp, IpvsOpResult, VirtualServerEntry } from '../kernel/ipvs/ipvs';
import { listAllViaProc } from '../kernel/ipvs/list-via-proc';
import { Ipset, IpsetState } from '../kernel/ipset/ipset';
import { Iptables } from '../kernel/iptables/iptables';
import { KUBE_IPVS0, Link, LinkAddress } from '../kernel/link/link';
import { ensureDummyDevice, bindAddresses, unbindAddresses } from '../kernel/link/dummy-device';
import { selectNodePortAddresses } from '../kernel/link/node-addresses';
import { PROTOCOL_NAMES, describeVirtualServer, realServerKey, virtualServerKey } from '../model/ipvs';
import { Endpoint, Refusal, ServicePort } from '../model/service';
import { LocalDetector } from '../plan/iptables';
import {
  DesiredVirtualServer,
  IptablesOptions,
  PlanContext,
  PlanServicePort,
  ServicePortPlan,
} from '../plan/service-plan';
import { IpvsTable, TableEntry, applyOpsToTable, tableFromDump, virtualServerKeyer } from '../reconcile/ipvs-table';
import { cidrMatcher } from '../model/address';
import { diffIpvsTable, diffVirtualServer, opVirtualServerKey } from '../reconcile/diff-ipvs';
import { NetlinkError, NotSyncedError } from '../errors';
import { BoundedFrequencyRunner } from './runner';
import { DesiredIndex } from './desired-index';
import { DrainingRealServers } from './draining';
import { FirstSightFacts, OwnershipFacts, adoptDrains, firstSightReason, foreignReason, ownsVirtualServer } from './ownership';
import { Clock } from './clock';
import { IpFamily } from '../model/ip-family';
import { ServiceHealthIndex, ServiceHealthSink } from './service-health';
import { isNoDevice } from '../kernel/link/link';
import { Frontend, StatusResponse, SyncSummary } from '../model/views';
import { IP_VS_SVC_F } from '../uapi/ip_vs';
import { parseServicePortKey, servicePortKey } from '../model/service';
import { whyWins } from '../plan/claim-rank';
import { FrontendIds, buildServiceList } from './service-list';
import { Conntrack } from '../kernel/conntrack/conntrack';
import { conntrackCleanupTriggers, conntrackFrontends, staleConntrackFlows } from '../reconcile/stale-conntrack';

const E = osConstants.errno;

/** Where the proxier reads Services and endpoints from (the trackers). */
export interface ProxySource {
  /** every Service name ("ns/name") that currently has ports */
  serviceNames(): Iterable<string>;
  /** the current ports of one Service, every family; empty when it is gone */
  servicePorts(service: string): readonly ServicePort[];
  /** the endpoints of one service port (its family), sorted */
  endpoints(sp: ServicePort): readonly Endpoint[];
  /** what the converters refused in this Service's objects */
  refusals(service: string): readonly Refusal[];
  /** names of Services changed since the last call */
  drainChanges(): Set<string>;
}

export interface Planner {
  readonly planServicePort: PlanServicePort;
}

/** A Kubernetes Event about an object (the daemon posts it; tests record it). */
export interface EventSink {
  warn(ref: { kind: string; namespace: string; name: string }, reason: string, message: string): void;
}

export interface NodeState {
  readonly name: string;
  readonly zone: string;
  readonly nodeIPs: readonly string[];
  readonly podCIDRs: readonly string[];
}

/** The part of the configuration the proxier applies; every field may change live. */
export interface ProxierSettings {
  readonly families: readonly IpFamily[];
  readonly scheduler: string;
  readonly syncPeriodMs: number;
  readonly minSyncPeriodMs: number;
  readonly excludeCIDRs: readonly string[];
  readonly excludeClusterCIDRs: readonly string[];
  readonly nodePortAddresses: readonly string[];
  readonly masqueradeAll: boolean;
  readonly masqueradeBit: number;
  readonly clusterCIDRs: readonly string[];
  readonly detectLocalMode: LocalDetector['kind'];
  readonly bridgeInterface: string;
  readonly interfaceNamePrefix: string;
}

export interface ProxierDeps {
  readonly ipvs: Ipvs;
  readonly link: Link;
  readonly ipsets: Readonly<Partial<Record<IpFamily, Ipset>>>;
  readonly iptables: Readonly<Partial<Record<IpFamily, Iptables>>>;
  readonly source: ProxySource;
  readonly planner: Planner;
  readonly clock: Clock;
  readonly log: winston.Logger;
  readonly events?: EventSink;
  /** iptables supports MASQUERADE --random-fully, per family */
  readonly randomFully?: Readonly<Partial<Record<IpFamily, boolean>>>;
  /** a draining real server with connections left is deleted after this long (default 10 min) */
  readonly drainTimeoutMs?: number;
  /** how often draining real servers' connection counts are read (default 15 s) */
  readonly drainCheckIntervalMs?: number;
  /**
   * Reads /proc/net/ip_vs (the daemon: this network namespace's). When given, a full sync reads
   * the table as one service dump plus this file for every real server (listAllViaProc)
   * instead of one dest dump per virtual server: 2 reads instead of 1 + N.
   */
  readonly readProcIpVs?: () => Promise<string>;
  /** the HealthCheckNodePort servers, fed after every successful sync */
  readonly serviceHealth?: ServiceHealthSink;
  /**
   * the conntrack table: after a sync in which a UDP/SCTP virtual server lost a real server
   * (or got its first one), its stale entries are deleted. None: no conntrack cleanup.
   */
  readonly conntrack?: Conntrack;
  /** called after every sync (metrics) */
  readonly onSync?: (result: SyncResult, driftRepaired: boolean) => void;
}

/** What one sync did: the figures tests assert exactly and operators read in the log. */
export interface SyncResult {
  readonly full: boolean;
  /** service names re-planned */
  readonly replanned: number;
  /** IPVS requests that change the table */
  readonly ipvsWrites: number;
  /** IPVS requests that read (a dump of N services with their dests counts 1 + N) */
  readonly ipvsReads: number;
  readonly ipvsFailures: number;
  /** rtnetlink requests (address dumps, binds, unbinds, link lookups) */
  readonly linkOps: number;
  /** ipset + iptables processes started */
  readonly execs: number;
  /** ctnetlink requests: conntrack dumps (one per family and cleaned protocol) + entry deletes */
  readonly conntrackOps: number;
  /** conntrack entries deleted (kubeproxy_conntrack_reconciler_deleted_entries_total) */
  readonly conntrackDeleted: number;
  /** how long the conntrack cleanup took; absent when none ran */
  readonly conntrackDurationMs?: number;
  readonly durationMs: number;
  /** where the time went, by phase (ms; phases that did not run are absent) */
  readonly phasesMs: SyncPhases;
}

/** The phases of one sync, in order (kube-proxy logs no such split; it is the profile an operator needs at scale). */
export type SyncPhase =
  | 'node' | 'plan' | 'ipvsRead' | 'ipvsWrite' | 'addresses' | 'netfilterWait' | 'healthCheck' | 'draining' | 'conntrack';
/**
 * Every SyncPhase is a lap of the sync: those add up to its duration. `ipsets` and `iptables`
 * are the netfilter syncs' own times (the ipsets, then iptables), which run beside ipvsRead,
 * ipvsWrite and addresses; `netfilterWait` is what the sync waited for them after those.
 */
export type SyncPhases = Partial<Record<SyncPhase | 'ipsets' | 'iptables', number>>;

const DEFAULT_DRAIN_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_DRAIN_CHECK_MS = 15_000;
/** virtual servers whose draining real servers one sync reads at most, and the pause before the next batch */
const DRAIN_CHECK_BATCH = 16;
const DRAIN_CHECK_PAUSE_MS = 200;
const RETRY_BASE_MS = 1_000;
/** the retries key of a whole failed sync (socket or exec failure) */
const SYNC_RETRY = '';
const RETRY_MAX_MS = 5 * 60_000;

/** An op as text (for comparing op lists and for logs). */
function opKey(op: IpvsOp): string {
  const vs = opVirtualServerKey(op) ?? '';
  const rs = 'rs' in op ? ` ${realServerKey(op.rs)} w${'weight' in op.rs ? op.rs.weight : '-'}` : '';
  const sched = op.kind === 'newService' || op.kind === 'setService' ? ` ${op.vs.scheduler}/${op.vs.flags ?? 0}/${op.vs.timeout ?? 0}` : '';
  return `${op.kind} ${vs}${rs}${sched}`;
}

function serviceOf(servicePortKey: string): string {
  return servicePortKey.slice(0, servicePortKey.indexOf(':'));
}

export class Proxier {
  private settings: ProxierSettings;
  private node: NodeState;
  private servicesSynced = false;
  private endpointSlicesSynced = false;
  private readonly runner: BoundedFrequencyRunner;

  /** service name -> its plans (all ports, all families) */
  private readonly plans = new Map<string, ServicePortPlan[]>();
  private index: DesiredIndex;
  /** inside ipvs.excludeCIDRs: never touched */
  private excluded: (address: string) => boolean;
  /** what kube-ipvs believes the kernel holds (owned services only after the first full sync) */
  private applied: IpvsTable = new Map();
  private boundApplied = new Set<string>();
  private kubeIpvs0Index: number | undefined;
  private contexts = new Map<IpFamily, PlanContext>();
  private localAddresses: LinkAddress[] = [];
  private observedIpsets: IpsetState | undefined;
  private warnedProc = false;
  /** health check ports and local endpoint counts per Service (for deps.serviceHealth) */
  private readonly health = new ServiceHealthIndex();

  private needFullSync = true;
  private replanAll = true;
  /** the plan contexts as text: a full sync re-plans every Service only when they changed */
  private contextsText = '';
  private lastFullSyncAt = -Infinity;
  /** real servers set to weight 0, waiting for their connections to end */
  private readonly draining = new DrainingRealServers();
  /** service name -> retry state */
  private readonly retries = new Map<string, { attempt: number; at: number }>();
  /** Services whose ops the kernel refused in the current sync */
  private readonly failedThisSync = new Set<string>();
  /** conntrack tables ("ipv4/17") to clean of stale entries after this sync's IPVS changes */
  private readonly conntrackPending = new Set<string>();
  /**
   * virtual servers a full sync found in the kernel that were not kube-ipvs's when first seen
   * (vsKey -> why), for as long as they exist there (ownership.ts); the planner's
   * ctx.foreignVirtualServers: no Service gets one
   */
  private readonly foreign = new Map<string, string>();
  /** whether a full sync has classified the kernel's table once (the adoption read) */
  private adopted = false;
  /** the kube-proxy sets and kube-ipvs0's addresses as first read, until the adoption read */
  private adoptionFacts: FirstSightFacts['adoption'];
  /** virtual servers whose newService answer a socket failure lost: kube-ipvs may have created them */
  private readonly uncertainCreates = new Set<string>();
  /** Services to re-plan at the next sync: a foreign virtual server they claim appeared or went */
  private readonly replanNext = new Set<string>();
  /** foreign virtual servers whose weight-0 real servers were said to be left alone (vsKey -> what was said) */
  private reportedForeignDrains = new Map<string, string>();
  /** virtual servers claimed by several service ports: vsKey -> the winner and losers reported */
  private readonly reportedConflicts = new Map<string, { winner: string; losers: ReadonlySet<string> }>();
  /** refusals already reported, per service (reported again only when they change) */
  private readonly reportedRefusals = new Map<string, string>();

  /** timestamps for health and metrics: the last sync that went through (kube-proxy's
   * healthz Updated()), the oldest change queued since (QueuedUpdate()) */
  lastSyncAt = 0;
  lastQueuedAt = 0;
  /** a full sync went through after the Services and EndpointSlices were listed */
  initialSyncDone = false;
  lastResult: SyncResult | undefined;
  /** service ports with a Local traffic policy and no local endpoint (kubeproxy_sync_proxy_rules_no_local_endpoints_total) */
  readonly noLocalEndpoints = { internal: 0, external: 0 };
  readonly totals = { syncs: 0, fullSyncs: 0, ipvsWrites: 0, ipvsFailures: 0, execs: 0, driftRepairs: 0, conntrackDeleted: 0 };
  /** the last full and partial syncs, for `kube-ipvs status` */
  private lastFull: SyncSummary | null = null;
  private lastPartial: SyncSummary | null = null;
  private readonly frontendIds = new FrontendIds();

  constructor(
    private readonly deps: ProxierDeps,
    settings: ProxierSettings,
    node: NodeState,
  ) {
    this.settings = settings;
    this.node = node;
    this.index = new DesiredIndex(settings.families);
    this.excluded = cidrMatcher(settings.excludeCIDRs);
    this.runner = new BoundedFrequencyRunner(() => this.syncProxyRules().then(() => undefined), {
      minIntervalMs: settings.minSyncPeriodMs,
      maxIntervalMs: settings.syncPeriodMs,
      burst: 2,
      clock: deps.clock,
    });
  }

  // ---- event side (kube-proxy's handlers call Sync()) ----

  /** Something changed: sync as soon as the bounds allow. */
  sync(): void {
    // as kube-proxy: a change counts as queued (for /livez) only once the informers have
    // synced; before that a slow initial list would make /livez fail and the pod restart
    if (!this.isInitialized()) return;
    if (!this.lastQueuedAt || this.lastQueuedAt <= this.lastSyncAt) this.lastQueuedAt = this.deps.clock.now();
    this.runner.run();
  }

  onServicesSynced(): void {
    this.servicesSynced = true;
    this.startIfReady();
  }

  onEndpointSlicesSynced(): void {
    this.endpointSlicesSynced = true;
    this.startIfReady();
  }

  onNodeChange(node: NodeState): void {
    const same = JSON.stringify(node) === JSON.stringify(this.node);
    this.node = node;
    if (!same) {
      // the plan contexts carry the node's zone and IPs: the re-plan must see the new ones
      this.rebuildContexts();
      this.replanAll = true;
      this.sync();
    }
  }

  updateSettings(settings: ProxierSettings): void {
    if (settings.families.join() !== this.settings.families.join()) {
      this.index = new DesiredIndex(settings.families);
      this.plans.clear();
      this.noLocalEndpoints.internal = 0;
      this.noLocalEndpoints.external = 0;
      this.replanAll = true;
    }
    this.settings = settings;
    this.excluded = cidrMatcher(settings.excludeCIDRs);
    this.runner.setIntervals(settings.minSyncPeriodMs, settings.syncPeriodMs);
    // the full sync below rebuilds the plan contexts from the new settings and re-plans every
    // Service if they changed (scheduler, nodePortAddresses, ...); a change of the sync
    // periods alone re-plans nothing
    this.needFullSync = true;
    this.sync();
  }

  isInitialized(): boolean {
    return this.servicesSynced && this.endpointSlicesSynced;
  }

  stop(): void {
    this.runner.stop();
  }

  /** Resolves once no sync is running (tests, shutdown). */
  idle(): Promise<void> {
    return this.runner.idle();
  }

  private startIfReady(): void {
    if (!this.isInitialized()) return;
    this.deps.log.info('services and endpoint slices synced: starting the sync loop');
    this.runner.start();
  }

  // ---- the sync ----

  /** One sync; never throws (failures are logged and retried). */
  async syncProxyRules(): Promise<SyncResult | undefined> {
    if (!this.isInitialized()) {
      this.deps.log.info('not syncing ipvs rules until Services and EndpointSlices have been received');
      return undefined;
    }
    const clock = this.deps.clock;
    const start = clock.now();
    const full = this.needFullSync || start - this.lastFullSyncAt >= this.settings.syncPeriodMs;
    const counts = { ipvsWrites: 0, ipvsReads: 0, ipvsFailures: 0, linkOps: 0, execs: 0, conntrackOps: 0, conntrackDeleted: 0 };
    let replanned = 0;
    let drift = false;
    const phasesMs: SyncPhases = {};
    let mark = start;
    let succeeded = false;
    /** charges the time since the last lap to `phase` */
    const lap = (phase: SyncPhase) => {
      const t = clock.now();
      phasesMs[phase] = (phasesMs[phase] ?? 0) + (t - mark);
      mark = t;
    };
    try {
      if (full) {
        await this.observeNode(counts);
        lap('node');
      }
      const changed = this.deps.source.drainChanges();
      const dueRetries = [...this.retries].filter(([svc, r]) => svc !== SYNC_RETRY && r.at <= start).map(([svc]) => svc);
      for (const svc of dueRetries) changed.add(svc);
      this.failedThisSync.clear();
      // a full sync re-reads the kernel; the plans are re-made only when what they depend on
      // beyond the Service and its endpoints changed (settings, the node, its addresses): a
      // Service whose objects did not change plans the same (planServicePort is pure)
      const replanEverything = this.replanAll;
      const names = replanEverything ? new Set([...this.deps.source.serviceNames(), ...this.plans.keys()]) : changed;
      this.replanAll = false;
      if (replanEverything) this.health.clear();

      // re-plan; remember which virtual servers the change touches
      for (const svc of this.replanNext) changed.add(svc);
      this.replanNext.clear();
      const touched = new Set<string>();
      for (const name of names) this.replanService(name, touched);
      replanned = names.size;
      this.reportConflicts(touched);
      const desired = (k: string) => this.index.virtualServer(k);
      lap('plan');

      // 1. the ipsets, then iptables, whose rules name the sets (one `ipset restore` and one
      // `iptables-restore` per family at most, processes of their own): they depend on the plan
      // alone, so they start once it is made and run beside the IPVS read, the IPVS writes and
      // the binds. A full sync whose plan wants a virtual server of unknown ownership (not in
      // the table kube-ipvs knows: the adoption read, a new Service) reads the table first: a
      // foreign one there is refused before any ipset entry names it (ownership below reads
      // the sets as observeNode found them, not as this sync leaves them)
      let netfilterDone: Promise<{ error: unknown } | undefined> | undefined;
      const startNetfilter = () => (netfilterDone ??= this.syncNetfilter(full, counts, phasesMs));
      let netfilterFailure: { error: unknown } | undefined;
      try {
        if (!full || !this.wantsUnknown()) startNetfilter();
        // 2. IPVS: the smallest set of ops
        let ops: IpvsOp[];
        if (full) {
          const dump = await this.readTable(counts);
          lap('ipvsRead');
          let observed = tableFromDump(dump, this.index.virtualServers());
          const { claimed, gone } = this.classifyTable(observed);
          // claimed ones are refused now, before the netfilter sync starts; a gone one's
          // claimants get it now when the netfilter sync has not started yet, else next sync
          const now = netfilterDone === undefined ? [...claimed, ...gone] : claimed;
          if (now.length > 0) {
            for (const name of this.claimantsOf(now)) this.replanService(name, touched);
            this.reportConflicts(touched);
            observed = tableFromDump(dump, this.index.virtualServers());
          }
          if (netfilterDone !== undefined) {
            for (const name of this.claimantsOf(gone)) this.replanNext.add(name);
            // (claimed is empty here, as wantsUnknown() was false: were it not, the sets
            // the netfilter sync in flight writes would be withdrawn by the next sync)
            if (this.replanNext.size > 0 || claimed.length > 0) this.runner.run();
          }
          startNetfilter();
          const desiredVs = this.index.virtualServers();
          const facts = this.ownershipFacts();
          const owned = (e: TableEntry) => ownsVirtualServer(virtualServerKey(e.vs), e.vs, facts);
          ops = diffIpvsTable(observed, desiredVs, owned);
          if (ops.length > 0 && this.lastFullSyncAt > -Infinity) {
            // drift: what the kernel needs beyond what the tracked state says it needs (a
            // config change re-plans everything; those ops are not drift)
            const expected = new Set(diffIpvsTable(this.applied, desiredVs, owned).map(opKey));
            const driftOps = ops.filter((o) => !expected.has(opKey(o)));
            if (driftOps.length > 0) {
              this.totals.driftRepairs++;
              drift = true;
              this.deps.log.warn(`full sync: the kernel differed from what kube-ipvs applied; ${driftOps.length} IPVS changes repair it`, {
                ops: driftOps.length,
                first: driftOps.slice(0, 5).map(opKey),
              });
            }
          }
          this.applied = observed;
          this.adoptDraining(desired, facts);
        } else {
          startNetfilter();
          ops = [];
          for (const k of touched) {
            const vs = desired(k)?.vs ?? this.applied.get(k)?.vs;
            // the planner plans nothing inside excludeCIDRs; a virtual server applied before they
            // changed is left to the full sync the change queued, which leaves it alone
            if (vs && this.excluded(vs.address)) {
              this.deps.log.warn(`leaving virtual server ${describeVirtualServer(vs)} alone: inside ipvs.excludeCIDRs`, { virtualServer: k });
              continue;
            }
            ops.push(...diffVirtualServer(this.applied.get(k), desired(k)));
          }
        }
        lap('plan');
        // a partial sync has not read the table since the last full sync: a virtual server it
        // creates may have appeared since (EEXIST), and then is foreign, not to be filled
        const appeared = await this.runIpvs(ops, desired, counts, !full);
        if (appeared.length > 0) {
          // its claimants are refused it now (no kube-ipvs0 address below); the sets the
          // netfilter sync in flight wrote for it are withdrawn by the next sync
          for (const name of this.claimantsOf(appeared)) this.replanService(name, touched);
          this.reportConflicts(touched);
          this.runner.run();
        }
        lap('ipvsWrite');
        // a retried Service that went through (or went away) needs no more retries
        for (const svc of dueRetries) if (!this.failedThisSync.has(svc)) this.retries.delete(svc);

        // 3. addresses on kube-ipvs0 (after the virtual servers exist, as kube-proxy binds)
        // (a partial sync that changed no VIP skips the O(all VIPs) comparison)
        if (this.index.takeAddressesChanged() || full) await this.syncBoundAddresses(this.index.boundAddresses(), counts);
        lap('addresses');
      } finally {
        // even when the IPVS read or writes failed: no restore may run on into the next sync
        netfilterFailure = netfilterDone === undefined ? undefined : await netfilterDone;
        lap('netfilterWait');
      }
      if (netfilterFailure) throw netfilterFailure.error;

      // 4. the HealthCheckNodePort servers (whole maps each time: a port that could not be
      // opened is retried; kube-proxy feeds them after the rules are applied, as here)
      const sink = this.deps.serviceHealth;
      if (sink) {
        sink.syncServices(this.health.ports);
        sink.syncEndpoints(this.health.localEndpoints);
      }
      lap('healthCheck');

      // 5. draining real servers whose connections are gone
      await this.checkDraining(desired, counts);
      lap('draining');

      if (full) {
        this.lastFullSyncAt = start;
        this.needFullSync = false;
        this.initialSyncDone = true;
      }
      this.retries.delete(SYNC_RETRY);
      succeeded = true;
    } catch (e) {
      // socket failure, exec failure...: what was applied is uncertain, so read it all next time
      this.needFullSync = true;
      for (const ipset of new Set(Object.values(this.deps.ipsets))) ipset?.invalidate();
      const delay = this.nextBackoff(SYNC_RETRY);
      this.deps.log.error(`sync failed, full sync in ${delay} ms: ${e instanceof Error ? e.message : String(e)}`, {
        code: (e as { code?: string }).code,
      });
      this.runner.retryAfter(delay);
    }
    // after the IPVS changes (a flow deleted before its real server would be re-created to it);
    // even after a failed sync, for what was applied
    let conntrackDurationMs: number | undefined;
    if (this.conntrackPending.size > 0) {
      const ctStart = clock.now();
      mark = ctStart;
      await this.cleanStaleConntrack(counts);
      conntrackDurationMs = clock.now() - ctStart;
      lap('conntrack');
    }
    const result: SyncResult = {
      full, replanned, ...counts, ...(conntrackDurationMs !== undefined ? { conntrackDurationMs } : {}), durationMs: clock.now() - start, phasesMs,
    };
    this.lastResult = result;
    // a failed sync leaves the queued changes pending: /livez fails if they stay so too long
    if (succeeded) this.lastSyncAt = clock.now();
    this.totals.syncs++;
    if (full) this.totals.fullSyncs++;
    this.totals.ipvsWrites += counts.ipvsWrites;
    this.totals.ipvsFailures += counts.ipvsFailures;
    this.totals.execs += counts.execs;
    const summary: SyncSummary = {
      at: new Date(this.lastSyncAt).toISOString(), durationMs: result.durationMs,
      ipvsWrites: counts.ipvsWrites, ipvsFailures: counts.ipvsFailures, execs: counts.execs,
    };
    if (full) this.lastFull = summary;
    else this.lastPartial = summary;
    this.deps.log.log(full || counts.ipvsWrites > 0 || counts.execs > 0 || counts.conntrackOps > 0 ? 'info' : 'verbose', 'sync done', { ...result });
    this.deps.onSync?.(result, drift);
    return result;
  }

  /** Re-plans one Service into the index; adds the virtual server keys it touches. */
  private replanService(name: string, touched: Set<string>): void {
    const before = this.plans.get(name) ?? [];
    const { ports, plans: after } = this.planService(name);
    this.health.update(name, ports, after);
    for (const k of this.index.replace(before, after, ports)) touched.add(k);
    if (this.deps.conntrack) {
      const vss = (plans: readonly ServicePortPlan[]) => plans.flatMap((p) => p.virtualServers);
      for (const t of conntrackCleanupTriggers(vss(before), vss(after))) this.conntrackPending.add(t);
    }
    for (const p of before) this.countNoLocal(p, -1);
    for (const p of after) this.countNoLocal(p, +1);
    if (after.length > 0) this.plans.set(name, after);
    else this.plans.delete(name);
    this.reportRefusals(name, after);
  }

  /**
   * Whether the plan wants a virtual server whose ownership the kernel has yet to tell: one
   * not in the table kube-ipvs knows (read by the last full sync, or created since), which at
   * the adoption read no kube-proxy set (or kube-ipvs0 address) already vouches for.
   */
  private wantsUnknown(): boolean {
    const adoption = this.adopted ? undefined : { created: () => false, adoption: this.adoptionFacts };
    for (const [k, d] of this.index.virtualServers()) {
      if (this.applied.has(k)) continue;
      if (adoption && firstSightReason(k, d.vs, adoption) === null) continue;
      return true;
    }
    return false;
  }

  /**
   * Classifies what a full sync read (ownership.ts): every virtual server not seen before is
   * kube-ipvs's or foreign from now on, as long as it exists; a foreign one that is gone is
   * forgotten. Returns the newly foreign ones a Service wants (`claimed`) and the forgotten
   * ones (`gone`). Logs each newly foreign virtual server once.
   */
  private classifyTable(observed: IpvsTable): { claimed: string[]; gone: string[] } {
    const facts: FirstSightFacts = {
      created: (k) => (this.applied.has(k) && !this.foreign.has(k)) || this.uncertainCreates.has(k),
      ...(this.adopted ? {} : { adoption: this.adoptionFacts }),
    };
    const claimed: string[] = [];
    const gone: string[] = [];
    for (const [k, e] of observed) {
      // seen before: classified then (kube-ipvs's unless remembered foreign)
      if (this.foreign.has(k) || this.applied.has(k)) continue;
      const why = firstSightReason(k, e.vs, facts);
      if (why === null) continue;
      this.foreign.set(k, why);
      if (this.index.virtualServer(k)) claimed.push(k);
      this.deps.log.info(`virtual server ${describeVirtualServer(e.vs)} is not kube-ipvs's (${why}): it is never changed or deleted, and no Service gets it while it exists`, { virtualServer: k });
    }
    for (const k of [...this.foreign.keys()]) {
      if (observed.has(k)) continue;
      this.foreign.delete(k);
      gone.push(k);
      this.deps.log.info(`foreign virtual server ${k} is gone from the kernel: a Service may program it now`, { virtualServer: k });
    }
    this.uncertainCreates.clear();
    this.adopted = true;
    this.adoptionFacts = undefined;
    return { claimed, gone };
  }

  /** The Services that claim these virtual server keys, or were refused them as foreign. */
  private claimantsOf(keys: readonly string[]): Set<string> {
    const want = new Set(keys);
    const out = new Set<string>();
    for (const [name, plans] of this.plans) {
      for (const p of plans) {
        if (p.foreignVirtualServers?.some((k) => want.has(k)) || p.virtualServers.some((v) => want.has(virtualServerKey(v.vs)))) {
          out.add(name);
          break;
        }
      }
    }
    return out;
  }

  /**
   * The families' ipsets, one sync after another (they may share one Ipset), then their
   * iptables; no iptables after a failed ipset sync. Resolves, never rejects: with the failure,
   * if one happened. Sets phasesMs.ipsets and phasesMs.iptables to their own durations, which
   * overlap the IPVS read, the IPVS writes and the binds.
   */
  private async syncNetfilter(full: boolean, counts: { execs: number }, phasesMs: SyncPhases): Promise<{ error: unknown } | undefined> {
    const clock = this.deps.clock;
    let start = clock.now();
    let phase: 'ipsets' | 'iptables' = 'ipsets';
    try {
      for (const family of this.settings.families) {
        const ipset = this.deps.ipsets[family];
        // a partial sync that changed no member skips even the in-memory diff of every set
        const membersChanged = this.index.takeIpsetsChanged(family);
        if (ipset && (full || membersChanged)) counts.execs += (await ipset.sync(this.index.ipsets(family))).execs;
      }
      phasesMs.ipsets = clock.now() - start;
      start = clock.now();
      phase = 'iptables';
      for (const family of this.settings.families) {
        const ipt = this.deps.iptables[family];
        if (ipt) counts.execs += (await ipt.sync(this.index.iptables(family, this.iptablesOptions(family)), { verify: full })).execs;
      }
      phasesMs.iptables = clock.now() - start;
      return undefined;
    } catch (error) {
      phasesMs[phase] = clock.now() - start;
      return { error };
    }
  }

  /** The whole IPVS table; counts its netlink reads. */
  private async readTable(counts: { ipvsReads: number }): Promise<VirtualServerEntry[]> {
    const { ipvs, readProcIpVs } = this.deps;
    if (!readProcIpVs) {
      const dump = await ipvs.listAll();
      counts.ipvsReads += 1 + dump.length;
      return dump;
    }
    const listing = await listAllViaProc(ipvs, readProcIpVs, { tunnelDetails: false });
    // the service dump (and, when /proc was unreadable, GET_INFO), plus the dest dumps
    counts.ipvsReads += (listing.source === 'proc' ? 1 : 2) + listing.destDumps;
    if (listing.source !== 'proc' && !this.warnedProc) {
      this.warnedProc = true;
      this.deps.log.warn('/proc/net/ip_vs could not be read or parsed: full syncs read every real server over netlink (one dump per virtual server)');
    }
    return listing.entries;
  }

  /**
   * Deletes the stale conntrack entries of the pending tables (kube-proxy's
   * conntrack.CleanStaleEntries): one filtered dump per family and protocol, then one batch of
   * deletes. Never throws: a failure is logged and the IPVS sync stands.
   */
  private async cleanStaleConntrack(counts: { conntrackOps: number; conntrackDeleted: number }): Promise<void> {
    const ct = this.deps.conntrack;
    const tables = [...this.conntrackPending].sort();
    this.conntrackPending.clear();
    if (!ct) return;
    const frontends = conntrackFrontends(this.index.virtualServers().values());
    let deleted = 0;
    let gone = 0;
    let examined = 0;
    for (const table of tables) {
      const [family, proto] = table.split('/') as [IpFamily, string];
      const protocol = Number(proto);
      const name = `${family} ${PROTOCOL_NAMES[protocol] ?? protocol}`;
      try {
        counts.conntrackOps++;
        const flows = await ct.listFlows(family, protocol);
        examined += flows.length;
        const stale = staleConntrackFlows(flows, frontends.filter((f) => f.family === family && f.protocol === protocol));
        if (stale.length === 0) continue;
        counts.conntrackOps += stale.length;
        const r = await ct.deleteFlows(stale);
        deleted += r.deleted;
        gone += r.gone;
        for (const f of r.failures.slice(0, 5)) this.deps.log.error(f.error.message, { errno: f.error.errnoName });
        if (r.failures.length > 5) this.deps.log.error(`conntrack ${name}: ${r.failures.length - 5} more deletes refused`);
      } catch (e) {
        this.deps.log.error(`conntrack ${name}: stale entry cleanup failed (IPVS is synced): ${(e as Error).message}`, {
          code: (e as { code?: string }).code,
        });
      }
    }
    this.totals.conntrackDeleted += deleted;
    counts.conntrackDeleted += deleted;
    const names = tables.map((t) => `${t.split('/')[0]} ${PROTOCOL_NAMES[Number(t.split('/')[1])] ?? t}`);
    this.deps.log.info(`conntrack: deleted ${deleted} stale entries (${names.join(', ')})`, {
      tables, examined, deleted, alreadyGone: gone,
    });
  }

  /** Re-reads links and addresses: kube-ipvs0 (created if missing), bound and local addresses. */
  private async observeNode(counts: { linkOps: number; execs: number }): Promise<void> {
    const { link } = this.deps;
    const dummy = await ensureDummyDevice(link, KUBE_IPVS0);
    counts.linkOps += dummy.created ? 3 : 1;
    if (dummy.created) this.deps.log.info(`created dummy link ${KUBE_IPVS0}`);
    this.kubeIpvs0Index = dummy.link.index;
    const bound = new Set<string>();
    const local: LinkAddress[] = [];
    for (const f of ['ipv4', 'ipv6'] as const) {
      counts.linkOps++;
      for (const a of await link.listAddresses(f)) (a.ifindex === dummy.link.index ? bound.add(a.address) : local.push(a));
    }
    this.boundApplied = bound;
    this.localAddresses = local;
    this.rebuildContexts();
    if (!this.adopted && !this.adoptionFacts && !this.deps.ipsets[this.settings.families[0] ?? 'ipv4']) this.adoptionFacts = { ipsets: undefined, bound };
    // the ipset state that says which NodePorts / external VIPs kube-proxy or kube-ipvs programmed
    const fam = this.settings.families[0];
    const ipset = fam ? this.deps.ipsets[fam] : undefined;
    if (ipset) {
      const observed = await ipset.observeCounted();
      this.observedIpsets = observed.state;
      counts.execs += observed.execs;
      // the adoption read classifies by the sets as first read: later, kube-ipvs wrote them
      if (!this.adopted && !this.adoptionFacts) this.adoptionFacts = { ipsets: observed.state, bound };
      // another family's instance (if it is another one) must not sync against an old baseline
      for (const f of this.settings.families.slice(1)) if (this.deps.ipsets[f] !== ipset) this.deps.ipsets[f]?.invalidate();
    }
  }

  /** The plan contexts over the current local addresses; tells the health check servers where to listen. */
  private rebuildContexts(): void {
    const npAll = selectNodePortAddresses(this.localAddresses, this.settings.nodePortAddresses, this.node.nodeIPs);
    // kube-proxy's health check servers listen on every address unless nodePortAddresses
    // narrows them (NodePortAddresses.MatchAll: unset, or a 0.0.0.0/0 or ::/0 entry)
    const matchAll = this.settings.nodePortAddresses.length === 0 || this.settings.nodePortAddresses.some((c) => /\/0$/.test(c));
    const proxied = (a: string) => this.settings.families.includes(isIPv4(a) ? 'ipv4' : 'ipv6');
    this.deps.serviceHealth?.setNodePortAddresses?.(matchAll ? undefined : npAll.filter(proxied));
    this.contexts = this.planContexts(this.localAddresses);
    const text = JSON.stringify([...this.contexts.values()].map((c) => ({ ...c, localAddresses: [...c.localAddresses].sort() })));
    if (text !== this.contextsText) this.replanAll = true;
    this.contextsText = text;
  }

  /** The per-family planning context over these local addresses (those of links but kube-ipvs0). */
  private planContexts(localAddresses: readonly LinkAddress[]): Map<IpFamily, PlanContext> {
    const local = new Set(localAddresses.map((a) => a.address));
    const npAll = selectNodePortAddresses(localAddresses, this.settings.nodePortAddresses, this.node.nodeIPs);
    const contexts = new Map<IpFamily, PlanContext>();
    for (const family of this.settings.families) {
      const ofFamily = (a: string) => (family === 'ipv4') === isIPv4(a);
      contexts.set(family, {
        family,
        scheduler: this.settings.scheduler,
        nodeName: this.node.name,
        nodeZone: this.node.zone,
        nodePortAddresses: npAll.filter(ofFamily),
        localAddresses: local,
        nodeIPs: this.node.nodeIPs.filter(ofFamily),
        excludeClusterCIDRs: this.settings.excludeClusterCIDRs.filter((c) => ofFamily(c.split('/')[0]!)),
        excludeCIDRs: this.settings.excludeCIDRs.filter((c) => ofFamily(c.split('/')[0]!)),
        // live: a change re-plans the Services it concerns (claimantsOf), not every Service
        foreignVirtualServers: this.foreign,
      });
    }
    return contexts;
  }

  /** Plans one Service's ports in the families this node runs (and returns those ports). */
  private planService(name: string, contexts: ReadonlyMap<IpFamily, PlanContext> = this.contexts): { ports: ServicePort[]; plans: ServicePortPlan[] } {
    const { source, planner } = this.deps;
    const ports: ServicePort[] = [];
    const plans: ServicePortPlan[] = [];
    for (const sp of source.servicePorts(name)) {
      const ctx = contexts.get(sp.family);
      if (!ctx) continue; // a family this node does not run
      ports.push(sp);
      plans.push(planner.planServicePort(sp, source.endpoints(sp), ctx));
    }
    return { ports, plans };
  }

  private iptablesOptions(family: IpFamily): IptablesOptions {
    const s = this.settings;
    const ofFamily = (c: string) => (family === 'ipv4') === c.includes('.');
    let localDetector: LocalDetector | undefined;
    switch (s.detectLocalMode) {
      case 'ClusterCIDR': {
        const cidr = s.clusterCIDRs.find(ofFamily);
        if (cidr) localDetector = { kind: 'ClusterCIDR', cidr };
        break;
      }
      case 'NodeCIDR': {
        const cidr = this.node.podCIDRs.find(ofFamily);
        if (cidr) localDetector = { kind: 'NodeCIDR', cidr };
        break;
      }
      case 'BridgeInterface':
        if (s.bridgeInterface) localDetector = { kind: 'BridgeInterface', iface: s.bridgeInterface };
        break;
      case 'InterfaceNamePrefix':
        if (s.interfaceNamePrefix) localDetector = { kind: 'InterfaceNamePrefix', prefix: s.interfaceNamePrefix };
        break;
    }
    return {
      masqueradeBit: s.masqueradeBit,
      masqueradeAll: s.masqueradeAll,
      randomFully: this.deps.randomFully?.[family] ?? false,
      ...(localDetector ? { localDetector } : {}),
    };
  }

  /** What decides ownership now (lib/proxier/ownership.ts). */
  private ownershipFacts(): OwnershipFacts {
    return { excluded: this.excluded, foreign: (k) => this.foreign.get(k) };
  }

  /**
   * Runs ops; returns the virtual servers found to exist already when created (`guardNew`: a
   * partial sync's creates go first, alone; one the kernel refuses with EEXIST appeared since
   * the last full read, is remembered foreign, and none of the other ops touch it).
   */
  private async runIpvs(
    ops: readonly IpvsOp[],
    desired: (vsKey: string) => DesiredVirtualServer | undefined,
    counts: { ipvsWrites: number; ipvsFailures: number },
    guardNew = false,
  ): Promise<string[]> {
    if (!guardNew || !ops.some((op) => op.kind === 'newService')) {
      await this.runBatch(ops, desired, counts);
      return [];
    }
    const creates = ops.filter((op) => op.kind === 'newService');
    const appeared = await this.runBatch(creates, desired, counts, true);
    const rest = ops.filter((op) => op.kind !== 'newService' && !appeared.includes(opVirtualServerKey(op) ?? ''));
    await this.runBatch(rest, desired, counts);
    return appeared;
  }

  /** One ipvs.run of `ops`; `creates`: EEXIST on a create marks the virtual server foreign (returned). */
  private async runBatch(
    ops: readonly IpvsOp[],
    desired: (vsKey: string) => DesiredVirtualServer | undefined,
    counts: { ipvsWrites: number; ipvsFailures: number },
    creates = false,
  ): Promise<string[]> {
    const appeared: string[] = [];
    if (ops.length === 0) return appeared;
    counts.ipvsWrites += ops.length;
    let results: IpvsOpResult[];
    try {
      results = await this.deps.ipvs.run(ops); // throws only for a socket failure
    } catch (e) {
      // what went through is unknown: a virtual server found at the next full read may be one
      // of these, kube-ipvs's own
      for (const op of ops) if (op.kind === 'newService') this.uncertainCreates.add(virtualServerKey(op.vs));
      throw e;
    }
    applyOpsToTable(this.applied, ops, results);
    const now = this.deps.clock.now();
    const failedServices = new Map<string, NetlinkError>();
    const keyOf = virtualServerKeyer();
    ops.forEach((op, i) => {
      const r = results[i] as IpvsOpResult;
      const vsKey = 'vs' in op && op.vs ? keyOf(op.vs) : '';
      if (r.ok) {
        if (op.kind === 'setDest' && op.rs.weight === 0) this.draining.start(vsKey, realServerKey(op.rs), now);
        else if (op.kind === 'setDest' || op.kind === 'delDest' || op.kind === 'newDest') {
          // (a cold start's 100,000 new real servers drain nowhere)
          if (this.draining.hasVirtualServer(vsKey)) this.draining.stop(vsKey, realServerKey(op.rs));
        } else if (op.kind === 'delService') this.draining.dropVirtualServer(vsKey);
        return;
      }
      if (creates && op.kind === 'newService' && r.error.errno === E.EEXIST && !this.applied.has(vsKey)) {
        // not in the table kube-ipvs read and not created by it: someone else made it since
        const why = 'it appeared in the kernel after kube-ipvs last read the table, and kube-ipvs did not create it';
        this.foreign.set(vsKey, why);
        appeared.push(vsKey);
        this.deps.log.info(`virtual server ${describeVirtualServer(op.vs)} is not kube-ipvs's (${why}): it is never changed or deleted, and no Service gets it while it exists`, { virtualServer: vsKey });
        return;
      }
      counts.ipvsFailures++;
      const owner = desired(vsKey)?.owner;
      const service = owner ? serviceOf(owner) : undefined;
      // a real server refused because its virtual server was refused first says nothing new
      if (r.error.errno === E.ESRCH && (op.kind === 'newDest' || op.kind === 'setDest') && service && failedServices.has(service)) return;
      this.deps.log.error(r.error.message, { service: owner, op: op.kind, errno: r.error.errnoName ?? r.error.errno });
      if (service) {
        if (!failedServices.has(service)) failedServices.set(service, r.error);
      } else {
        this.needFullSync = true;
      }
    });
    for (const [service, error] of failedServices) {
      const delay = this.nextBackoff(service);
      const [namespace, name] = service.split('/') as [string, string];
      this.deps.events?.warn({ kind: 'Service', namespace, name }, 'FailedToSyncIPVS', `${error.message}; retrying in ${Math.round(delay / 1000)}s`);
      this.runner.retryAfter(delay);
    }
    for (const svc of failedServices.keys()) this.failedThisSync.add(svc);
    return appeared;
  }

  private nextBackoff(key: string): number {
    const prev = this.retries.get(key);
    const attempt = (prev?.attempt ?? -1) + 1;
    const delay = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** attempt);
    this.retries.set(key, { attempt, at: this.deps.clock.now() + delay });
    return delay;
  }

  private async syncBoundAddresses(want: ReadonlySet<string>, counts: { linkOps: number }): Promise<void> {
    const index = this.kubeIpvs0Index;
    if (index === undefined) return;
    const { link } = this.deps;
    const toBind = [...want].filter((a) => !this.boundApplied.has(a));
    const toUnbind = [...this.boundApplied].filter((a) => !want.has(a));
    counts.linkOps += toBind.length + toUnbind.length;
    // many requests to a datagram: a cold node binds every VIP
    const steps = [
      { what: 'bind', prep: 'to', addresses: toBind, run: bindAddresses, done: (a: string) => this.boundApplied.add(a) },
      { what: 'unbind', prep: 'from', addresses: toUnbind, run: unbindAddresses, done: (a: string) => this.boundApplied.delete(a) },
    ];
    for (const { what, prep, addresses, run, done } of steps) {
      if (addresses.length === 0) continue;
      let results: (NetlinkError | null)[];
      try {
        results = await run(link, index, addresses);
      } catch (e) {
        this.deps.log.error(`${what} ${addresses.length} addresses ${prep} ${KUBE_IPVS0}: ${(e as Error).message}`);
        this.needFullSync = true;
        continue;
      }
      results.forEach((e, i) => {
        const a = addresses[i]!;
        if (!e) {
          done(a);
          return;
        }
        this.deps.log.error(`${what} ${a} ${prep} ${KUBE_IPVS0}: ${e.message}`);
        this.needFullSync = true;
      });
    }
  }

  /**
   * After a kernel read: the draining real servers are exactly the weight-0 TCP ones that are
   * not desired, of virtual servers kube-ipvs owns (a restarted kube-ipvs adopts the drains its
   * predecessor started). A foreign one's weight-0 real servers are left alone, said once.
   */
  private adoptDraining(desired: (vsKey: string) => DesiredVirtualServer | undefined, facts: OwnershipFacts): void {
    const { drains, foreign } = adoptDrains(this.applied, desired, facts);
    this.draining.replaceAll(drains, this.deps.clock.now());
    const seen = new Map<string, string>();
    for (const f of foreign) {
      const text = `${f.rsKeys.join(',')} ${f.reason}`;
      seen.set(f.vsKey, text);
      if (this.reportedForeignDrains.get(f.vsKey) === text) continue;
      const vs = this.applied.get(f.vsKey)!.vs;
      this.deps.log.info(`leaving virtual server ${describeVirtualServer(vs)} alone: not kube-ipvs's (${f.reason}); its weight-0 real servers ${f.rsKeys.join(', ')} are not drained`, {
        virtualServer: f.vsKey, realServers: f.rsKeys,
      });
    }
    this.reportedForeignDrains = seen;
  }

  /**
   * Deletes draining real servers (weight 0, no longer desired) whose connections are gone
   * (TCP: ActiveConn + InactConn = 0), or that drained longer than the bound. Reads only the
   * virtual servers that have one, at most every drainCheckInterval.
   */
  private async checkDraining(
    desired: (vsKey: string) => DesiredVirtualServer | undefined,
    counts: { ipvsReads: number; ipvsWrites: number; ipvsFailures: number },
  ): Promise<void> {
    const now = this.deps.clock.now();
    const interval = this.deps.drainCheckIntervalMs ?? DEFAULT_DRAIN_CHECK_MS;
    const bound = this.deps.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    if (this.draining.size === 0) return;
    // a real server is first looked at one interval after it started draining (kube-proxy
    // checks once a minute), then one interval after each look; bounded per sync, so a wave
    // of terminations does not delay the next Service change
    const { due, more, nextDue } = this.draining.due(now, interval, DRAIN_CHECK_BATCH);
    if (due.length === 0) {
      if (nextDue < Infinity) this.runner.retryAfter(nextDue - now);
      return;
    }
    if (more) this.runner.retryAfter(DRAIN_CHECK_PAUSE_MS);
    const ops: IpvsOp[] = [];
    const facts = this.ownershipFacts();
    for (const vsKey of due) {
      const entry = this.applied.get(vsKey);
      if (!entry) {
        // gone from the kernel, and its real servers with it
        this.draining.dropVirtualServer(vsKey);
        continue;
      }
      // no longer ours (excludeCIDRs changed live, say): its drains are not ours to end
      const foreign = foreignReason(vsKey, entry.vs, facts);
      if (foreign !== null) {
        this.deps.log.warn(`leaving virtual server ${describeVirtualServer(entry.vs)} alone: not kube-ipvs's (${foreign}); its ${this.draining.realServersOf(vsKey).size} draining real servers are not deleted`, { virtualServer: vsKey });
        this.draining.dropVirtualServer(vsKey);
        continue;
      }
      counts.ipvsReads++;
      const dests = await this.deps.ipvs.listRealServers(entry.vs);
      const weightZero = new Set<string>();
      for (const d of dests) {
        const rsKey = realServerKey(d);
        const state = this.draining.get(vsKey, rsKey);
        if (state === undefined || d.weight !== 0) continue;
        weightZero.add(rsKey);
        const drained = d.activeConns + d.inactConns === 0;
        if (drained || now - state.since >= bound) {
          if (!drained) this.deps.log.warn(`deleting real server ${rsKey} of ${describeVirtualServer(entry.vs)}: still ${d.activeConns} active / ${d.inactConns} inactive connections after ${Math.round(bound / 1000)}s of draining`);
          ops.push({ kind: 'delDest', vs: entry.vs, rs: d });
        }
      }
      // gone (or given weight) behind our back: nothing left to drain
      for (const rsKey of [...this.draining.realServersOf(vsKey).keys()]) if (!weightZero.has(rsKey)) this.draining.stop(vsKey, rsKey);
      this.draining.checked(vsKey, now);
    }
    await this.runBatch(ops, desired, counts);
    for (const op of ops) if (op.kind === 'delDest') this.draining.stop(virtualServerKey(op.vs), realServerKey(op.rs));
    if (this.draining.size > 0) this.runner.retryAfter(interval);
  }

  /**
   * Tells every service port that lost a virtual server to another (DesiredIndex.conflict) with
   * a log line and an Event on its Service, once per conflict: again only when the winner
   * changes or after the conflict ended.
   */
  private reportConflicts(touched: Iterable<string>): void {
    for (const key of touched) {
      const c = this.index.conflict(key);
      const before = this.reportedConflicts.get(key);
      if (!c) {
        if (before) {
          this.reportedConflicts.delete(key);
          this.deps.log.info(`virtual server ${key}: no longer claimed by more than one Service (${before.winner} keeps it)`, { virtualServer: key });
        }
        continue;
      }
      const same = before?.winner === c.winner.key;
      this.reportedConflicts.set(key, { winner: c.winner.key, losers: new Set(c.losers.map((l) => l.key)) });
      for (const loser of c.losers) {
        if (same && before.losers.has(loser.key)) continue;
        const { namespace, name, portName } = parseServicePortKey(loser.key);
        const why = whyWins(c.winner, loser);
        this.deps.log.warn(`Service ${namespace}/${name}: port ${portName || '(unnamed)'} claims virtual server ${key} (its ${loser.kind}), which ${c.winner.key} keeps: ${why}; not programmed for ${namespace}/${name}`, {
          service: `${namespace}/${name}`, virtualServer: key, winner: c.winner.key,
        });
        this.deps.events?.warn({ kind: 'Service', namespace, name }, 'VirtualServerConflict',
          `virtual server ${key} (this Service's ${loser.kind}) is kept by ${c.winner.key}: ${why}; kube-ipvs does not program it for this Service`);
      }
    }
  }

  private reportRefusals(name: string, plans: readonly ServicePortPlan[]): void {
    const refusals = [...this.deps.source.refusals(name), ...plans.flatMap((p) => p.refusals)];
    const text = refusals.map((r) => `${r.field}=${r.value}: ${r.reason}`).join('; ');
    if ((this.reportedRefusals.get(name) ?? '') === text) return;
    if (text) this.reportedRefusals.set(name, text);
    else this.reportedRefusals.delete(name);
    // each reason ends with what kube-ipvs does instead (ignored, a default used, the LB closed,
    // the slice's previous version kept): a generic "the rest is programmed" was wrong for some
    for (const r of refusals) {
      this.deps.log.warn(`${r.kind} ${r.namespace}/${r.name}: refused ${r.field} '${r.value}': ${r.reason}`, {
        object: `${r.namespace}/${r.name}`, field: r.field,
      });
      this.deps.events?.warn({ kind: r.kind, namespace: r.namespace, name: r.name }, r.eventReason ?? 'InvalidField', `kube-ipvs ignored ${r.field} '${r.value}': ${r.reason}`);
    }
  }

  private countNoLocal(p: ServicePortPlan, sign: 1 | -1): void {
    if (p.noLocalEndpoints.internal) this.noLocalEndpoints.internal += sign;
    if (p.noLocalEndpoints.external) this.noLocalEndpoints.external += sign;
  }

  // ---- views (kube-ipvs service list / status / diff): read only ----

  /** The Service port a plan key names, as the trackers hold it now. */
  private servicePortOf(key: string): ServicePort | undefined {
    return this.deps.source.servicePorts(serviceOf(key)).find((sp) => servicePortKey(sp.namespace, sp.name, sp.portName, sp.family) === key);
  }

  /** `kube-ipvs service list`: every desired virtual server with its backends' states. */
  serviceList(): Frontend[] {
    return buildServiceList({
      desired: this.index.virtualServers(),
      applied: this.applied,
      servicePort: (k) => this.servicePortOf(k),
      endpoints: (sp) => this.deps.source.endpoints(sp),
      ids: this.frontendIds,
    });
  }

  /**
   * `kube-ipvs status`, the proxier's part: node, devices, features, syncs and counts. Reads the
   * link names of the NodePort addresses (one rtnetlink dump); changes nothing.
   */
  async status(): Promise<Omit<StatusResponse, 'mode' | 'config'>> {
    const npAddresses = selectNodePortAddresses(this.localAddresses, this.settings.nodePortAddresses, this.node.nodeIPs);
    const names = new Map((await this.deps.link.listLinks()).map((l) => [l.index, l.name]));
    const byLink = new Map<number, string[]>();
    for (const a of this.localAddresses) {
      if (!npAddresses.includes(a.address)) continue;
      const list = byLink.get(a.ifindex) ?? [];
      if (!list.includes(a.address)) list.push(a.address);
      byLink.set(a.ifindex, list);
    }
    const devices: StatusResponse['devices'][number][] = [
      { name: KUBE_IPVS0, addresses: [...this.boundApplied].sort(), role: 'kube-ipvs0' },
      ...[...byLink].sort(([a], [b]) => a - b).map(([ifindex, addresses]) => ({ name: names.get(ifindex) ?? `if${ifindex}`, addresses, role: 'NodePort' as const })),
    ];
    const desired = this.index.virtualServers();
    let persistent = 0;
    for (const d of desired.values()) if (((d.vs.flags ?? 0) & IP_VS_SVC_F.PERSISTENT) !== 0) persistent++;
    let overridden = 0;
    let servicePorts = 0;
    const nodePorts = new Set<number>();
    for (const name of this.plans.keys()) {
      const sps = this.deps.source.servicePorts(name);
      if (sps.some((sp) => sp.scheduler !== '')) overridden++;
      for (const sp of sps) if (sp.nodePort !== 0) nodePorts.add(sp.nodePort);
      servicePorts += this.plans.get(name)!.length;
    }
    const c = this.counts();
    return {
      node: { name: this.node.name, ips: this.node.nodeIPs, zone: this.node.zone, podCIDRs: this.node.podCIDRs },
      families: this.settings.families,
      devices,
      scheduler: { default: this.settings.scheduler || 'rr', overriddenBy: overridden },
      sessionAffinity: { enabled: true, frontends: persistent },
      gracefulTermination: {
        enabled: true,
        protocols: ['TCP'],
        drainTimeoutSeconds: Math.round((this.deps.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS) / 1000),
        checkIntervalSeconds: Math.round((this.deps.drainCheckIntervalMs ?? DEFAULT_DRAIN_CHECK_MS) / 1000),
        draining: c.draining,
      },
      services: {
        clusterIP: true,
        nodePort: { enabled: true, addresses: npAddresses, portsInUse: [...nodePorts].sort((a, b) => a - b) },
        loadBalancer: true,
        externalIPs: true,
      },
      initialized: this.isInitialized(),
      lastFullSync: this.lastFull,
      lastPartialSync: this.lastPartial,
      driftRepairs: this.totals.driftRepairs,
      counts: { services: this.plans.size, servicePorts, ...c },
      totals: {
        syncs: this.totals.syncs, fullSyncs: this.totals.fullSyncs, ipvsWrites: this.totals.ipvsWrites,
        ipvsFailures: this.totals.ipvsFailures, execs: this.totals.execs,
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
  async dryRunFullSync(): Promise<IpvsOp[]> {
    if (!this.isInitialized()) throw new NotSyncedError('Services and EndpointSlices have not been listed yet: nothing is planned');
    const { link, source } = this.deps;
    let dummyIndex: number | undefined;
    try {
      dummyIndex = (await link.getLink(KUBE_IPVS0)).index;
    } catch (e) {
      if (!isNoDevice(e)) throw e;
    }
    const bound = new Set<string>();
    const local: LinkAddress[] = [];
    for (const f of ['ipv4', 'ipv6'] as const) {
      for (const a of await link.listAddresses(f)) (a.ifindex === dummyIndex ? bound.add(a.address) : local.push(a));
    }
    const contexts = this.planContexts(local);
    const index = new DesiredIndex(this.settings.families);
    for (const name of new Set(source.serviceNames())) {
      const { ports, plans } = this.planService(name, contexts);
      index.replace([], plans, ports);
    }
    const desiredVs = index.virtualServers();
    const observed = tableFromDump(await this.readTable({ ipvsReads: 0 }), desiredVs);
    // as classifyTable would, without remembering: a virtual server not seen before is
    // kube-ipvs's only if it created it (or, before the adoption read, a set names it)
    const facts = this.ownershipFacts();
    const first: FirstSightFacts = {
      created: (k) => (this.applied.has(k) && !this.foreign.has(k)) || this.uncertainCreates.has(k),
      ...(this.adopted ? {} : { adoption: { ipsets: this.observedIpsets, bound } }),
    };
    const owned = (e: TableEntry) => {
      const k = virtualServerKey(e.vs);
      if (!ownsVirtualServer(k, e.vs, facts)) return false;
      return this.applied.has(k) || firstSightReason(k, e.vs, first) === null;
    };
    return diffIpvsTable(observed, desiredVs, owned);
  }

  /**
   * Counts for status/metrics: the virtual servers kube-ipvs programs (after a full sync the
   * applied table also holds foreign ones, e.g. keepalived's, which are not counted) and
   * their real servers, draining ones included.
   */
  counts(): { virtualServers: number; realServers: number; draining: number; boundAddresses: number } {
    let vs = 0;
    let rs = 0;
    for (const [k, e] of this.applied) {
      if (!this.index.virtualServer(k)) continue;
      vs++;
      rs += e.size;
    }
    return { virtualServers: vs, realServers: rs, draining: this.draining.size, boundAddresses: this.boundApplied.size };
  }
}
