/**
 * The daemon's watches of Services, EndpointSlices and its own Node: a list, then a watch
 * from its resourceVersion (an apiRequest streamed as client-node's Watch streams it,
 * reporting-watch.ts), delivered to
 * kube-proxy-style handlers (pkg/proxy/config):
 * - the list is paged (raw-list.ts), or with KUBE_FEATURE_WatchListClient=true streamed as the
 *   watch's first events (sendInitialEvents), ended by a bookmark annotated
 *   k8s.io/initial-events-end; a server that refuses that (422) is listed in pages; the Node,
 *   one object, is always streamed (one request for it, not two);
 * - restart on every error with exponential backoff (`initialMs` doubling to `maxMs`, each
 *   wait stretched by up to as much again at random, client-go's reflector jitter 1.0, so
 *   every node's informers do not relist together after an API server outage), reset only
 *   once the informer has gone BACKOFF_RESET_MS (2 min, client-go's defaultBackoffReset)
 *   without a failure, so a watch has lasted that long: a list that succeeds, or a watch that
 *   connects and fails at once, does not (that reset made 9-10 full LISTs in 8 s against an
 *   API server that refused every watch; client-go makes 4); never after stop(); a log line
 *   per failure naming the resource and the error (at debug for a 401/403: apiRequest logs
 *   the refused credential once, with the kubeconfig and user to fix);
 * - 429 Too Many Requests (the API server overloaded, its priority and fairness rejecting) on
 *   anything: the same request again after the backoff, and never sooner than its Retry-After
 *   (up to RETRY_AFTER_MAX_MS): a 429'd watch is watched again from the same version, no
 *   relist, as client-go's reflector does (isWatchErrorRetriable). client-go's rest client
 *   first repeats the request up to 10 times Retry-After apart (1 s from kube-apiserver), then
 *   the reflector backs off; here the backoff alone, at least Retry-After: each repeat would
 *   be one more request to a server that is shedding load;
 * - every watch asks the server to end it after timeoutSeconds, drawn in [5, 10) minutes as
 *   client-go's reflector draws it (minWatchTimeout 5 min), with bookmarks: kube-apiserver
 *   then sends a BOOKMARK roughly every minute (it sends none to a watch without a deadline),
 *   so a quiet watch stays open for its whole timeout instead of being cut by the idle timer;
 * - a restart resumes the watch from the last resourceVersion (cheap); an expired version
 *   (410) relists and reports objects gone meanwhile as deletes. After an HTTP error on the
 *   watch itself (a 403 once RBAC is restored, a 5xx) the restart relists from scratch, the
 *   same way; after no answer at all (the server went away) one page of one first checks
 *   that the server's store was not rewound (historyRewound);
 * - a watch event that does not decode (a protobuf frame, a JSON line: reporting-watch.ts)
 *   ends the watch, which resumes from the last version after the backoff; once events fail
 *   DECODE_FAILURES_BEFORE_RELIST times at one resourceVersion, the informer relists (the
 *   list has the state the undecodable event changed), with one log line and `onDecodeRelist`
 *   (the daemon's kube_ipvs_watch_decode_relists_total);
 * - `onUpdate(old, cur)` with the previous object as kept: the Node whole, a Service or an
 *   EndpointSlice by its metadata only (namespace, name, resourceVersion; the trackers keep
 *   what they need of the rest, converted, and a second copy of every object as received
 *   would be the daemon's largest state); `on*Synced()` once, after the first complete list
 *   has been delivered;
 * - handler exceptions are logged, never thrown into the informer;
 * - deadlines: every list page and every watch's answer has one (apiRequest's, credentials
 *   included; the watch's is `watchTimeoutMs`, then `watchIdleTimeoutMs` without a byte): a hung
 *   server or exec plugin is a failure like any other (a log line, the backoff), and
 *   `notWatching()` tells health which informers have had no open watch, since when.
 *
 * Objects are handed over as plain JSON, as on the wire: lists are fetched raw (raw-list.ts),
 * not through client-node's model classes, so list items and watch events have one shape;
 * both without metadata.managedFields and kubectl's last-applied annotation (prune.ts), which
 * are never read.
 * Nothing here looks at `kind`: list items have none.
 */
import type { KubeConfig, KubernetesObject, V1EndpointSlice, V1Node, V1Service } from '@kubernetes/client-node';
import { LIST_PAGE_SIZE, listPaged, listRaw } from './raw-list';
import { prunedObject } from './prune';
import { INTAKE_HOLD_MAX_MS, INTAKE_SLICE_MS, IntakeGate } from './intake-gate';
import { ReportingWatch, WATCH_IDLE_TIMEOUT_MS, WATCH_TIMEOUT_MS, isWatchDecodeError } from './reporting-watch';
import { ApiConnectionError } from '../errors';

/** What the Service informer calls: add, update, delete, and synced after the first list. */
export interface ServiceHandler {
  onServiceAdd(svc: V1Service): void;
  onServiceUpdate(old: V1Service, cur: V1Service): void;
  onServiceDelete(svc: V1Service): void;
  /** once, after the first complete list has been delivered as adds */
  onServicesSynced(): void;
}

/** What the EndpointSlice informer calls: add, update, delete, and synced after the first list. */
export interface EndpointSliceHandler {
  onEndpointSliceAdd(slice: V1EndpointSlice): void;
  onEndpointSliceUpdate(old: V1EndpointSlice, cur: V1EndpointSlice): void;
  onEndpointSliceDelete(slice: V1EndpointSlice): void;
  onEndpointSlicesSynced(): void;
}

/** What the Node informer (this node only) calls: add, update, delete, and synced. */
export interface NodeHandler {
  onNodeAdd(node: V1Node): void;
  onNodeUpdate(old: V1Node, cur: V1Node): void;
  onNodeDelete(node: V1Node): void;
  onNodeSynced(): void;
}

/** What the informers log through (a winston logger fits). */
export interface InformerLog {
  info(message: string, meta?: object): unknown;
  warn(message: string, meta?: object): unknown;
  error(message: string, meta?: object): unknown;
  debug(message: string, meta?: object): unknown;
}

/** Options of startInformers: the node, the handlers, the log, list paging and backoff. */
export interface InformerOptions {
  /** this node's name: the Node informer watches only it */
  readonly nodeName: string;
  /** an informer runs for each handler given */
  readonly handlers: {
    readonly service?: ServiceHandler;
    readonly endpointSlice?: EndpointSliceHandler;
    readonly node?: NodeHandler;
  };
  readonly log: InformerLog;
  /** items per list request (default raw-list.ts LIST_PAGE_SIZE), when listing in pages */
  readonly listPageSize?: number;
  /**
   * list as a watch that streams the initial state (sendInitialEvents, KEP-3157), as
   * kube-proxy's client-go does, instead of in pages (default WATCH_LIST_CLIENT_DEFAULT); an
   * API server that refuses it (422: the WatchList feature gate is off) gets paged lists from
   * then on
   */
  readonly streamingLists?: boolean;
  /** restart delays (default client-go's reflector: 800 ms doubling to 30 s, each jittered) */
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
  /** [0, 1): the backoff's jitter (default Math.random) */
  readonly random?: () => number;
  /** a watch's deadline for its answer (default client-node's 30 s) */
  readonly watchTimeoutMs?: number;
  /** an open watch with no byte for this long is ended (default WATCH_IDLE_TIMEOUT_MS, 130 s) */
  readonly watchIdleTimeoutMs?: number;
  /**
   * the first lists wait a random time below this (drawn with `random`; default 0, none), so
   * the nodes of a rollout or of a cluster-wide restart do not all list at the same moment
   */
  readonly firstListSpreadMs?: number;
  /** the time and the timers of the backoff and the spread (default Date.now and setTimeout) */
  readonly clock?: InformerClock;
  /** an informer relisted after repeated watch events that did not decode (a metric counts them) */
  readonly onDecodeRelist?: (resource: string) => void;
  /** the watches hand over no event while it is closed (a sync runs, or a turn's slice is spent; intake-gate.ts) */
  readonly intakeGate?: IntakeGate;
}

/** The time and timers the informers wait with (lib/proxier/clock.ts's Clock has this shape). */
export interface InformerClock {
  /** milliseconds since the epoch */
  now(): number;
  setTimer(fn: () => void, ms: number): { cancel(): void };
}

const SYSTEM_CLOCK: InformerClock = {
  now: () => Date.now(),
  setTimer(fn, ms) {
    const t = setTimeout(fn, Math.max(0, ms));
    return { cancel: () => clearTimeout(t) };
  },
};

/**
 * client-go's reflector (defaultBackoffReset, "if we don't backoff for 2min, assume API server
 * is healthy and we reset the backoff"): the backoff starts again from `initialMs` only once
 * this long has passed since the last restart without a failure. (client-go's backoff manager
 * counts from its last reset, so under a lasting failure it starts over at 0.8 s every 2 min;
 * here it stays at the cap until the API server has answered well for 2 min.)
 */
export const BACKOFF_RESET_MS = 120_000;

/**
 * The longest Retry-After honoured: the longest the backoff itself waits (30 s, jittered up to
 * twice that). kube-apiserver sends 1 s; a larger value (a proxy's) is taken up to this.
 */
export const RETRY_AFTER_MAX_MS = 60_000;

/** Watch events that fail to decode at one resourceVersion before the informer relists. */
export const DECODE_FAILURES_BEFORE_RELIST = 3;

/**
 * The daemon's spread of its first lists (InformerOptions.firstListSpreadMs): up to 2 s, so
 * a thousand nodes started together list over two seconds rather than at one instant, and a
 * single node's first sync waits one second on average.
 */
export const FIRST_LIST_SPREAD_MS = 2_000;

/**
 * Whether lists stream when KUBE_FEATURE_WatchListClient is unset: no, unlike client-go since
 * v1.35. Paged lists come gzip-compressed and cost kube-apiserver less CPU (scripts/bench/README.md).
 */
export const WATCH_LIST_CLIENT_DEFAULT = false;

/**
 * client-go's WatchListClient feature gate as kube-proxy reads it, from the environment
 * variable KUBE_FEATURE_WatchListClient (strconv.ParseBool's spellings), so a DaemonSet that
 * sets it for kube-proxy sets it for kube-ipvs; a value that is no boolean is warned about and
 * the default kept, as client-go does.
 */
export function watchListClient(env: NodeJS.ProcessEnv, log: Pick<InformerLog, 'warn'>): boolean {
  const value = env.KUBE_FEATURE_WatchListClient;
  if (value === undefined) return WATCH_LIST_CLIENT_DEFAULT;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  log.warn(
    `KUBE_FEATURE_WatchListClient=${JSON.stringify(value)} is not a boolean; lists are ${WATCH_LIST_CLIENT_DEFAULT ? 'streamed' : 'paged'} (the default)`,
    { variable: 'KUBE_FEATURE_WatchListClient', value },
  );
  return WATCH_LIST_CLIENT_DEFAULT;
}

/**
 * An integer of at least `least` (at most 7 digits) from `env[variable]`; unset is undefined,
 * and anything else is undefined with a warning that says what applies instead (`otherwise`).
 */
function integerFromEnv(
  env: NodeJS.ProcessEnv,
  variable: string,
  least: 0 | 1,
  log: Pick<InformerLog, 'warn'>,
  otherwise: string,
): number | undefined {
  const value = env[variable];
  if (value === undefined) return undefined;
  if (/^(0|[1-9]\d{0,6})$/.test(value) && Number(value) >= least) return Number(value);
  const kind = least === 0 ? 'a non-negative integer' : 'a positive integer';
  log.warn(`${variable}=${JSON.stringify(value)} is not ${kind}; ${otherwise}`, { variable, value });
  return undefined;
}

/**
 * Items per list page from KUBE_IPVS_LIST_PAGE_SIZE; unset or not a positive integer (with a
 * warning) is LIST_PAGE_SIZE. For tests: a few hundred objects page against the real
 * kube-apiserver as 2,000 would (spec/vm/control-plane-watch), at a tenth of the guest's work.
 */
export function listPageSize(env: NodeJS.ProcessEnv, log: Pick<InformerLog, 'warn'>): number {
  return (
    integerFromEnv(env, 'KUBE_IPVS_LIST_PAGE_SIZE', 1, log, `lists are paged by ${LIST_PAGE_SIZE}`) ?? LIST_PAGE_SIZE
  );
}

/** client-go's reflector backoff (NewExponentialBackoffManager(800ms, 30s, ...)). */
export const INFORMER_BACKOFF = { initialMs: 800, maxMs: 30_000 } as const;

/**
 * The informers' restart backoff with its cap from KUBE_IPVS_INFORMER_BACKOFF_MAX_MS (and its
 * start the lower of 800 ms and the cap); unset or not a positive integer (with a warning) is
 * INFORMER_BACKOFF. For tests: an API server restarted, a token revoked or a binding deleted is
 * retried within seconds instead of up to a jittered minute, and every check of what the daemon
 * does meanwhile and after still holds (spec/vm/control-plane-watch).
 */
export function informerBackoff(
  env: NodeJS.ProcessEnv,
  log: Pick<InformerLog, 'warn'>,
): { readonly initialMs: number; readonly maxMs: number } {
  const maxMs = integerFromEnv(
    env,
    'KUBE_IPVS_INFORMER_BACKOFF_MAX_MS',
    1,
    log,
    `the informers back off up to ${INFORMER_BACKOFF.maxMs} ms`,
  );
  return maxMs === undefined ? INFORMER_BACKOFF : { initialMs: Math.min(INFORMER_BACKOFF.initialMs, maxMs), maxMs };
}

/**
 * How long a sync may hold the watches' intake (intake-gate.ts), from
 * KUBE_IPVS_INTAKE_HOLD_MAX_MS: 0 never holds; unset or not a non-negative integer (with a
 * warning) is INTAKE_HOLD_MAX_MS. For benchmarks: the same build with and without the hold in
 * one boot.
 */
export function intakeHoldMaxMs(env: NodeJS.ProcessEnv, log: Pick<InformerLog, 'warn'>): number {
  return (
    integerFromEnv(
      env,
      'KUBE_IPVS_INTAKE_HOLD_MAX_MS',
      0,
      log,
      `a sync holds the watches' intake ${INTAKE_HOLD_MAX_MS} ms at most`,
    ) ?? INTAKE_HOLD_MAX_MS
  );
}

/**
 * The longest run of watch events taken in within one turn of the event loop (intake-gate.ts),
 * from KUBE_IPVS_INTAKE_SLICE_MS: 0 is no limit; unset or not a non-negative integer (with a
 * warning) is INTAKE_SLICE_MS. For benchmarks, as KUBE_IPVS_INTAKE_HOLD_MAX_MS.
 */
export function intakeSliceMs(env: NodeJS.ProcessEnv, log: Pick<InformerLog, 'warn'>): number {
  return (
    integerFromEnv(
      env,
      'KUBE_IPVS_INTAKE_SLICE_MS',
      0,
      log,
      `a turn of the event loop takes watch events in for ${INTAKE_SLICE_MS} ms at most`,
    ) ?? INTAKE_SLICE_MS
  );
}

/** The annotation of the bookmark that ends a streaming list's initial events (metav1.InitialEventsAnnotationKey). */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** HTTP statuses of a server that will not stream a list: 422 (the feature gate off), 400 (a server that does not know the parameters). */
const STREAMING_REFUSED = new Set([400, 422]);

/** client-go's reflector: a watch's timeoutSeconds is drawn in [minWatchTimeout, 2 x minWatchTimeout). */
export const MIN_WATCH_TIMEOUT_SECONDS = 300;

/** An informer without an open watch: it has delivered nothing new since `sinceMs`. */
export interface NotWatching {
  readonly resource: string;
  /** ms since the epoch: its start, or when its last watch ended */
  readonly sinceMs: number;
}

/** The informers startInformers started. */
export interface RunningInformers {
  /** The informers whose watch is not open now (listing, backing off, connecting). */
  notWatching(): NotWatching[];
  /** Stops every informer; none restarts afterwards. */
  stop(): Promise<void>;
}

/**
 * kube-proxy's selectors (cmd/kube-proxy/app/server.go, v1.37): Services not served by another
 * proxy and not headless (clusterIP None); EndpointSlices not of a headless Service. (A Service
 * *labelled* service.kubernetes.io/headless with a cluster IP is proxied: the label only marks
 * its slices. The real kube-proxy beside kube-ipvs found that our single selector for both
 * dropped such a Service; spec/vm/kube-proxy-parity.vm.test.ts.)
 */
export const SERVICE_SELECTOR = {
  labelSelector: '!service.kubernetes.io/service-proxy-name',
  fieldSelector: 'spec.clusterIP!=None',
} as const;
/** kube-proxy's EndpointSlice selector: no slices of a headless Service. */
export const ENDPOINT_SLICE_SELECTOR = { labelSelector: '!service.kubernetes.io/headless' } as const;

/** A started informer as startInformers keeps it. */
interface Running {
  start(): void;
  stop(): Promise<void>;
  readonly resource: string;
  readonly downSinceMs: number | undefined;
}

/**
 * An informer for each handler given: Services and EndpointSlices with kube-proxy's
 * selectors (only their metadata kept between events), this node's Node by name.
 */
function informersFor(
  options: InformerOptions,
  informer: <T extends KubernetesObject>(spec: InformerSpec<T>) => Running,
): Running[] {
  const running: Running[] = [];
  const { service, endpointSlice, node } = options.handlers;
  if (service) {
    running.push(
      informer<V1Service>({
        resource: 'services',
        path: '/api/v1/services',
        selector: SERVICE_SELECTOR,
        onAdd: (o) => service.onServiceAdd(o),
        onUpdate: (a, b) => service.onServiceUpdate(a, b),
        onDelete: (o) => service.onServiceDelete(o),
        onSynced: () => service.onServicesSynced(),
        retain: metadataOnly,
      }),
    );
  }
  if (endpointSlice) {
    running.push(
      informer<V1EndpointSlice>({
        resource: 'endpointslices',
        path: '/apis/discovery.k8s.io/v1/endpointslices',
        selector: ENDPOINT_SLICE_SELECTOR,
        onAdd: (o) => endpointSlice.onEndpointSliceAdd(o),
        onUpdate: (a, b) => endpointSlice.onEndpointSliceUpdate(a, b),
        onDelete: (o) => endpointSlice.onEndpointSliceDelete(o),
        onSynced: () => endpointSlice.onEndpointSlicesSynced(),
        retain: metadataOnly,
      }),
    );
  }
  if (node) {
    running.push(
      informer<V1Node>({
        resource: 'nodes',
        path: '/api/v1/nodes',
        selector: { fieldSelector: `metadata.name=${options.nodeName}` },
        streamAlways: true,
        onAdd: (o) => node.onNodeAdd(o),
        onUpdate: (a, b) => node.onNodeUpdate(a, b),
        onDelete: (o) => node.onNodeDelete(o),
        onSynced: () => node.onNodeSynced(),
      }),
    );
  }
  return running;
}

/**
 * Starts the informers now, or (firstListSpreadMs) after a random part of the spread; the
 * timer of a start still to come, to cancel on stop.
 */
function startSpread(
  running: readonly Running[],
  options: InformerOptions,
  clock: InformerClock,
): { cancel(): void } | undefined {
  // drawn only with a spread: the backoff's draws come from the same `random`
  const spread = options.firstListSpreadMs ?? 0;
  const spreadMs = spread > 0 ? Math.floor((options.random ?? Math.random)() * spread) : 0;
  if (spreadMs <= 0) {
    for (const r of running) r.start();
    return undefined;
  }
  options.log.debug(`first lists in ${spreadMs} ms (spread over ${spread} ms)`, { spreadMs });
  return clock.setTimer(() => {
    for (const r of running) r.start();
  }, spreadMs);
}

/** Starts a list-and-watch informer for each handler given. */
export function startInformers(kc: KubeConfig, options: InformerOptions): RunningInformers {
  // client-go's reflector backoff: after an API server restart every node's informers come
  // back spread over 0.8 to 1.6 s, not 0.2 to 0.4 s
  const backoff = options.backoff ?? INFORMER_BACKOFF;
  const pageSize = options.listPageSize ?? LIST_PAGE_SIZE;
  const streamingLists = options.streamingLists ?? WATCH_LIST_CLIENT_DEFAULT;
  const clock = options.clock ?? SYSTEM_CLOCK;
  const informer = <T extends KubernetesObject>(spec: InformerSpec<T>) =>
    new ResilientInformer<T>(
      kc,
      options.log,
      backoff,
      pageSize,
      spec,
      {
        answerMs: options.watchTimeoutMs ?? WATCH_TIMEOUT_MS,
        idleMs: options.watchIdleTimeoutMs ?? WATCH_IDLE_TIMEOUT_MS,
        gate: options.intakeGate,
      },
      options.random ?? Math.random,
      spec.streamAlways === true || streamingLists,
      clock,
      options.onDecodeRelist,
    );
  const running = informersFor(options, informer);
  const pending = startSpread(running, options, clock);
  return {
    notWatching() {
      return running.flatMap((r) =>
        r.downSinceMs === undefined ? [] : [{ resource: r.resource, sinceMs: r.downSinceMs }],
      );
    },
    async stop() {
      pending?.cancel();
      await Promise.all(running.map((r) => r.stop()));
    },
  };
}

interface InformerSpec<T extends KubernetesObject> {
  /** plural, for log lines */
  readonly resource: string;
  /** listed in pages (raw-list.ts listPaged), then watched, with `selector` */
  readonly path: string;
  readonly selector: { readonly labelSelector?: string; readonly fieldSelector?: string };
  readonly onAdd: (obj: T) => void;
  readonly onUpdate: (old: T, cur: T) => void;
  readonly onDelete: (obj: T) => void;
  readonly onSynced: () => void;
  /** what is kept of an object until its next event (default: all of it) */
  readonly retain?: (obj: T) => T;
  /**
   * list by streaming whatever streamingLists says (the node's own Node: one object, so one
   * request, the watch, instead of a list and a watch; paged again if the server refuses)
   */
  readonly streamAlways?: boolean;
}

const keyOf = (o: KubernetesObject): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

function describeError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  // no answer: client-go's line, the URL and the cause (Get "URL": dial tcp ...: connection refused)
  if (e instanceof ApiConnectionError) return e.message;
  const status = (e as { statusCode?: number; code?: unknown }).statusCode ?? (e as { code?: unknown }).code;
  const cause = e.cause instanceof Error ? ` (${e.cause.message})` : '';
  const head = `${e.name}: ${e.message.split('\n')[0]}${cause}`;
  return typeof status === 'number' && !e.message.includes(String(status)) ? `HTTP ${status} ${head}` : head;
}

/**
 * How long the server asked the client to wait (its Retry-After, whole seconds as client-go's
 * retryAfterSeconds reads it; an HTTP date is ignored, as there), up to RETRY_AFTER_MAX_MS; 0
 * without one.
 */
export function retryAfterMs(e: unknown): number {
  const value = (e as { headers?: Record<string, string | undefined> } | undefined)?.headers?.['retry-after'];
  if (value === undefined || !/^\d+$/.test(value.trim())) return 0;
  return Math.min(Number(value.trim()) * 1000, RETRY_AFTER_MAX_MS);
}

/** An HTTP status on the watch or list, as opposed to a broken or refused connection. */
function httpStatusOf(e: unknown): number | undefined {
  const s =
    (e as { statusCode?: unknown; code?: unknown } | undefined)?.statusCode ??
    (e as { code?: unknown } | undefined)?.code;
  return typeof s === 'number' ? s : undefined;
}

/** Kept of a Service or EndpointSlice between events: what names it and its version. */
export function metadataOnly<T extends KubernetesObject>(obj: T): T {
  const md = obj.metadata;
  return { metadata: { namespace: md?.namespace, name: md?.name, resourceVersion: md?.resourceVersion } } as T;
}

/** A watch that ends without an error this soon after it started is restarted after the backoff. */
const SHORT_WATCH_MS = 1_000;

/**
 * List, then watch from the list's resourceVersion, restarted on failure; the previous object
 * (as `retain` keeps it) with each update. Not client-node's ListWatch: that caches every
 * object as received for the life of the process, beside the trackers' converted state
 * (a second copy of every Service and EndpointSlice, larger than the state itself).
 */
class ResilientInformer<T extends KubernetesObject> {
  /** what the handler has been told exists, by namespace/name, as `retain` keeps it */
  private readonly known = new Map<string, T>();
  private readonly watch: ReportingWatch;
  /** where the next watch resumes; '' lists first */
  private resourceVersion = '';
  /** the last attempt failed without an HTTP answer: check the server's history before resuming */
  private checkHistory = false;
  /** bumped by every (re)start: callbacks of an older list or watch are ignored */
  private generation = 0;
  private controller: AbortController | undefined;
  private stopped = false;
  private synced = false;
  private delayMs: number;
  /** when the last restart after a backoff began: 2 min after it without a failure reset the backoff */
  private lastRestartAtMs: number | undefined;
  private timer: { cancel(): void } | undefined;
  private readonly retain: (obj: T) => T;
  /** when the watch stopped being open (the start, at first); undefined while one is open */
  downSinceMs: number | undefined;
  /** watch events that failed to decode in a row at one resourceVersion */
  private decodeFailures = { resourceVersion: '', count: 0 };
  /** the current watch has answered 200 */
  private watchOpen = false;
  /** while a streaming list is under way: the keys it has delivered (the rest is gone at its end) */
  private initial: Set<string> | undefined;

  constructor(
    private readonly kc: KubeConfig,
    private readonly log: InformerLog,
    private readonly backoff: { readonly initialMs: number; readonly maxMs: number },
    private readonly pageSize: number,
    private readonly spec: InformerSpec<T>,
    watchOptions: { readonly answerMs: number; readonly idleMs: number; readonly gate: IntakeGate | undefined },
    private readonly random: () => number,
    /** list by streaming (sendInitialEvents); false once the server refused it */
    private streaming: boolean,
    private readonly clock: InformerClock,
    private readonly onDecodeRelist: ((resource: string) => void) | undefined,
  ) {
    this.downSinceMs = clock.now();
    this.delayMs = backoff.initialMs;
    this.retain = spec.retain ?? ((o) => o);
    this.watch = new ReportingWatch(
      kc,
      { connected: () => this.connected(), stopped: () => this.stopped, gate: watchOptions.gate },
      watchOptions.answerMs,
      watchOptions.idleMs,
    );
  }

  get resource(): string {
    return this.spec.resource;
  }

  /** The watch answered 200: open (the backoff is not reset by that: a watch must last, nextDelay). */
  private connected(): void {
    this.watchOpen = true;
    this.downSinceMs = undefined;
  }

  start(): void {
    void this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.generation++;
    this.timer?.cancel();
    this.timer = undefined;
    this.controller?.abort();
    this.controller = undefined;
  }

  private async run(): Promise<void> {
    const generation = ++this.generation;
    const current = () => generation === this.generation && !this.stopped;
    if (this.resourceVersion !== '' && this.checkHistory) {
      let rewound: boolean;
      try {
        rewound = await this.historyRewound();
      } catch (e) {
        if (current()) this.failed(e);
        return;
      }
      if (!current()) return;
      this.checkHistory = false;
      if (rewound) this.resourceVersion = '';
    }
    this.initial = undefined;
    if (this.resourceVersion === '' && this.streaming) {
      // the watch below streams the list: ADDED for every object, then a bookmark
      this.initial = new Set();
    } else if (this.resourceVersion === '') {
      let present = new Set<string>();
      let version: string;
      try {
        version = await listPaged<T>(
          this.kc,
          this.spec.path,
          this.spec.selector,
          (items) => {
            if (!current()) return;
            for (const item of items) {
              const obj = prunedObject(item);
              present.add(keyOf(obj));
              this.upsert(obj, true);
            }
          },
          () => (present = new Set()),
          this.pageSize,
        );
      } catch (e) {
        if (current()) this.failed(e);
        return;
      }
      if (!current()) return;
      // what the complete list lacks is gone
      for (const [key, old] of [...this.known]) if (!present.has(key)) this.deleted(old);
      this.resourceVersion = version;
      if (!this.synced) {
        this.synced = true;
        this.call('synced', undefined, () => this.spec.onSynced());
      }
    }
    const query = {
      ...(this.resourceVersion ? { resourceVersion: this.resourceVersion } : {}),
      // a consistent initial state (at least as new as etcd's now), as client-go's watch list asks
      ...(this.initial ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan' } : {}),
      allowWatchBookmarks: true,
      timeoutSeconds: Math.floor(MIN_WATCH_TIMEOUT_SECONDS * (1 + this.random())),
      labelSelector: this.spec.selector.labelSelector,
      fieldSelector: this.spec.selector.fieldSelector,
    };
    const startedAt = this.clock.now();
    this.watchOpen = false;
    const controller = await this.watch.watch(
      this.spec.path,
      query,
      (phase, obj) => current() && this.event(phase, obj as T),
      (err) => current() && this.watchEnded(err, this.clock.now() - startedAt),
    );
    if (current()) this.controller = controller;
    else controller.abort();
  }

  private event(phase: string, obj: T): void {
    if (phase === 'ERROR') {
      // 410 Gone: the version is compacted away (or older than a restarted API server's
      // watch cache); the stream ends next and the restart relists: one line, since a relist
      // of every Service or EndpointSlice is the costly way back
      const status = obj as { code?: number; message?: string };
      if (status.code === 410) {
        this.log.info(
          `${this.spec.resource} informer: watch from resourceVersion ${this.resourceVersion} expired (410 Gone: ${status.message ?? ''}); relisting`,
          {
            resource: this.spec.resource,
            resourceVersion: this.resourceVersion,
          },
        );
        this.resourceVersion = '';
      }
      return;
    }
    const version = obj?.metadata?.resourceVersion;
    if (this.initial) return this.initialEvent(phase, obj, version);
    if (phase === 'ADDED' || phase === 'MODIFIED') this.upsert(obj, false);
    else if (phase === 'DELETED') this.deleted(obj);
    if (version) this.resourceVersion = version;
  }

  /**
   * An event of a streaming list: ADDED for each object, then the bookmark annotated
   * k8s.io/initial-events-end, which ends the list as a list's last page does (what it did not
   * name is gone, Synced once) and carries the version the watch goes on from. Until then the
   * version is not advanced: a watch cut short lists again (there is nothing to resume from).
   */
  private initialEvent(phase: string, obj: T, version: string | undefined): void {
    const present = this.initial!;
    if (phase === 'ADDED') {
      present.add(keyOf(obj));
      this.upsert(obj, true);
      return;
    }
    if (phase !== 'BOOKMARK' || obj?.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true') return;
    this.initial = undefined;
    for (const [key, old] of [...this.known]) if (!present.has(key)) this.deleted(old);
    if (version) this.resourceVersion = version;
    if (!this.synced) {
      this.synced = true;
      this.call('synced', undefined, () => this.spec.onSynced());
    }
  }

  /**
   * After the connection failed (an API server restarted, or another behind the same address):
   * is the server's current resourceVersion older than the last one seen? Then its store was
   * rewound (etcd restored from a backup) and a watch resumed from ours would wait, silently,
   * for versions the store will not reach for a long time: the real kube-apiserver answers such
   * a watch 200 and sends nothing (spec/lab/fake-conformance.lab.test.ts). One small list
   * (limit 1, a consistent read) tells; the versions are etcd revisions, compared only when
   * both are decimal (the API calls them opaque: anything else resumes as before).
   */
  private async historyRewound(): Promise<boolean> {
    const page = await listRaw<T>(this.kc, this.spec.path, { ...this.spec.selector, limit: 1 });
    const now = page.metadata?.resourceVersion ?? '';
    const ours = this.resourceVersion;
    if (!/^\d+$/.test(now) || !/^\d+$/.test(ours) || BigInt(now) >= BigInt(ours)) return false;
    this.log.info(
      `${this.spec.resource} informer: the API server's resourceVersion ${now} is older than the last one seen, ${ours} (its store was restored?); relisting`,
      {
        resource: this.spec.resource,
        resourceVersion: ours,
        serverResourceVersion: now,
      },
    );
    return true;
  }

  private watchEnded(err: unknown, lastedMs: number): void {
    this.controller = undefined;
    this.downSinceMs ??= this.clock.now();
    const streamed = this.initial !== undefined;
    this.initial = undefined;
    if (streamed && STREAMING_REFUSED.has(httpStatusOf(err) ?? 0)) {
      // the server cannot stream a list (kube-apiserver answers 422 with the WatchList feature
      // gate off): list in pages from now on
      this.streaming = false;
      this.log.info(
        `${this.spec.resource} informer: the API server does not stream lists (${describeError(err)}); listing in pages`,
        { resource: this.spec.resource },
      );
      void this.run();
      return;
    }
    // a watch that never answered (server or credentials hung past the deadline) failed
    const timedOut = this.watchOpen && (err as { name?: string } | null)?.name === 'TimeoutError';
    if (isWatchDecodeError(err)) return this.undecodable(err, streamed);
    if (err && !timedOut) return this.failed(err);
    // the server closed the stream (its timeout, or after a 410), or nothing came for the
    // client's inactivity timeout: resume (or relist), at once unless the watch was brief
    if (lastedMs >= SHORT_WATCH_MS || timedOut) void this.run();
    else this.restartAfterBackoff(false);
  }

  private upsert(obj: T, fromList: boolean): void {
    const key = keyOf(obj);
    const old = this.known.get(key);
    if (old !== undefined && fromList && old.metadata?.resourceVersion === obj.metadata?.resourceVersion) return;
    this.known.set(key, this.retain(obj));
    if (old === undefined) this.call('add', obj, () => this.spec.onAdd(obj));
    else this.call('update', obj, () => this.spec.onUpdate(old, obj));
  }

  private deleted(obj: T): void {
    const key = keyOf(obj);
    if (!this.known.delete(key)) return;
    this.call('delete', obj, () => this.spec.onDelete(obj));
  }

  private call(event: string, obj: T | undefined, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.log.error(
        `${this.spec.resource} informer: ${event} handler failed${obj ? ` for ${keyOf(obj)}` : ''}: ${describeError(e)}`,
        {
          resource: this.spec.resource,
          event,
          object: obj ? keyOf(obj) : undefined,
        },
      );
    }
  }

  private failed(e: unknown): void {
    if (this.stopped || this.timer) return;
    const status = httpStatusOf(e);
    const level = status === 401 || status === 403 ? 'debug' : 'warn';
    // never sooner than the server asked (a 429's Retry-After; any answer's that has one)
    const delay = this.nextDelay(retryAfterMs(e));
    // 429: the server is shedding load; nothing is wrong with what was asked: the same again
    const again = status === 429 ? ' (the API server is overloaded: the same request again, no relist)' : '';
    this.log[level](`${this.spec.resource} informer failed: ${describeError(e)}; restarting in ${delay} ms${again}`, {
      resource: this.spec.resource,
      error: describeError(e),
      retryInMs: delay,
    });
    // another HTTP error: relist from scratch; no answer at all (the server went away): check
    // its history before resuming (historyRewound)
    if (status === undefined) this.checkHistory = true;
    this.restartAfterBackoff(status !== undefined && status !== 429, delay);
  }

  /**
   * A watch event did not decode: watch again from the same version after the backoff (a
   * frame damaged on its way comes whole the next time); once the events at one version have
   * failed DECODE_FAILURES_BEFORE_RELIST times, relist (the list brings the state the event
   * changed, and the watch goes on from the list's version), logged once and counted.
   */
  private undecodable(e: Error, streamed: boolean): void {
    if (this.stopped || this.timer) return;
    const version = this.resourceVersion;
    const count = this.decodeFailures.resourceVersion === version ? this.decodeFailures.count + 1 : 1;
    this.decodeFailures = { resourceVersion: version, count };
    const delay = this.nextDelay();
    const from = streamed ? 'a streamed list' : `resourceVersion ${version}`;
    if (count < DECODE_FAILURES_BEFORE_RELIST) {
      this.log.debug(
        `${this.spec.resource} informer: a watch event from ${from} did not decode (${describeError(e)}); watching again in ${delay} ms`,
        { resource: this.spec.resource, resourceVersion: version, error: describeError(e), retryInMs: delay },
      );
      this.restartAfterBackoff(false, delay);
      return;
    }
    this.decodeFailures = { resourceVersion: version, count: 0 };
    this.log.warn(
      `${this.spec.resource} informer: watch events from ${from} did not decode ${count} times (${describeError(e)}); relisting in ${delay} ms`,
      { resource: this.spec.resource, resourceVersion: version, error: describeError(e), retryInMs: delay },
    );
    this.onDecodeRelist?.(this.spec.resource);
    this.restartAfterBackoff(true, delay);
  }

  /**
   * The next wait, jittered (client-go's wait.Jitter(d, 1.0): d to 2d), at least `atLeastMs`,
   * and the backoff doubled; the backoff starts again from `initialMs` once BACKOFF_RESET_MS
   * have passed since the last restart without a failure.
   */
  private nextDelay(atLeastMs = 0): number {
    const now = this.clock.now();
    if (this.lastRestartAtMs !== undefined && now - this.lastRestartAtMs >= BACKOFF_RESET_MS)
      this.delayMs = this.backoff.initialMs;
    const delay = Math.max(Math.round(this.delayMs * (1 + this.random())), atLeastMs);
    this.delayMs = Math.min(this.delayMs * 2, this.backoff.maxMs);
    this.lastRestartAtMs = now + delay;
    return delay;
  }

  private restartAfterBackoff(relist: boolean, delay = this.nextDelay()): void {
    this.generation++;
    this.timer = this.clock.setTimer(() => {
      this.timer = undefined;
      if (this.stopped) return;
      if (relist) this.resourceVersion = '';
      void this.run();
    }, delay);
  }
}
