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
 *    kube-ipvs owns (ownership.ts, full-sync.ts).
 *
 * This class only sequences a sync's phases and decides when a full one is due; each part
 * owns its state (ipvs-applier, node-context, desired-state, bound-addresses, conntrack-cleanup,
 * reports, nftables-leftovers) and reports back what needs a full sync.
 *
 * Nothing is ever flushed: a refused op is logged with the op and its Service, the Service is
 * retried with backoff, and every other Service stays as programmed.
 */
import { IpvsOp } from '../kernel/ipvs/ipvs';
import { diffVirtualServer } from '../reconcile/diff-ipvs';
import { FrontendRow, RefusedFrontend, StatusResponse } from '../model/views';
import { BoundedFrequencyRunner } from './runner';
import { FrontendIds } from './service-list';
import { NodeContext } from './node-context';
import { IpvsApplier } from './ipvs-applier';
import { BoundAddresses } from './bound-addresses';
import { ConntrackCleanup } from './conntrack-cleanup';
import { NftablesLeftovers } from './nftables-leftovers';
import { RefusalReports } from './refusal-reports';
import { DesiredState } from './desired-state';
import { SyncFigures, SyncRun, newSyncRun } from './sync-run';
import { syncNetfilter } from './netfilter-sync';
import { opKey } from '../reconcile/diff-ipvs';
import { Netfilter, fullSyncOps } from './full-sync';
import { ProxierSnapshot, dryRunFullSync, serviceList, status } from './views';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { ServiceTracker } from '../tracker/service-tracker';
import { EndpointSliceTracker } from '../tracker/endpoint-slice-tracker';
import { TrackerSource } from '../tracker/tracker-source';
import { EndpointTrigger, NodeState, PartDeps, ProxierDeps, ProxierSettings, SyncResult } from './types';

/** The proxier's types (types.ts), for importers of proxier.ts. */
export type {
  EventSink,
  NodeState,
  Planner,
  ProxierDeps,
  ProxierSettings,
  ProxySource,
  SyncCounts,
  SyncPhase,
  SyncPhases,
  SyncResult,
} from './types';

/** The EndpointSlice controller's annotation kube-proxy measures network programming latency from. */
const LAST_CHANGE_TRIGGER_TIME = 'endpoints.kubernetes.io/last-change-trigger-time';

/**
 * The proxy's sync loop, partial and full syncs (see the file comment). It is the informers'
 * Service and EndpointSlice handler, as kube-proxy's Proxier: each event goes to its tracker,
 * and a change schedules a sync.
 */
export class Proxier {
  /** Services, as kube-proxy's ServiceChangeTracker */
  readonly services = new ServiceTracker();
  /** every Service's endpoints from its EndpointSlices, as kube-proxy's EndpointsChangeTracker */
  readonly slices: EndpointSliceTracker;
  /**
   * the trigger time of each EndpointSlice's oldest change no sync has taken in yet, by
   * "ns/name": bounded by the slices there are, however many updates come before a sync (one
   * entry per update grew without bound until the Services were first listed: 200,000 updates,
   * 200,000 entries); the oldest is the one the latency is measured from
   */
  private triggeredAt = new Map<string, EndpointTrigger>();
  private servicesSynced = false;
  private endpointSlicesSynced = false;
  private listedLogged = false;
  private readonly runner: BoundedFrequencyRunner;
  /** the node, its addresses, the plan contexts and what is not kube-ipvs's */
  private readonly nodeCtx: NodeContext;
  /** applied table, ops, retries, draining */
  private readonly applier: IpvsApplier;
  private readonly bound: BoundAddresses;
  private readonly conntrack: ConntrackCleanup;
  private readonly reports: RefusalReports;
  /** kube-proxy's nftables-mode tables, removed after the first full sync that succeeded */
  private readonly nftLeftovers: NftablesLeftovers | undefined;

  /** plans, their index, health check ports, no-local counts */
  private readonly desired: DesiredState;

  /** the next sync reads the kernel: written here only (the parts report what needs one) */
  private needFullSync = true;
  private replanAll = true;
  private lastFullSyncAt = -Infinity;
  /** frontend keys to re-guard at the next sync: a foreign virtual server a Service claims is gone */
  private readonly reguardNext = new Set<string>();

  /** timestamps for health and metrics: the last sync that went through (kube-proxy's
   * healthz Updated()), the oldest change queued since (QueuedUpdate()) */
  lastSyncAt = 0;
  lastQueuedAt = 0;
  /** a full sync went through after the Services and EndpointSlices were listed */
  initialSyncDone = false;
  /** totals and the last syncs (status, metrics) */
  private readonly figures = new SyncFigures();
  private readonly frontendIds = new FrontendIds();

  /** the deps with the trackers, as the parts read them */
  private readonly deps: PartDeps;

  constructor(proxierDeps: ProxierDeps, settings: ProxierSettings, node: NodeState) {
    this.slices = new EndpointSliceTracker(node.name);
    const deps: PartDeps = { ...proxierDeps, source: new TrackerSource(this.services, this.slices) };
    this.deps = deps;
    this.nodeCtx = new NodeContext(deps, settings, node);
    this.applier = new IpvsApplier({ ...deps, retryAfter: (ms) => this.runner.retryAfter(ms) });
    this.bound = new BoundAddresses(deps);
    this.conntrack = new ConntrackCleanup(deps);
    this.reports = new RefusalReports(deps);
    this.nftLeftovers = deps.nftables ? new NftablesLeftovers({ nftables: deps.nftables, log: deps.log }) : undefined;
    this.desired = new DesiredState(
      {
        planService: (service) => this.nodeCtx.planService(service),
        facts: this.nodeCtx.frontendFacts,
        replanned: (before, after) => this.conntrack.replanned(before, after),
        refused: (name, refusals) => this.reports.refusalsOf(name, refusals),
      },
      settings.families,
    );
    this.runner = new BoundedFrequencyRunner(() => this.syncProxyRules().then(() => undefined), {
      minIntervalMs: settings.minSyncPeriodMs,
      maxIntervalMs: settings.syncPeriodMs,
      burst: 2,
      clock: deps.clock,
      ended: () => deps.syncEnded?.(),
    });
  }

  // ---- event side: the informers' handlers (kube-proxy's OnServiceAdd ... call Sync()) ----

  onServiceAdd(service: V1Service): void {
    this.changed('service', this.services.onAdd(service));
  }

  onServiceUpdate(old: V1Service, service: V1Service): void {
    this.changed('service', this.services.onUpdate(old, service));
  }

  onServiceDelete(service: V1Service): void {
    this.changed('service', this.services.onDelete(service));
  }

  onEndpointSliceAdd(slice: V1EndpointSlice): void {
    this.triggered(slice);
    this.changed('endpoints', this.slices.onAdd(slice));
  }

  onEndpointSliceUpdate(old: V1EndpointSlice, slice: V1EndpointSlice): void {
    this.triggered(slice);
    this.changed('endpoints', this.slices.onUpdate(old, slice));
  }

  onEndpointSliceDelete(slice: V1EndpointSlice): void {
    this.changed('endpoints', this.slices.onDelete(slice));
  }

  /** A tracker reported the Services an event changed: count them and sync. */
  private changed(kind: 'service' | 'endpoints', names: ReadonlySet<string>): void {
    if (names.size === 0) return;
    this.deps.onChanges?.(kind, names.size);
    this.sync();
  }

  /** Notes a slice's trigger time, for the network programming latency of the sync that takes it in. */
  private triggered(slice: V1EndpointSlice): void {
    const at = Date.parse(slice.metadata?.annotations?.[LAST_CHANGE_TRIGGER_TIME] ?? '');
    if (!Number.isFinite(at)) return;
    const key = `${slice.metadata?.namespace ?? ''}/${slice.metadata?.name ?? ''}`;
    const was = this.triggeredAt.get(key);
    const type = slice.addressType;
    const family = type === 'IPv4' ? 'ipv4' : type === 'IPv6' ? 'ipv6' : undefined;
    if (was === undefined || at < was.atMs) this.triggeredAt.set(key, { atMs: at, family });
  }

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
    const same = JSON.stringify(node) === JSON.stringify(this.nodeCtx.node);
    this.nodeCtx.setNode(node);
    if (!same) {
      // the plan contexts carry the node's zone and IPs: the re-plan must see the new ones
      this.nodeCtx.rebuildContexts();
      this.replanAll = true;
      this.sync();
    }
  }

  updateSettings(settings: ProxierSettings): void {
    if (settings.families.join() !== this.nodeCtx.settings.families.join()) {
      this.desired.reset(settings.families);
      this.replanAll = true;
    }
    this.nodeCtx.setSettings(settings);
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

  /** Whether a sync is running now. */
  get syncing(): boolean {
    return this.runner.inProgress;
  }

  /** Resolves once no sync is running (tests, shutdown). */
  idle(): Promise<void> {
    return this.runner.idle();
  }

  private startIfReady(): void {
    if (!this.isInitialized()) return;
    if (!this.listedLogged) {
      // the start-up phase the benches read (daemon-latency.ts, rollout-starts.ts): both lists
      // done, before the first sync; ms since the process started
      this.listedLogged = true;
      this.deps.log.info('informers synced', { sinceStartMs: Math.round(performance.now()) });
    }
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
    // the watches take no event in until the sync is over (intake-gate.ts)
    const gate = this.deps.intakeGate;
    gate?.hold();
    try {
      return await this.syncRules();
    } finally {
      gate?.release();
    }
  }

  /** syncProxyRules' sync, with the intake held. */
  private async syncRules(): Promise<SyncResult> {
    const run = newSyncRun(
      this.deps.clock,
      (start) => this.needFullSync || start - this.lastFullSyncAt >= this.nodeCtx.settings.syncPeriodMs,
    );
    let succeeded = false;
    try {
      if (run.full) {
        const seen = await this.nodeCtx.observe(run.counts);
        this.bound.observed(seen.dummyIndex, seen.bound);
        if (seen.contextsChanged) this.replanAll = true;
        run.lap('node');
      }
      this.planPhase(run);
      await this.applyPhase(run);
      // 4. the HealthCheckNodePort servers (whole maps each time: a port that could not be
      // opened is retried; kube-proxy feeds them after the rules are applied, as here)
      const sink = this.deps.serviceHealth;
      if (sink) {
        sink.syncServices(this.desired.health.ports);
        sink.syncEndpoints(this.desired.health.localEndpoints);
      }
      run.lap('healthCheck');
      // 5. draining real servers whose connections are gone
      const drained = await this.applier.checkDraining(
        this.desired.virtualServer,
        run.counts,
        this.nodeCtx.ownershipFacts(),
      );
      if (drained.fullSync) this.needFullSync = true;
      run.lap('draining');
      if (run.full) {
        this.lastFullSyncAt = run.start;
        this.needFullSync = false;
        this.initialSyncDone = true;
      }
      this.applier.syncSucceeded();
      succeeded = true;
    } catch (e) {
      // socket failure, exec failure...: what was applied is uncertain, so read it all next time
      this.needFullSync = true;
      for (const ipset of new Set(Object.values(this.deps.ipsets))) ipset?.invalidate();
      const delay = this.applier.syncFailed();
      this.deps.log.error(`sync failed, full sync in ${delay} ms: ${e instanceof Error ? e.message : String(e)}`, {
        code: (e as { code?: string }).code,
      });
      this.runner.retryAfter(delay);
    }
    const result = await this.endRun(run, succeeded);
    // after the sync and its figures (its one dump and one transaction are no sync's work):
    // everything kube-ipvs programs is in place, so kube-proxy's nftables DNAT may go
    if (succeeded && run.full) await this.nftLeftovers?.afterFullSync();
    return result;
  }

  /** Re-plans the changed Services (every one when the contexts changed); fills run.touched. */
  private planPhase(run: SyncRun): void {
    run.triggered = [...this.triggeredAt.values()];
    this.triggeredAt.clear();
    run.dueRetries = this.applier.beginSync(run.start);
    // a full sync re-reads the kernel; the plans are re-made only when what they depend on
    // beyond the Service and its endpoints changed (settings, the node, its addresses): a
    // Service whose objects did not change plans the same (planServicePort is pure)
    const replanEverything = this.replanAll;
    // the one read of the trackers: the changed Services (and those to retry), or every one
    // (and those planned, which may be gone)
    const services = this.deps.source.take(
      replanEverything ? this.desired.plans.keys() : run.dueRetries,
      replanEverything,
    );
    this.replanAll = false;
    if (replanEverything) this.desired.health.clear();
    // what withholds frontends first (a full re-plan follows a change of excludeCIDRs): the
    // Services re-planned below are told their refusals with it
    if (replanEverything) this.desired.reguard(undefined, run.touched, true);
    else if (this.reguardNext.size > 0) this.desired.reguard(this.reguardNext, run.touched);
    this.reguardNext.clear();
    for (const [name, service] of services) this.desired.replan(name, service, run.touched);
    run.replanned = services.size;
    this.reports.conflictsOf(this.desired.index, run.touched);
    run.lap('plan');
  }

  /**
   * 1. the ipsets, then iptables, whose rules name the sets (one `ipset restore` and one
   * `iptables-restore` per family at most, processes of their own): they depend on the plan
   * alone, so they start once it is made and run beside the IPVS read, the IPVS writes and
   * the binds. A full sync whose plan wants a virtual server of unknown ownership (not in
   * the table kube-ipvs knows: the adoption read, a new Service) reads the table first: a
   * foreign one there is refused before any ipset entry names it (ownership reads the sets
   * as the node observation found them, not as this sync leaves them).
   * 2. IPVS: the smallest set of ops. 3. addresses on kube-ipvs0.
   */
  private async applyPhase(run: SyncRun): Promise<void> {
    let netfilterDone: Promise<{ error: unknown } | undefined> | undefined;
    const startNetfilter = () => (netfilterDone ??= syncNetfilter(this.deps, this.desired.index, this.nodeCtx, run));
    let netfilterFailure: { error: unknown } | undefined;
    try {
      const wantsUnknown =
        run.full && this.nodeCtx.wantsUnknown(this.desired.index.virtualServers(), (k) => this.applier.applied.has(k));
      // beside the IPVS work; it never rejects, and the finally below awaits it (netfilterDone)
      if (!wantsUnknown) void startNetfilter();
      const ops = run.full
        ? await this.fullSyncOps(run, { start: startNetfilter, started: () => netfilterDone !== undefined })
        : this.partialSyncOps(run, startNetfilter);
      run.lap('plan');
      // a partial sync has not read the table since the last full sync: a virtual server it
      // creates may have appeared since (EEXIST), and then is foreign, not to be filled
      const outcome = await this.applier.run(
        ops,
        this.desired.virtualServer,
        run.counts,
        !run.full,
        this.nodeCtx.ownershipFacts(),
      );
      if (outcome.fullSync) this.needFullSync = true;
      if (outcome.appeared.length > 0) {
        // foreign from now on: its claimants are refused it now (no kube-ipvs0 address below);
        // the sets the netfilter sync in flight wrote for it are withdrawn by the next sync
        for (const a of outcome.appeared) this.nodeCtx.markForeign(a.key, a.vs, a.why);
        this.desired.reguard(
          outcome.appeared.map((a) => a.key),
          run.touched,
        );
        this.reports.conflictsOf(this.desired.index, run.touched);
        this.runner.run();
      }
      run.lap('ipvsWrite');
      this.applier.settleRetries(run.dueRetries);
      // 3. addresses on kube-ipvs0 (after the virtual servers exist, as kube-proxy binds)
      // (a partial sync that changed no VIP skips the O(all VIPs) comparison)
      if (this.desired.index.takeAddressesChanged() || run.full) {
        if (await this.bound.sync(this.desired.index.boundAddresses(), run.counts)) this.needFullSync = true;
      }
      run.lap('addresses');
    } finally {
      // even when the IPVS read or writes failed: no restore may run on into the next sync
      netfilterFailure = netfilterDone === undefined ? undefined : await netfilterDone;
      run.lap('netfilterWait');
    }
    if (netfilterFailure) throw netfilterFailure.error;
  }

  /** A full sync's IPVS ops (full-sync.ts); drift is counted and logged here. */
  private async fullSyncOps(run: SyncRun, netfilter: Netfilter): Promise<IpvsOp[]> {
    const parts = { applier: this.applier, node: this.nodeCtx, desired: this.desired, reports: this.reports };
    return fullSyncOps(parts, run, netfilter, {
      later: (keys, rerun) => {
        for (const k of keys) this.reguardNext.add(k);
        if (this.reguardNext.size > 0 || rerun) this.runner.run();
      },
      tracked: this.lastFullSyncAt > -Infinity,
      drift: (drift) => {
        this.totals.driftRepairs++;
        run.drift = true;
        this.deps.log.warn(
          `full sync: the kernel differed from what kube-ipvs applied; ${drift.length} IPVS changes repair it`,
          {
            ops: drift.length,
            first: drift.slice(0, 5).map(opKey),
          },
        );
      },
    });
  }

  /**
   * A partial sync's IPVS ops: each touched virtual server diffed against what was applied;
   * the deleted virtual servers last, as in a full sync (a re-plan touches the old keys first):
   * DEL_SERVICE puts every real server of it into the kernel's dest trash, which each NEW_DEST
   * after it walks (a Service port or ClusterIP change re-adds them all under the new key).
   */
  private partialSyncOps(run: SyncRun, startNetfilter: () => unknown): IpvsOp[] {
    startNetfilter();
    const ops: IpvsOp[] = [];
    const deletes: IpvsOp[] = [];
    const applied = this.applier.applied;
    for (const k of run.touched) {
      // (an op on a virtual server inside excludeCIDRs, or foreign, is never sent: applier.run)
      const want = this.desired.virtualServer(k);
      diffVirtualServer(applied.get(k), want, want ? ops : deletes);
    }
    return deletes.length > 0 ? ops.concat(deletes) : ops;
  }

  /** After the IPVS changes: the stale conntrack entries, the result and the figures. */
  private async endRun(run: SyncRun, succeeded: boolean): Promise<SyncResult> {
    const { clock } = this.deps;
    const { full, counts } = run;
    // after the IPVS changes (a flow deleted before its real server would be re-created to it);
    // even after a failed sync, for what was applied
    let conntrackDurationMs: number | undefined;
    if (this.conntrack.hasPending) {
      const ctStart = clock.now();
      run.restartLap();
      this.totals.conntrackDeleted += await this.conntrack.clean(this.desired.index.virtualServers().values(), counts);
      conntrackDurationMs = clock.now() - ctStart;
      run.lap('conntrack');
    }
    const result: SyncResult = {
      full,
      replanned: run.replanned,
      ...counts,
      ...(conntrackDurationMs !== undefined ? { conntrackDurationMs } : {}),
      durationMs: clock.now() - run.start,
      phasesMs: run.phasesMs,
    };
    // a failed sync leaves the queued changes pending: /livez fails if they stay so too long
    if (succeeded) this.lastSyncAt = clock.now();
    this.figures.record(result, this.lastSyncAt);
    this.deps.log.log(
      full || counts.ipvsWrites > 0 || counts.execs > 0 || counts.conntrackOps > 0 ? 'info' : 'verbose',
      'sync done',
      { ...result },
    );
    this.deps.onSync?.(result, run.drift, run.triggered);
    return result;
  }

  get totals(): SyncFigures['totals'] {
    return this.figures.totals;
  }

  get lastResult(): SyncResult | undefined {
    return this.figures.lastResult;
  }

  /** service ports with a Local traffic policy and no local endpoint (kubeproxy_sync_proxy_rules_no_local_endpoints_total) */
  get noLocalEndpoints(): { readonly internal: number; readonly external: number } {
    return this.desired.noLocalEndpoints;
  }

  // ---- views (kube-ipvs service list / status / diff): read only, views.ts ----

  private snapshot(): ProxierSnapshot {
    // getters: a view that awaits reads the figures as they are when it reads them
    const self = this;
    return {
      node: this.nodeCtx,
      applier: this.applier,
      bound: this.bound,
      source: this.deps.source,
      link: this.deps.link,
      frontendIds: this.frontendIds,
      figures: this.figures,
      get index() {
        return self.desired.index;
      },
      get plans() {
        return self.desired.plans;
      },
      get initialized() {
        return self.isInitialized();
      },
      counts: () => this.counts(),
      refused: () => this.reports.refusedFrontends(),
    };
  }

  /** The frontends Services asked for that kube-ipvs does not program now (status, service list, metrics). */
  refusedFrontends(): RefusedFrontend[] {
    return this.reports.refusedFrontends();
  }

  /** `kube-ipvs service list`: every desired virtual server with its backends' states. */
  serviceList(): FrontendRow[] {
    return serviceList(this.snapshot());
  }

  /** `kube-ipvs status`, the proxier's part (views.ts). */
  status(): Promise<Omit<StatusResponse, 'mode' | 'config'>> {
    return status(this.snapshot());
  }

  /** `kube-ipvs diff`: the IPVS ops a full sync would run now (views.ts); changes nothing. */
  dryRunFullSync(): Promise<IpvsOp[]> {
    return dryRunFullSync(this.snapshot());
  }

  /**
   * Counts for status/metrics: the virtual servers kube-ipvs programs (after a full sync the
   * applied table also holds foreign ones, e.g. keepalived's, which are not counted) and
   * their real servers, draining ones included.
   */
  counts(): { virtualServers: number; realServers: number; draining: number; boundAddresses: number } {
    const applied = this.applier.countApplied((k) => this.desired.index.virtualServer(k) !== undefined);
    return { ...applied, draining: this.applier.drainingCount, boundAddresses: this.bound.size };
  }
}
