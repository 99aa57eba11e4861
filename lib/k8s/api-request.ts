/**
 * The one way kube-ipvs talks to the API server: every list (raw-list.ts), watch
 * (informers.ts) and Event POST/PATCH (event-recorder.ts) is an apiRequest. It adds what
 * client-go's transport does and @kubernetes/client-node's requests lack:
 * - credentials from client-node's KubeConfig.applySecurityAuthentication (client
 *   certificates, CA, insecure-skip-tls-verify, exec plugins, static tokens), then a bearer
 *   token file re-read as client-go's cachingTokenSource does (TokenFile: at most a minute
 *   old; the kubelet rotates a bound service-account token long before it expires);
 * - a 401 re-reads the token file at once and, when the token changed, sends the request
 *   once more (client-go resets its cached token on a 401; the retry saves a backoff); with
 *   an exec plugin, a 401 drops client-node's cached credential and runs the plugin again
 *   for one more try, as client-go's exec authenticator refreshes on a 401;
 * - a 401 or 403 that stands gets one clear log line (the kubeconfig, its user entry, the
 *   URL); later refusals stay quiet until a request succeeds again;
 * - a deadline (requestTimeoutMs, default 60 s: kube-apiserver's own --request-timeout for
 *   what is not a watch) on the credentials (a hung exec plugin) and the answer (for a
 *   streamed watch, its headers): past it the request throws a TimeoutError naming what it
 *   waited for, so the caller's backoff runs instead of waiting for ever;
 * - every response (and every request that got none) to an observer, for client-go's
 *   rest_client_requests_total{code,host,method} and rest_client_request_duration_seconds;
 * - a body read whole (not a watch's) is refused once it passes RESPONSE_MAX_BYTES, as it
 *   streams in, so no answer is buffered without bound; the Retry-After header of an answer
 *   is handed on (the informers wait at least that long before asking again).
 */
import { spawn, type SpawnOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { AgentOptions } from 'node:https';
import { Agent, type Dispatcher, fetch, type Response } from 'undici';
import { isNativeError } from 'node:util/types';
import { ApiConnectionError } from '../errors';
import type { Cluster, User } from '@kubernetes/client-node';
import { HttpMethod, KubeConfig, RequestContext } from './client-node';
import { decodeObject, isProtobuf } from './protobuf';

/** One HTTP request as client-go's rest_client metrics count it. */
export interface ApiCall {
  /** GET, POST, PATCH */
  readonly method: string;
  /** host:port as the kubeconfig's server names it (client-go's URL.Host) */
  readonly host: string;
  /** the HTTP status, or "<error>" when no response came (client-go's label) */
  readonly code: string;
  /** until the body was read (a watch: until its headers) */
  readonly seconds: number;
}

/** Called once per API request, for the rest_client_* metrics. */
export type ApiCallObserver = (call: ApiCall) => void;

/** Where apiRequest logs a refused credential (a winston logger fits). */
export interface ApiLog {
  error(message: string, meta?: object): unknown;
  warn(message: string, meta?: object): unknown;
}

/**
 * The largest body apiRequest reads whole (a list page, a Status; not a watch's stream, whose
 * events reporting-watch.ts caps one by one): 512 MiB, the longest string V8 makes
 * (0x1fffffe8 characters), so a JSON answer larger than this could not have been parsed
 * anyway (`res.text()` threw only once it had buffered all of it). Real answers stay far below:
 * kube-apiserver takes objects of at most 3 MiB (its MaxRequestBodyBytes) and etcd stores
 * values of at most 1.5 MiB (--max-request-bytes), and a page is LIST_PAGE_SIZE (2,000)
 * objects: 2,000 EndpointSlices of 100 endpoints (the controller's default maximum per slice)
 * are about 50 MB of JSON. Counted after decompression (a gzip bomb is refused too).
 */
export const RESPONSE_MAX_BYTES = 512 * 2 ** 20;

/** A body larger than the request's cap (RESPONSE_MAX_BYTES): refused as it came, not read further. */
export class ResponseTooLargeError extends Error {
  override readonly name = 'ResponseTooLargeError';
  constructor(
    message: string,
    /** the HTTP status of the answer whose body was refused */
    readonly status: number,
  ) {
    super(message);
  }
}

/** A request's deadline unless the kubeconfig or the request says otherwise (kube-apiserver's --request-timeout default). */
export const REQUEST_TIMEOUT_MS = 60_000;

/** A TimeoutError (the name AbortSignal.timeout gives) saying what was awaited. */
export function deadlineError(message: string): Error {
  const e = new Error(message);
  e.name = 'TimeoutError';
  return e;
}

/** `p`, or the signal's reason once it aborts (the promise itself is left to settle alone). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** What makes two requests' connections interchangeable: the server, the proxy and the TLS material (hashed). */
function dispatcherKey(cluster: Cluster | null, o: AgentOptions): string {
  const h = createHash('sha256');
  const add = (v: unknown) => {
    const parts = Array.isArray(v) ? v : [v];
    for (const p of parts)
      h.update(p === undefined ? '-' : Buffer.isBuffer(p) ? p : typeof p === 'string' ? p : JSON.stringify(p)).update(
        '\0',
      );
    h.update('\n');
  };
  for (const v of [
    cluster?.server,
    cluster?.proxyUrl,
    cluster?.skipTLSVerify,
    o.ca,
    o.cert,
    o.key,
    o.pfx,
    o.passphrase,
    o.rejectUnauthorized,
    o.servername,
  ])
    add(v);
  return h.digest('hex');
}

/**
 * HTTP/2 flow-control windows as client-go's transport (golang.org/x/net/http2:
 * transportDefaultStreamFlow 4 MiB a stream; the connection's, here 16 MiB, for three watches
 * and a list). undici's 256 KiB a stream let kube-apiserver send a watch only ~100
 * EndpointSlice events ahead of a main thread busy with a sync: its cacher then found the
 * watcher's buffer full and closed the watch ("Forcing ... watcher close due to
 * unresponsiveness"), and every close cost a new watch.
 */
export const H2_STREAM_WINDOW_BYTES = 4 << 20;
/** The connection's HTTP/2 window (see H2_STREAM_WINDOW_BYTES). */
export const H2_CONNECTION_WINDOW_BYTES = 16 << 20;

/** client-go's fileTokenSource period: a token read longer ago than this is read again. */
export const TOKEN_FILE_PERIOD_MS = 60_000;

/**
 * A bearer token read from a file, as client-go's NewCachedFileTokenSource reads it:
 * trimmed, re-read once it is `periodMs` old; a read that fails (or finds the file empty)
 * keeps the token read before (the kubelet replaces the file atomically, but it may be
 * missing for a moment), else the kubeconfig's static `token` if it had one, else throws.
 */
export class TokenFile {
  private token: string | undefined;
  private readAtMs = Number.NEGATIVE_INFINITY;

  constructor(
    readonly path: string,
    private readonly fallback: string | undefined = undefined,
    private readonly clock: () => number = Date.now,
    readonly periodMs = TOKEN_FILE_PERIOD_MS,
    private readonly log?: ApiLog,
  ) {}

  /** The token to send now. */
  current(): string {
    if (this.token === undefined || this.clock() - this.readAtMs >= this.periodMs) this.read();
    return this.token!;
  }

  /** Reads the file now (after a 401); true when it holds another token than before. */
  reread(): boolean {
    const before = this.token;
    this.read();
    return this.token !== before;
  }

  private read(): void {
    this.readAtMs = this.clock();
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8').trim();
      if (text === '') throw new Error('the file is empty');
    } catch (e) {
      const kept = this.token ?? this.fallback;
      if (kept === undefined) throw new Error(`bearer token file ${this.path}: ${(e as Error).message}`, { cause: e });
      this.log?.warn(`bearer token file ${this.path}: ${(e as Error).message}; using the token read before`, {
        tokenFile: this.path,
      });
      this.token = kept;
      return;
    }
    this.token = text;
  }
}

/**
 * A KubeConfig that knows where it came from (for the log line of a refused credential),
 * sends its user's token file (TokenFile) and reports every request. loadKubeConfig makes
 * one; client-node's own clients given it (makeApiClient, Watch) get the token file too.
 */
export class ApiKubeConfig extends KubeConfig {
  /** "kubeconfig FILE", "in-cluster config", "--master URL": names the source in log lines */
  origin = '';
  tokenFile: TokenFile | undefined;
  observer: ApiCallObserver | undefined;
  log: ApiLog | undefined;
  userAgent: string | undefined;
  /** client-go's client-side rate limit (clientConnection.qps/burst): every attempt waits for a token before its deadline starts */
  rateLimiter: { wait(): Promise<void> } | undefined;
  /** each request's deadline (credentials and answer), unless the request names its own */
  requestTimeoutMs = REQUEST_TIMEOUT_MS;
  /** the largest body read whole (RESPONSE_MAX_BYTES), unless the request names its own */
  maxResponseBytes = RESPONSE_MAX_BYTES;
  /**
   * the Accept header of the informers' lists and watches (from clientConnection.contentType,
   * lib/daemon/api-config.ts); other requests ask for JSON
   */
  accept = 'application/json';
  /** a refusal has been logged; cleared by the next success */
  private refusalLogged = false;

  /** the one dispatcher (connection pool) requests share while the TLS material stays the same */
  private dispatcher: { readonly key: string; readonly agent: Dispatcher } | undefined;

  constructor() {
    super();
    this.boundExecPlugin();
    this.reuseDispatcher();
  }

  /**
   * client-node builds a new undici Agent, so a new connection and TLS handshake, for every
   * request whose cluster has TLS options (a CA, a client certificate): every list page and
   * every watch restart paid a handshake. client-go keeps one transport per TLS config. Here
   * one Agent is kept and handed to every request while the server, proxy and TLS material
   * (read anew per request, so a rotated client certificate still takes effect) are the same;
   * when they change, the next request gets a new Agent and the old one closes once the
   * requests it carries (open watches) have ended.
   */
  private reuseDispatcher(): void {
    const self = this as unknown as {
      createDispatcher?: (cluster: Cluster | null, options: AgentOptions) => Dispatcher | undefined;
    };
    const create = self.createDispatcher?.bind(this);
    if (!create) return;
    self.createDispatcher = (cluster, options) => {
      const key = dispatcherKey(cluster, options);
      if (this.dispatcher?.key === key) return this.dispatcher.agent;
      // a direct connection (client-node's 'agent': TLS material, no proxy) is built here with
      // client-go's HTTP/2 windows; a proxy's as client-node builds it
      const direct = this.createDispatcherOptions(cluster, options);
      const agent =
        direct.type === 'agent'
          ? new Agent({
              connect: direct.connect,
              h2Options: {
                // undici 8 reads the stream window from h2Options.initialWindowSize, though
                // its types name settings.initialWindowSize: both are given
                settings: { initialWindowSize: H2_STREAM_WINDOW_BYTES },
                ...{ initialWindowSize: H2_STREAM_WINDOW_BYTES },
                connectionWindowSize: H2_CONNECTION_WINDOW_BYTES,
              },
            })
          : create(cluster, options);
      const old = this.dispatcher;
      this.dispatcher = agent ? { key, agent } : undefined;
      old?.agent.close().catch(() => undefined);
      return agent;
    };
  }

  /**
   * client-node's ExecAuth spawns the credential plugin with no time limit and once per
   * request: a plugin that hangs would leave one process behind for every retry of every
   * informer. As client-go's exec authenticator (one run at a time under its mutex), calls
   * for one user share the run in flight, and the plugin is killed (SIGKILL) once it has
   * run for the request deadline.
   */
  private boundExecPlugin(): void {
    const authenticators = (this as unknown as { authenticators?: unknown[] }).authenticators ?? [];
    for (const a of authenticators) {
      const exec = a as { execFn?: typeof spawn; getCredential?: (user: User) => Promise<unknown> };
      if (typeof exec.execFn !== 'function' || typeof exec.getCredential !== 'function') continue;
      exec.execFn = ((command: string, args: readonly string[], options: SpawnOptions) =>
        spawn(command, args ?? [], {
          ...options,
          timeout: this.requestTimeoutMs,
          killSignal: 'SIGKILL',
        })) as typeof spawn;
      const getCredential = exec.getCredential.bind(exec);
      const running = new Map<string, Promise<unknown>>();
      exec.getCredential = (user: User) => {
        let run = running.get(user.name);
        if (!run) {
          const started = performance.now();
          const killedAt = this.requestTimeoutMs;
          run = getCredential(user)
            .catch((e: unknown) => {
              // client-node reports a killed plugin as an Error with its (empty) stderr;
              // a request sharing the run whose own deadline is later must still read a timeout
              if (performance.now() - started < killedAt) throw e;
              throw deadlineError(
                `the credentials (exec plugin ${user.exec?.command}) did not come within ${killedAt} ms`,
              );
            })
            .finally(() => running.delete(user.name));
          running.set(user.name, run);
        }
        return run;
      };
    }
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    // the token file wins over a static token, as in client-go's bearerAuthRoundTripper
    if (this.tokenFile) context.setHeaderParam('Authorization', `Bearer ${this.tokenFile.current()}`);
  }

  /**
   * After a 401 to a request that sent the Authorization header `sent`: re-read the token
   * file, or forget the exec plugin's cached credential. True when the next try may send
   * other credentials.
   */
  refreshCredentials(sent: string | undefined): boolean {
    // another request may have re-read the file already: compare with what this one sent
    if (this.tokenFile) {
      this.tokenFile.reread();
      return `Bearer ${this.tokenFile.current()}` !== sent;
    }
    const user = this.getCurrentUser();
    if (!user?.exec) return false;
    // client-node's ExecAuth keeps the plugin's answer by user name until it expires (for
    // ever without an expirationTimestamp) and has no API to drop it
    const authenticators = (this as unknown as { authenticators?: unknown[] }).authenticators ?? [];
    for (const a of authenticators) {
      const cache = (a as { tokenCache?: Record<string, unknown> }).tokenCache;
      if (cache && cache[user.name]) {
        cache[user.name] = null;
        return true;
      }
    }
    return false;
  }

  /** Logs the first 401/403 of a run of them; a success re-arms the line. */
  noteOutcome(status: number, method: string, url: URL, body: string): void {
    if (status < 400) {
      this.refusalLogged = false;
      return;
    }
    if ((status !== 401 && status !== 403) || this.refusalLogged) return;
    this.refusalLogged = true;
    const user = this.getCurrentUser();
    const credential = this.tokenFile
      ? `bearer token file ${this.tokenFile.path}`
      : user?.token
        ? 'bearer token'
        : user?.exec
          ? `exec plugin ${user.exec.command}`
          : user?.certFile || user?.certData
            ? 'client certificate'
            : 'no credentials';
    const what = status === 401 ? 'refused the credentials (401 Unauthorized)' : 'denied the request (403 Forbidden)';
    this.log?.error(
      `API server ${what}: ${method} ${url.origin}${url.pathname}, ${this.origin}, user ${JSON.stringify(user?.name ?? '')} (${credential}): ` +
        `${statusMessage(body)}; retrying with backoff, further refusals are not logged until a request succeeds`,
      { code: status, url: `${url.origin}${url.pathname}`, kubeconfig: this.origin, user: user?.name, credential },
    );
  }
}

/** One API request: method, path, query, body, deadline. */
export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'PATCH';
  /** e.g. /api/v1/services */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** JSON text */
  readonly body?: string;
  /** default application/json when there is a body */
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  /** the deadline for the credentials and the answer (default the kubeconfig's requestTimeoutMs) */
  readonly timeoutMs?: number;
  /** the Accept header (default application/json); a protobuf answer is decoded (protobuf.ts) */
  readonly accept?: string;
  /** the largest body read whole (default the kubeconfig's maxResponseBytes, else RESPONSE_MAX_BYTES) */
  readonly maxBodyBytes?: number;
}

/** One API answer: status and body text, or a watch's unread stream. */
export interface ApiResponse {
  readonly status: number;
  readonly statusText: string;
  /**
   * the body as text ('' for a watch that answered 200: read `stream`; '' for a 200 in
   * protobuf: read `object`); a Status in protobuf is given here as its JSON
   */
  readonly body: string;
  /** a 200 answered in protobuf (not a watch's): the object, in the JSON shape */
  readonly object?: Record<string, unknown>;
  /** a watch that answered 200: the response, its body unread */
  readonly stream?: Response;
  /** the Retry-After header as sent (kube-apiserver sends "1" with a 429), when there was one */
  readonly retryAfter?: string;
}

/** client-go's host label: the server URL's host as written (JS URL.host drops a default port). */
function hostOf(server: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(server)?.[1] ?? server;
}

/** As Response.text() decodes a body (UTF-8, a byte-order mark dropped). */
const UTF8 = new TextDecoder();

/**
 * The body of `res`, read as it streams in and refused (ResponseTooLargeError, the rest
 * cancelled) once it passes `cap` bytes: at once when Content-Length says so already.
 */
async function readCapped(res: Response, cap: number, what: string): Promise<Buffer> {
  const tooLarge = () =>
    new ResponseTooLargeError(
      `${what}: the answer (HTTP ${res.status}) is larger than ${cap} bytes, the most a body may have; not read further`,
      res.status,
    );
  const declared = Number(res.headers.get('content-length') ?? NaN);
  // (compressed, Content-Length counts fewer bytes than the body has: checked again below)
  if (declared > cap && !res.headers.get('content-encoding')) {
    await res.body?.cancel().catch(() => undefined);
    throw tooLarge();
  }
  if (!res.body) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of res.body) {
    const bytes = chunk as Uint8Array;
    total += bytes.byteLength;
    // leaving the loop cancels the rest of the body
    if (total > cap) throw tooLarge();
    chunks.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/**
 * Sends `req` with the kubeconfig's credentials; the body read unless `stream` and the
 * answer is 200. Throws only when no response came (refused connection, TLS, abort) or its
 * body was larger than the cap (ResponseTooLargeError).
 */
export async function apiRequest(kc: KubeConfig, req: ApiRequest, stream = false): Promise<ApiResponse> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`${req.method} ${req.path}: the kubeconfig has no current cluster`);
  const url = new URL(cluster.server.replace(/\/+$/, '') + req.path);
  for (const [k, v] of Object.entries(req.query ?? {}))
    if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
  const api = kc instanceof ApiKubeConfig ? kc : undefined;
  const host = hostOf(cluster.server);
  await api?.rateLimiter?.wait();
  const timeoutMs = req.timeoutMs ?? api?.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const maxBodyBytes = req.maxBodyBytes ?? api?.maxResponseBytes ?? RESPONSE_MAX_BYTES;
  const deadline = new AbortController();
  let waitingFor = 'the credentials';
  const timer = setTimeout(
    () =>
      deadline.abort(deadlineError(`${req.method} ${url.pathname}: ${waitingFor} did not come within ${timeoutMs} ms`)),
    timeoutMs,
  );
  timer.unref();
  const signal = req.signal ? AbortSignal.any([req.signal, deadline.signal]) : deadline.signal;
  try {
    return await attempts();
  } finally {
    // a streamed watch's body is the caller's to time from here on
    clearTimeout(timer);
  }

  async function attempts(): Promise<ApiResponse> {
    for (let attempt = 0; ; attempt++) {
      const ctx = new RequestContext(url.toString(), req.method as HttpMethod);
      waitingFor = api?.getCurrentUser()?.exec
        ? `the credentials (exec plugin ${api.getCurrentUser()!.exec.command})`
        : 'the credentials';
      await untilAborted(kc.applySecurityAuthentication(ctx), signal).catch((e: unknown) => {
        // a plugin killed at the kubeconfig's deadline before this request's own came
        if (e === signal.reason || (e as Error)?.name !== 'TimeoutError') throw e;
        throw deadlineError(`${req.method} ${url.pathname}: ${(e as Error).message}`);
      });
      waitingFor = 'an answer';
      const headers = requestHeaders(req, ctx, api);
      const started = performance.now();
      const observe = (code: string) =>
        api?.observer?.({ method: req.method, host, code, seconds: (performance.now() - started) / 1000 });
      const answer = await send(url, req, { headers, ctx, signal, stream, maxBodyBytes }, observe);
      const { res } = answer;
      observe(String(res.status));
      // decoded once the answer is counted: a body that does not decode is not a lost answer
      let body = answer.body;
      let object: Record<string, unknown> | undefined;
      if (answer.protobufBytes) ({ body, object } = protobufBody(answer.protobufBytes, res.status));
      // the kubelet rotated the token since it was read (or the plugin's credential went
      // stale): once more with the new one
      if (res.status === 401 && attempt === 0 && api?.refreshCredentials(headers.Authorization)) {
        // client-go's Request.request takes a token for every try (tryThrottle), the retry too
        waitingFor = 'a rate-limit token';
        await untilAborted(api.rateLimiter?.wait() ?? Promise.resolve(), signal);
        continue;
      }
      api?.noteOutcome(res.status, req.method, url, body);
      const retryAfter = res.headers.get('retry-after');
      return {
        status: res.status,
        statusText: res.statusText,
        body,
        ...(object ? { object } : {}),
        ...(stream && res.status === 200 ? { stream: res } : {}),
        ...(retryAfter !== null ? { retryAfter } : {}),
      };
    }
  }
}

/** A request's headers: what it accepts, the credentials, its body's type, the User-Agent. */
function requestHeaders(req: ApiRequest, ctx: RequestContext, api: ApiKubeConfig | undefined): Record<string, string> {
  const headers: Record<string, string> = { Accept: req.accept ?? 'application/json', ...ctx.getHeaders() };
  if (req.body !== undefined) headers['Content-Type'] = req.contentType ?? 'application/json';
  if (api?.userAgent) headers['User-Agent'] = api.userAgent;
  return headers;
}

/**
 * One try: the request and its answer, the body read (capped) unless a watch answered 200
 * (the caller's to read), as text or protobuf bytes. A try that got no answer, or one too
 * large to read, is observed here (the caller observes the others, once counted).
 */
async function send(
  url: URL,
  req: ApiRequest,
  how: {
    readonly headers: Record<string, string>;
    readonly ctx: RequestContext;
    readonly signal: AbortSignal;
    readonly stream: boolean;
    readonly maxBodyBytes: number;
  },
  observe: (code: string) => void,
): Promise<{ res: Response; body: string; protobufBytes?: Uint8Array }> {
  try {
    const res = await fetch(url, {
      method: req.method,
      headers: how.headers,
      body: req.body,
      dispatcher: how.ctx.getDispatcher(),
      signal: how.signal,
    });
    if (how.stream && res.status === 200) return { res, body: '' };
    const bytes = await readCapped(res, how.maxBodyBytes, `${req.method} ${url.pathname}`);
    if (isProtobuf(res.headers.get('content-type'))) return { res, body: '', protobufBytes: bytes };
    return { res, body: UTF8.decode(bytes) };
  } catch (e) {
    // an answer too large to read is an answer all the same
    observe(e instanceof ResponseTooLargeError ? String(e.status) : '<error>');
    // undici's "fetch failed" (a TypeError) carries the socket's error as its cause: said as
    // client-go says it, with the URL (an abort or a deadline is not one: it keeps its class)
    // (isNativeError: the socket's error may come from another realm than this module's Error)
    if (isNativeError(e) && e.name === 'TypeError' && isNativeError(e.cause))
      throw new ApiConnectionError(req.method, url.toString(), dialReason(e.cause, url), { cause: e });
    throw e;
  }
}

/** Go's net.OpError texts for the errno codes a dial or a read meets (syscall.Errno's Error()). */
const GO_ERRNO_TEXT: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by peer',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network is unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'broken pipe',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'cannot assign requested address',
};

/**
 * What failed, in client-go's (Go net's) words, from the code of the socket's error (never its
 * text): `dial tcp 10.0.0.1:6443: connect: connection refused`, `dial tcp: lookup api.example:
 * no such host`, `dial tcp 10.0.0.1:6443: i/o timeout`; a TLS failure as `tls: ...`.
 */
export function dialReason(cause: Error, url: URL): string {
  const c = cause as Error & {
    code?: unknown;
    syscall?: unknown;
    address?: unknown;
    port?: unknown;
    hostname?: unknown;
  };
  const code = typeof c.code === 'string' ? c.code : '';
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const at = typeof c.address === 'string' ? c.address : url.hostname.replace(/^\[|\]$/g, '');
  const hostPort = `${at.includes(':') ? `[${at}]` : at}:${typeof c.port === 'number' ? c.port : port}`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN')
    return `dial tcp: lookup ${typeof c.hostname === 'string' ? c.hostname : url.hostname}: ${code === 'ENOTFOUND' ? 'no such host' : 'temporary failure in name resolution'}`;
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return `dial tcp ${hostPort}: i/o timeout`;
  const text = GO_ERRNO_TEXT[code];
  if (text !== undefined) {
    const op = typeof c.syscall === 'string' ? c.syscall : 'read';
    return `${op === 'connect' ? 'dial' : op} tcp ${hostPort}: ${op}: ${text}`;
  }
  // TLS (ERR_TLS_*, CERT_*, UNABLE_TO_VERIFY_*, ...) and anything else: its own message
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(code)) return `tls: ${cause.message}`;
  return code ? `${cause.message} (${code})` : cause.message;
}

/**
 * A protobuf body: a 200's object, or any other answer's Status as JSON text (what the error
 * paths read); a body that does not decode is named as such (a decode error of a 200 throws).
 */
function protobufBody(bytes: Uint8Array, status: number): { body: string; object?: Record<string, unknown> } {
  if (status === 200) return { body: '', object: decodeObject(bytes) };
  try {
    return { body: JSON.stringify(decodeObject(bytes)) };
  } catch (e) {
    return { body: `a protobuf body of ${bytes.length} bytes that did not decode (${(e as Error).message})` };
  }
}

/** The message of a Kubernetes Status body, else the body's start. */
export function statusMessage(body: string): string {
  try {
    const status = JSON.parse(body) as { message?: unknown };
    if (typeof status.message === 'string') return status.message;
  } catch {
    // not JSON: a proxy's error page
  }
  return body.slice(0, 200);
}
