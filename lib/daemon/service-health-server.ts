/**
 * The HealthCheckNodePort servers (kube-proxy's ServiceHealthServer,
 * K8S pkg/proxy/healthcheck/service_health.go): for every LoadBalancer Service with
 * externalTrafficPolicy Local, an HTTP server on its spec.healthCheckNodePort that cloud load
 * balancers probe to learn whether this node has a ready local endpoint.
 *
 * Any method, any path gets (as kube-proxy answers):
 *   200 when the Service has local endpoints and the proxy is healthy, else 503;
 *   Content-Type: application/json, X-Content-Type-Options: nosniff,
 *   X-Load-Balancing-Endpoint-Weight: <local endpoints>;
 *   a tab-indented body, byte for byte kube-proxy's:
 *     {"service":{"namespace":…,"name":…},"localEndpoints":N,"serviceProxyHealthy":bool}
 * serviceProxyHealthy is the proxy's own /livez health (node eligibility aside, as kube-proxy's
 * IsHealthy).
 *
 * One listener per node-port address (kube-proxy: the node IPs matching nodePortAddresses),
 * or one wildcard listener (every address, both families) when nodePortAddresses is unset.
 * A port that cannot be opened (already in use) is an error log line and a Warning Event
 * FailedToStartServiceHealthcheck for that Service only; the next syncServices tries again.
 *
 * Bounded (probe-server.ts; kube-proxy's Go servers set no limit): each listener has the
 * probe servers' timeouts and header caps, and all the listeners together hold at most
 * PROBE_SERVER_LIMITS.maxConnections connections (one budget, so the count of Services does
 * not multiply it); one beyond is closed unanswered, which a prober counts as a failed probe.
 */
import http from 'node:http';
import type winston from 'winston';
import { ServiceName } from '../model/service';
import { EventSink } from '../proxier/proxier';
import { ServiceHealthSink } from '../proxier/service-health';
import { ConnectionBudget, PROBE_SERVER_LIMITS, ProbeServerLimits, createProbeServer } from './probe-server';

/** Options of ServiceHealthServer. */
export interface ServiceHealthServerOptions {
  /** this node's name (in the Event message, as kube-proxy's) */
  readonly nodeName: string;
  /** the proxy's own health: no queued change older than the health timeout */
  readonly proxyHealthy: () => boolean;
  readonly log: winston.Logger;
  readonly events?: EventSink;
  /** addresses to listen on; undefined (default) = every address */
  readonly addresses?: readonly string[];
  /** each listener's timeouts, and the connections of all of them together (default PROBE_SERVER_LIMITS) */
  readonly limits?: Partial<ProbeServerLimits>;
}

/** One Service's health check: its port and its listeners. */
interface Instance {
  readonly name: ServiceName;
  readonly namespace: string;
  readonly serviceName: string;
  readonly port: number;
  readonly servers: http.Server[];
  endpoints: number;
  closed: boolean;
}

/** kube-proxy's response body: its dedented template is exactly JSON with tab indentation. */
export function healthCheckBody(
  namespace: string,
  name: string,
  localEndpoints: number,
  serviceProxyHealthy: boolean,
): string {
  return JSON.stringify({ service: { namespace, name }, localEndpoints, serviceProxyHealthy }, null, '\t');
}

function splitName(name: ServiceName): { namespace: string; serviceName: string } {
  const i = name.indexOf('/');
  return { namespace: name.slice(0, i), serviceName: name.slice(i + 1) };
}

/** The HealthCheckNodePort servers, one per Service that needs one (see the file comment). */
export class ServiceHealthServer implements ServiceHealthSink {
  private readonly instances = new Map<ServiceName, Instance>();
  /** the last desired Services (to reopen them when the addresses change) */
  private desired = new Map<ServiceName, number>();
  /** failure message last reported per Service (reported again only when it changes) */
  private readonly reported = new Map<ServiceName, string>();
  /** opens and closes under way */
  private readonly pending = new Set<Promise<void>>();
  private addresses: readonly string[] | undefined;
  private stopped = false;
  /** one budget for every listener: however many Services, the connections they hold are capped together */
  private readonly budget: ConnectionBudget;

  constructor(private readonly opts: ServiceHealthServerOptions) {
    this.addresses = opts.addresses;
    this.budget = new ConnectionBudget(opts.limits?.maxConnections ?? PROBE_SERVER_LIMITS.maxConnections);
  }

  syncServices(services: ReadonlyMap<ServiceName, number>): void {
    if (this.stopped) return;
    this.desired = new Map(services);
    for (const [name, inst] of this.instances) {
      if (services.get(name) === inst.port) continue;
      this.opts.log.verbose(`closing healthcheck of Service ${name} on port ${inst.port}`, {
        service: name,
        port: inst.port,
      });
      this.closeInstance(inst);
    }
    for (const name of [...this.reported.keys()]) if (!services.has(name)) this.reported.delete(name);
    for (const [name, port] of services) {
      if (this.instances.has(name)) continue;
      this.open(name, port);
    }
  }

  syncEndpoints(localEndpoints: ReadonlyMap<ServiceName, number>): void {
    for (const [name, inst] of this.instances) inst.endpoints = localEndpoints.get(name) ?? 0;
  }

  setNodePortAddresses(addresses: readonly string[] | undefined): void {
    const same =
      addresses === this.addresses ||
      (addresses !== undefined && this.addresses !== undefined && addresses.join() === this.addresses.join());
    if (same || this.stopped) return;
    this.addresses = addresses;
    if (addresses?.length === 0)
      this.opts.log.warn('no node address matches nodePortAddresses: health check node ports listen nowhere');
    if (this.instances.size === 0) return;
    this.opts.log.info(
      `node-port addresses changed to ${addresses?.join(', ') ?? 'all'}: reopening ${this.instances.size} health check ports`,
    );
    const counts = new Map([...this.instances].map(([n, i]) => [n, i.endpoints]));
    for (const inst of [...this.instances.values()]) this.closeInstance(inst);
    this.syncServices(this.desired);
    this.syncEndpoints(counts);
  }

  /** Service -> port of the health checks that are open or opening (status, tests). */
  openPorts(): Map<ServiceName, number> {
    return new Map([...this.instances].map(([n, i]) => [n, i.port]));
  }

  /** Resolves once every open and close started so far has finished (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Closes every health check server; later syncs do nothing. */
  async close(): Promise<void> {
    this.stopped = true;
    for (const inst of [...this.instances.values()]) this.closeInstance(inst);
    await this.settled();
  }

  private track(p: Promise<void>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private open(name: ServiceName, port: number): void {
    const { namespace, serviceName } = splitName(name);
    const inst: Instance = { name, namespace, serviceName, port, servers: [], endpoints: 0, closed: false };
    this.instances.set(name, inst);
    const where = this.addresses === undefined ? [undefined] : this.addresses;
    this.opts.log.verbose(`opening healthcheck of Service ${name} on port ${port}`, { service: name, port });
    this.track(
      (async () => {
        try {
          for (const address of where) {
            const server = createProbeServer((_req, res) => this.answer(inst, res), this.opts.limits, this.budget);
            await listen(server, port, address);
            inst.servers.push(server);
            if (inst.closed) closeServer(server); // closed while it was opening
          }
          if (!inst.closed) this.reported.delete(name);
        } catch (e) {
          for (const s of inst.servers) closeServer(s);
          inst.closed = true;
          if (this.instances.get(name) === inst) this.instances.delete(name);
          this.failed(inst, e as Error);
        }
      })(),
    );
  }

  private failed(inst: Instance, e: Error): void {
    const msg = `node ${this.opts.nodeName} failed to start healthcheck "${inst.name}" on port ${inst.port}: ${e.message}`;
    if (this.stopped || this.reported.get(inst.name) === msg) {
      this.opts.log.verbose(msg, { service: inst.name, port: inst.port });
      return;
    }
    this.reported.set(inst.name, msg);
    this.opts.log.error(msg, { service: inst.name, port: inst.port, code: (e as NodeJS.ErrnoException).code });
    this.opts.events?.warn(
      { kind: 'Service', namespace: inst.namespace, name: inst.serviceName },
      'FailedToStartServiceHealthcheck',
      msg,
    );
  }

  private closeInstance(inst: Instance): void {
    inst.closed = true;
    if (this.instances.get(inst.name) === inst) this.instances.delete(inst.name);
    for (const s of inst.servers) closeServer(s);
  }

  private answer(inst: Instance, res: http.ServerResponse): void {
    const count = inst.closed ? 0 : inst.endpoints;
    const healthy = this.opts.proxyHealthy();
    const body = healthCheckBody(inst.namespace, inst.serviceName, count, healthy);
    res.writeHead(count !== 0 && healthy ? 200 : 503, {
      'Content-Type': 'application/json',
      'X-Content-Type-Options': 'nosniff',
      'X-Load-Balancing-Endpoint-Weight': String(count),
    });
    res.end(body);
  }
}

/** Listens on port at address (undefined: every address, IPv6 with IPv4 mapped when available). */
function listen(server: http.Server, port: number, address: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error) => reject(e);
    server.once('error', onError);
    const done = () => {
      server.off('error', onError);
      resolve();
    };
    if (address === undefined) server.listen({ port }, done);
    else server.listen({ port, host: address }, done);
  });
}

/** Stops listening at once and drops kept-alive connections (as Go's http.Server.Close). */
function closeServer(server: http.Server): void {
  server.close();
  server.closeAllConnections();
}
