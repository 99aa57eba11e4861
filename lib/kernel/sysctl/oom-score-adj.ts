// oomScoreAdj: kube-proxy writes it to its own /proc/<pid>/oom_score_adj at start
// (pkg/util/oom ApplyOOMScoreAdj(0, value); -999 by default, so the OOM killer takes almost
// anything before the node's proxy) and only logs a failure. The file is read through the
// Sysctl surface rooted at /proc (ProcSysctl('/proc')), key `self/oom_score_adj`.
import { Sysctl, ensureSysctl } from './sysctl';

/** `<pid>/oom_score_adj` under /proc; 'self' is this process. */
export const oomScoreAdjKey = (pid: number | 'self' = 'self'): string => `${pid}/oom_score_adj`;

/**
 * Sets the process's oom_score_adj when it differs. Throws SysctlError (EACCES: lowering it
 * needs CAP_SYS_RESOURCE). Returns whether it wrote.
 */
export async function applyOomScoreAdj(proc: Sysctl, value: number, pid: number | 'self' = 'self'): Promise<boolean> {
  return (await ensureSysctl(proc, oomScoreAdjKey(pid), String(value))).changed;
}
