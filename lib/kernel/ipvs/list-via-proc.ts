// The whole IPVS table for a listing, with real servers read from /proc/net/ip_vs.
//
// Over netlink a listing is one service dump plus ONE DUMP PER SERVICE for its real servers
// (10,000 services: 10,001 dumps). /proc/net/ip_vs shows every real server in one read, but
// not every service field (parse-proc-ip-vs.ts says which). So: services from one netlink
// dump (exact: flags, persistence engine, family of a fwmark, timeout in seconds), real
// servers from /proc, joined by service. A service gets its real servers from a netlink dump
// instead when /proc cannot stand for it:
//   - it is not in /proc (added between the two reads) or its scheduler differs there
//     (edited between them);
//   - a fwmark that /proc shows more than once (an IPv4 and an IPv6 service share it: /proc
//     does not say which is which);
//   - the listing shows tunnel details (-S, --tun-info) and a real server is a tunnel.
// Like ipvsadm's own listing (a service dump, then one dest dump per service) the result is
// not one atomic snapshot of a table that changes meanwhile.
//
// Real servers read from /proc have 0 thresholds, persistent connections and tunnel fields:
// a listing that shows those (--thresholds, --persistent-conn, --stats, --rate) must not use
// this. When /proc cannot be read or does not parse, everything comes from netlink.

import { IpvsInfo, VirtualServer } from '../../model/ipvs';
import { IP_VS_CONN_F } from '../../uapi/ip_vs';
import { Ipvs, VirtualServerEntry } from './ipvs';
import { ProcIpVsBlocks, ProcIpVsTable, ProcVirtualServer, parseProcIpVs } from './parse-proc-ip-vs';

/** Options of a listing via /proc/net/ip_vs. */
export interface ProcListingOptions {
  /** the listing shows tunnel type, port and checksum flags (ipvsadm -S, --tun-info) */
  readonly tunnelDetails: boolean;
  /** the last parse's service blocks: a caller that lists again and again passes the same one */
  readonly blocks?: ProcIpVsBlocks;
}

/** An IPVS listing and where it came from (/proc/net/ip_vs or netlink). */
export interface ProcListing {
  readonly info: IpvsInfo;
  /** in the kernel's order (the service dump's) */
  readonly entries: VirtualServerEntry[];
  /** 'proc' when /proc/net/ip_vs was used (some services may still have been dumped) */
  readonly source: 'proc' | 'netlink';
  /** services whose real servers came from a netlink dump */
  readonly destDumps: number;
}

const procKey = (s: { protocol: number; address: string; port: number }): string =>
  `${s.protocol}/${s.address}/${s.port}`;

/**
 * Which /proc service stands for each netlink service, or undefined when none can. /proc and
 * the service dump walk the kernel's service table in the same order, so the /proc service at
 * the same index is tried first; only a service found elsewhere (the table changed between the
 * two reads) or a fwmark one is looked up by key, in maps built on first need.
 */
export function matchProcServices(
  services: readonly VirtualServer[],
  table: ProcIpVsTable,
  opts: ProcListingOptions,
): (ProcVirtualServer | undefined)[] {
  const procs = table.services;
  let byKey: Map<string, ProcVirtualServer> | undefined;
  let byMark: Map<number, ProcVirtualServer[]> | undefined;
  const index = () => {
    byKey = new Map();
    byMark = new Map();
    for (const p of procs) {
      if (p.fwmark) {
        const list = byMark.get(p.fwmark);
        if (list) list.push(p);
        else byMark.set(p.fwmark, [p]);
      } else byKey.set(procKey(p), p);
    }
  };
  return services.map((vs, i) => {
    let p: ProcVirtualServer | undefined = procs[i];
    if (vs.fwmark || !p || p.fwmark || p.protocol !== vs.protocol || p.port !== vs.port || p.address !== vs.address) {
      if (!byKey) index();
      if (vs.fwmark) {
        const list = byMark!.get(vs.fwmark);
        p = list?.length === 1 ? list[0] : undefined;
      } else p = byKey!.get(procKey(vs));
    }
    if (!p || p.scheduler !== vs.scheduler) return undefined;
    if (opts.tunnelDetails && p.dests.some((d) => d.fwdMethod === IP_VS_CONN_F.TUNNEL)) return undefined;
    return p;
  });
}

/**
 * Every service with its real servers: one netlink service dump and one read of /proc/net/ip_vs
 * (readProc), plus a netlink dest dump for each service /proc cannot stand for.
 */
export async function listAllViaProc(
  ipvs: Ipvs,
  readProc: () => Promise<string>,
  opts: ProcListingOptions,
): Promise<ProcListing> {
  const [services, table] = await Promise.all([
    ipvs.listServices(),
    readProc()
      .then((text) => parseProcIpVs(text, opts.blocks))
      .catch(() => undefined),
  ]);
  if (!table) {
    const [info, entries] = await Promise.all([ipvs.info(), ipvs.listAll()]);
    return { info, entries, source: 'netlink', destDumps: entries.length };
  }
  const matched = matchProcServices(services, table, opts);
  const entries: VirtualServerEntry[] = new Array(services.length);
  const dumps: Promise<void>[] = [];
  services.forEach((vs, i) => {
    const p = matched[i];
    if (p) entries[i] = { vs, dests: p.dests };
    else dumps.push(ipvs.listRealServers(vs).then((dests) => void (entries[i] = { vs, dests })));
  });
  await Promise.all(dumps);
  const destDumps = dumps.length;
  return { info: table.info, entries, source: 'proc', destDumps };
}
