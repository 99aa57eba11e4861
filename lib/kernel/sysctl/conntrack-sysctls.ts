// The conntrack settings kube-proxy makes at start (pkg/proxy/conntrack/sysctls.go, called
// from cmd/kube-proxy/app/server_linux.go platformSetup), with its rules:
// - nf_conntrack_max = maxPerCore x CPUs (capped at 1,048,576), or `min` when that is larger;
//   only when maxPerCore > 0, and only raised, never lowered;
// - then the nf_conntrack module's hashsize (/sys/module/nf_conntrack/parameters/hashsize)
//   raised to max/4 when it is smaller;
// - the TCP established / close-wait and UDP timeouts set when non-zero (seconds);
//   nf_conntrack_tcp_be_liberal=1 when tcpBeLiberal. A zero or false leaves the kernel's value.
// Every write is read-before-write (kube-proxy's setIntSysCtl writes only a differing value),
// so a second run (the main container after an --init-only init container) writes nothing.
import type { ConntrackSettings } from '../../model/conntrack';
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { Sysctl, SysctlError, ensureSysctl } from './sysctl';
import type { SysctlLog } from './ipvs-sysctls';

/** The conntrack sysctls kube-proxy sets, as keys under /proc/sys. */
export const CONNTRACK_SYSCTL = {
  MAX: 'net/netfilter/nf_conntrack_max',
  TCP_TIMEOUT_ESTABLISHED: 'net/netfilter/nf_conntrack_tcp_timeout_established',
  TCP_TIMEOUT_CLOSE_WAIT: 'net/netfilter/nf_conntrack_tcp_timeout_close_wait',
  TCP_BE_LIBERAL: 'net/netfilter/nf_conntrack_tcp_be_liberal',
  UDP_TIMEOUT: 'net/netfilter/nf_conntrack_udp_timeout',
  UDP_TIMEOUT_STREAM: 'net/netfilter/nf_conntrack_udp_timeout_stream',
} as const;

/** The module parameter, a key under /sys/module (a Sysctl rooted there). */
export const CONNTRACK_HASHSIZE = 'nf_conntrack/parameters/hashsize';

/** kube-proxy caps the scaled maximum (memory on many-core machines). */
export const CONNTRACK_MAX_LIMIT = 1_048_576;

/** kube-proxy's getConntrackMax: 0 means "leave nf_conntrack_max alone". */
export type { ConntrackSettings };

/** kube-proxy's getConntrackMax: maxPerCore x CPUs, at least min, at most the limit; 0: leave it. */
export function conntrackMax(s: Pick<ConntrackSettings, 'maxPerCore' | 'min'>, numCPU: number): number {
  if (s.maxPerCore <= 0) return 0;
  const scaled = s.maxPerCore * numCPU;
  if (scaled > CONNTRACK_MAX_LIMIT) return CONNTRACK_MAX_LIMIT;
  return scaled > s.min ? scaled : s.min;
}

/** The timeouts and switches to set, in kube-proxy's order (pure). */
export function planConntrackSysctls(s: ConntrackSettings): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  if (s.tcpEstablishedTimeoutSec > 0)
    out.push({ key: CONNTRACK_SYSCTL.TCP_TIMEOUT_ESTABLISHED, value: String(s.tcpEstablishedTimeoutSec) });
  if (s.tcpCloseWaitTimeoutSec > 0)
    out.push({ key: CONNTRACK_SYSCTL.TCP_TIMEOUT_CLOSE_WAIT, value: String(s.tcpCloseWaitTimeoutSec) });
  if (s.tcpBeLiberal) out.push({ key: CONNTRACK_SYSCTL.TCP_BE_LIBERAL, value: '1' });
  if (s.udpTimeoutSec > 0) out.push({ key: CONNTRACK_SYSCTL.UDP_TIMEOUT, value: String(s.udpTimeoutSec) });
  if (s.udpStreamTimeoutSec > 0)
    out.push({ key: CONNTRACK_SYSCTL.UDP_TIMEOUT_STREAM, value: String(s.udpStreamTimeoutSec) });
  return out;
}

/**
 * The node's online CPUs (/sys/devices/system/cpu/online, "0-3,6"), as kube-proxy counts them:
 * nf_conntrack_max is host-wide, so a process cpuset must not shrink it. Falls back to the
 * CPUs this process may use.
 */
export async function onlineCpus(path = '/sys/devices/system/cpu/online'): Promise<number> {
  try {
    const n = parseCpuList(await readFile(path, 'utf8'));
    if (n > 0) return n;
  } catch {
    // no sysfs: the process's own view below
  }
  return availableParallelism();
}

/** Count of a kernel cpu list ("0-3,6" -> 5); 0 when it does not parse. */
export function parseCpuList(text: string): number {
  let n = 0;
  for (const part of text.trim().split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part.trim());
    if (!m) return 0;
    const lo = Number(m[1]);
    const hi = m[2] === undefined ? lo : Number(m[2]);
    if (hi < lo) return 0;
    n += hi - lo + 1;
  }
  return n;
}

/** Where the conntrack settings are written: /proc/sys, /sys/module, and the CPU count. */
export interface ConntrackSysctlTargets {
  /** /proc/sys */
  readonly sysctl: Sysctl;
  /** /sys/module (the hashsize parameter) */
  readonly modules: Sysctl;
  readonly numCPU: number;
}

/** What applying the conntrack settings did: the keys written and the failures. */
export interface ConntrackSysctlResult {
  /** the keys written */
  readonly changed: readonly string[];
  /** the writes (or reads) that failed, in order; empty when everything applied */
  readonly failed: readonly SysctlError[];
}

/**
 * Applies the settings as kube-proxy does. kube-proxy stops at the first failure and exits;
 * this goes on with the others (a read-only nf_conntrack_max must not keep the timeouts from
 * being set) and returns every failure for the caller to judge.
 */
export async function ensureConntrackSysctls(
  t: ConntrackSysctlTargets,
  s: ConntrackSettings,
  log?: SysctlLog,
): Promise<ConntrackSysctlResult> {
  const changed: string[] = [];
  const failed: SysctlError[] = [];
  const attempt = async (f: () => Promise<void>): Promise<void> => {
    try {
      await f();
    } catch (e) {
      if (!(e instanceof SysctlError)) throw e;
      failed.push(e);
    }
  };
  const note = (key: string, previous: string, value: string): void => {
    changed.push(key);
    log?.info(`sysctl ${key}: ${previous} -> ${value}`, { sysctl: key, previous, value });
  };
  const max = conntrackMax(s, t.numCPU);
  if (max > 0) {
    await attempt(async () => {
      // raised only: a node whose operator set a larger limit keeps it
      const current = await t.sysctl.read(CONNTRACK_SYSCTL.MAX).then(Number, () => NaN);
      if (current >= max) return;
      await t.sysctl.write(CONNTRACK_SYSCTL.MAX, String(max));
      note(CONNTRACK_SYSCTL.MAX, Number.isNaN(current) ? '?' : String(current), String(max));
    });
    await attempt(async () => {
      const hashsize = Number(await t.modules.read(CONNTRACK_HASHSIZE));
      const want = Math.trunc(max / 4);
      if (hashsize >= want) return;
      await t.modules.write(CONNTRACK_HASHSIZE, String(want));
      note(CONNTRACK_HASHSIZE, String(hashsize), String(want));
    });
  }
  for (const { key, value } of planConntrackSysctls(s)) {
    await attempt(async () => {
      const r = await ensureSysctl(t.sysctl, key, value);
      if (r.changed) note(key, r.previous, value);
    });
  }
  return { changed, failed };
}
