// The effective configuration as a KubeProxyConfiguration document (--write-config-to).
// Keys sorted as kube-proxy's serializer writes them. Decoding the output gives the same
// ProxyConfig back, except for what v1alpha1 cannot say: `master` (a flag only) and a health
// or metrics server disabled by an empty flag (an empty field means "default").
import yaml from 'js-yaml';
import { API_VERSION, KIND } from './decode-config';
import { formatDurationMs } from './duration';
import { ProxyConfig } from './proxy-config';

/** Writes a ProxyConfig as a KubeProxyConfiguration YAML document (see the file comment). */
export function formatProxyConfig(c: ProxyConfig): string {
  const ipvs: Record<string, unknown> = {
    excludeCIDRs: [...c.ipvs.excludeCIDRs],
    minSyncPeriod: formatDurationMs(c.ipvs.minSyncPeriodMs),
    scheduler: c.ipvs.scheduler,
    strictARP: c.ipvs.strictARP,
    syncPeriod: formatDurationMs(c.ipvs.syncPeriodMs),
    tcpFinTimeout: formatDurationMs(c.ipvs.tcpFinTimeoutSec * 1000),
    tcpTimeout: formatDurationMs(c.ipvs.tcpTimeoutSec * 1000),
    udpTimeout: formatDurationMs(c.ipvs.udpTimeoutSec * 1000),
  };
  // the kube-ipvs extension only when used, so the document stays plain kube-proxy otherwise
  if (c.ipvs.excludeClusterCIDRs.length > 0) ipvs.excludeClusterCIDRs = [...c.ipvs.excludeClusterCIDRs];
  if (c.ipvs.schedulerFlags !== null) ipvs.schedulerFlags = [...c.ipvs.schedulerFlags];
  const doc = {
    apiVersion: API_VERSION,
    kind: KIND,
    bindAddress: c.bindAddress,
    clientConnection: {
      acceptContentTypes: '',
      burst: c.clientConnection.burst,
      contentType: c.clientConnection.contentType,
      kubeconfig: c.clientConnection.kubeconfig,
      qps: c.clientConnection.qps,
    },
    clusterCIDR: c.clusterCIDR.join(','),
    configSyncPeriod: formatDurationMs(c.configSyncPeriodMs),
    conntrack: {
      maxPerCore: c.conntrack.maxPerCore,
      min: c.conntrack.min,
      tcpBeLiberal: c.conntrack.tcpBeLiberal,
      tcpCloseWaitTimeout: formatDurationMs(c.conntrack.tcpCloseWaitTimeoutSec * 1000),
      tcpEstablishedTimeout: formatDurationMs(c.conntrack.tcpEstablishedTimeoutSec * 1000),
      udpStreamTimeout: formatDurationMs(c.conntrack.udpStreamTimeoutSec * 1000),
      udpTimeout: formatDurationMs(c.conntrack.udpTimeoutSec * 1000),
    },
    detectLocal: {
      bridgeInterface: c.detectLocal.bridgeInterface,
      interfaceNamePrefix: c.detectLocal.interfaceNamePrefix,
    },
    detectLocalMode: c.detectLocalMode,
    featureGates: { ...c.featureGates },
    healthzBindAddress: c.healthzBindAddress,
    hostnameOverride: c.hostnameOverride,
    iptables: { masqueradeAll: c.iptables.masqueradeAll, masqueradeBit: c.iptables.masqueradeBit },
    ipvs,
    logging: { format: c.logging.format, verbosity: c.logging.verbosity },
    metricsBindAddress: c.metricsBindAddress,
    mode: 'ipvs',
    nodePortAddresses: [...c.nodePortAddresses],
    oomScoreAdj: c.oomScoreAdj,
  };
  return yaml.dump(doc, { sortKeys: true, lineWidth: -1, noRefs: true, schema: yaml.CORE_SCHEMA });
}
