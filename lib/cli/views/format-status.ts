/**
 * `kube-ipvs status [--verbose]` as text, in the shape of cilium status --verbose's
 * "KubeProxyReplacement Details": one "Key:  value" line per fact. Pure; `now` (ms since the
 * epoch) is only for "2m ago".
 */
import { StatusResponse, SyncSummary } from '../../model/views';

const KEY_WIDTH = 24;

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "45s", "3m", "2h", "4d" (rounded down), "just now" under a second. */
export function formatAge(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 1) return 'just now';
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.floor(s / 60)}m ago`;
  if (s < 172800) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

function sync(s: SyncSummary | null, now: number): string {
  if (!s) return 'never';
  const failed = s.ipvsFailures > 0 ? `, ${s.ipvsFailures} refused` : '';
  return `${s.at}, ${formatAge(now - Date.parse(s.at))} (took ${s.durationMs} ms, ${plural(s.ipvsWrites, 'IPVS write')}${failed}, ${plural(s.execs, 'exec')})`;
}

const enabled = (on: boolean, detail = '') => (on ? `Enabled${detail ? ` (${detail})` : ''}` : 'Disabled');
const list = (xs: readonly (string | number)[]) => (xs.length > 0 ? xs.join(', ') : 'none');

/** Writes "Key: value" lines (`kv`) and lines as they are (`line`). */
interface Lines {
  kv(key: string, value: string, indent?: string): void;
  line(text: string): void;
}

/** Formats `kube-ipvs status [--verbose]` as "Key: value" lines. */
export function formatStatus(s: StatusResponse, opts: { verbose: boolean; now: number }): string {
  const lines: string[] = [];
  const out: Lines = {
    kv: (key, value, indent = '') => lines.push(`${`${indent}${key}:`.padEnd(KEY_WIDTH)}${value}`),
    line: (text) => lines.push(text),
  };
  const { kv } = out;
  const { verbose } = opts;
  const c = s.counts;
  kv('Mode', s.mode);
  kv('Node', `${s.node.name} (${list(s.node.ips)})`);
  if (verbose) {
    kv('Zone', s.node.zone || 'none');
    kv('Pod CIDRs', list(s.node.podCIDRs));
    kv('IP families', s.families.join(', '));
  }
  devices(s.devices, verbose, out);
  features(s, verbose, out);
  kv('Synced', s.initialized ? 'yes' : 'no (waiting for the Services and EndpointSlices lists)');
  kv('Last full sync', sync(s.lastFullSync, opts.now));
  kv('Last partial sync', sync(s.lastPartialSync, opts.now));
  kv('Drift repairs', String(s.driftRepairs));
  const refused = s.refusedFrontends ?? [];
  kv('Refused frontends', refused.length === 0 ? 'none' : `${refused.length} (not programmed)`);
  for (const f of refused)
    lines.push(`  ${f.service} ${f.field} ${f.value}: ${f.reason}${verbose ? `: ${f.message}` : ''}`);
  kv(
    'Counts',
    `${plural(c.services, 'Service')}, ${plural(c.servicePorts, 'service port')}, ${plural(c.virtualServers, 'virtual server')}, ` +
      `${plural(c.realServers, 'real server')} (${c.draining} draining), ${plural(c.boundAddresses, 'address', 'addresses')} on kube-ipvs0`,
  );
  if (verbose) {
    const t = s.totals;
    kv(
      'Totals',
      `${plural(t.syncs, 'sync')} (${t.fullSyncs} full), ${plural(t.ipvsWrites, 'IPVS write')} (${t.ipvsFailures} refused), ${plural(t.execs, 'exec')}`,
    );
    configuration(s.config, out);
  }
  return lines.join('\n') + '\n';
}

/** kube-ipvs0 and the NodePort links: one line each when verbose, else one line for all. */
function devices(devs: StatusResponse['devices'], verbose: boolean, { kv, line }: Lines): void {
  if (verbose) {
    kv('Devices', '');
    for (const d of devs) line(`  ${d.name} (${d.role}): ${list(d.addresses)}`);
    return;
  }
  kv(
    'Devices',
    devs
      .map((d) =>
        d.role === 'kube-ipvs0'
          ? `${d.name} (${plural(d.addresses.length, 'address', 'addresses')})`
          : `${d.name} ${d.addresses.join(' ')} (NodePort)`,
      )
      .join(', '),
  );
}

/** What the proxy does: the scheduler, session affinity, graceful termination, the Service types. */
function features(s: StatusResponse, verbose: boolean, { kv, line }: Lines): void {
  const overrides =
    s.scheduler.overriddenBy > 0
      ? ` (${plural(s.scheduler.overriddenBy, 'Service')} override${s.scheduler.overriddenBy === 1 ? 's' : ''} it)`
      : '';
  kv('Scheduler', `${s.scheduler.default}${overrides}`);
  kv(
    'Session Affinity',
    enabled(
      s.sessionAffinity.enabled,
      `ClientIP as IPVS persistence, ${plural(s.sessionAffinity.frontends, 'frontend')}`,
    ),
  );
  const g = s.gracefulTermination;
  const gDetail = verbose
    ? `${g.protocols.join(', ')}; drained at 0 connections, checked every ${g.checkIntervalSeconds}s, at most ${g.drainTimeoutSeconds}s; ${plural(g.draining, 'real server')} draining`
    : `${g.protocols.join(', ')}; ${plural(g.draining, 'real server')} draining`;
  kv('Graceful Termination', enabled(g.enabled, gDetail));
  line('Services:');
  kv('ClusterIP', enabled(s.services.clusterIP), '- ');
  const np = s.services.nodePort;
  kv(
    'NodePort',
    enabled(
      np.enabled,
      `on ${list(np.addresses)}; ports in use: ${list(np.portsInUse)}; range: the API server's --service-node-port-range`,
    ),
    '- ',
  );
  kv('LoadBalancer', enabled(s.services.loadBalancer), '- ');
  kv('externalIPs', enabled(s.services.externalIPs), '- ');
}

/** The configuration in effect (verbose). */
function configuration(k: StatusResponse['config'], { kv, line }: Lines): void {
  line('Configuration:');
  kv('syncPeriod', `${k.syncPeriod} (min ${k.minSyncPeriod})`, '- ');
  kv('clusterCIDR', list(k.clusterCIDRs), '- ');
  kv('detectLocalMode', k.detectLocalMode, '- ');
  kv('nodePortAddresses', list(k.nodePortAddresses), '- ');
  kv('excludeCIDRs', list(k.excludeCIDRs), '- ');
  kv('excludeClusterCIDRs', list(k.excludeClusterCIDRs), '- ');
  kv('masquerade', `bit ${k.masqueradeBit}${k.masqueradeAll ? ', all traffic' : ''}`, '- ');
  kv('strictARP', String(k.strictARP), '- ');
  kv(
    'IPVS timeouts',
    `tcp ${k.ipvsTimeouts.tcp}s, tcpfin ${k.ipvsTimeouts.tcpFin}s, udp ${k.ipvsTimeouts.udp}s (0: kernel default)`,
    '- ',
  );
  kv('healthz', k.healthzBindAddress || 'off', '- ');
  kv('metrics', k.metricsBindAddress || 'off', '- ');
}
