/**
 * The operator views on the metrics server (metricsBindAddress, 127.0.0.1:10249 by default):
 * JSON under /kube-ipvs/ (lib/model/views.ts is the contract; `kube-ipvs service list`,
 * `status` and `diff` read it):
 *
 *   GET /kube-ipvs/services  ServiceListResponse
 *   GET /kube-ipvs/status    StatusResponse
 *   GET /kube-ipvs/diff      DiffResponse (reads the kernel, changes nothing; concurrent
 *                            requests share one kernel read)
 *
 * 503 {"error"} before Services and EndpointSlices have been listed (diff), 500 {"error"} when
 * the kernel cannot be read, 404 for another /kube-ipvs/ path.
 */
import http from 'node:http';
import { ProxyConfig } from '../config/proxy-config';
import { formatDurationMs } from '../config/duration';
import { NotSyncedError } from '../errors';
import type { IpvsOp } from '../kernel/ipvs/ipvs';
import { DiffResponse, Frontend, ServiceListResponse, StatusResponse, TableChange, VIEW_PATHS, ViewError } from '../model/views';

/** What the views read: the Proxier. */
export interface ViewsSource {
  serviceList(): Frontend[];
  status(): Promise<Omit<StatusResponse, 'mode' | 'config'>>;
  dryRunFullSync(): Promise<IpvsOp[]>;
}

/** A request handler for the /kube-ipvs/ paths; answers false for any other path. */
export type ViewsHandler = (path: string, res: http.ServerResponse) => boolean;

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

export function createViewsHandler(source: ViewsSource, config: () => ProxyConfig): ViewsHandler {
  let diffInFlight: Promise<DiffResponse> | undefined;
  const diff = (): Promise<DiffResponse> => {
    diffInFlight ??= source
      .dryRunFullSync()
      .then((ops) => ({ changes: ops.filter(isTableChange) }))
      .finally(() => (diffInFlight = undefined));
    return diffInFlight;
  };
  const send = (res: http.ServerResponse, code: number, body: unknown) =>
    res.writeHead(code, { 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff' }).end(JSON.stringify(body));
  const answer = (res: http.ServerResponse, work: () => Promise<unknown>) => {
    work().then(
      (body) => send(res, 200, body),
      (e: unknown) => {
        const error: ViewError = { error: e instanceof Error ? e.message : String(e) };
        send(res, e instanceof NotSyncedError ? 503 : 500, error);
      },
    );
  };
  return (path, res) => {
    switch (path) {
      case VIEW_PATHS.services:
        answer(res, async (): Promise<ServiceListResponse> => ({ source: 'daemon', frontends: source.serviceList() }));
        return true;
      case VIEW_PATHS.status:
        answer(res, async (): Promise<StatusResponse> => ({ mode: 'ipvs', ...(await source.status()), config: statusConfig(config()) }));
        return true;
      case VIEW_PATHS.diff:
        answer(res, diff);
        return true;
      default:
        if (!path.startsWith('/kube-ipvs/')) return false;
        send(res, 404, { error: `no view ${path} (try ${Object.values(VIEW_PATHS).join(', ')})` } satisfies ViewError);
        return true;
    }
  };
}
