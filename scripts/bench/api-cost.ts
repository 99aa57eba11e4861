// What one side of the kube-proxy peer bench costs the API server over a phase (issue 28), the
// real kube-proxy and kube-ipvs measured the same way, one after the other against the same lab:
//  - requests by verb: the lab's audit log (one auditID per request), the side's User-Agent;
//    a request counts in the phase it started in;
//  - connections opened to the API server: an nftables counter of SYNs from the side's
//    namespace to the server's address and port (every one a TLS handshake);
//  - bytes the side received from the server: an nftables counter of the IP packets from the
//    server's address and port into the side's namespace (TLS, TCP and IP headers included),
//    the one byte count that holds while both sides run at once;
//  - bytes the server sent: list and get bodies of Services, EndpointSlices, Nodes and
//    ServiceCIDRs (apiserver_response_sizes_sum, verbs LIST and GET) and watch events (apiserver_watch_events_sizes_sum), server-wide: one side runs at a
//    time and the bench's writer only writes (its answers are verb UPDATE and POST, left out).
import { AuditEvent, LabClient } from '../../testkit/lab-client';
import { run } from '../../testkit/netns';
import { parseScrape, Scrape, sumSeries } from './process-memory';

export interface ApiCostMark {
  readonly audit: number;
  readonly syns: number;
  readonly receivedBytes: number;
  readonly metrics: Scrape;
}

export interface ApiCost {
  /** requests by lowercase verb (list, watch, get, create, patch, update) */
  readonly requests: Readonly<Record<string, number>>;
  readonly requestsTotal: number;
  readonly connections: number;
  /** the bytes of every packet from the server into the side's namespace */
  readonly receivedBytes: number;
  readonly listBytes: number;
  readonly watchEventBytes: number;
}

const TABLE = 'bench_api';

const stamp = (s: unknown) => (typeof s === 'string' ? Date.parse(s) : NaN);

/**
 * The requests of the audit `events` whose User-Agent starts with `userAgentPrefix`, by verb.
 * A request counts where it starts: a watch at its ResponseStarted (one open before the mark
 * ends with a ResponseComplete here), anything else at its ResponseComplete. Also when each was
 * received, and the server's latency (ResponseComplete minus received) of those that end.
 */
export function auditRequests(events: readonly AuditEvent[], userAgentPrefix: string) {
  const verbs = new Map<string, string>();
  const received: number[] = [];
  const latenciesMs: number[] = [];
  for (const e of events) {
    if (!e.userAgent?.startsWith(userAgentPrefix)) continue;
    const ends = e.stage === 'ResponseComplete' && e.verb !== 'watch';
    if (e.stage === 'ResponseStarted' || ends) {
      if (!verbs.has(e.auditID)) received.push(stamp(e.requestReceivedTimestamp));
      verbs.set(e.auditID, e.verb);
    }
    if (ends) latenciesMs.push(stamp(e.stageTimestamp) - stamp(e.requestReceivedTimestamp));
  }
  const requests: Record<string, number> = {};
  for (const verb of verbs.values()) requests[verb] = (requests[verb] ?? 0) + 1;
  return { requests, requestsTotal: verbs.size, received, latenciesMs };
}

export class ApiCostMeter {
  private readonly address: string;
  private readonly port: string;

  constructor(
    private readonly lab: LabClient,
    private readonly ns: string,
    server: string,
    private readonly userAgentPrefix: string,
  ) {
    const u = new URL(server);
    this.address = u.hostname;
    this.port = u.port || '443';
  }

  /** The SYN counter in the side's namespace (a table of the bench's own: neither side touches it). */
  install(): void {
    const nft = (...args: string[]) => run('ip', ['netns', 'exec', this.ns, 'nft', ...args]);
    nft('add', 'table', 'ip', TABLE);
    nft('add', 'chain', 'ip', TABLE, 'out', '{ type filter hook output priority 0 ; policy accept ; }');
    nft(
      'add',
      'rule',
      'ip',
      TABLE,
      'out',
      'ip',
      'daddr',
      this.address,
      'tcp',
      'dport',
      this.port,
      'tcp',
      'flags',
      '&',
      '(syn|ack)',
      '==',
      'syn',
      'counter',
    );
    nft('add', 'chain', 'ip', TABLE, 'in', '{ type filter hook input priority 0 ; policy accept ; }');
    nft('add', 'rule', 'ip', TABLE, 'in', 'ip', 'saddr', this.address, 'tcp', 'sport', this.port, 'counter');
  }

  /** The counter of chain `chain` in the side's namespace. */
  private counter(chain: 'out' | 'in'): { packets: number; bytes: number } {
    const out = run('ip', ['netns', 'exec', this.ns, 'nft', '-j', 'list', 'chain', 'ip', TABLE, chain]);
    const parsed = JSON.parse(out) as {
      nftables: { rule?: { expr: { counter?: { packets: number; bytes: number } }[] } }[];
    };
    for (const item of parsed.nftables) for (const e of item.rule?.expr ?? []) if (e.counter) return e.counter;
    throw new Error(`no counter in chain ${chain} of ${this.ns}`);
  }

  private syns(): number {
    return this.counter('out').packets;
  }

  private metrics(): Promise<Scrape> {
    return serverMetrics(this.lab);
  }

  async mark(): Promise<ApiCostMark> {
    return {
      audit: await this.lab.auditMark(),
      syns: this.syns(),
      receivedBytes: this.counter('in').bytes,
      metrics: await this.metrics(),
    };
  }

  /** The cost since `mark`; `serverRestarted`: the API server restarted since, its counters began again at 0. */
  async since(mark: ApiCostMark, opts: { serverRestarted?: boolean } = {}): Promise<ApiCost> {
    const { requests, requestsTotal } = auditRequests(await this.lab.audit(mark.audit), this.userAgentPrefix);
    const now = await this.metrics();
    const bytes = serverBytes(now, opts.serverRestarted ? new Map() : mark.metrics);
    return {
      requests,
      requestsTotal,
      connections: this.syns() - mark.syns,
      receivedBytes: this.counter('in').bytes - mark.receivedBytes,
      ...bytes,
    };
  }
}

/**
 * The bytes the server sent between two scrapes of its /metrics: list and get bodies of the
 * proxies' resources (the meter's own GET /metrics is a GET too) and watch events, server-wide.
 * `before` empty: since the server started (its counters begin at 0).
 */
export function serverBytes(now: Scrape, before: Scrape): { listBytes: number; watchEventBytes: number } {
  const delta = (name: string, keep?: (labels: string) => boolean) =>
    (sumSeries(now, name, keep) ?? 0) - (sumSeries(before, name, keep) ?? 0);
  return {
    listBytes: delta(
      'apiserver_response_sizes_sum',
      (l) => /verb="(LIST|GET)"/.test(l) && /resource="(services|endpointslices|nodes|servicecidrs)"/.test(l),
    ),
    watchEventBytes: delta('apiserver_watch_events_sizes_sum'),
  };
}

/**
 * The bytes a restarted API server sends with no proxy watching it (its own informers' lists
 * and watches count in the same server-wide series): the baseline of the restart rows. The
 * server is down `downSeconds`, then up for `upSeconds` before the scrape.
 */
export async function restartBaseline(
  lab: LabClient,
  downSeconds: number,
  upSeconds: number,
): Promise<{ readyMs: number; seconds: number; listBytes: number; watchEventBytes: number }> {
  const t0 = Date.now();
  const readyMs = await restartApiserver(lab, downSeconds);
  await new Promise((r) => setTimeout(r, upSeconds * 1000));
  return { readyMs, seconds: (Date.now() - t0) / 1000, ...serverBytes(await serverMetrics(lab), new Map()) };
}

/** Stops the lab's API server, waits `downSeconds`, starts it again; the ms until it is ready. */
export async function restartApiserver(lab: LabClient, downSeconds: number): Promise<number> {
  const t0 = Date.now();
  await lab.stopApiserver('a');
  await new Promise((r) => setTimeout(r, downSeconds * 1000));
  await lab.startApiserver('a');
  return Date.now() - t0;
}

/** The lab API server's /metrics. */
export async function serverMetrics(lab: LabClient): Promise<Scrape> {
  return parseScrape((await lab.kubectl(['get', '--raw', '/metrics'])).stdout);
}
