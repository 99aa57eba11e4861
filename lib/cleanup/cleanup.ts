/**
 * `kube-ipvs cleanup` (kube-proxy `--cleanup`, K8S cmd/kube-proxy/app/server_linux.go
 * platformCleanup with cleanupAndExit: pkg/proxy/iptables, ipvs and nftables CleanupLeftovers):
 * removes what kube-proxy in any of its Linux modes (or kube-ipvs) leaves on a node, in the
 * order the kernel requires, touching nothing else:
 *
 *  0. read the ownership evidence first (what steps 2 and 4 remove): the KUBE-* sets, the
 *     addresses bound on kube-ipvs0, and the node's addresses;
 *  1. delete the IPVS virtual servers that evidence names, by the daemon's adoption rule
 *     (model/ipset-claims.ts unownedReason: kube-ipvs's record or a kube-proxy set naming the
 *     exact ip,proto:port; without a record, a port in KUBE-NODE-PORT-TCP/UDP for one of the
 *     node's addresses; with no KUBE-* set at all, an address bound on kube-ipvs0; cleanup has
 *     no configuration, so the node's addresses are kube-proxy's default nodePortAddresses,
 *     every local one). Never a fwmark service, never a foreign one
 *     (keepalived's, an admin's): each one left is reported with why. kube-proxy flushes the
 *     whole table here; kube-ipvs does not;
 *  2. delete the kube-ipvs0 dummy (a kube-ipvs0 of another kind is reported, never deleted);
 *  3. per family (iptables, ip6tables), ONE `iptables-restore --noflush` over nat, filter and
 *     mangle: delete every rule of a built-in chain that jumps to one of the chains removed,
 *     flush those chains, then delete them (a chain may jump to another, so all flushes come
 *     first). The chains: IPVS mode's 11 KUBE-* chains and iptables mode's own (its per-Service
 *     KUBE-SVC-/SEP-/EXT-/FW-/SVL- chains, filter KUBE-SERVICES and KUBE-EXTERNAL-SERVICES,
 *     KUBE-NODEPORTS, and KUBE-PROXY-CANARY in all three tables), with iptables mode's jumps to
 *     KUBE-PROXY-FIREWALL;
 *  4. destroy the KUBE-* / KUBE-6-* sets (after 3: a set referenced by a rule cannot go);
 *  5. delete nftables mode's two tables, `ip kube-proxy` and `ip6 kube-proxy`, in one
 *     transaction (never `inet kube-proxy` or any other table).
 *
 * `dryRun`: the same reads, no change; the report lists what would be removed.
 * Only the names kube-proxy uses are touched (so kubelet's KUBE-FIREWALL, KUBE-MARK-DROP,
 * KUBE-KUBELET-CANARY and any foreign chain, rule, set, link or table stay). Idempotent: what
 * is already gone is skipped, and a second run starts no iptables-restore and no ipset process.
 * A step that fails is reported and the others still run; a chain still referenced from a
 * foreign chain is flushed but kept (deleting it would fail the whole table's restore).
 */
import { Ipvs } from '../kernel/ipvs/ipvs';
import { LINK_KIND, Link, LinkKindError } from '../kernel/link/link';
import { deleteDummyDevice } from '../kernel/link/dummy-device';
import { IptablesRunner } from '../kernel/iptables/iptables';
import { IpsetRunner, ObservedSet } from '../kernel/ipset/ipset';
import { parseIpsetSave } from '../kernel/ipset/ipset-text';
import { planChainRemoval } from '../kernel/iptables/chain-removal';
import { KUBE_IPVS0 } from '../kernel/link/link';
import { IpFamily } from '../model/ip-family';
import { SetName, Table, ipsetName } from '../model/names';
import { IPTABLES_MODE_CANARY, KUBE_CHAINS, isIptablesModeChain, isIptablesModeFirewallJump } from '../model/iptables';
import type { NftTables } from '../kernel/nftables/nftables';
import { describeNftTable, isKubeProxyNftTable } from '../model/nft-table';
import { OwnershipEvidence, unownedReason } from '../model/ipset-claims';
import { VirtualServer, describeVirtualServer, virtualServerKey } from '../model/ipvs';
import { isNoDevice } from '../kernel/link/link';
import { listBoundAddresses, listLocalAddresses } from '../kernel/link/dummy-device';
import { selectNodePortAddresses } from '../kernel/link/node-addresses';

/** What cleanup() works on: the IPVS table, the link, iptables per family, ipset, a log. */
export interface CleanupDeps {
  readonly ipvs: Pick<Ipvs, 'apply' | 'listServices'>;
  readonly link: Link;
  /** one runner per family to clean (iptables and ip6tables) */
  readonly iptables: readonly IptablesRunner[];
  readonly ipset: IpsetRunner;
  /** nf_tables' tables, for nftables mode's two */
  readonly nftables: Pick<NftTables, 'listTables' | 'deleteTables'>;
  readonly log?: CleanupLog;
  /** read only; the report lists what would be removed */
  readonly dryRun?: boolean;
}

/** Where cleanup() logs each step (a winston logger fits). */
export interface CleanupLog {
  info(msg: string, meta?: Record<string, unknown>): unknown;
  warn(msg: string, meta?: Record<string, unknown>): unknown;
  error(msg: string, meta?: Record<string, unknown>): unknown;
}

/** The steps of cleanup(): the IPVS table, the kube-ipvs0 link, iptables chains, ipsets, nftables tables. */
export type CleanupStep = 'ipvs' | 'link' | 'iptables' | 'ipset' | 'nftables';

/** One thing cleanup() failed to remove: the step, what it was, and the error. */
export interface CleanupFailure {
  readonly step: CleanupStep;
  readonly what: string;
  readonly error: unknown;
}

/** A virtual server cleanup left in place, and why (it is not kube-proxy's or kube-ipvs's). */
export interface KeptVirtualServer {
  /** "TCP 192.168.1.10:443", "FWM 7" */
  readonly what: string;
  readonly reason: string;
}

/** What cleanup() removed (or, in a dry run, would remove), kept, and failed to remove. */
export interface CleanupReport {
  readonly dryRun: boolean;
  /** virtual servers deleted (dry run: that would be), "TCP 10.96.0.10:80" */
  readonly virtualServersRemoved: readonly string[];
  readonly virtualServersKept: readonly KeptVirtualServer[];
  /** kube-ipvs0 deleted (dry run: there to delete) */
  readonly linkDeleted: boolean;
  /** "ipv4 nat -D OUTPUT ...", "ipv4 nat -X KUBE-SERVICES" ... */
  readonly iptablesDone: readonly string[];
  /** chains flushed but kept because a foreign rule still jumps to them */
  readonly chainsKept: readonly string[];
  /** sets destroyed (dry run: that would be) */
  readonly setsDestroyed: readonly string[];
  /** nftables mode's tables deleted (dry run: that would be), "table ip kube-proxy" */
  readonly nftTablesDeleted: readonly string[];
  /** processes started for iptables/ipset (saves + restores) */
  readonly execs: number;
  readonly failures: readonly CleanupFailure[];
}

/** Whether a kube-ipvs0 dummy is there to delete (a dry run's answer to deleteDummyDevice). */
async function dummyThere(link: Link): Promise<boolean> {
  try {
    const found = await link.getLink(KUBE_IPVS0);
    if (found.kind !== LINK_KIND.DUMMY) throw new LinkKindError(KUBE_IPVS0, LINK_KIND.DUMMY, found.kind);
    return true;
  } catch (e) {
    if (isNoDevice(e)) return false;
    throw e;
  }
}

/** the tables step 3 cleans: mangle only for iptables mode's canary */
type CleanupTable = Table | 'mangle';
const TABLES: readonly CleanupTable[] = ['nat', 'filter', 'mangle'];

/** Every set name kube-proxy's IPVS mode may have created: the 17, IPv4 and KUBE-6- IPv6. */
export function kubeSetNames(): string[] {
  const out: string[] = [];
  for (const family of ['ipv4', 'ipv6'] as IpFamily[]) {
    for (const base of Object.values(SetName)) out.push(ipsetName(base, family));
    // a record's rebuild a killed daemon left (proxier/ownership-record.ts)
    out.push(`${ipsetName(SetName.IPVS_OWNED, family)}-NEW`);
  }
  return out;
}

/**
 * What one table's cleanup restore must do, computed from its `iptables-save -t` text: IPVS
 * mode's chains (in KUBE_CHAINS' order), then iptables mode's (in the save's). Pure.
 */
export function planTableCleanup(table: CleanupTable, saveText: string): { lines: string[]; kept: string[] } {
  if (table === 'mangle') return planChainRemoval(saveText, { remove: (c) => c === IPTABLES_MODE_CANARY });
  const ours = new Set<string>(KUBE_CHAINS[table]);
  return planChainRemoval(saveText, {
    remove: (c) => ours.has(c) || isIptablesModeChain(table, c),
    order: KUBE_CHAINS[table],
    alsoDelete: isIptablesModeFirewallJump,
  });
}

/**
 * Why cleanup leaves a virtual server, in words; null when the evidence makes it kube-proxy's
 * or kube-ipvs's, by the daemon's own adoption rule (model/ipset-claims.ts unownedReason). Pure.
 */
export function keepReason(vs: VirtualServer, evidence: OwnershipEvidence): string | null {
  if (vs.fwmark > 0) return 'a fwmark service (kube-proxy never makes one)';
  return unownedReason(evidence, virtualServerKey(vs), { vs, realServerAddresses: [] });
}

/**
 * kube-proxy's NodePort addresses when no configuration says otherwise (cleanup reads none):
 * every local address but kube-ipvs0's, loopback and IPv6 link-local ones.
 */
async function defaultNodePortAddresses(link: Link, exceptIndex: number | undefined): Promise<Set<string>> {
  return new Set(selectNodePortAddresses(await listLocalAddresses(link, exceptIndex), []));
}

/** Removes what kube-proxy (any mode) or kube-ipvs left in the kernel (kube-proxy --cleanup). */
export async function cleanup(deps: CleanupDeps): Promise<CleanupReport> {
  const { log } = deps;
  const failures: CleanupFailure[] = [];
  const fail = (step: CleanupStep, what: string, error: unknown) => {
    failures.push({ step, what, error });
    log?.error(`cleanup ${step}: ${what}: ${(error as Error)?.message ?? String(error)}`, { step });
  };
  let execs = 0;

  const dryRun = deps.dryRun === true;

  // 0. the ownership evidence, before steps 2 and 4 remove it
  let present: Map<string, ObservedSet> | undefined;
  let setsError: unknown;
  try {
    execs++;
    present = parseIpsetSave(await deps.ipset.save());
  } catch (e) {
    setsError = e;
  }
  const bound = new Set<string>();
  let dummyIndex: number | undefined;
  try {
    dummyIndex = (await deps.link.getLink(KUBE_IPVS0)).index;
    for (const a of await listBoundAddresses(deps.link, dummyIndex)) bound.add(a);
  } catch (e) {
    if (!isNoDevice(e))
      log?.warn(`cleanup: the addresses of ${KUBE_IPVS0} could not be read: ${(e as Error)?.message ?? String(e)}`);
  }
  let nodePortAddresses = new Set<string>();
  try {
    nodePortAddresses = await defaultNodePortAddresses(deps.link, dummyIndex);
  } catch (e) {
    // no NodePort address: a port-only set then vouches for nothing (kept, not deleted)
    log?.warn(`cleanup: the node's addresses could not be read: ${(e as Error)?.message ?? String(e)}`);
  }
  const evidence: OwnershipEvidence = { ipsets: present, bound, nodePortAddresses };

  // 1. IPVS: only what the evidence names
  const virtualServersRemoved: string[] = [];
  const virtualServersKept: KeptVirtualServer[] = [];
  try {
    for (const vs of await deps.ipvs.listServices()) {
      const what = describeVirtualServer(vs);
      const reason = keepReason(vs, evidence);
      if (reason !== null) {
        virtualServersKept.push({ what, reason });
        log?.info(`cleanup: ${dryRun ? 'would leave' : 'left'} ${what}: ${reason}`);
        continue;
      }
      try {
        if (!dryRun) await deps.ipvs.apply({ kind: 'delService', vs });
        virtualServersRemoved.push(what);
        if (!dryRun) log?.info(`cleanup: removed ${what}`);
      } catch (e) {
        fail('ipvs', `delete ${what}`, e);
      }
    }
  } catch (e) {
    fail('ipvs', 'list virtual servers', e);
  }

  // 2. kube-ipvs0
  let linkDeleted = false;
  try {
    linkDeleted = dryRun ? await dummyThere(deps.link) : await deleteDummyDevice(deps.link, KUBE_IPVS0);
    if (linkDeleted) log?.info(`cleanup: ${KUBE_IPVS0} deleted`);
  } catch (e) {
    fail(
      'link',
      e instanceof LinkKindError ? `${KUBE_IPVS0} is not a dummy; left in place` : `delete ${KUBE_IPVS0}`,
      e,
    );
  }

  // 3. iptables / ip6tables
  const iptablesDone: string[] = [];
  const chainsKept: string[] = [];
  for (const ipt of deps.iptables) {
    const parts: string[] = [];
    const done: string[] = [];
    try {
      for (const table of TABLES) {
        execs++;
        const { lines, kept } = planTableCleanup(table, await ipt.save(table));
        for (const c of kept) {
          chainsKept.push(`${ipt.family} ${table} ${c}`);
          log?.warn(`cleanup: ${ipt.family} ${table} ${c} is still referenced by a foreign rule: flushed, not deleted`);
        }
        if (lines.length === 0) continue;
        parts.push(`*${table}`, ...lines, 'COMMIT');
        done.push(...lines.map((l) => `${ipt.family} ${table} ${l}`));
      }
      if (parts.length > 0 && dryRun) iptablesDone.push(...done);
      else if (parts.length > 0) {
        execs++;
        await ipt.restore(parts.join('\n') + '\n');
        iptablesDone.push(...done);
        log?.info(`cleanup: ${ipt.family} iptables: ${done.length} changes`, { family: ipt.family });
      }
    } catch (e) {
      fail('iptables', `${ipt.family} rules and chains`, e);
    }
  }

  // 4. ipsets (present as read at step 0: nothing since has created one)
  const setsDestroyed: string[] = [];
  if (present === undefined) fail('ipset', 'list sets', setsError);
  else {
    const names = kubeSetNames().filter((n) => present!.has(n));
    if (names.length > 0 && dryRun) setsDestroyed.push(...names);
    else if (names.length > 0) {
      execs++;
      try {
        await deps.ipset.restore(names.map((n) => `destroy ${n}`).join('\n') + '\n');
        setsDestroyed.push(...names);
      } catch {
        // ipset restore stops at the first refusal: find which sets remain and try each alone
        // so one set still in use does not keep the others
        try {
          execs++;
          const left = parseIpsetSave(await deps.ipset.save());
          for (const n of names) {
            if (!left.has(n)) {
              setsDestroyed.push(n);
              continue;
            }
            execs++;
            try {
              await deps.ipset.restore(`destroy ${n}\n`);
              setsDestroyed.push(n);
            } catch (e) {
              fail('ipset', `destroy ${n}`, e);
            }
          }
        } catch (e) {
          fail('ipset', 'list sets', e);
        }
      }
      log?.info(`cleanup: ${setsDestroyed.length} ipsets destroyed`);
    }
  }

  // 5. nftables mode's tables
  const nftTablesDeleted: string[] = [];
  try {
    const found = (await deps.nftables.listTables()).filter(isKubeProxyNftTable);
    if (found.length > 0 && !dryRun) {
      await deps.nftables.deleteTables(found);
      log?.info(`cleanup: deleted nftables ${found.map(describeNftTable).join(', ')}`);
    }
    nftTablesDeleted.push(...found.map(describeNftTable));
  } catch (e) {
    fail('nftables', `table ip kube-proxy and table ip6 kube-proxy`, e);
  }

  return {
    dryRun,
    virtualServersRemoved,
    virtualServersKept,
    linkDeleted,
    iptablesDone,
    chainsKept,
    setsDestroyed,
    nftTablesDeleted,
    execs,
    failures,
  };
}
