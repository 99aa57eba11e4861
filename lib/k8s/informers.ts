/**
 * The daemon's watches of Services, EndpointSlices and its own Node, over client-node's
 * ListWatch, delivered to kube-proxy-style handlers (pkg/proxy/config).
 *
 * client-node's informer stops for good on any error (a dropped connection, a refused list,
 * an HTTP error on the watch) and does not report old objects on update; this layer adds:
 * - restart on every error with exponential backoff (`initialMs` doubling to `maxMs`), reset
 *   once a list succeeds or a watch connects; never after stop(); a log line per failure
 *   naming the resource and the error;
 * - a restart resumes the watch from the last resourceVersion (cheap); an expired version
 *   (410) makes client-node relist and report objects gone meanwhile as deletes. After an
 *   HTTP error on the watch itself (e.g. 504 "Too large resource version" after an etcd
 *   restore) resuming would fail again, so the restart relists from scratch and this layer
 *   reports as deletes the objects missing from the new list;
 * - `onUpdate(old, cur)` with the previous object; `on*Synced()` once, after the first
 *   complete list has been delivered;
 * - handler exceptions are logged, never thrown into the informer.
 *
 * Objects are handed over as plain JSON, as on the wire: lists are fetched raw (raw-list.ts),
 * not through client-node's model classes, so list items and watch events have one shape;
 * both without metadata.managedFields and kubectl's last-applied annotation (prune.ts), which
 * are never read and would stay cached.
 * Nothing here looks at `kind`: list items have none.
 */
import {
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  ListWatch,
  V1EndpointSlice,
  V1Node,
  V1Service,
  Watch,
} from '@kubernetes/client-node';
import { listRaw } from './raw-list';
import { prunedObject } from './prune';

export interface ServiceHandler {
  onServiceAdd(svc: V1Service): void;
  onServiceUpdate(old: V1Service, cur: V1Service): void;
  onServiceDelete(svc: V1Service): void;
  /** once, after the first complete list has been delivered as adds */
  onServicesSynced(): void;
}

export interface EndpointSliceHandler {
  onEndpointSliceAdd(slice: V1EndpointSlice): void;
  onEndpointSliceUpdate(old: V1EndpointSlice, cur: V1EndpointSlice): void;
  onEndpointSliceDelete(slice: V1EndpointSlice): void;
  onEndpointSlicesSynced(): void;
}

export interface NodeHandler {
  onNodeAdd(node: V1Node): void;
  onNodeUpdate(old: V1Node, cur: V1Node): void;
  onNodeDelete(node: V1Node): void;
  onNodeSynced(): void;
}

/** What the informers log through (a winston logger fits). */
export interface InformerLog {
  warn(message: string, meta?: object): unknown;
  error(message: string, meta?: object): unknown;
  debug(message: string, meta?: object): unknown;
}

export interface InformerOptions {
  /** this node's name: the Node informer watches only it */
  readonly nodeName: string;
  /** an informer runs for each handler given */
  readonly handlers: { readonly service?: ServiceHandler; readonly endpointSlice?: EndpointSliceHandler; readonly node?: NodeHandler };
  readonly log: InformerLog;
  /** restart delays (default 200 ms doubling to 30 s) */
  readonly backoff?: { readonly initialMs: number; readonly maxMs: number };
}

export interface RunningInformers {
  /** Stops every informer; none restarts afterwards. */
  stop(): Promise<void>;
}

/** kube-proxy's selector for Services and EndpointSlices (cmd/kube-proxy/app/server.go). */
export const PROXY_LABEL_SELECTOR = '!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless';

export function startInformers(kc: KubeConfig, options: InformerOptions): RunningInformers {
  const backoff = options.backoff ?? { initialMs: 200, maxMs: 30_000 };
  const running: { start(): void; stop(): Promise<void> }[] = [];
  const { service, endpointSlice, node } = options.handlers;
  if (service) {
    running.push(
      new ResilientInformer<V1Service>(kc, options.log, backoff, {
        resource: 'services',
        path: '/api/v1/services',
        labelSelector: PROXY_LABEL_SELECTOR,
        list: () => listRaw<V1Service>(kc, '/api/v1/services', { labelSelector: PROXY_LABEL_SELECTOR }),
        onAdd: (o) => service.onServiceAdd(o),
        onUpdate: (a, b) => service.onServiceUpdate(a, b),
        onDelete: (o) => service.onServiceDelete(o),
        onSynced: () => service.onServicesSynced(),
      }),
    );
  }
  if (endpointSlice) {
    running.push(
      new ResilientInformer<V1EndpointSlice>(kc, options.log, backoff, {
        resource: 'endpointslices',
        path: '/apis/discovery.k8s.io/v1/endpointslices',
        labelSelector: PROXY_LABEL_SELECTOR,
        list: () => listRaw<V1EndpointSlice>(kc, '/apis/discovery.k8s.io/v1/endpointslices', { labelSelector: PROXY_LABEL_SELECTOR }),
        onAdd: (o) => endpointSlice.onEndpointSliceAdd(o),
        onUpdate: (a, b) => endpointSlice.onEndpointSliceUpdate(a, b),
        onDelete: (o) => endpointSlice.onEndpointSliceDelete(o),
        onSynced: () => endpointSlice.onEndpointSlicesSynced(),
      }),
    );
  }
  if (node) {
    const fieldSelector = `metadata.name=${options.nodeName}`;
    running.push(
      new ResilientInformer<V1Node>(kc, options.log, backoff, {
        resource: 'nodes',
        path: '/api/v1/nodes',
        fieldSelector,
        list: () => listRaw<V1Node>(kc, '/api/v1/nodes', { fieldSelector }),
        onAdd: (o) => node.onNodeAdd(o),
        onUpdate: (a, b) => node.onNodeUpdate(a, b),
        onDelete: (o) => node.onNodeDelete(o),
        onSynced: () => node.onNodeSynced(),
      }),
    );
  }
  for (const r of running) r.start();
  return {
    async stop() {
      await Promise.all(running.map((r) => r.stop()));
    },
  };
}

interface InformerSpec<T extends KubernetesObject> {
  /** plural, for log lines */
  readonly resource: string;
  readonly path: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly list: () => Promise<KubernetesListObject<T>>;
  readonly onAdd: (obj: T) => void;
  readonly onUpdate: (old: T, cur: T) => void;
  readonly onDelete: (obj: T) => void;
  readonly onSynced: () => void;
}

const keyOf = (o: KubernetesObject): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

function describeError(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const status = (e as { statusCode?: number; code?: unknown }).statusCode ?? (e as { code?: unknown }).code;
  const cause = e.cause instanceof Error ? ` (${e.cause.message})` : '';
  const head = `${e.name}: ${e.message.split('\n')[0]}${cause}`;
  return typeof status === 'number' && !e.message.includes(String(status)) ? `HTTP ${status} ${head}` : head;
}

/** An HTTP status on the watch or list, as opposed to a broken or refused connection. */
function httpStatusOf(e: unknown): number | undefined {
  const s = (e as { statusCode?: unknown; code?: unknown } | undefined)?.statusCode ?? (e as { code?: unknown } | undefined)?.code;
  return typeof s === 'number' ? s : undefined;
}

/** One ListWatch, restarted on failure, with the previous object of each update. */
class ResilientInformer<T extends KubernetesObject> {
  /** what the handler has been told exists, by namespace/name */
  private readonly known = new Map<string, T>();
  private lw: ListWatch<T> | undefined;
  private stopped = false;
  private synced = false;
  private listedOnce = false;
  /** the next list must be diffed against `known` (a fresh ListWatch has an empty cache) */
  private diffNextList = false;
  private delayMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly kc: KubeConfig,
    private readonly log: InformerLog,
    private readonly backoff: { readonly initialMs: number; readonly maxMs: number },
    private readonly spec: InformerSpec<T>,
  ) {
    this.delayMs = backoff.initialMs;
  }

  start(): void {
    this.lw = this.makeListWatch();
    this.run(this.lw);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.lw?.stop();
  }

  private run(lw: ListWatch<T>): void {
    lw.start().catch((e: unknown) => this.onError(lw, e));
  }

  private makeListWatch(): ListWatch<T> {
    const watch = new ReportingWatch(this.kc, {
      beforeConnect: () => this.beforeWatch(),
      connected: () => this.resetBackoff(),
      stopped: () => this.stopped,
    });
    const lw: ListWatch<T> = new ListWatch<T>(this.spec.path, watch, () => this.list(lw), false, this.spec.labelSelector, this.spec.fieldSelector);
    lw.on('add', (o) => lw === this.lw && this.added(o));
    lw.on('update', (o) => lw === this.lw && this.updated(o));
    lw.on('delete', (o) => lw === this.lw && this.deleted(o));
    lw.on('error', (e: unknown) => this.onError(lw, e));
    return lw;
  }

  private async list(lw: ListWatch<T>): Promise<KubernetesListObject<T>> {
    const list = await this.spec.list();
    const items = list.items.map(prunedObject);
    list.items = items;
    if (lw === this.lw && !this.stopped) {
      this.resetBackoff();
      this.listedOnce = true;
      if (this.diffNextList) {
        this.diffNextList = false;
        const present = new Set(items.map(keyOf));
        for (const [key, old] of [...this.known]) {
          if (!present.has(key)) this.deleted(old);
        }
      }
    }
    return list;
  }

  /** Called by the Watch right before it connects: the list before it has been delivered. */
  private beforeWatch(): void {
    if (this.listedOnce && !this.synced && !this.stopped) {
      this.synced = true;
      this.call('synced', undefined, () => this.spec.onSynced());
    }
  }

  private added(obj: T): void {
    if (this.stopped) return;
    const key = keyOf(obj);
    const old = this.known.get(key);
    this.known.set(key, obj);
    if (old === undefined) this.call('add', obj, () => this.spec.onAdd(obj));
    else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.call('update', obj, () => this.spec.onUpdate(old, obj));
  }

  private updated(obj: T): void {
    if (this.stopped) return;
    const key = keyOf(obj);
    const old = this.known.get(key);
    this.known.set(key, obj);
    if (old === undefined) this.call('add', obj, () => this.spec.onAdd(obj));
    else this.call('update', obj, () => this.spec.onUpdate(old, obj));
  }

  private deleted(obj: T): void {
    if (this.stopped) return;
    const key = keyOf(obj);
    if (!this.known.delete(key)) return;
    this.call('delete', obj, () => this.spec.onDelete(obj));
  }

  private call(event: string, obj: T | undefined, fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.log.error(`${this.spec.resource} informer: ${event} handler failed${obj ? ` for ${keyOf(obj)}` : ''}: ${describeError(e)}`, {
        resource: this.spec.resource,
        event,
        object: obj ? keyOf(obj) : undefined,
      });
    }
  }

  private resetBackoff(): void {
    this.delayMs = this.backoff.initialMs;
  }

  private onError(lw: ListWatch<T>, e: unknown): void {
    if (this.stopped || lw !== this.lw || this.timer) return;
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, this.backoff.maxMs);
    const status = httpStatusOf(e);
    this.log.warn(`${this.spec.resource} informer failed: ${describeError(e)}; restarting in ${delay} ms`, {
      resource: this.spec.resource,
      error: describeError(e),
      retryInMs: delay,
    });
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stopped) return;
      if (status !== undefined) {
        // resuming from the same resourceVersion would be refused again: relist from scratch
        this.diffNextList = true;
        this.lw = this.makeListWatch();
      }
      this.run(this.lw!);
    }, delay);
  }
}

interface WatchHooks {
  /** right before each watch request (after a list has been delivered, if one was made) */
  readonly beforeConnect: () => void;
  /** the watch answered 200 */
  readonly connected: () => void;
  /** no new connection once this is true */
  readonly stopped: () => boolean;
}

/**
 * client-node's Watch, reporting connections, and turning a throw before the request (e.g.
 * credentials that cannot be read) into the `done` error ListWatch expects instead of an
 * unhandled rejection.
 */
class ReportingWatch extends Watch {
  constructor(kc: KubeConfig, private readonly hooks: WatchHooks) {
    super(kc);
  }

  override async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    if (this.hooks.stopped()) {
      const e = new Error('informer stopped');
      e.name = 'AbortError';
      done(e);
      return new AbortController();
    }
    this.hooks.beforeConnect();
    let finished = false;
    try {
      const controller = await super.watch(path, queryParams, (phase, obj, watchObj) => callback(phase, prunedObject(obj), watchObj), (err: unknown) => {
        finished = true;
        done(err);
      });
      // stopped while the request was in flight: ListWatch had no controller to abort yet
      if (this.hooks.stopped()) {
        controller.abort();
        return controller;
      }
      if (!finished) this.hooks.connected();
      return controller;
    } catch (e) {
      if (!finished) {
        finished = true;
        done(e);
      }
      return new AbortController();
    }
  }
}
