/**
 * A fake kube-apiserver over node:http that speaks the real list/watch protocol for the
 * resources kube-ipvs reads and writes: core/v1 services, nodes and events,
 * discovery.k8s.io/v1 endpointslices and events.k8s.io/v1 events.
 *
 * What it reproduces from kube-apiserver (and tests rely on):
 * - one global resourceVersion; every write bumps it and is kept in a history;
 * - list answers `{kind: XList, apiVersion, metadata: {resourceVersion}, items}` with items
 *   WITHOUT kind/apiVersion; watch events and single-object answers carry both;
 * - `watch=true` streams newline-delimited JSON events over a chunked 200 response, replaying
 *   the history after `resourceVersion` (absent or "0": synthetic ADDED for every object);
 *   a version older than the retained history gets HTTP 200, one ERROR event with a Status
 *   `{code: 410, reason: Expired}`, then the stream ends; a version newer than the current
 *   one gets HTTP 200 and nothing until the store passes it, as kube-apiserver's;
 *   a watch from "0" (or none) that allows bookmarks gets a BOOKMARK annotated
 *   k8s.io/initial-events-end after its synthetic ADDED events;
 * - a streaming list (KEP-3157): `sendInitialEvents=true` with `resourceVersionMatch=NotOlderThan`
 *   gets the state now as ADDED events, then (with bookmarks) that BOOKMARK, then live events;
 *   either parameter without the other, or sendInitialEvents with the WatchList feature gate
 *   off (FakeApiServerOptions.watchList), gets 422 Invalid on ListOptions, as
 *   apimachinery's validateWatchOptions words it;
 * - `limit` pages a list (etcd's key order): each page's metadata.continue names the rest of
 *   the same snapshot (one resourceVersion for every page; remainingItemCount only without
 *   selectors); a token past expireListContinuations(), or an Event list's past compact()
 *   (Events have no watch cache), gets 410 Expired with a token for the inconsistent rest;
 * - Status bodies as kube-apiserver words them (details: name, kind, causes), authorization
 *   by RBAC rules when asked for (FakeAuthOptions.serviceAccount: 403, system:anonymous), the
 *   core/v1 Event namespace rule (422); spec/lab/fake-conformance.lab.test.ts compares all
 *   of this with the lab's real kube-apiserver;
 * - label and field selectors (testkit/selectors.ts); an update that moves an object
 *   into or out of a watcher's selector reaches that watcher as ADDED or DELETED (the
 *   DELETED carries the previous object with the new resourceVersion), as the watch cache does;
 * - every watch has a deadline: its `timeoutSeconds`, else the server's own
 *   (--min-request-timeout, 1800 s, times 1 to 2, as kube-apiserver draws it); the deadline ends
 *   the stream cleanly. With `allowWatchBookmarks=true` it gets a BOOKMARK every
 *   `bookmarkIntervalMs` and 2 s before the deadline, each only once the resourceVersion has
 *   passed the one the watch started from (kube-apiserver's cache bookmarks with its newest
 *   version, and passes on only a newer one);
 * - POST (201, 409 AlreadyExists), PUT (404, 409 Conflict on a stale resourceVersion),
 *   PATCH with application/merge-patch+json (strategic merge is applied as a merge patch),
 *   DELETE (answers the deleted object).
 *
 * - security, when asked for (FakeApiServerOptions.tls / .auth): HTTPS with the given
 *   certificate (test-pki.ts makes a CA and one), and authentication as kube-apiserver's
 *   authenticators do it: a client certificate the CA signed, or a bearer token that is one
 *   of `auth.tokens` or the current content of `auth.tokenFile` (read on every request: a
 *   test rotates the token by rewriting the file, and from then on only the new one is
 *   accepted); anything else gets 401 with kube-apiserver's Status body. Without `auth`
 *   every request is served (the plain-HTTP mode of the benchmarks).
 *
 * Control for tests: the methods below, and over HTTP for another process (never
 * authenticated): POST /fake/compact, POST /fake/drop-watches, POST /fake/reset-history,
 * GET /fake/stats.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { randomUUID } from 'node:crypto';
import type { AddressInfo, Socket } from 'node:net';
import { KubeIpvsError } from '../lib/errors';
import { compileFieldSelector, compileLabelSelector, FieldPredicate, LabelPredicate, SelectorError } from './selectors';

export interface FakeObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  resourceVersion?: string;
  uid?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  [field: string]: unknown;
}

/** Any Kubernetes object as JSON. */
export interface FakeObject {
  apiVersion?: string;
  kind?: string;
  metadata: FakeObjectMeta;
  [field: string]: unknown;
}

/** Names one object: apiVersion and kind pick the resource. */
export interface FakeObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
}

export interface FakeResource {
  /** '' for the core group */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

/** The resources this fake serves. */
export const FAKE_RESOURCES: readonly FakeResource[] = [
  { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true },
  { group: '', version: 'v1', plural: 'nodes', kind: 'Node', namespaced: false },
  { group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
  { group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', kind: 'EndpointSlice', namespaced: true },
  { group: 'events.k8s.io', version: 'v1', plural: 'events', kind: 'Event', namespaced: true },
];

const apiVersionOf = (r: FakeResource): string => (r.group ? `${r.group}/${r.version}` : r.version);
const resourceName = (r: FakeResource): string => `${apiVersionOf(r)}/${r.plural}`;

/** A Kubernetes Status failure, thrown by the programmatic API and answered over HTTP. */
export class FakeApiError extends KubeIpvsError {
  readonly code = 'KIPVS_FAKE_API' as const;
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    /** kube-apiserver's Status details: the object's name, its kind (the plural, or the Kind for Invalid), causes */
    readonly details?: StatusDetails,
    /** the Status's metadata (an expired continue token's inconsistent continuation) */
    readonly metadata: { continue?: string } = {},
  ) {
    super(message);
  }
  /** In kube-apiserver's field order (spec/lab/fake-conformance.lab.test.ts compares it with the real one). */
  toStatus(): object {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: this.metadata,
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.status,
    };
  }
}

export interface StatusDetails {
  readonly name?: string;
  readonly group?: string;
  readonly kind?: string;
  readonly causes?: readonly { readonly reason: string; readonly message: string; readonly field: string }[];
}

/** One request as the server saw it (for tests counting lists and watches). */
export interface FakeRequest {
  readonly method: string;
  readonly path: string;
  /** list | watch | get | create | update | patch | delete | discovery | control | other */
  readonly verb: string;
  /** the Authorization header as sent ('' when none) */
  readonly authorization: string;
  /** false when answered 401 */
  readonly authenticated: boolean;
  readonly resource?: string;
  readonly query: Readonly<Record<string, string>>;
}

/** kube-apiserver's --min-request-timeout default: a watch without timeoutSeconds ends after 1 to 2 times this. */
const MIN_REQUEST_TIMEOUT_SECONDS = 1800;

export interface FakeApiServerOptions {
  /** interval of BOOKMARK events for watches that allow them (default 10 s) */
  readonly bookmarkIntervalMs?: number;
  /** history entries kept before the oldest half is compacted away (default 200,000) */
  readonly maxHistory?: number;
  /** the WatchList feature gate: watches may ask for sendInitialEvents (default true, as kube-apiserver v1.37) */
  readonly watchList?: boolean;
  /** serve HTTPS with this certificate; `clientCa` verifies client certificates (asked for, not required) */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer; readonly clientCa?: string | Buffer };
  /** authenticate every API request (401 otherwise) */
  readonly auth?: FakeAuthOptions;
}

export interface FakeAuthOptions {
  /** bearer tokens always accepted (a test's own writer, like an admin's token) */
  readonly tokens?: readonly string[];
  /** the accepted service-account token is this file's content (trimmed), read on every request */
  readonly tokenFile?: string;
  /**
   * Authorization, as kube-apiserver's RBAC authorizer does it: the token file's bearer is
   * `user` and may do what `rules` allow (NODE_PROXIER_RULES: kubeadm's kube-proxy), anything
   * else gets 403 with kube-apiserver's Status; a request without credentials is
   * system:anonymous (kube-apiserver's --anonymous-auth default), which may read only
   * /healthz, /livez, /readyz and /version. `tokens` and client certificates stay unrestricted
   * (the cluster admin). Without it every authenticated request is allowed.
   */
  readonly serviceAccount?: { readonly user: string; readonly rules: readonly FakePolicyRule[] };
}

/** An RBAC PolicyRule (resource rules only; '*' matches any). */
export interface FakePolicyRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  readonly resourceNames?: readonly string[];
}

/** kubeadm's kube-proxy ServiceAccount's user name. */
export const KUBE_PROXY_USER = 'system:serviceaccount:kube-system:kube-proxy';

/**
 * ClusterRole system:node-proxier's rules as kube-apiserver v1.37 bootstraps them (kubeadm binds
 * kube-proxy's ServiceAccount to it; spec/lab/fake-conformance.lab.test.ts reads the real one).
 */
export const NODE_PROXIER_RULES: readonly FakePolicyRule[] = [
  { apiGroups: [''], resources: ['endpoints', 'services'], verbs: ['list', 'watch'] },
  { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update'] },
  { apiGroups: ['networking.k8s.io'], resources: ['servicecidrs'], verbs: ['list', 'watch'] },
  { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
];

/** What kube-apiserver's RBAC authorizer is asked about a request (its RequestInfo). */
export interface FakeRequestAttributes {
  readonly verb: string;
  /** undefined for a non-resource path */
  readonly resource?: {
    readonly group: string;
    readonly resource: string;
    readonly subresource?: string;
    readonly namespace?: string;
    readonly name?: string;
  };
  readonly path: string;
}

/** The RequestInfo of a request path, as k8s.io/apiserver's RequestInfoFactory makes it. */
export function requestAttributes(
  method: string,
  path: string,
  query: Readonly<Record<string, string>>,
): FakeRequestAttributes {
  const seg = path.split('/').filter((x) => x !== '');
  const httpVerb =
    (
      { GET: 'get', HEAD: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' } as Record<
        string,
        string
      >
    )[method] ?? method.toLowerCase();
  let rest: string[];
  let group: string;
  if (seg[0] === 'api' && seg.length >= 3) [group, rest] = ['', seg.slice(2)];
  else if (seg[0] === 'apis' && seg.length >= 4) [group, rest] = [seg[1]!, seg.slice(3)];
  else return { verb: httpVerb, path };
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  } else if (rest[0] === 'namespaces' && rest.length === 2) {
    // the namespace object itself
    namespace = rest[1];
  }
  const [resource, name, subresource] = rest;
  let verb = httpVerb;
  if (name === undefined) {
    if (verb === 'get') verb = query.watch === 'true' || query.watch === '1' ? 'watch' : 'list';
    if (verb === 'delete') verb = 'deletecollection';
  }
  return { verb, path, resource: { group, resource: resource!, subresource, namespace, name } };
}

const PUBLIC_PATHS = ['/healthz', '/livez', '/readyz', '/version'];

/** RBAC's decision: does any rule allow the request? (non-resource paths: see FakeAuthOptions.serviceAccount) */
export function rbacAllows(rules: readonly FakePolicyRule[], a: FakeRequestAttributes, anonymous: boolean): boolean {
  if (!a.resource) return !anonymous || PUBLIC_PATHS.some((p) => a.path === p || a.path.startsWith(`${p}/`));
  const r = a.resource;
  const resource = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
  const has = (list: readonly string[], v: string) => list.includes('*') || list.includes(v);
  return rules.some(
    (rule) =>
      has(rule.verbs, a.verb) &&
      has(rule.apiGroups, r.group) &&
      has(rule.resources, resource) &&
      (!rule.resourceNames?.length || (r.name !== undefined && rule.resourceNames.includes(r.name))),
  );
}

/** kube-apiserver's 403 for a request RBAC denies `user`. */
export function forbidden(user: string, a: FakeRequestAttributes): FakeApiError {
  if (!a.resource)
    return new FakeApiError(403, 'Forbidden', `forbidden: User "${user}" cannot ${a.verb} path "${a.path}"`, {});
  const r = a.resource;
  const what = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
  const where = r.namespace !== undefined ? `in the namespace "${r.namespace}"` : 'at the cluster scope';
  return new FakeApiError(
    403,
    'Forbidden',
    `${r.resource}${r.group ? `.${r.group}` : ''}${r.name !== undefined ? ` "${r.name}"` : ''} is forbidden: User "${user}" cannot ${a.verb} resource "${what}" in API group "${r.group}" ${where}`,
    { ...(r.name !== undefined ? { name: r.name } : {}), ...(r.group ? { group: r.group } : {}), kind: r.resource },
  );
}

/** kube-apiserver's answer to a request it cannot authenticate. */
export const UNAUTHORIZED_STATUS = {
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  message: 'Unauthorized',
  reason: 'Unauthorized',
  code: 401,
} as const;

export interface FakeStats {
  readonly resourceVersion: string;
  /** watches from a version below this one get 410 Expired */
  readonly oldestResourceVersion: string;
  readonly history: number;
  readonly objects: Readonly<Record<string, number>>;
  readonly openWatches: number;
  readonly requests: Readonly<Record<string, number>>;
  /** requests answered 401 (secure mode) */
  readonly unauthorized: number;
}

interface Stored {
  /** without kind/apiVersion, as list items are */
  readonly obj: FakeObject;
  readonly json: string;
}

type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface Change {
  readonly rv: number;
  readonly res: FakeResource;
  readonly type: ChangeType;
  readonly cur: Stored;
  readonly prev?: Stored;
}

function store(obj: FakeObject): Stored {
  const { kind: _k, apiVersion: _a, ...rest } = obj;
  void _k;
  void _a;
  const bare = rest as FakeObject;
  return { obj: bare, json: JSON.stringify(bare) };
}

function withRv(s: Stored, rv: number): Stored {
  const obj = { ...s.obj, metadata: { ...s.obj.metadata, resourceVersion: String(rv) } };
  return { obj, json: JSON.stringify(obj) };
}

/** The JSON of a stored object with kind and apiVersion put back in front. */
function fullJson(res: FakeResource, s: Stored): string {
  return `{"kind":${JSON.stringify(res.kind)},"apiVersion":${JSON.stringify(apiVersionOf(res))},${s.json.slice(1)}`;
}

function fullObject(res: FakeResource, s: Stored): FakeObject {
  return { kind: res.kind, apiVersion: apiVersionOf(res), ...structuredClone(s.obj) };
}

const keyOf = (namespace: string | undefined, name: string): string => `${namespace ?? ''}/${name}`;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 7386 JSON merge patch. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

class Watcher {
  private closed = false;
  constructor(
    readonly res: FakeResource,
    private readonly namespace: string | undefined,
    private readonly labels: LabelPredicate,
    private readonly fields: FieldPredicate,
    private readonly response: http.ServerResponse,
    private readonly onClose: () => void,
    /** changes at or below this version are not for this watch (one from a version not reached yet) */
    private readonly after = 0,
  ) {}

  matches(obj: FakeObject): boolean {
    if (this.namespace !== undefined && obj.metadata.namespace !== this.namespace) return false;
    return this.labels(obj.metadata.labels) && this.fields(obj);
  }

  send(type: string, objectJson: string): void {
    if (this.closed) return;
    this.response.write(`{"type":"${type}","object":${objectJson}}\n`);
  }

  sendObject(type: ChangeType, s: Stored): void {
    this.send(type, fullJson(this.res, s));
  }

  deliver(c: Change): void {
    if (c.rv <= this.after) return;
    const curOk = this.matches(c.cur.obj);
    if (c.type !== 'MODIFIED') {
      if (curOk) this.sendObject(c.type, c.cur);
      return;
    }
    const prevOk = c.prev !== undefined && this.matches(c.prev.obj);
    if (curOk) this.sendObject(prevOk ? 'MODIFIED' : 'ADDED', c.cur);
    else if (prevOk && c.prev) this.sendObject('DELETED', withRv(c.prev, c.rv));
  }

  /** Ends the stream cleanly (timeoutSeconds, 410). */
  end(): void {
    if (this.closed) return;
    this.closed = true;
    this.response.end();
    this.onClose();
  }

  /** Destroys the connection under the client (a dropped watch). */
  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.response.socket?.destroy();
    this.response.destroy();
    this.onClose();
  }
}

export class FakeApiServer {
  /** Every request, in arrival order. */
  readonly requests: FakeRequest[] = [];
  private readonly objects = new Map<FakeResource, Map<string, Stored>>();
  private history: Change[] = [];
  /** called with each list request's query before it is answered (tests: a write between pages) */
  beforeList: ((query: Record<string, string>) => void) | undefined;
  /** likewise before each watch is answered; a FakeApiError thrown is the answer (tests: a watch refused) */
  beforeWatch: ((query: Record<string, string>) => void) | undefined;
  /** paged lists in progress: the snapshot each continue token reads on from */
  private listSnapshots = new Map<string, ListSnapshot>();
  private rv = 1;
  /** watches from a version below this get 410 */
  private floor = 1;
  private readonly watchers = new Set<Watcher>();
  private readonly sockets = new Set<Socket>();
  /** TCP connections accepted (each a TLS handshake when serving HTTPS), since the first listen */
  connectionsAccepted = 0;
  private server: http.Server | https.Server | undefined;
  private readonly tls: FakeApiServerOptions['tls'];
  private readonly auth: FakeAuthOptions | undefined;
  private address: { host: string; port: number } | undefined;
  private readonly bookmarkIntervalMs: number;
  private readonly watchList: boolean;
  private readonly maxHistory: number;

  constructor(options: FakeApiServerOptions = {}) {
    this.bookmarkIntervalMs = options.bookmarkIntervalMs ?? 10_000;
    this.watchList = options.watchList ?? true;
    this.maxHistory = options.maxHistory ?? 200_000;
    this.tls = options.tls;
    this.auth = options.auth;
    for (const r of FAKE_RESOURCES) this.objects.set(r, new Map());
  }

  // ---- lifecycle ----

  /** Starts serving; port 0 picks a free port. Resolves to the base URL. */
  async listen(port = 0, host = '127.0.0.1'): Promise<string> {
    if (this.server) throw new Error('FakeApiServer: already listening');
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => this.handle(req, res);
    const tls = this.tls;
    const server = tls
      ? https.createServer(
          {
            cert: tls.cert,
            key: tls.key,
            ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: false } : {}),
          },
          handler,
        )
      : http.createServer(handler);
    server.on('connection', (s) => {
      this.connectionsAccepted++;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    const a = server.address() as AddressInfo;
    this.address = { host, port: a.port };
    return this.url;
  }

  /** http://host:port of the listening server. */
  get url(): string {
    if (!this.address) throw new Error('FakeApiServer: not listening');
    const h = this.address.host.includes(':') ? `[${this.address.host}]` : this.address.host;
    return `${this.tls ? 'https' : 'http'}://${h}:${this.address.port}`;
  }

  /** Stops serving: destroys every open connection, watches included. Objects are kept. */
  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.dropWatches();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /**
   * Closes and reopens on the same port. `loseHistory` forgets the history and rewinds the
   * resourceVersion to the newest kept object's, as an etcd restore from a snapshot does:
   * clients holding older versions get 410, newer ones 504 Too large, so they must relist.
   * `clearObjects` forgets every object too (without any DELETED event).
   */
  async restart(options: { loseHistory?: boolean; clearObjects?: boolean } = {}): Promise<void> {
    const address = this.address;
    if (!address) throw new Error('FakeApiServer: not listening');
    await this.close();
    if (options.clearObjects) for (const m of this.objects.values()) m.clear();
    if (options.loseHistory) this.resetHistory();
    await this.listen(address.port, address.host);
  }

  // ---- control ----

  /** Forgets the history: a watch from any version before the current one gets 410 Expired. */
  compact(): void {
    this.history = [];
    this.floor = this.rv;
    // kube-apiserver serves a continue of a cached resource from its watch cache's snapshots,
    // which etcd's compaction does not touch; Events (watch cache size 0) are read from etcd
    for (const [id, snapshot] of this.listSnapshots) if (!isCached(snapshot.res)) this.listSnapshots.delete(id);
  }

  /** Destroys every open watch connection (the client sees the stream break). */
  dropWatches(): void {
    for (const w of [...this.watchers]) w.destroy();
  }

  /** Expires every continue token handed out: continuing a paged list gets 410 Expired. */
  expireListContinuations(): void {
    this.listSnapshots.clear();
  }

  /** Ends every open watch stream cleanly, as the API server does at a watch's timeout. */
  endWatches(): void {
    for (const w of [...this.watchers]) w.end();
  }

  /** See restart(): history lost, version rewound to the newest object's, watches dropped. */
  resetHistory(): void {
    let newest = 1;
    for (const m of this.objects.values())
      for (const s of m.values()) newest = Math.max(newest, Number(s.obj.metadata.resourceVersion));
    this.rv = newest;
    this.history = [];
    this.floor = newest;
    this.dropWatches();
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  stats(): FakeStats {
    const objects: Record<string, number> = {};
    for (const [r, m] of this.objects) objects[resourceName(r)] = m.size;
    const requests: Record<string, number> = {};
    for (const r of this.requests) requests[r.verb] = (requests[r.verb] ?? 0) + 1;
    return {
      resourceVersion: String(this.rv),
      oldestResourceVersion: String(this.floor),
      history: this.history.length,
      objects,
      openWatches: this.watchers.size,
      requests,
      unauthorized: this.requests.filter((r) => !r.authenticated).length,
    };
  }

  // ---- programmatic object API (same semantics as the REST API, errors as FakeApiError) ----

  /** Creates an object (namespace defaults to "default" for namespaced kinds). */
  create(obj: FakeObject): FakeObject {
    const res = this.resourceFor(obj.apiVersion, obj.kind);
    return fullObject(res, this.createIn(res, res.namespaced ? (obj.metadata.namespace ?? 'default') : undefined, obj));
  }

  /** Replaces an existing object; a set metadata.resourceVersion must be the current one. */
  update(obj: FakeObject): FakeObject {
    const res = this.resourceFor(obj.apiVersion, obj.kind);
    const ns = res.namespaced ? (obj.metadata.namespace ?? 'default') : undefined;
    return fullObject(res, this.replaceIn(res, ns, obj.metadata.name ?? '', obj));
  }

  /** Applies a JSON merge patch to an existing object. */
  patch(ref: FakeObjectRef, patch: object): FakeObject {
    const res = this.resourceFor(ref.apiVersion, ref.kind);
    return fullObject(res, this.patchIn(res, this.nsOf(res, ref), ref.name, patch));
  }

  /** Deletes an object; returns it as it was. */
  delete(ref: FakeObjectRef): FakeObject {
    const res = this.resourceFor(ref.apiVersion, ref.kind);
    return fullObject(res, this.deleteIn(res, this.nsOf(res, ref), ref.name));
  }

  /** The object, or undefined. */
  get(ref: FakeObjectRef): FakeObject | undefined {
    const res = this.resourceFor(ref.apiVersion, ref.kind);
    const s = this.objects.get(res)!.get(keyOf(this.nsOf(res, ref), ref.name));
    return s && fullObject(res, s);
  }

  /** Every object of a kind (in one namespace when given), with kind and apiVersion. */
  list(apiVersion: string, kind: string, namespace?: string): FakeObject[] {
    const res = this.resourceFor(apiVersion, kind);
    const out: FakeObject[] = [];
    for (const s of this.objects.get(res)!.values()) {
      if (namespace === undefined || s.obj.metadata.namespace === namespace) out.push(fullObject(res, s));
    }
    return out;
  }

  private nsOf(res: FakeResource, ref: { namespace?: string }): string | undefined {
    return res.namespaced ? (ref.namespace ?? 'default') : undefined;
  }

  private resourceFor(apiVersion: string | undefined, kind: string | undefined): FakeResource {
    const r = FAKE_RESOURCES.find((x) => apiVersionOf(x) === apiVersion && x.kind === kind);
    if (!r) throw new FakeApiError(400, 'BadRequest', `no resource for apiVersion ${apiVersion} kind ${kind}`);
    return r;
  }

  // ---- storage ----

  private write(res: FakeResource, key: string, type: ChangeType, obj: FakeObject): Stored {
    const rv = ++this.rv;
    obj.metadata.resourceVersion = String(rv);
    const m = this.objects.get(res)!;
    const prev = m.get(key);
    const cur = store(obj);
    m.set(key, cur);
    this.record({ rv, res, type, cur, prev });
    return cur;
  }

  private record(c: Change): void {
    this.history.push(c);
    if (this.history.length > this.maxHistory) {
      const cut = this.history.length >> 1;
      this.floor = this.history[cut - 1]!.rv; // cut >= 1: the history is over maxHistory
      this.history = this.history.slice(cut);
    }
    for (const w of this.watchers) if (w.res === c.res) w.deliver(c);
  }

  private createIn(res: FakeResource, ns: string | undefined, input: FakeObject): Stored {
    if (!isPlainObject(input) || !isPlainObject(input.metadata))
      throw new FakeApiError(400, 'BadRequest', 'object has no metadata');
    const obj = structuredClone(input);
    if (res.namespaced) {
      if (obj.metadata.namespace !== undefined && obj.metadata.namespace !== ns) {
        throw new FakeApiError(
          400,
          'BadRequest',
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      obj.metadata.namespace = ns;
    } else {
      delete obj.metadata.namespace;
    }
    if (!obj.metadata.name && obj.metadata.generateName)
      obj.metadata.name = obj.metadata.generateName + randomUUID().slice(0, 5);
    const name = obj.metadata.name;
    if (!name) throw new FakeApiError(422, 'Invalid', `${res.kind} is invalid: metadata.name: Required value`);
    if (res.kind === 'Event' && res.group === '') validateCoreEvent(obj, name);
    const key = keyOf(ns, name);
    if (this.objects.get(res)!.has(key))
      throw new FakeApiError(409, 'AlreadyExists', `${res.plural} "${name}" already exists`, {
        name,
        kind: res.plural,
      });
    obj.metadata.uid = randomUUID();
    obj.metadata.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    return this.write(res, key, 'ADDED', obj);
  }

  private existing(res: FakeResource, ns: string | undefined, name: string): Stored {
    const s = this.objects.get(res)!.get(keyOf(ns, name));
    if (!s) throw new FakeApiError(404, 'NotFound', `${res.plural} "${name}" not found`, { name, kind: res.plural });
    return s;
  }

  private replaceIn(res: FakeResource, ns: string | undefined, name: string, input: FakeObject): Stored {
    if (!isPlainObject(input) || !isPlainObject(input.metadata))
      throw new FakeApiError(400, 'BadRequest', 'object has no metadata');
    if (input.metadata.name !== name)
      throw new FakeApiError(
        400,
        'BadRequest',
        `the name of the object (${input.metadata.name}) does not match the name on the URL (${name})`,
      );
    const old = this.existing(res, ns, name);
    const given = input.metadata.resourceVersion;
    if (given !== undefined && given !== '' && given !== old.obj.metadata.resourceVersion) {
      throw new FakeApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${res.plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        {
          name,
          kind: res.plural,
        },
      );
    }
    const obj = structuredClone(input);
    obj.metadata.namespace = ns;
    if (ns === undefined) delete obj.metadata.namespace;
    obj.metadata.uid = old.obj.metadata.uid;
    obj.metadata.creationTimestamp = old.obj.metadata.creationTimestamp;
    return this.write(res, keyOf(ns, name), 'MODIFIED', obj);
  }

  private patchIn(res: FakeResource, ns: string | undefined, name: string, patch: unknown): Stored {
    const old = this.existing(res, ns, name);
    if (!isPlainObject(patch)) throw new FakeApiError(400, 'BadRequest', 'a merge patch must be a JSON object');
    const merged = applyMergePatch(structuredClone(old.obj), patch) as FakeObject;
    merged.metadata = {
      ...merged.metadata,
      name,
      namespace: ns,
      uid: old.obj.metadata.uid,
      creationTimestamp: old.obj.metadata.creationTimestamp,
    };
    if (ns === undefined) delete merged.metadata.namespace;
    return this.write(res, keyOf(ns, name), 'MODIFIED', merged);
  }

  private deleteIn(res: FakeResource, ns: string | undefined, name: string): Stored {
    const old = this.existing(res, ns, name);
    const key = keyOf(ns, name);
    this.objects.get(res)!.delete(key);
    const rv = ++this.rv;
    const gone = withRv(old, rv);
    this.record({ rv, res, type: 'DELETED', cur: gone });
    return gone;
  }

  // ---- HTTP ----

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    const method = req.method ?? 'GET';
    const route = this.route(url.pathname);
    const watch = query.watch === 'true' || query.watch === '1';
    let verb = route.kind === 'resource' ? this.verbOf(method, route.name !== undefined, watch) : route.kind;
    if (route.kind === 'none') verb = 'other';
    const user = route.kind === 'control' ? ADMIN : this.authenticate(req);
    const authenticated = user !== undefined;
    const authorization = req.headers.authorization ?? '';
    this.requests.push({
      method,
      path: url.pathname,
      verb,
      resource: route.kind === 'resource' ? resourceName(route.res) : undefined,
      query,
      authorization,
      authenticated,
    });
    if (!authenticated) {
      req.resume();
      return sendJson(res, 401, UNAUTHORIZED_STATUS);
    }
    const sa = this.auth?.serviceAccount;
    if (sa && user !== ADMIN) {
      const attributes = requestAttributes(method, url.pathname, query);
      if (!rbacAllows(user === ANONYMOUS ? [] : sa.rules, attributes, user === ANONYMOUS)) {
        req.resume();
        return sendJson(res, 403, forbidden(user === ANONYMOUS ? ANONYMOUS : sa.user, attributes).toStatus());
      }
    }
    readBody(req)
      .then((body) => this.dispatch(route, verb, method, url.pathname, query, body, req, res))
      .catch((e: unknown) => {
        const err =
          e instanceof FakeApiError
            ? e
            : e instanceof SelectorError
              ? new FakeApiError(400, 'BadRequest', e.message)
              : new FakeApiError(500, 'InternalError', String(e));
        if (!res.headersSent) sendJson(res, err.status, err.toStatus());
        else res.destroy();
      });
  }

  /**
   * kube-apiserver's x509 then bearer-token authenticators, then the anonymous one (only with
   * `auth.serviceAccount`): ADMIN, SERVICE_ACCOUNT, ANONYMOUS, or undefined (401). Everything
   * is ADMIN without `auth`.
   */
  private authenticate(req: http.IncomingMessage): string | undefined {
    const auth = this.auth;
    if (!auth) return ADMIN;
    if (this.tls?.clientCa && (req.socket as TLSSocket).authorized) return ADMIN;
    const header = req.headers.authorization;
    if (header === undefined && auth.serviceAccount) return ANONYMOUS;
    const m = /^Bearer (.+)$/.exec(header ?? '');
    if (!m) return undefined;
    const token = m[1]!;
    if (auth.tokens?.includes(token)) return ADMIN;
    if (!auth.tokenFile) return undefined;
    try {
      return token === readFileSync(auth.tokenFile, 'utf8').trim() ? SERVICE_ACCOUNT : undefined;
    } catch {
      return undefined;
    }
  }

  private verbOf(method: string, item: boolean, watch: boolean): string {
    switch (method) {
      case 'GET':
        return item ? 'get' : watch ? 'watch' : 'list';
      case 'POST':
        return item ? 'other' : 'create';
      case 'PUT':
        return item ? 'update' : 'other';
      case 'PATCH':
        return item ? 'patch' : 'other';
      case 'DELETE':
        return item ? 'delete' : 'other';
      default:
        return 'other';
    }
  }

  private route(path: string): Route {
    const seg = path.split('/').filter((s) => s !== '');
    if (seg[0] === 'fake') return { kind: 'control' };
    if (
      ['version', 'healthz', 'readyz', 'livez'].includes(seg[0] ?? '') ||
      (seg[0] === 'api' && seg.length <= 2) ||
      (seg[0] === 'apis' && seg.length <= 3)
    ) {
      return { kind: 'discovery' };
    }
    let group: string;
    let version: string;
    let rest: string[];
    if (seg[0] === 'api' && seg[1] !== undefined) [group, version, rest] = ['', seg[1], seg.slice(2)];
    else if (seg[0] === 'apis' && seg[1] !== undefined && seg[2] !== undefined)
      [group, version, rest] = [seg[1], seg[2], seg.slice(3)];
    else return { kind: 'none' };
    let namespace: string | undefined;
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    if (rest.length < 1 || rest.length > 2) return { kind: 'none' };
    const r = FAKE_RESOURCES.find((x) => x.group === group && x.version === version && x.plural === rest[0]);
    if (!r || (namespace !== undefined && !r.namespaced)) return { kind: 'none' };
    return { kind: 'resource', res: r, namespace, name: rest[1] };
  }

  private dispatch(
    route: Route,
    verb: string,
    method: string,
    path: string,
    query: Record<string, string>,
    body: string,
    req: http.IncomingMessage,
    res: http.ServerResponse,
  ): void {
    if (route.kind === 'control') return this.control(method, path, res);
    if (route.kind === 'discovery') return this.discovery(path, res);
    if (route.kind === 'none')
      throw new FakeApiError(404, 'NotFound', `the server could not find the requested resource (${method} ${path})`);
    const r = route.res;
    const ns = route.namespace;
    if (route.name !== undefined && r.namespaced && ns === undefined)
      throw new FakeApiError(404, 'NotFound', `${r.plural} is namespaced: use /namespaces/NS/${r.plural}/NAME`);
    const name = route.name ?? '';
    switch (verb) {
      case 'list':
        return this.listHttp(r, ns, query, res);
      case 'watch':
        return this.watchHttp(r, ns, query, res);
      case 'get':
        return sendRaw(res, 200, fullJson(r, this.existing(r, ns, name)));
      case 'create':
        if (r.namespaced && ns === undefined)
          throw new FakeApiError(404, 'NotFound', `create ${r.plural}: the request must name a namespace`);
        return sendRaw(res, 201, fullJson(r, this.createIn(r, ns, parseJson(body))));
      case 'update':
        return sendRaw(res, 200, fullJson(r, this.replaceIn(r, ns, name, parseJson(body))));
      case 'patch': {
        const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
        if (type !== 'application/merge-patch+json' && type !== 'application/strategic-merge-patch+json') {
          throw new FakeApiError(
            415,
            'UnsupportedMediaType',
            `the fake API server does not support patch type "${type}"`,
          );
        }
        return sendRaw(res, 200, fullJson(r, this.patchIn(r, ns, name, parseJson(body))));
      }
      case 'delete':
        return sendRaw(res, 200, fullJson(r, this.deleteIn(r, ns, name)));
      default:
        throw new FakeApiError(405, 'MethodNotAllowed', `${method} is not supported on ${path}`);
    }
  }

  /** The objects a list of `r` selects now, in etcd's key order (namespace, then name). */
  private snapshotOf(r: FakeResource, ns: string | undefined, query: Record<string, string>): ListSnapshot {
    const labels = compileLabelSelector(query.labelSelector);
    const fields = compileFieldSelector(query.fieldSelector);
    const items: { key: string; json: string }[] = [];
    for (const [key, s] of this.objects.get(r)!) {
      if (ns !== undefined && s.obj.metadata.namespace !== ns) continue;
      if (labels(s.obj.metadata.labels) && fields(s.obj)) items.push({ key, json: s.json });
    }
    items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return { res: r, rv: this.rv, items };
  }

  private listHttp(
    r: FakeResource,
    ns: string | undefined,
    query: Record<string, string>,
    res: http.ServerResponse,
  ): void {
    this.beforeList?.(query);
    const limit = query.limit === undefined || query.limit === '' ? 0 : Number(query.limit);
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new FakeApiError(400, 'BadRequest', `invalid limit "${query.limit}"`);
    let snapshot: ListSnapshot;
    let id = '';
    let offset = 0;
    if ((query.continue ?? '') !== '') {
      const token = decodeContinue(query.continue!);
      const found = this.listSnapshots.get(token.id);
      if (!found) {
        // as kube-apiserver: 410, and a token that continues after the same key in the
        // current state (an inconsistent list, rv -1 in the real token)
        const fresh = this.snapshotOf(r, ns, query);
        const freshId = randomUUID();
        this.listSnapshots.set(freshId, fresh);
        throw new FakeApiError(410, 'Expired', EXPIRED_CONTINUE_MESSAGE, undefined, {
          continue: encodeContinue(freshId, token.start),
        });
      }
      snapshot = found;
      id = token.id;
      offset = firstAfterKey(snapshot.items, token.start);
    } else {
      snapshot = this.snapshotOf(r, ns, query);
    }
    const end = limit > 0 ? Math.min(offset + limit, snapshot.items.length) : snapshot.items.length;
    let next = '';
    if (end < snapshot.items.length) {
      if (id === '') id = randomUUID();
      this.listSnapshots.set(id, snapshot);
      // kube-apiserver counts the rest only for a list without selectors
      const remaining =
        query.labelSelector || query.fieldSelector ? '' : `,"remainingItemCount":${snapshot.items.length - end}`;
      next = `,"continue":"${encodeContinue(id, snapshot.items[end - 1]!.key)}"${remaining}`;
    } else if (id !== '') {
      this.listSnapshots.delete(id);
    }
    const head = `{"kind":"${r.kind}List","apiVersion":"${apiVersionOf(r)}","metadata":{"resourceVersion":"${snapshot.rv}"${next}},"items":[`;
    sendRaw(
      res,
      200,
      head +
        snapshot.items
          .slice(offset, end)
          .map((i) => i.json)
          .join(',') +
        ']}',
    );
  }

  private watchHttp(
    r: FakeResource,
    ns: string | undefined,
    query: Record<string, string>,
    res: http.ServerResponse,
  ): void {
    const labels = compileLabelSelector(query.labelSelector);
    const fields = compileFieldSelector(query.fieldSelector);
    const fromParam = query.resourceVersion ?? '';
    const parsed = fromParam === '' ? 0 : Number(fromParam);
    if (!Number.isSafeInteger(parsed) || parsed < 0)
      throw new FakeApiError(400, 'BadRequest', `invalid resourceVersion "${fromParam}"`);
    validateWatchListOptions(query, this.watchList);
    // sendInitialEvents=true: the state now (at least as new as the version asked for: no 410),
    // as ADDED events; =false: no initial events, from the version asked for, else from now
    const sendInitialEvents = query.sendInitialEvents;
    const from =
      sendInitialEvents === 'true' ? 0 : sendInitialEvents === 'false' && fromParam === '' ? this.rv : parsed;
    this.beforeWatch?.(query);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    const timers: NodeJS.Timeout[] = [];
    const w = new Watcher(
      r,
      ns,
      labels,
      fields,
      res,
      () => {
        this.watchers.delete(w);
        for (const t of timers) clearTimeout(t);
      },
      from,
    );
    const bookmarks = query.allowWatchBookmarks === 'true';
    if (from !== 0 && from < this.floor) {
      // the watch cache's message; etcd's for Events, which kube-apiserver does not cache
      const message = isCached(r)
        ? `too old resource version: ${from} (${this.floor})`
        : 'The resourceVersion for the provided watch is too old.';
      const status = new FakeApiError(410, 'Expired', message).toStatus();
      w.send('ERROR', JSON.stringify(status));
      w.end();
      return;
    }
    if (from === 0) {
      for (const s of this.objects.get(r)!.values()) if (w.matches(s.obj)) w.sendObject('ADDED', s);
      // kube-apiserver v1.37 ends the synthetic ADDED events of a watch from "0" or none (or one
      // that asked for sendInitialEvents) with a bookmark annotated k8s.io/initial-events-end
      // when bookmarks are allowed
      if (bookmarks) w.send('BOOKMARK', this.bookmarkJson(r, { 'k8s.io/initial-events-end': 'true' }));
    } else if (from <= this.rv) {
      for (const c of this.history.slice(this.firstAfter(from))) if (c.res === r) w.deliver(c);
    }
    this.watchers.add(w);
    // the response's 'close' is the connection going away (the request's fires once its
    // body has been read, which for a GET is at once)
    res.on('close', () => w.destroy());
    // kube-apiserver's watch handler (get.go): no timeoutSeconds is --min-request-timeout x [1, 2)
    const asked = Number(query.timeoutSeconds ?? '0');
    const timeout = asked > 0 ? asked : MIN_REQUEST_TIMEOUT_SECONDS * (1 + Math.random());
    timers.push(setTimeout(() => w.end(), timeout * 1000));
    // kube-apiserver's watch cache (cache_watcher.go nextBookmarkTime) bookmarks a watch
    // roughly every minute, and 2 s before its deadline. The bookmark carries
    // the cache's last version, and the watcher passes it on only when that version is newer
    // than the one the watch started from: a watch with nothing newer gets no bookmark at all.
    // (The real cache learns of other resources' writes only from etcd's progress
    // notifications; the fake's one version counts them at once.)
    if (bookmarks) {
      const startedAt = Date.now();
      const startVersion = from === 0 ? this.rv : from;
      const lastCall = startedAt + timeout * 1000 - 2000;
      const schedule = (): void => {
        const now = Date.now();
        const at = Math.min(now + this.bookmarkIntervalMs, lastCall);
        if (at < now) return;
        timers.push(
          setTimeout(() => {
            if (this.rv > startVersion) w.send('BOOKMARK', this.bookmarkJson(r));
            // the deadline's bookmark is the last: a timer may fire a millisecond early, and
            // asking the clock again then scheduled a second one (two BOOKMARKs, seen under load)
            if (at < lastCall) schedule();
          }, at - now),
        );
      };
      schedule();
    }
  }

  private bookmarkJson(r: FakeResource, annotations?: Record<string, string>): string {
    const metadata = { resourceVersion: String(this.rv), ...(annotations ? { annotations } : {}) };
    return JSON.stringify({ kind: r.kind, apiVersion: apiVersionOf(r), metadata });
  }

  /** Index of the first history entry newer than rv (binary search: the history is sorted). */
  private firstAfter(rv: number): number {
    let lo = 0;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.history[mid]!.rv <= rv)
        lo = mid + 1; // lo <= mid < hi <= length
      else hi = mid;
    }
    return lo;
  }

  private control(method: string, path: string, res: http.ServerResponse): void {
    const action = path.replace(/^\/fake\/?/, '');
    if (method === 'GET' && action === 'stats') return sendJson(res, 200, this.stats());
    if (method === 'POST' && action === 'compact') this.compact();
    else if (method === 'POST' && action === 'drop-watches') this.dropWatches();
    else if (method === 'POST' && action === 'reset-history') this.resetHistory();
    else
      throw new FakeApiError(
        404,
        'NotFound',
        `unknown control ${method} ${path} (POST compact|drop-watches|reset-history, GET stats)`,
      );
    sendJson(res, 200, this.stats());
  }

  private discovery(path: string, res: http.ServerResponse): void {
    const seg = path.split('/').filter((s) => s !== '');
    const resources = (group: string, version: string): object => ({
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: group ? `${group}/${version}` : version,
      resources: FAKE_RESOURCES.filter((r) => r.group === group && r.version === version).map((r) => ({
        name: r.plural,
        singularName: r.kind.toLowerCase(),
        namespaced: r.namespaced,
        kind: r.kind,
        verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
      })),
    });
    const groups = [...new Set(FAKE_RESOURCES.filter((r) => r.group).map((r) => `${r.group}/${r.version}`))];
    switch (seg[0]) {
      case 'version':
        return sendJson(res, 200, { major: '1', minor: '31', gitVersion: 'v1.31.0-fake', platform: 'linux/amd64' });
      case 'healthz':
      case 'readyz':
      case 'livez':
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('ok');
        return;
      case 'api':
        if (seg.length === 1)
          return sendJson(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
        if (seg[1] === 'v1') return sendJson(res, 200, resources('', 'v1'));
        break;
      case 'apis':
        if (seg.length === 1) {
          return sendJson(res, 200, {
            kind: 'APIGroupList',
            apiVersion: 'v1',
            groups: groups.map((gv) => {
              const [name, version] = gv.split('/');
              return {
                name,
                versions: [{ groupVersion: gv, version }],
                preferredVersion: { groupVersion: gv, version },
              };
            }),
          });
        }
        if (seg.length === 3 && groups.includes(`${seg[1]}/${seg[2]}`))
          return sendJson(res, 200, resources(seg[1]!, seg[2]!));
        break;
      default:
        break; // the 404 below
    }
    throw new FakeApiError(404, 'NotFound', `the server could not find the requested resource (${path})`);
  }
}

/**
 * A kubeconfig (JSON, which is YAML) for a plain-http server without credentials;
 * client-node accepts http only with insecure-skip-tls-verify.
 */
/**
 * A kubeconfig for a fake API server at `url`: plain http with insecure-skip-tls-verify
 * (client-node's condition for http), or https with `caFile`; the user's credentials as given.
 */
export function kubeconfigFor(url: string, o: { caFile?: string; tokenFile?: string; token?: string } = {}): string {
  const cluster = o.caFile
    ? { server: url, 'certificate-authority': o.caFile }
    : { server: url, 'insecure-skip-tls-verify': true };
  const user = { ...(o.tokenFile ? { tokenFile: o.tokenFile } : {}), ...(o.token ? { token: o.token } : {}) };
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'fake', cluster }],
      users: [{ name: 'fake', user }],
      contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake' } }],
      'current-context': 'fake',
    },
    null,
    2,
  );
}

interface ListSnapshot {
  readonly res: FakeResource;
  readonly rv: number;
  /** sorted by key */
  readonly items: readonly { readonly key: string; readonly json: string }[];
}

/** kube-apiserver's message for a continue token older than etcd's compaction. */
export const EXPIRED_CONTINUE_MESSAGE =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, ' +
  'or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an ' +
  'inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.';

/** A continue token: base64url JSON of the snapshot's id and the last key handed out (the real one names a revision and that key). */
function encodeContinue(id: string, start: string): string {
  return Buffer.from(JSON.stringify({ id, start })).toString('base64url');
}

function decodeContinue(token: string): { id: string; start: string } {
  try {
    const t = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { id?: unknown; start?: unknown };
    if (typeof t.id === 'string' && typeof t.start === 'string') return { id: t.id, start: t.start };
  } catch {
    // below
  }
  throw new FakeApiError(400, 'BadRequest', 'continue key is not valid: the token is not a valid continue token');
}

/** Index of the first item whose key sorts after `key`. */
function firstAfterKey(items: ListSnapshot['items'], key: string): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (items[mid]!.key <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** kube-apiserver keeps a watch cache for every resource but Events (DefaultWatchCacheSizes). */
const isCached = (r: FakeResource): boolean => r.plural !== 'events';

const ADMIN = 'admin';
const SERVICE_ACCOUNT = 'service-account';
const ANONYMOUS = 'system:anonymous';

type Route =
  | { kind: 'resource'; res: FakeResource; namespace: string | undefined; name: string | undefined }
  | { kind: 'control' }
  | { kind: 'discovery' }
  | { kind: 'none' };

/**
 * The one rule of core/v1 Event validation (legacyValidateEvent) a client can break by
 * mistake: involvedObject.namespace must be the Event's namespace ("default" or none for a
 * cluster-scoped object). kube-apiserver answers 422 Invalid with the field as a cause.
 */
function validateCoreEvent(obj: FakeObject, name: string): void {
  const involved = (obj.involvedObject ?? {}) as { namespace?: string };
  const given = involved.namespace ?? '';
  const ns = obj.metadata.namespace ?? '';
  const ok = given === '' ? ns === '' || ns === 'default' : given === ns;
  if (ok) return;
  const cause = {
    reason: 'FieldValueInvalid',
    message: `Invalid value: ${JSON.stringify(given)}: does not match event.namespace`,
    field: 'involvedObject.namespace',
  };
  throw new FakeApiError(422, 'Invalid', `Event ${JSON.stringify(name)} is invalid: ${cause.field}: ${cause.message}`, {
    name,
    kind: 'Event',
    causes: [cause],
  });
}

/**
 * kube-apiserver's check of a watch's sendInitialEvents and resourceVersionMatch
 * (apimachinery's validateWatchOptions, v1.37): 422 Invalid on kind ListOptions, one cause per
 * problem.
 */
function validateWatchListOptions(query: Record<string, string>, watchList: boolean): void {
  const causes: { reason: string; message: string; field: string }[] = [];
  const forbidden = (field: string, why: string) =>
    causes.push({ reason: 'FieldValueForbidden', message: `Forbidden: ${why}`, field });
  const match = query.resourceVersionMatch ?? '';
  if (query.sendInitialEvents !== undefined) {
    if (match !== 'NotOlderThan')
      forbidden('resourceVersionMatch', 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan');
    if (!watchList)
      forbidden(
        'sendInitialEvents',
        'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled',
      );
  }
  if (match !== '') {
    if (query.sendInitialEvents === undefined)
      forbidden(
        'resourceVersionMatch',
        'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
      );
    if (match !== 'NotOlderThan')
      causes.push({
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: ${JSON.stringify(match)}: supported values: "NotOlderThan"`,
        field: 'resourceVersionMatch',
      });
  }
  if (causes.length === 0) return;
  const list = causes.map((c) => `${c.field}: ${c.message}`);
  const text = list.length === 1 ? list[0] : `[${list.join(', ')}]`;
  throw new FakeApiError(422, 'Invalid', `ListOptions.meta.k8s.io "" is invalid: ${text}`, {
    group: 'meta.k8s.io',
    kind: 'ListOptions',
    causes,
  });
}

function readBody(req: http.IncomingMessage): Promise<string> {
  if (req.method === 'GET' || req.method === 'HEAD') {
    req.resume();
    return Promise.resolve('');
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseJson(body: string): FakeObject {
  try {
    return JSON.parse(body) as FakeObject;
  } catch (e) {
    throw new FakeApiError(400, 'BadRequest', `request body is not JSON: ${(e as Error).message}`);
  }
}

function sendRaw(res: http.ServerResponse, status: number, json: string): void {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json) });
  res.end(json);
}

function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  sendRaw(res, status, JSON.stringify(value));
}
