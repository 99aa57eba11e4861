/**
 * The HTTP servers load balancers and the kubelet probe (the health server on
 * healthzBindAddress, the HealthCheckNodePort servers), bounded (issue 39 item 8).
 *
 * kube-proxy serves them with Go's http.Server and no limit set (pkg/proxy/healthcheck
 * common.go: a Handler only): no ReadHeaderTimeout, ReadTimeout, WriteTimeout nor IdleTimeout
 * (a connection that never finishes its request is held for ever), MaxHeaderBytes Go's
 * DefaultMaxHeaderBytes (1 MB) and no cap on connections. Node's defaults bound more, but not
 * enough: headersTimeout 60 s and requestTimeout 300 s, enforced only when the connections are
 * checked (every 30 s), 16 KB of headers and no cap on connections, so every half-open request
 * is held a minute or more.
 *
 * A probe is one small GET whose request line and headers are sent at once, so the limits
 * below are tight for a request and generous for a prober: a load balancer's probe timeout
 * (seconds) runs from the request to the answer, and the answer here is immediate.
 */
import http from 'node:http';
import net from 'node:net';

/** How a probe server bounds its connections. */
export interface ProbeServerLimits {
  /** the request line and headers must have arrived by then (Node's headersTimeout) */
  readonly headersTimeoutMs: number;
  /** the whole request must have arrived by then (Node's requestTimeout; a probe has no body) */
  readonly requestTimeoutMs: number;
  /** how often the two timeouts are enforced (Node's connectionsCheckingInterval) */
  readonly checkEveryMs: number;
  /** an idle kept-alive connection is closed after this (Node's keepAliveTimeout) */
  readonly keepAliveTimeoutMs: number;
  /** request line and headers at most this many bytes, else 431 (Node's maxHeaderSize) */
  readonly maxHeaderBytes: number;
  /** headers beyond this many are not parsed (Node's maxHeadersCount) */
  readonly maxHeadersCount: number;
  /** open connections at most; one more is closed at once, unanswered */
  readonly maxConnections: number;
}

/**
 * The limits of the health server and of each Service's HealthCheckNodePort listeners (one
 * budget for all of them, see ServiceHealthServer).
 *  - headers within 10 s, the request within 10 s: a prober sends them at once; a slow or
 *    stalled client holds its connection 10 s at most (+ the 1 s check), not a minute;
 *  - idle kept-alive connections closed after 5 s (Node's default; Go's: never);
 *  - 8 KB and 100 headers (a probe sends a handful; Go allows 1 MB);
 *  - 1,024 connections: many load balancers probe one node (KEP-3836: every LoadBalancer
 *    Service's health check may target 10256), each with a few probers and a connection per
 *    probe, so far fewer are open at once; the cap holds the file descriptors and memory a
 *    flood can take (each a socket and an HTTP parser) to a known bound, and a refused probe
 *    is retried by its prober.
 */
export const PROBE_SERVER_LIMITS: ProbeServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 10_000,
  checkEveryMs: 1_000,
  keepAliveTimeoutMs: 5_000,
  maxHeaderBytes: 8 * 1024,
  maxHeadersCount: 100,
  maxConnections: 1_024,
};

/** Open connections counted over one or several servers; those beyond `max` are closed at once. */
export class ConnectionBudget {
  /** connections open now */
  open = 0;
  /** connections closed unanswered because the budget was spent */
  refused = 0;

  constructor(readonly max: number) {}

  /** Counts `server`'s connections against this budget. */
  attach(server: net.Server): void {
    server.on('connection', (socket: net.Socket) => {
      if (this.open >= this.max) {
        this.refused++;
        socket.destroy();
        return;
      }
      this.open++;
      socket.once('close', () => this.open--);
    });
  }
}

/** An http.Server with `limits` (PROBE_SERVER_LIMITS by default), its connections counted against `budget`. */
export function createProbeServer(
  handler: http.RequestListener,
  limits: Partial<ProbeServerLimits> = {},
  budget?: ConnectionBudget,
): http.Server {
  const l = { ...PROBE_SERVER_LIMITS, ...limits };
  const server = http.createServer(
    {
      headersTimeout: l.headersTimeoutMs,
      requestTimeout: l.requestTimeoutMs,
      connectionsCheckingInterval: l.checkEveryMs,
      keepAliveTimeout: l.keepAliveTimeoutMs,
      maxHeaderSize: l.maxHeaderBytes,
    },
    handler,
  );
  server.maxHeadersCount = l.maxHeadersCount;
  (budget ?? new ConnectionBudget(l.maxConnections)).attach(server);
  return server;
}
