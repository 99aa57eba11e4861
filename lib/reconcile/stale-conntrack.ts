/**
 * Which conntrack entries are stale after a UDP/SCTP Service's endpoints changed (kube-proxy's
 * pkg/proxy/conntrack/cleanup.go CleanStaleEntries, made exact for IPVS): an entry whose
 * original destination is a UDP/SCTP frontend (ClusterIP, externalIP, LoadBalancer IP, or a
 * NodePort on a node address: every virtual server kube-ipvs programs) and whose reply source is
 * not one of that frontend's real servers now. That covers entries still pointing at a gone
 * endpoint and entries blackholed while the Service had no endpoint (their reply source is the
 * frontend itself). A frontend with no real server is left alone: there is nowhere better to
 * send its traffic, and the next endpoint's arrival cleans it.
 *
 * Pure: no I/O. Differences from kube-proxy, both narrower: a frontend is the exact
 * address:port of a virtual server (kube-proxy matches a NodePort on any destination address),
 * and a real server is its address:port (kube-proxy compares the address only).
 */
import { ConntrackFlow } from '../model/conntrack';
import { IPPROTO_SCTP, IPPROTO_UDP } from '../uapi/inet';
import { DesiredVirtualServer } from '../plan/service-plan';
import { hostPort } from '../model/ipvs';
import { IpFamily, fromAddressFamily, toAddressFamily } from '../model/ip-family';

/** One UDP/SCTP frontend and where its traffic may go now. */
export interface ConntrackFrontend {
  readonly family: IpFamily;
  /** IPPROTO_UDP or IPPROTO_SCTP */
  readonly protocol: number;
  readonly address: string;
  readonly port: number;
  /** the real servers' address and port */
  readonly endpoints: readonly { readonly address: string; readonly port: number }[];
}

/** Protocols whose stale entries are cleaned (TCP's are reset by the peers; IPVS expires them). */
export const CLEANED_PROTOCOLS: readonly number[] = [IPPROTO_UDP, IPPROTO_SCTP];

const key = (family: IpFamily, protocol: number, address: string, port: number): string =>
  `${protocol}/${hostPort(toAddressFamily(family), address, port)}`;

/** The frontends of virtual servers of a cleaned protocol (fwmark services have none). */
export function conntrackFrontends(virtualServers: Iterable<DesiredVirtualServer>): ConntrackFrontend[] {
  const out: ConntrackFrontend[] = [];
  for (const { vs, realServers } of virtualServers) {
    if (vs.fwmark > 0 || !CLEANED_PROTOCOLS.includes(vs.protocol)) continue;
    out.push({
      family: fromAddressFamily(vs.af),
      protocol: vs.protocol,
      address: vs.address,
      port: vs.port,
      endpoints: realServers.map((r) => ({ address: r.address, port: r.port })),
    });
  }
  return out;
}

/** The flows to delete, in the order given. */
export function staleConntrackFlows(
  flows: readonly ConntrackFlow[],
  frontends: readonly ConntrackFrontend[],
): ConntrackFlow[] {
  const byFrontend = new Map<string, Set<string>>();
  for (const f of frontends) {
    if (f.endpoints.length === 0) continue;
    byFrontend.set(
      key(f.family, f.protocol, f.address, f.port),
      new Set(f.endpoints.map((e) => key(f.family, f.protocol, e.address, e.port))),
    );
  }
  if (byFrontend.size === 0) return [];
  return flows.filter((fl) => {
    if (!CLEANED_PROTOCOLS.includes(fl.protocol)) return false;
    const endpoints = byFrontend.get(key(fl.family, fl.protocol, fl.orig.dst, fl.orig.dstPort));
    return endpoints !== undefined && !endpoints.has(key(fl.family, fl.protocol, fl.reply.src, fl.reply.srcPort));
  });
}

/**
 * Which (family, protocol) tables need a look after a Service was re-planned (kube-proxy's
 * ConntrackCleanupRequired): a UDP/SCTP virtual server that still exists lost a real server,
 * or got its first one (and has one now). Keys "ipv4/17"; empty when nothing of the kind changed.
 */
export function conntrackCleanupTriggers(
  before: Iterable<DesiredVirtualServer>,
  after: Iterable<DesiredVirtualServer>,
): Set<string> {
  const rsKeys = (d: DesiredVirtualServer) => new Set(d.realServers.map((r) => hostPort(d.vs.af, r.address, r.port)));
  const old = new Map<string, Set<string>>();
  for (const d of before) {
    if (d.vs.fwmark === 0 && CLEANED_PROTOCOLS.includes(d.vs.protocol))
      old.set(key(fromAddressFamily(d.vs.af), d.vs.protocol, d.vs.address, d.vs.port), rsKeys(d));
  }
  const out = new Set<string>();
  for (const d of after) {
    if (d.vs.fwmark > 0 || !CLEANED_PROTOCOLS.includes(d.vs.protocol)) continue;
    const family = fromAddressFamily(d.vs.af);
    const was = old.get(key(family, d.vs.protocol, d.vs.address, d.vs.port)) ?? new Set<string>();
    const now = rsKeys(d);
    // with no real server left nothing is stale yet (staleConntrackFlows skips such a
    // frontend); the next endpoint's arrival is the trigger
    if (now.size === 0) continue;
    const lostOne = [...was].some((k) => !now.has(k));
    if (lostOne || was.size === 0) out.add(`${family}/${d.vs.protocol}`);
  }
  return out;
}
