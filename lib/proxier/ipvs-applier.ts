/**
 * The IPVS side of the proxier: what kube-ipvs believes the kernel holds (`applied`), running
 * ops and bookkeeping their results, the per-Service retries with backoff, and graceful
 * termination — "draining": a real server no longer desired is set to weight 0 and deleted
 * once its connections are gone (or after the drain timeout). Each of those is written here
 * only; the Proxier sequences the calls and hears back what needs a full sync.
 */
import { constants as osConstants } from 'node:os';
import { IpvsOp, IpvsOpResult, VirtualServerEntry } from '../kernel/ipvs/ipvs';
import { listAllViaProc } from '../kernel/ipvs/list-via-proc';
import { ProcIpVsBlocks } from '../kernel/ipvs/parse-proc-ip-vs';
import {
  VirtualServerId,
  VirtualServerSpec,
  describeVirtualServer,
  realServerKey,
  virtualServerKey,
} from '../model/ipvs';
import { DesiredVirtualServer } from '../plan/service-plan';
import { IpvsTable, applyOpsToTable, virtualServerKeyer } from '../reconcile/ipvs-table';
import { opVirtualServerKey } from '../reconcile/diff-ipvs';
import { NetlinkError } from '../errors';
import { DrainingRealServers } from './draining';
import { OwnershipFacts, adoptDrains, foreignReason } from './ownership';
import { ProxierDeps } from './types';
import { OwnershipRecord } from './ownership-record';
import { faultPoint } from './fault-points';

const E = osConstants.errno;

/** The default drainTimeoutMs: a draining real server with connections left is deleted after it. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10 * 60_000;
/** The default drainCheckIntervalMs: how often draining real servers' connection counts are read. */
export const DEFAULT_DRAIN_CHECK_MS = 15_000;
/** virtual servers whose draining real servers one sync reads at most, and the pause before the next batch */
const DRAIN_CHECK_BATCH = 16;
const DRAIN_CHECK_PAUSE_MS = 200;
const RETRY_BASE_MS = 1_000;
/** the retries key of a whole failed sync (socket or exec failure) */
const SYNC_RETRY = '';
const RETRY_MAX_MS = 5 * 60_000;
/** each retry's wait stretched by up to this much at random (client-go's retry.DefaultBackoff Jitter 0.1) */
const RETRY_JITTER = 0.1;

/** The desired virtual server of a key, if any. */
export type DesiredLookup = (vsKey: string) => DesiredVirtualServer | undefined;
/** `execs`: the ownership record's writes (processes) are counted there when given */
type WriteCounts = { ipvsWrites: number; ipvsFailures: number; execs?: number };

/** The Service ("ns/name") of a service port key ("ns/name:port/family"). */
export function serviceOf(servicePortKey: string): string {
  return servicePortKey.slice(0, servicePortKey.indexOf(':'));
}

/** What IpvsApplier works with: the proxier's IPVS, clock, log and drain settings, and callbacks. */
export interface IpvsApplierDeps
  extends
    Pick<
      ProxierDeps,
      'ipvs' | 'readProcIpVs' | 'clock' | 'log' | 'events' | 'drainTimeoutMs' | 'drainCheckIntervalMs' | 'random'
    >,
    Partial<Pick<ProxierDeps, 'ipsets'>> {
  /** ask for a sync within `ms` (the runner's retryAfter) */
  readonly retryAfter: (ms: number) => void;
}

/** A virtual server a guarded create found there already: not kube-ipvs's (NodeContext.markForeign). */
export interface AppearedVirtualServer {
  readonly key: string;
  readonly vs: VirtualServerId;
  /** why it is not kube-ipvs's, in words */
  readonly why: string;
}

/** What a batch of ops left uncertain: `fullSync` when a failure belongs to no Service. */
export interface RunOutcome {
  /** virtual servers a guarded create found already there (foreign) */
  readonly appeared: readonly AppearedVirtualServer[];
  readonly fullSync: boolean;
}

/** Applies IPVS ops and keeps the applied table, retries and drains (see the file comment). */
export class IpvsApplier {
  /** what kube-ipvs believes the kernel holds (owned services only after the first full sync) */
  private appliedTable: IpvsTable = new Map();
  /** real servers set to weight 0, waiting for their connections to end */
  private readonly draining = new DrainingRealServers();
  /** the last /proc/net/ip_vs parse's service blocks: a quiet table is not parsed again */
  private readonly procBlocks = new ProcIpVsBlocks();
  /** service name -> retry state */
  private readonly retries = new Map<string, { attempt: number; at: number }>();
  /** Services whose ops the kernel refused in the current sync */
  private readonly failedThisSync = new Set<string>();
  /** virtual servers whose newService answer a socket failure lost: kube-ipvs may have created them */
  private readonly uncertainCreates = new Set<string>();
  /** foreign virtual servers whose weight-0 real servers were said to be left alone (vsKey -> what was said) */
  private reportedForeignDrains = new Map<string, string>();
  private warnedProc = false;
  /** kube-ipvs's ownership record, written around every batch of ops (ownership-record.ts) */
  readonly record: OwnershipRecord;

  constructor(private readonly deps: IpvsApplierDeps) {
    this.record = new OwnershipRecord(deps);
  }

  get applied(): IpvsTable {
    return this.appliedTable;
  }

  get drainingCount(): number {
    return this.draining.size;
  }

  get drainTimeoutMs(): number {
    return this.deps.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  }

  get drainCheckIntervalMs(): number {
    return this.deps.drainCheckIntervalMs ?? DEFAULT_DRAIN_CHECK_MS;
  }

  /** The whole IPVS table; counts its netlink reads. */
  async readTable(counts: { ipvsReads: number }): Promise<VirtualServerEntry[]> {
    const { ipvs, readProcIpVs } = this.deps;
    if (!readProcIpVs) {
      const dump = await ipvs.listAll();
      counts.ipvsReads += 1 + dump.length;
      return dump;
    }
    const listing = await listAllViaProc(ipvs, readProcIpVs, { tunnelDetails: false, blocks: this.procBlocks });
    // the service dump (and, when /proc was unreadable, GET_INFO), plus the dest dumps
    counts.ipvsReads += (listing.source === 'proc' ? 1 : 2) + listing.destDumps;
    if (listing.source !== 'proc' && !this.warnedProc) {
      this.warnedProc = true;
      this.deps.log.warn(
        '/proc/net/ip_vs could not be read or parsed: full syncs read every real server over netlink (one dump per virtual server)',
      );
    }
    return listing.entries;
  }

  /** A full sync read the kernel: that is what is applied now. */
  replaceApplied(observed: IpvsTable): void {
    this.appliedTable = observed;
  }

  /** Whether kube-ipvs created this virtual server (or may have: its answer was lost). */
  created(vsKey: string, isForeign: (vsKey: string) => boolean): boolean {
    return (this.appliedTable.has(vsKey) && !isForeign(vsKey)) || this.uncertainCreates.has(vsKey);
  }

  /** The full read classified every virtual server: the lost creates are told apart now. */
  forgetUncertainCreates(): void {
    this.uncertainCreates.clear();
  }

  // ---- retries ----

  /** A sync starts: the Services whose retry is due at `now`. */
  beginSync(now: number): string[] {
    this.failedThisSync.clear();
    return [...this.retries].filter(([svc, r]) => svc !== SYNC_RETRY && r.at <= now).map(([svc]) => svc);
  }

  /** A retried Service that went through (or went away) needs no more retries. */
  settleRetries(due: readonly string[]): void {
    for (const svc of due) if (!this.failedThisSync.has(svc)) this.retries.delete(svc);
  }

  /** The whole sync went through. */
  syncSucceeded(): void {
    this.retries.delete(SYNC_RETRY);
  }

  /** The whole sync failed: the delay before the next try. */
  syncFailed(): number {
    return this.nextBackoff(SYNC_RETRY);
  }

  private nextBackoff(key: string): number {
    const prev = this.retries.get(key);
    const attempt = (prev?.attempt ?? -1) + 1;
    // jittered as client-go's wait.Jitter: Services (and nodes) that failed together do not retry in step
    const base = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** attempt);
    const delay = Math.round(base * (1 + RETRY_JITTER * (this.deps.random ?? Math.random)()));
    this.retries.set(key, { attempt, at: this.deps.clock.now() + delay });
    return delay;
  }

  // ---- running ops ----

  /**
   * Runs ops; returns the virtual servers found to exist already when created (`guardNew`: a
   * partial sync's creates go first, alone; one the kernel refuses with EEXIST appeared since
   * the last full read, is foreign, and none of the other ops touch it).
   */
  async run(
    ops: readonly IpvsOp[],
    desired: DesiredLookup,
    counts: WriteCounts,
    guardNew = false,
    facts?: OwnershipFacts,
  ): Promise<RunOutcome> {
    // the last word on ownership, for every sync: no op on a virtual server that is not
    // kube-ipvs's (inside excludeCIDRs, fwmark, foreign) is sent, whatever diff made it
    if (facts) ops = this.withoutForeign(ops, facts);
    // recorded before the kernel has them (with what a full sync staged): a crash after the
    // ops leaves them owned
    // (room: what the table holds and what the ops create)
    const newCount = ops.reduce((n, op) => n + (op.kind === 'newService' ? 1 : 0), 0);
    const applied = (vs: VirtualServerSpec) => this.appliedTable.get(virtualServerKey(vs))?.vs;
    await this.record.before(ops, applied, this.appliedTable.size + newCount, counts);
    if (!guardNew || !ops.some((op) => op.kind === 'newService')) {
      return { appeared: [], fullSync: (await this.runBatch(ops, desired, counts)).fullSync };
    }
    const creates = ops.filter((op) => op.kind === 'newService');
    const first = await this.runBatch(creates, desired, counts, true);
    const appeared = new Set(first.appeared.map((a) => a.key));
    const rest = ops.filter((op) => op.kind !== 'newService' && !appeared.has(opVirtualServerKey(op) ?? ''));
    const second = await this.runBatch(rest, desired, counts);
    return { appeared: first.appeared, fullSync: first.fullSync || second.fullSync };
  }

  /** `ops` but those on a virtual server `facts` says is not kube-ipvs's (each said once per run). */
  private withoutForeign(ops: readonly IpvsOp[], facts: OwnershipFacts): readonly IpvsOp[] {
    let kept: IpvsOp[] | undefined;
    const said = new Set<string>();
    // an op's vs is shared by every op on that virtual server (a cold start's 100,000 real
    // servers): its key and verdict are made once per run of them
    let lastVs: VirtualServerId | undefined;
    let key = '';
    let why: string | null = null;
    ops.forEach((op, i) => {
      const vs = 'vs' in op ? op.vs : undefined;
      if (vs !== lastVs) {
        lastVs = vs;
        key = vs ? virtualServerKey(vs) : '';
        why = vs ? foreignReason(key, vs, facts) : null;
      }
      if (why === null) {
        kept?.push(op);
        return;
      }
      kept ??= ops.slice(0, i);
      if (said.has(key)) return;
      said.add(key);
      this.deps.log.warn(
        `leaving virtual server ${describeVirtualServer(vs!)} alone: not kube-ipvs's (${why}); its ${op.kind} is not sent`,
        {
          virtualServer: key,
          op: op.kind,
        },
      );
    });
    return kept ?? ops;
  }

  /** One ipvs.run of `ops`; `creates`: a create refused with EEXIST found a foreign virtual server (returned). */
  private async runBatch(
    ops: readonly IpvsOp[],
    desired: DesiredLookup,
    counts: WriteCounts,
    creates = false,
  ): Promise<RunOutcome> {
    const appeared: AppearedVirtualServer[] = [];
    let fullSync = false;
    if (ops.length === 0) return { appeared, fullSync };
    counts.ipvsWrites += ops.length;
    let results: IpvsOpResult[];
    try {
      faultPoint('IPVS ops');
      results = await this.deps.ipvs.run(ops); // throws only for a socket failure
    } catch (e) {
      // what went through is unknown: a virtual server found at the next full read may be one
      // of these, kube-ipvs's own
      for (const op of ops) if (op.kind === 'newService') this.uncertainCreates.add(virtualServerKey(op.vs));
      throw e;
    }
    applyOpsToTable(this.appliedTable, ops, results);
    const now = this.deps.clock.now();
    const failedServices = new Map<string, NetlinkError>();
    const keyOf = virtualServerKeyer();
    ops.forEach((op, i) => {
      const r = results[i] as IpvsOpResult;
      const vsKey = 'vs' in op && op.vs ? keyOf(op.vs) : '';
      if (r.ok) {
        this.trackDrain(op, vsKey, now);
        return;
      }
      if (creates && op.kind === 'newService' && r.error.errno === E.EEXIST && !this.appliedTable.has(vsKey)) {
        // not in the table kube-ipvs read and not created by it: someone else made it since
        appeared.push({
          key: vsKey,
          vs: op.vs,
          why: 'it appeared in the kernel after kube-ipvs last read the table, and kube-ipvs did not create it',
        });
        return;
      }
      counts.ipvsFailures++;
      const owner = desired(vsKey)?.owner;
      const service = owner ? serviceOf(owner) : undefined;
      // a real server refused because its virtual server was refused first says nothing new
      if (
        r.error.errno === E.ESRCH &&
        (op.kind === 'newDest' || op.kind === 'setDest') &&
        service &&
        failedServices.has(service)
      )
        return;
      this.deps.log.error(r.error.message, { service: owner, op: op.kind, errno: r.error.errnoName ?? r.error.errno });
      if (service) {
        if (!failedServices.has(service)) failedServices.set(service, r.error);
      } else {
        fullSync = true;
      }
    });
    for (const [service, error] of failedServices) {
      const delay = this.nextBackoff(service);
      const [namespace, name] = service.split('/') as [string, string];
      this.deps.events?.warn(
        { kind: 'Service', namespace, name },
        'FailedToSyncIPVS',
        `${error.message}; retrying in ${Math.round(delay / 1000)}s`,
      );
      this.deps.retryAfter(delay);
    }
    for (const svc of failedServices.keys()) this.failedThisSync.add(svc);
    // forgotten once the kernel no longer has them
    await this.record.after(ops, results, counts);
    return { appeared, fullSync };
  }

  /** An op went through: a real server set to weight 0 starts draining; one given weight, re-created or deleted stops. */
  private trackDrain(op: IpvsOp, vsKey: string, now: number): void {
    if (op.kind === 'setDest' && op.rs.weight === 0) this.draining.start(vsKey, realServerKey(op.rs), now);
    else if (op.kind === 'setDest' || op.kind === 'delDest' || op.kind === 'newDest') {
      // (a cold start's 100,000 new real servers drain nowhere)
      if (this.draining.hasVirtualServer(vsKey)) this.draining.stop(vsKey, realServerKey(op.rs));
    } else if (op.kind === 'delService') this.draining.dropVirtualServer(vsKey);
  }

  // ---- draining ----

  /**
   * After a kernel read: the draining real servers are exactly the weight-0 TCP ones that are
   * not desired, of virtual servers kube-ipvs owns (a restarted kube-ipvs adopts the drains its
   * predecessor started). A foreign one's weight-0 real servers are left alone, said once.
   */
  adoptDraining(desired: DesiredLookup, facts: OwnershipFacts): void {
    const { drains, foreign } = adoptDrains(this.appliedTable, desired, facts);
    this.draining.replaceAll(drains, this.deps.clock.now());
    const seen = new Map<string, string>();
    for (const f of foreign) {
      const text = `${f.rsKeys.join(',')} ${f.reason}`;
      seen.set(f.vsKey, text);
      if (this.reportedForeignDrains.get(f.vsKey) === text) continue;
      const vs = this.appliedTable.get(f.vsKey)!.vs;
      this.deps.log.info(
        `leaving virtual server ${describeVirtualServer(vs)} alone: not kube-ipvs's (${f.reason}); its weight-0 real servers ${f.rsKeys.join(', ')} are not drained`,
        {
          virtualServer: f.vsKey,
          realServers: f.rsKeys,
        },
      );
    }
    this.reportedForeignDrains = seen;
  }

  /**
   * Deletes draining real servers (weight 0, no longer desired) whose connections are gone
   * (TCP: ActiveConn + InactConn = 0), or that drained longer than the bound. Reads only the
   * virtual servers that have one, at most every drainCheckInterval.
   */
  async checkDraining(
    desired: DesiredLookup,
    counts: { ipvsReads: number; ipvsWrites: number; ipvsFailures: number },
    facts: OwnershipFacts,
  ): Promise<RunOutcome> {
    const now = this.deps.clock.now();
    const interval = this.drainCheckIntervalMs;
    const none: RunOutcome = { appeared: [], fullSync: false };
    if (this.draining.size === 0) return none;
    // a real server is first looked at one interval after it started draining (kube-proxy
    // checks once a minute), then one interval after each look; bounded per sync, so a wave
    // of terminations does not delay the next Service change
    const { due, more, nextDue } = this.draining.due(now, interval, DRAIN_CHECK_BATCH);
    if (due.length === 0) {
      if (nextDue < Infinity) this.deps.retryAfter(nextDue - now);
      return none;
    }
    if (more) this.deps.retryAfter(DRAIN_CHECK_PAUSE_MS);
    const ops: IpvsOp[] = [];
    for (const vsKey of due) ops.push(...(await this.drainedOf(vsKey, now, counts, facts)));
    const outcome = await this.runBatch(ops, desired, counts);
    for (const op of ops) if (op.kind === 'delDest') this.draining.stop(virtualServerKey(op.vs), realServerKey(op.rs));
    if (this.draining.size > 0) this.deps.retryAfter(interval);
    return outcome;
  }

  /** Reads one virtual server's draining real servers: the deletes of those drained (or past the bound). */
  private async drainedOf(
    vsKey: string,
    now: number,
    counts: { ipvsReads: number },
    facts: OwnershipFacts,
  ): Promise<IpvsOp[]> {
    const entry = this.appliedTable.get(vsKey);
    if (!entry) {
      // gone from the kernel, and its real servers with it
      this.draining.dropVirtualServer(vsKey);
      return [];
    }
    // no longer ours (excludeCIDRs changed live, say): its drains are not ours to end
    const foreign = foreignReason(vsKey, entry.vs, facts);
    if (foreign !== null) {
      this.deps.log.warn(
        `leaving virtual server ${describeVirtualServer(entry.vs)} alone: not kube-ipvs's (${foreign}); its ${this.draining.realServersOf(vsKey).size} draining real servers are not deleted`,
        { virtualServer: vsKey },
      );
      this.draining.dropVirtualServer(vsKey);
      return [];
    }
    const bound = this.drainTimeoutMs;
    counts.ipvsReads++;
    const dests = await this.deps.ipvs.listRealServers(entry.vs);
    const ops: IpvsOp[] = [];
    const weightZero = new Set<string>();
    for (const d of dests) {
      const rsKey = realServerKey(d);
      const state = this.draining.get(vsKey, rsKey);
      if (state === undefined || d.weight !== 0) continue;
      weightZero.add(rsKey);
      const drained = d.activeConns + d.inactConns === 0;
      if (drained || now - state.since >= bound) {
        if (!drained)
          this.deps.log.warn(
            `deleting real server ${rsKey} of ${describeVirtualServer(entry.vs)}: still ${d.activeConns} active / ${d.inactConns} inactive connections after ${Math.round(bound / 1000)}s of draining`,
          );
        ops.push({ kind: 'delDest', vs: entry.vs, rs: d });
      }
    }
    // gone (or given weight) behind our back: nothing left to drain
    for (const rsKey of [...this.draining.realServersOf(vsKey).keys()])
      if (!weightZero.has(rsKey)) this.draining.stop(vsKey, rsKey);
    this.draining.checked(vsKey, now);
    return ops;
  }

  /** The virtual servers `wanted` (kube-ipvs's; the applied table also holds foreign ones) and their real servers. */
  countApplied(wanted: (vsKey: string) => boolean): { virtualServers: number; realServers: number } {
    let vs = 0;
    let rs = 0;
    for (const [k, e] of this.appliedTable) {
      if (!wanted(k)) continue;
      vs++;
      rs += e.size;
    }
    return { virtualServers: vs, realServers: rs };
  }
}
