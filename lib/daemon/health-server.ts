/**
 * kube-proxy's proxy health server (pkg/proxy/healthcheck/proxy_health.go) on
 * healthzBindAddress: `/healthz` and `/livez`. Unhealthy when a queued change has waited
 * `timeoutMs` (2 x syncPeriod) or longer without a successful sync: the proxier's syncs do
 * not keep up.
 * `/livez` is kube-proxy's: healthy while starting up, so a slow first list never gets the
 * pod restarted by its livenessProbe.
 * `/healthz` also answers 503 until the Services and EndpointSlices have been listed and a
 * first full sync has applied them (a readiness probe then holds a rolling update on a node
 * that cannot reach or authenticate to the API server, where kube-proxy's would pass), and
 * when the node is not eligible (as kube-proxy 1.31+: its Node not seen, being deleted, or
 * tainted ToBeDeletedByClusterAutoscaler) so cloud load balancers drain it (KEP-3836).
 * An informer with no open watch (the API server down or refusing, a hung credential plugin)
 * does not make either 503 (issue 39 item 7): cloud load balancers probe `/healthz`, so that
 * would turn a control-plane outage into a data-plane one, every node drained at once, while
 * the programmed table keeps serving; nor would a restart mend the API server. The informers
 * that have had none for longer than `timeoutMs` are named under `notWatching` (since when),
 * for the operator; kube_ipvs_informer_not_watching_seconds is the metric to alert on. The
 * JSON is kube-proxy's otherwise.
 */
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { Clock } from '../proxier/clock';
import { ProbeServerLimits, createProbeServer } from './probe-server';

/** What the proxy's health is computed from: the last sync and the oldest queued change. */
export interface HealthSource {
  /** ms since the epoch of the last successful sync; 0 before the first */
  readonly lastSyncAt: number;
  /** ms since the epoch of the oldest change queued since that sync; 0 when none */
  readonly lastQueuedAt: number;
  /** the API objects were listed and a first full sync applied them */
  readonly initialSyncDone: boolean;
}

/** The proxy's health as /healthz and /livez report it (kube-proxy's ProxyHealth). */
export interface HealthState {
  readonly healthy: boolean;
  readonly lastUpdated: Date;
  readonly currentTime: Date;
}

/** Pure: kube-proxy's ProxyHealthServer.Health(). */
export function proxyHealth(src: Omit<HealthSource, 'initialSyncDone'>, now: number, timeoutMs: number): HealthState {
  const pending = src.lastQueuedAt > src.lastSyncAt;
  // kube-proxy: unhealthy once the oldest queued change is timeoutMs old
  const healthy = !pending || now - src.lastQueuedAt < timeoutMs;
  // lastUpdated is "now" while healthy, as kube-proxy reports it
  const lastUpdated = healthy ? now : src.lastSyncAt;
  return { healthy, lastUpdated: new Date(lastUpdated), currentTime: new Date(now) };
}

/** Options of createHealthServer. */
export interface HealthServerOptions {
  readonly source: HealthSource;
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** node not being deleted nor tainted for deletion */
  readonly nodeEligible: () => boolean;
  /** counts per path and code (kubeproxy_proxy_healthz_total / livez_total) */
  readonly onRequest?: (path: 'healthz' | 'livez', code: number) => void;
  /** the informers without an open watch, since when (ms since the epoch): named in /healthz's body, never its code */
  readonly notWatching?: () => readonly { readonly resource: string; readonly sinceMs: number }[];
  /** the server's timeouts and caps (default PROBE_SERVER_LIMITS; tests shorten them) */
  readonly limits?: Partial<ProbeServerLimits>;
}

/** The healthz server: /healthz and /livez as kube-proxy's ProxyHealthServer answers them. */
export function createHealthServer(opts: HealthServerOptions): http.Server {
  return createProbeServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/healthz' && path !== '/livez') {
      res.writeHead(404).end();
      return;
    }
    const h = proxyHealth(opts.source, opts.clock.now(), opts.timeoutMs);
    const body: Record<string, unknown> = {
      lastUpdated: h.lastUpdated.toISOString(),
      currentTime: h.currentTime.toISOString(),
    };
    let ok = h.healthy;
    if (path === '/healthz') {
      const eligible = opts.nodeEligible();
      body.nodeEligible = eligible;
      const synced = opts.source.initialSyncDone;
      if (!synced) body.initialSync = 'pending';
      const now = opts.clock.now();
      const stale = (opts.notWatching?.() ?? []).filter((n) => now - n.sinceMs > opts.timeoutMs);
      if (stale.length > 0)
        body.notWatching = Object.fromEntries(stale.map((n) => [n.resource, new Date(n.sinceMs).toISOString()]));
      ok = ok && eligible && synced;
    }
    const code = ok ? 200 : 503;
    opts.onRequest?.(path === '/healthz' ? 'healthz' : 'livez', code);
    res.writeHead(code, { 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff' });
    res.end(JSON.stringify(body));
  }, opts.limits);
}

/** "0.0.0.0:10256", "[::]:10256", ":10256" -> listen arguments. */
export function parseBindAddress(bind: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]*)\]|([^:]*)):(\d+)$/.exec(bind);
  if (!m) throw new RangeError(`bind address must be host:port, got '${bind}'`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port: Number(m[3]) };
}

/** Listens on an `IP:port` / `[IPv6]:port` bind address; resolves to the address bound. */
export async function listen(server: http.Server, bind: string): Promise<AddressInfo> {
  const { host, port } = parseBindAddress(bind);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server.address() as AddressInfo;
}
