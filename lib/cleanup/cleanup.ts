/**
 * `kube-ipvs cleanup` (kube-proxy `--cleanup`, K8S pkg/proxy/ipvs/proxier.go cleanupLeftovers):
 * removes everything kube-proxy's IPVS mode (or kube-ipvs) leaves on a node, in the order the
 * kernel requires, touching nothing else:
 *
 *  1. flush the IPVS table;
 *  2. delete the kube-ipvs0 dummy (a kube-ipvs0 of another kind is reported, never deleted);
 *  3. per family (iptables, ip6tables) and table (nat, filter), ONE `iptables-restore --noflush`:
 *     delete every rule of a built-in chain that jumps to one of the 11 KUBE-* chains, flush
 *     those chains, then delete them (a chain may jump to another, so all flushes come first);
 *  4. destroy the KUBE-* / KUBE-6-* sets (after 3: a set referenced by a rule cannot go).
 *
 * Only the names kube-proxy uses are touched (so kubelet's KUBE-FIREWALL, KUBE-MARK-DROP,
 * KUBE-KUBELET-CANARY and any foreign chain, rule, set or link stay). Idempotent: what is
 * already gone is skipped, and a second run starts no iptables-restore and no ipset process.
 * A step that fails is reported and the others still run; a chain still referenced from a
 * foreign chain is flushed but kept (deleting it would fail the whole table's restore).
 */
import { Ipvs } from '../kernel/ipvs/ipvs';
import { Link, LinkKindError } from '../kernel/link/link';
import { deleteDummyDevice } from '../kernel/link/dummy-device';
import { IptablesRunner } from '../kernel/iptables/iptables';
import { IpsetRunner } from '../kernel/ipset/ipset';
import { parseIpsetSave } from '../kernel/ipset/ipset-text';
import { tokenize } from '../kernel/iptables/parse-restore';
import { KUBE_IPVS0 } from '../kernel/link/link';
import { IpFamily } from '../model/ip-family';
import { BuiltinChain, SetName, Table, ipsetName } from '../model/names';
import { KUBE_CHAINS } from '../model/iptables';

export interface CleanupDeps {
  readonly ipvs: Pick<Ipvs, 'apply'>;
  readonly link: Link;
  /** one runner per family to clean (iptables and ip6tables) */
  readonly iptables: readonly IptablesRunner[];
  readonly ipset: IpsetRunner;
  readonly log?: CleanupLog;
}

export interface CleanupLog {
  info(msg: string, meta?: Record<string, unknown>): unknown;
  warn(msg: string, meta?: Record<string, unknown>): unknown;
  error(msg: string, meta?: Record<string, unknown>): unknown;
}

export type CleanupStep = 'ipvs' | 'link' | 'iptables' | 'ipset';

export interface CleanupFailure {
  readonly step: CleanupStep;
  readonly what: string;
  readonly error: unknown;
}

export interface CleanupReport {
  readonly linkDeleted: boolean;
  /** "ipv4 nat -D OUTPUT ...", "ipv4 nat -X KUBE-SERVICES" ... */
  readonly iptablesDone: readonly string[];
  /** chains flushed but kept because a foreign rule still jumps to them */
  readonly chainsKept: readonly string[];
  readonly setsDestroyed: readonly string[];
  /** processes started for iptables/ipset (saves + restores) */
  readonly execs: number;
  readonly failures: readonly CleanupFailure[];
}

const TABLES: readonly Table[] = ['nat', 'filter'];
const BUILTINS: ReadonlySet<string> = new Set(Object.values(BuiltinChain));

/** Every set name kube-proxy's IPVS mode may have created: the 17, IPv4 and KUBE-6- IPv6. */
export function kubeSetNames(): string[] {
  const out: string[] = [];
  for (const family of ['ipv4', 'ipv6'] as IpFamily[]) for (const base of Object.values(SetName)) out.push(ipsetName(base, family));
  return out;
}

/** What one table's cleanup restore must do, computed from its `iptables-save -t` text. Pure. */
export function planTableCleanup(table: Table, saveText: string): { lines: string[]; kept: string[] } {
  const ours = new Set<string>(KUBE_CHAINS[table]);
  const existing = new Set<string>();
  const jumps: string[] = [];
  const foreignRefs = new Set<string>();
  for (const raw of saveText.split('\n')) {
    const line = raw.trim();
    if (line.startsWith(':')) {
      const name = line.slice(1).split(/\s+/)[0]!;
      if (ours.has(name)) existing.add(name);
      continue;
    }
    if (!line.startsWith('-A ')) continue;
    const t = tokenize(line);
    const chain = t[1]!;
    let target: string | undefined;
    for (let i = 2; i < t.length - 1; i++) if (t[i] === '-j' || t[i] === '-g' || t[i] === '--jump' || t[i] === '--goto') target = t[i + 1];
    if (target === undefined || !ours.has(target) || ours.has(chain)) continue;
    if (BUILTINS.has(chain)) jumps.push(`-D ${chain} ${line.slice(3 + chain.length + 1)}`);
    else foreignRefs.add(target);
  }
  const chains = KUBE_CHAINS[table].filter((c) => existing.has(c));
  const kept = chains.filter((c) => foreignRefs.has(c));
  const lines = [
    ...jumps,
    ...chains.map((c) => `-F ${c}`),
    ...chains.filter((c) => !foreignRefs.has(c)).map((c) => `-X ${c}`),
  ];
  return { lines, kept };
}

export async function cleanup(deps: CleanupDeps): Promise<CleanupReport> {
  const { log } = deps;
  const failures: CleanupFailure[] = [];
  const fail = (step: CleanupStep, what: string, error: unknown) => {
    failures.push({ step, what, error });
    log?.error(`cleanup ${step}: ${what}: ${(error as Error)?.message ?? String(error)}`, { step });
  };
  let execs = 0;

  // 1. IPVS
  try {
    await deps.ipvs.apply({ kind: 'flush' });
    log?.info('cleanup: IPVS table flushed');
  } catch (e) {
    fail('ipvs', 'flush', e);
  }

  // 2. kube-ipvs0
  let linkDeleted = false;
  try {
    linkDeleted = await deleteDummyDevice(deps.link, KUBE_IPVS0);
    if (linkDeleted) log?.info(`cleanup: ${KUBE_IPVS0} deleted`);
  } catch (e) {
    fail('link', e instanceof LinkKindError ? `${KUBE_IPVS0} is not a dummy; left in place` : `delete ${KUBE_IPVS0}`, e);
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
      if (parts.length > 0) {
        execs++;
        await ipt.restore(parts.join('\n') + '\n');
        iptablesDone.push(...done);
        log?.info(`cleanup: ${ipt.family} iptables: ${done.length} changes`, { family: ipt.family });
      }
    } catch (e) {
      fail('iptables', `${ipt.family} rules and chains`, e);
    }
  }

  // 4. ipsets
  const setsDestroyed: string[] = [];
  try {
    execs++;
    const present = parseIpsetSave(await deps.ipset.save());
    const names = kubeSetNames().filter((n) => present.has(n));
    if (names.length > 0) {
      execs++;
      try {
        await deps.ipset.restore(names.map((n) => `destroy ${n}`).join('\n') + '\n');
        setsDestroyed.push(...names);
      } catch {
        // ipset restore stops at the first refusal: find which sets remain and try each alone
        // so one set still in use does not keep the others
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
      }
      log?.info(`cleanup: ${setsDestroyed.length} ipsets destroyed`);
    }
  } catch (e) {
    fail('ipset', 'list sets', e);
  }

  return { linkDeleted, iptablesDone, chainsKept, setsDestroyed, execs, failures };
}
