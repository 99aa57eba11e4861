/**
 * The operator views on the metrics server (metricsBindAddress, 127.0.0.1:10249 by default):
 * JSON under /kube-ipvs/ (lib/model/views.ts is the contract; `kube-ipvs service list`,
 * `status` and `diff` read it):
 *
 *   GET /kube-ipvs/services  ServiceListResponse
 *   GET /kube-ipvs/status    StatusResponse
 *   GET /kube-ipvs/diff      DiffResponse (reads the kernel, changes nothing)
 *
 * Only local clients are answered (loopback, or a unix socket), whatever metricsBindAddress
 * is: it is often 0.0.0.0 for Prometheus, and the views show every Service and its backends
 * while diff re-plans every Service and reads the whole table on the main thread (as long
 * as a full sync's plan and read). Anyone else gets 403.
 * diff can never starve the sync loop: one kernel read at a time, concurrent requests share
 * it, and the next one starts no sooner than `diffMinIntervalMs` after the last one ended
 * (requests meanwhile wait for it, and share it).
 *
 * 403 {"error"} for a client that is not local, 503 {"error"} before Services and
 * EndpointSlices have been listed (diff), 500 {"error"} when the kernel cannot be read, 404
 * for another /kube-ipvs/ path.
 */
import http from 'node:http';
import { Clock, systemClock } from '../proxier/clock';
import { ProxyConfig } from '../config/proxy-config';
import { formatDurationMs } from '../config/duration';
import { NotSyncedError } from '../errors';
import type { IpvsOp } from '../kernel/ipvs/ipvs';
import {
  DiffResponse,
  FrontendRow,
  RefusedFrontend,
  ServiceListResponse,
  StatusResponse,
  TableChange,
  VIEW_PATHS,
  ViewError,
} from '../model/views';

/** What the views read: the Proxier. */
export interface ViewsSource {
  serviceList(): FrontendRow[];
  /** the frontends Services asked for that are not programmed now */
  refusedFrontends?(): RefusedFrontend[];
  status(): Promise<Omit<StatusResponse, 'mode' | 'config'>>;
  dryRunFullSync(): Promise<IpvsOp[]>;
}

/** A request handler for the /kube-ipvs/ paths; answers false for any other path. */
export type ViewsHandler = (path: string, res: http.ServerResponse, req: http.IncomingMessage) => boolean;

/** Options of createViewsHandler. */
export interface ViewsOptions {
  /** the least time from the end of one diff's kernel read to the start of the next (default 5 s) */
  readonly diffMinIntervalMs?: number;
  readonly clock?: Clock;
}

/** The default least time between two diffs' kernel reads (ViewsOptions.diffMinIntervalMs). */
export const DEFAULT_DIFF_MIN_INTERVAL_MS = 5_000;

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;

/**
 * Is the request from this node's own processes: a loopback peer, or a unix-socket server
 * (no peer address, and the server listens on a path)? Anything else is not, including a
 * peer address that cannot be read.
 */
export function isLocalRequest(req: http.IncomingMessage): boolean {
  const peer = req.socket.remoteAddress;
  if (peer !== undefined) return LOOPBACK.test(peer);
  const server = (req.socket as { server?: { address(): unknown } }).server;
  return typeof server?.address() === 'string';
}

function isTableChange(op: IpvsOp): op is IpvsOp & TableChange {
  return op.kind !== 'zero' && op.kind !== 'flush' && op.kind !== 'setConfig';
}

/** The configuration part of the status (--verbose). */
export function statusConfig(c: ProxyConfig): StatusResponse['config'] {
  return {
    syncPeriod: formatDurationMs(c.ipvs.syncPeriodMs),
    minSyncPeriod: formatDurationMs(c.ipvs.minSyncPeriodMs),
    excludeCIDRs: c.ipvs.excludeCIDRs,
    excludeClusterCIDRs: c.ipvs.excludeClusterCIDRs,
    clusterCIDRs: c.clusterCIDR,
    nodePortAddresses: c.nodePortAddresses,
    masqueradeAll: c.iptables.masqueradeAll,
    masqueradeBit: c.iptables.masqueradeBit,
    strictARP: c.ipvs.strictARP,
    detectLocalMode: c.detectLocalMode,
    ipvsTimeouts: { tcp: c.ipvs.tcpTimeoutSec, tcpFin: c.ipvs.tcpFinTimeoutSec, udp: c.ipvs.udpTimeoutSec },
    healthzBindAddress: c.healthzBindAddress,
    metricsBindAddress: c.metricsBindAddress,
  };
}

/** The handler of the /kube-ipvs/ views (see the file comment). */
export function createViewsHandler(
  source: ViewsSource,
  config: () => ProxyConfig,
  options: ViewsOptions = {},
): ViewsHandler {
  const clock = options.clock ?? systemClock;
  const minIntervalMs = options.diffMinIntervalMs ?? DEFAULT_DIFF_MIN_INTERVAL_MS;
  // the next diff (waiting for its turn, or reading); every request until it ends shares it
  let diffInFlight: Promise<DiffResponse> | undefined;
  let lastEndedAt = -Infinity;
  const diff = (): Promise<DiffResponse> => {
    diffInFlight ??= new Promise<void>((resolve) => {
      const wait = lastEndedAt + minIntervalMs - clock.now();
      if (wait > 0) clock.setTimer(resolve, wait);
      else resolve();
    })
      .then(() => source.dryRunFullSync())
      .then((ops) => ({ changes: ops.filter(isTableChange) }))
      .finally(() => {
        lastEndedAt = clock.now();
        diffInFlight = undefined;
      });
    return diffInFlight;
  };
  const send = (res: http.ServerResponse, code: number, body: unknown) =>
    res
      .writeHead(code, { 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff' })
      .end(JSON.stringify(body));
  const answer = (res: http.ServerResponse, work: () => Promise<unknown>) => {
    work().then(
      (body) => send(res, 200, body),
      (e: unknown) => {
        const error: ViewError = { error: e instanceof Error ? e.message : String(e) };
        send(res, e instanceof NotSyncedError ? 503 : 500, error);
      },
    );
  };
  return (path, res, req) => {
    if (!path.startsWith('/kube-ipvs/')) return false;
    if (!isLocalRequest(req)) {
      send(res, 403, {
        error: 'the /kube-ipvs/ views answer local clients only (loopback or a unix socket)',
      } satisfies ViewError);
      return true;
    }
    switch (path) {
      case VIEW_PATHS.services:
        answer(res, async (): Promise<ServiceListResponse> => ({
          source: 'daemon',
          frontends: source.serviceList(),
          refused: source.refusedFrontends?.() ?? [],
        }));
        return true;
      case VIEW_PATHS.status:
        answer(res, async (): Promise<StatusResponse> => ({
          mode: 'ipvs',
          ...(await source.status()),
          config: statusConfig(config()),
        }));
        return true;
      case VIEW_PATHS.diff:
        answer(res, diff);
        return true;
      default:
        send(res, 404, { error: `no view ${path} (try ${Object.values(VIEW_PATHS).join(', ')})` } satisfies ViewError);
        return true;
    }
  };
}
