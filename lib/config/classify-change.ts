// Which changes of the configuration a running proxy can apply live (on its next full sync)
// and which need a restart of the process.
import { ProxyConfig } from './proxy-config';

/** ProxyConfig paths (exact, or a prefix followed by '.') a running proxy applies live. */
export const LIVE_FIELDS: readonly string[] = [
  'ipvs.scheduler',
  'ipvs.syncPeriodMs',
  'ipvs.minSyncPeriodMs',
  'ipvs.excludeCIDRs',
  'ipvs.excludeClusterCIDRs',
  'ipvs.schedulerFlags',
  'ipvs.strictARP',
  'ipvs.tcpTimeoutSec',
  'ipvs.tcpFinTimeoutSec',
  'ipvs.udpTimeoutSec',
  'iptables.masqueradeAll',
  'clusterCIDR',
  'detectLocalMode',
  'detectLocal',
  'nodePortAddresses',
  // node settings kube-proxy applies at start: re-applied in place (kube-proxy would exit and
  // apply them when restarted; the result is the same and the Services are never unprogrammed)
  'conntrack',
  'oomScoreAdj',
  'logging',
];

/** The changed fields between two configurations: those applied live and those needing a restart. */
export interface ConfigChange {
  /** changed paths the running proxy can apply (sorted) */
  readonly live: readonly string[];
  /**
   * changed paths that need a restart (sorted): clientConnection.*, master, hostnameOverride,
   * bindAddress, healthz/metrics bind addresses, iptables.masqueradeBit, configSyncPeriodMs,
   * featureGates.<gate>, mode — and any field not listed in LIVE_FIELDS.
   */
  readonly restart: readonly string[];
}

function flatten(value: unknown, path: string, out: Map<string, string>): void {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    for (const [k, v] of Object.entries(value)) flatten(v, path ? `${path}.${k}` : k, out);
    if (Object.keys(value).length === 0 && path) out.set(path, '{}');
  } else {
    out.set(path, JSON.stringify(value));
  }
}

const isLive = (path: string): boolean => LIVE_FIELDS.some((f) => path === f || path.startsWith(`${f}.`));

/**
 * The ProxyConfig paths (`ipvs.scheduler`, `featureGates.SomeGate`, `clientConnection.qps`)
 * whose values differ between `old` and `next`, split into live and restart. Lists compare as
 * a whole (order matters: they are canonical and in the user's order).
 */
export function classifyConfigChange(old: ProxyConfig, next: ProxyConfig): ConfigChange {
  const a = new Map<string, string>();
  const b = new Map<string, string>();
  flatten(old, '', a);
  flatten(next, '', b);
  const changed = new Set<string>();
  for (const [k, v] of a) if (b.get(k) !== v) changed.add(k);
  for (const k of b.keys()) if (!a.has(k)) changed.add(k);
  // a map going from {} to {x: true} shows up as both 'featureGates' and 'featureGates.x'
  for (const k of [...changed]) if ([...changed].some((o) => o.startsWith(`${k}.`))) changed.delete(k);
  const sorted = [...changed].sort();
  return { live: sorted.filter(isLive), restart: sorted.filter((p) => !isLive(p)) };
}
