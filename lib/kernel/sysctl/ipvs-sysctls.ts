import { release } from 'node:os';
import { SYSCTL, Sysctl, ensureSysctl } from './sysctl';

/** A kernel release's version numbers. */
export interface KernelVersion {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
}

/** "6.1.0-56-amd64" -> {6, 1, 0}; "5.10" -> {5, 10, 0}; undefined when it does not start with N.N. */
export function parseKernelVersion(rel: string): KernelVersion | undefined {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(rel.trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0) };
}

const atLeast = (v: KernelVersion, major: number, minor: number): boolean =>
  v.major > major || (v.major === major && v.minor >= minor);

/** conn_reuse_mode=0 is set on 4.1 <= kernel < 5.9 (IPVSConnReuseModeMinSupportedKernelVersion, ...FixedKernelVersion). */
export const CONN_REUSE_MODE_MIN = { major: 4, minor: 1 } as const;
/** The first kernel where conn_reuse_mode needs no workaround (see CONN_REUSE_MODE_MIN). */
export const CONN_REUSE_MODE_FIXED = { major: 5, minor: 9 } as const;

/** One sysctl to set: key (under /proc/sys) and value. */
export interface SysctlSetting {
  readonly key: string;
  readonly value: string;
}

/** The IPVS sysctls to set, and warnings about those skipped. */
export interface IpvsSysctlPlan {
  readonly settings: readonly SysctlSetting[];
  /** why a setting kube-proxy would make is skipped (logged as a warning) */
  readonly warnings: readonly string[];
}

/** The sysctls the IPVS proxier needs, in kube-proxy's order (pure). */
export function planIpvsSysctls(opts: { kernel: KernelVersion | undefined; strictARP: boolean }): IpvsSysctlPlan {
  const settings: SysctlSetting[] = [{ key: SYSCTL.VS_CONNTRACK, value: '1' }];
  const warnings: string[] = [];
  const k = opts.kernel;
  if (k === undefined) {
    warnings.push(`kernel version unknown: ${SYSCTL.VS_CONN_REUSE_MODE} left as it is`);
  } else if (!atLeast(k, CONN_REUSE_MODE_MIN.major, CONN_REUSE_MODE_MIN.minor)) {
    warnings.push(
      `kernel ${k.major}.${k.minor} < 4.1 has no ${SYSCTL.VS_CONN_REUSE_MODE}; connection reuse may be slow`,
    );
  } else if (!atLeast(k, CONN_REUSE_MODE_FIXED.major, CONN_REUSE_MODE_FIXED.minor)) {
    settings.push({ key: SYSCTL.VS_CONN_REUSE_MODE, value: '0' });
  }
  settings.push(
    { key: SYSCTL.VS_EXPIRE_NODEST_CONN, value: '1' },
    { key: SYSCTL.VS_EXPIRE_QUIESCENT_TEMPLATE, value: '1' },
    { key: SYSCTL.IP_FORWARD, value: '1' },
  );
  if (opts.strictARP) {
    settings.push({ key: SYSCTL.ARP_IGNORE, value: '1' }, { key: SYSCTL.ARP_ANNOUNCE, value: '2' });
  }
  return { settings, warnings };
}

/** Where the sysctl writes are logged (a winston logger fits). */
export interface SysctlLog {
  info(msg: string, meta?: Record<string, unknown>): unknown;
  warn(msg: string, meta?: Record<string, unknown>): unknown;
}

/**
 * Applies planIpvsSysctls (read before write, write only what differs). Stops at the first
 * failure with its SysctlError (fatal for the proxier, as in kube-proxy). Returns the keys written.
 */
export async function ensureIpvsSysctls(
  s: Sysctl,
  opts: { strictARP: boolean; kernelRelease?: string },
  log?: SysctlLog,
): Promise<string[]> {
  const plan = planIpvsSysctls({
    kernel: parseKernelVersion(opts.kernelRelease ?? release()),
    strictARP: opts.strictARP,
  });
  for (const w of plan.warnings) log?.warn(w);
  const changed: string[] = [];
  for (const { key, value } of plan.settings) {
    const r = await ensureSysctl(s, key, value);
    if (r.changed) {
      changed.push(key);
      log?.info(`sysctl ${key}: ${r.previous} -> ${value}`, { sysctl: key, previous: r.previous, value });
    }
  }
  return changed;
}
