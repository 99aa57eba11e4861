/**
 * Which iptables backend the node uses, decided as kube-proxy's image does it
 * (kubernetes-sigs/iptables-wrappers): first the chains kubelet (>= 1.17) leaves in the mangle
 * table (KUBE-IPTABLES-HINT / KUBE-KUBELET-CANARY), looked up in nft first (`-t mangle`), then
 * in legacy (whole dump: `-t mangle` would create the legacy table); without them, the older
 * wrapper's rule count: legacy only when it holds more rules than nft. Default nft.
 */
import { Execer, ExecResult, checkExec } from '../exec';
import { IptablesBackend } from './iptables';
import { IpFamily } from '../../model/ip-family';

/** The iptables backend chosen for a family (nft or legacy), why, and the processes it took. */
export interface BackendDecision {
  readonly backend: IptablesBackend;
  readonly reason: string;
  /** processes started */
  readonly execs: number;
}

const KUBELET_CHAINS = /^:(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY)\b/m;

/** "iptables" or "ip6tables" */
export function iptablesPrefix(family: IpFamily): 'iptables' | 'ip6tables' {
  return family === 'ipv4' ? 'iptables' : 'ip6tables';
}

/** Binary of a backend: iptables-nft-restore, ip6tables-legacy-save, ... */
export function iptablesBinary(family: IpFamily, backend: IptablesBackend, tool: '' | 'save' | 'restore'): string {
  return `${iptablesPrefix(family)}-${backend}${tool ? '-' + tool : ''}`;
}

const isMissingBinary = (e: unknown): boolean => (e as { code?: unknown })?.code === 'ENOENT';

/**
 * stdout of a save; '' when the binary is not installed (that backend has nothing). A save
 * that ran and failed (xtables lock, no permission, ...) throws ExecError: it is no answer,
 * and guessing would pick the wrong backend for the node's lifetime. (Each save exits 0 on a
 * node without that backend's tables.)
 */
async function saveOutput(exec: Execer, cmd: string, args: string[]): Promise<string> {
  let r: ExecResult;
  try {
    r = await exec.run(cmd, args);
  } catch (e) {
    if (isMissingBinary(e)) return '';
    throw e;
  }
  return checkExec(cmd, args, r).stdout;
}

function ruleCount(save: string): number {
  let n = 0;
  for (const line of save.split('\n')) if (line.startsWith('-')) n++;
  return n;
}

/** Throws ExecError when a save fails; the caller retries later (nothing is cached). */
export async function detectBackend(exec: Execer, family: IpFamily): Promise<BackendDecision> {
  const nftSave = iptablesBinary(family, 'nft', 'save');
  const legacySave = iptablesBinary(family, 'legacy', 'save');
  const nftMangle = await saveOutput(exec, nftSave, ['-t', 'mangle']);
  if (KUBELET_CHAINS.test(nftMangle)) return { backend: 'nft', reason: 'kubelet chains in nft mangle table', execs: 1 };
  const legacyAll = await saveOutput(exec, legacySave, []);
  if (KUBELET_CHAINS.test(legacyAll))
    return { backend: 'legacy', reason: 'kubelet chains in legacy mangle table', execs: 2 };
  const nftAll = await saveOutput(exec, nftSave, []);
  const l = ruleCount(legacyAll);
  const n = ruleCount(nftAll);
  if (l > n) return { backend: 'legacy', reason: `no kubelet chains; legacy has more rules (${l} > ${n})`, execs: 3 };
  return { backend: 'nft', reason: `no kubelet chains; legacy rules ${l} <= nft rules ${n}: default nft`, execs: 3 };
}

/** `iptables --version` -> [1, 8, 9]; undefined when it cannot be read. */
export async function iptablesVersion(
  exec: Execer,
  family: IpFamily,
  backend: IptablesBackend,
): Promise<number[] | undefined> {
  let out = '';
  try {
    const r = await exec.run(iptablesBinary(family, backend, ''), ['--version']);
    if (r.exitCode === 0) out = r.stdout;
  } catch {
    // not installed: unknown version
  }
  const m = /v(\d+)\.(\d+)\.(\d+)/.exec(out);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/** kube-proxy: MASQUERADE --random-fully needs iptables >= 1.6.2. */
export function supportsRandomFully(version: readonly number[] | undefined): boolean {
  if (!version) return false;
  const [a = 0, b = 0, c = 0] = version;
  return a > 1 || (a === 1 && (b > 6 || (b === 6 && c >= 2)));
}
