/**
 * A sync's netfilter half: the ipsets, then the iptables rules, of every family. It runs beside
 * the IPVS read and writes of the same sync (proxier.ts starts it, then awaits it).
 */
import { DesiredIndex } from './desired-index';
import { NodeContext } from './node-context';
import { SyncRun } from './sync-run';
import { ProxierDeps } from './types';

/**
 * The families' ipsets, one sync after another (they may share one Ipset), then their
 * iptables; no iptables after a failed ipset sync. Resolves, never rejects: with the failure,
 * if one happened. Sets phasesMs.ipsets and phasesMs.iptables to their own durations, which
 * overlap the IPVS read, the IPVS writes and the binds.
 */
export async function syncNetfilter(
  deps: Pick<ProxierDeps, 'clock' | 'ipsets' | 'iptables'>,
  index: DesiredIndex,
  node: NodeContext,
  run: Pick<SyncRun, 'full' | 'counts' | 'phasesMs'>,
): Promise<{ error: unknown } | undefined> {
  const { full, counts, phasesMs } = run;
  const clock = deps.clock;
  const families = node.settings.families;
  let start = clock.now();
  let phase: 'ipsets' | 'iptables' = 'ipsets';
  try {
    for (const family of families) {
      const ipset = deps.ipsets[family];
      // a partial sync that changed no member skips even the in-memory diff of every set
      const membersChanged = index.takeIpsetsChanged(family);
      // (awaited before the +=: the ownership record's writes add to execs meanwhile)
      if (ipset && (full || membersChanged)) {
        const { execs } = await ipset.sync(index.ipsets(family));
        counts.execs += execs;
      }
    }
    phasesMs.ipsets = clock.now() - start;
    start = clock.now();
    phase = 'iptables';
    for (const family of families) {
      const ipt = deps.iptables[family];
      if (ipt) {
        const { execs } = await ipt.sync(index.iptables(family, node.iptablesOptions(family)), { verify: full });
        counts.execs += execs;
      }
    }
    phasesMs.iptables = clock.now() - start;
    return undefined;
  } catch (error) {
    phasesMs[phase] = clock.now() - start;
    return { error };
  }
}
