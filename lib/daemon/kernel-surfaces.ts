/**
 * The daemon's kernel surfaces: opened once at start-up (in daemon.ts's order), closed once at
 * shutdown. A surface the proxy cannot run without is logged and reported as undefined, for
 * runDaemon to exit 1.
 */
import { Conntrack } from '../kernel/conntrack/conntrack';
import { openConntrack } from '../kernel/conntrack/conntrack-netlink';
import { ProxyConfig } from '../config/proxy-config';
import { asNeedsRoot } from '../errors';
import { componentLog } from '../log';
import { applyNodeSettings } from './node-settings';
import { openIpvs, IpvsUnavailableError } from '../kernel/ipvs/ipvs-netlink';
import { Ipvs } from '../kernel/ipvs/ipvs';
import { openLink } from '../kernel/link/link-rtnetlink';
import { Link } from '../kernel/link/link';
import { Execer } from '../kernel/exec';
import { createIpset } from '../kernel/ipset/ipset-restore';
import { listIpsets } from '../kernel/ipset/ipset-netlink';
import { createIptables } from '../kernel/iptables/iptables-restore';
import { GenerationPeers } from '../kernel/iptables/iptables-sync';
import { LazyNftGeneration } from '../kernel/iptables/nft-generation';
import { NftTables } from '../kernel/nftables/nftables';
import { LazyNftTables } from '../kernel/nftables/nftables-netlink';
import { PeerNftTables } from '../kernel/nftables/peer-nftables';
import { iptablesVersion, supportsRandomFully } from '../kernel/iptables/detect-backend';
import { ProcSysctl } from '../kernel/sysctl/sysctl';
import { ensureIpvsSysctls } from '../kernel/sysctl/ipvs-sysctls';
import { Ipset, IpsetState } from '../kernel/ipset/ipset';
import { DumpMemo } from '../netlink/dump-memo';
import { Iptables } from '../kernel/iptables/iptables';
import { IpFamily } from '../model/ip-family';

/** The daemon's logger (a winston child logger with its component). */
export type DaemonLog = ReturnType<typeof componentLog>;

/** The kernel interfaces the daemon opened: IPVS, links, conntrack, ipsets, iptables, nf_tables. */
export interface KernelSurfaces {
  readonly ipvs: Ipvs;
  readonly link: Link;
  readonly exec: Execer;
  /** absent when ctnetlink cannot be opened: the proxy runs without the stale-entry cleanup */
  readonly conntrack?: Conntrack;
  readonly ipsets: Partial<Record<IpFamily, Ipset>>;
  readonly iptables: Partial<Record<IpFamily, Iptables>>;
  /** nf_tables' tables, for kube-proxy's nftables-mode leftovers (the socket opens on first use) */
  readonly nftables: NftTables;
  close(): void;
}

/** Sets the IPVS tcp, tcpfin and udp timeouts (ipvsadm --set) when any is configured; logs a failure. */
export async function applyIpvsTimeouts(ipvs: Ipvs, config: ProxyConfig, log: DaemonLog): Promise<void> {
  const { tcpTimeoutSec: tcp, tcpFinTimeoutSec: tcpFin, udpTimeoutSec: udp } = config.ipvs;
  if (tcp <= 0 && tcpFin <= 0 && udp <= 0) return;
  try {
    await ipvs.apply({ kind: 'setConfig', timeouts: { tcp, tcpFin, udp } });
  } catch (e) {
    log.error(`setting IPVS timeouts (tcp ${tcp}s, tcpfin ${tcpFin}s, udp ${udp}s): ${(e as Error).message}`);
  }
}

/**
 * IPVS and rtnetlink, then the IPVS sysctls, the node settings and the IPVS timeouts;
 * undefined (logged, sockets closed) when IPVS is missing or the sysctls cannot be set.
 */
export async function openIpvsAndLink(
  config: ProxyConfig,
  log: DaemonLog,
  open: { ipvs(): Promise<Ipvs> } = { ipvs: () => openIpvs() },
): Promise<{ ipvs: Ipvs; link: Link } | undefined> {
  let ipvs: Ipvs;
  try {
    ipvs = await open.ipvs();
  } catch (e) {
    if (e instanceof IpvsUnavailableError) {
      log.error(`${e.message}: load the ip_vs module (modprobe ip_vs) or run on a kernel with IPVS`);
      return undefined;
    }
    throw e;
  }
  // the first request that needs CAP_NET_ADMIN (every IPVS command does): refused, the
  // daemon says so once and stops before anything else is tried (sysctls, conntrack, ...)
  try {
    await ipvs.info();
  } catch (e) {
    const root = asNeedsRoot(e, 'the IPVS table');
    if (!root) throw e;
    log.error(root.message);
    ipvs.close();
    return undefined;
  }
  const link: Link = await openLink();
  try {
    await ensureIpvsSysctls(new ProcSysctl(), { strictARP: config.ipvs.strictARP }, componentLog('sysctl'));
  } catch (e) {
    log.error(asNeedsRoot(e, 'the IPVS sysctls')?.message ?? `sysctl: ${(e as Error).message}`);
    ipvs.close();
    link.close();
    return undefined;
  }
  // conntrack.* and oomScoreAdj, as kube-proxy sets them before it proxies
  await applyNodeSettings(config, componentLog('sysctl'));
  await applyIpvsTimeouts(ipvs, config, log);
  return { ipvs, link };
}

/** ctnetlink, ipset, iptables (both families) and nf_tables over the opened IPVS and rtnetlink sockets. */
export function openKernelSurfaces(ipvs: Ipvs, link: Link, exec: Execer, log: DaemonLog): KernelSurfaces {
  // stale UDP/SCTP conntrack cleanup over ctnetlink; without ctnetlink the proxy runs without the cleanup
  let conntrack: Conntrack | undefined;
  try {
    conntrack = openConntrack();
  } catch (e) {
    log.error(`${(e as Error).message}; stale UDP conntrack entries will not be cleaned`);
  }
  // one instance for both families: its one read (a netlink dump; `ipset save` where netlink
  // cannot serve) sees every set, and each family's sync touches only its own sets
  const ipsetDumps = new DumpMemo<IpsetState>();
  const ipset = createIpset(exec, undefined, undefined, () => listIpsets({ memo: ipsetDumps }));
  const ipsets: Partial<Record<IpFamily, Ipset>> = { ipv4: ipset, ipv6: ipset };
  const iptables: Partial<Record<IpFamily, Iptables>> = {};
  // iptables-nft: the nf_tables generation (one per network namespace, both families) lets
  // the periodic verify skip its two iptables-save per family while nobody has committed
  // anything since the rules were proven ours. Read only when the backend is nft (the socket
  // opens on the first read); iptables-legacy has no generation or change notification (a
  // table is one blob swapped by setsockopt), so there the verify keeps reading the tables.
  // Both families' commits move that one generation: a family whose restore moved it by
  // exactly its own commits tells the other, whose proof then still holds (GenerationPeers);
  // without that, the first periodic check after a dual-stack start reads IPv4's tables.
  const nftGeneration = new LazyNftGeneration();
  const peers = new GenerationPeers();
  for (const f of ['ipv4', 'ipv6'] as IpFamily[]) {
    iptables[f] = createIptables({ family: f, backend: 'auto', exec, generation: nftGeneration, peers });
  }
  // kube-proxy's nftables-mode tables go after the first full sync (proxier/nftables-leftovers.ts);
  // that transaction touches no iptables table: the syncs' proof survives it (PeerNftTables)
  const nftables = new PeerNftTables(new LazyNftTables(), nftGeneration, peers);
  return {
    ipvs,
    link,
    exec,
    ipsets,
    iptables,
    nftables,
    ...(conntrack ? { conntrack } : {}),
    close: () => {
      ipvs.close();
      link.close();
      conntrack?.close();
      nftGeneration.close();
      nftables.close();
    },
  };
}

/** Whether each proxied family's iptables can MASQUERADE --random-fully (false when the version cannot be read). */
export async function detectRandomFully(
  kernel: KernelSurfaces,
  families: readonly IpFamily[],
  log: DaemonLog,
): Promise<Partial<Record<IpFamily, boolean>>> {
  const randomFully: Partial<Record<IpFamily, boolean>> = {};
  for (const f of families) {
    try {
      randomFully[f] = supportsRandomFully(await iptablesVersion(kernel.exec, f, await kernel.iptables[f]!.backend()));
    } catch (e) {
      log.warn(`${f}: cannot tell the iptables version (${(e as Error).message}); MASQUERADE without --random-fully`);
      randomFully[f] = false;
    }
  }
  return randomFully;
}
