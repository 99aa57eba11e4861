import { classifyConfigChange } from '../../lib/config/classify-change';
import { defaultProxyConfig } from '../../lib/config/decode-config';
import { ProxyConfig } from '../../lib/config/proxy-config';

const base = defaultProxyConfig();
const withIpvs = (p: Partial<ProxyConfig['ipvs']>): ProxyConfig => ({ ...base, ipvs: { ...base.ipvs, ...p } });

describe('classifyConfigChange', () => {
  it.each<{ name: string; next: ProxyConfig; live?: string[]; restart?: string[] }>([
    { name: 'nothing changed', next: defaultProxyConfig() },
    { name: 'scheduler', next: withIpvs({ scheduler: 'lc' }), live: ['ipvs.scheduler'] },
    {
      name: 'sync periods',
      next: withIpvs({ syncPeriodMs: 1, minSyncPeriodMs: 1 }),
      live: ['ipvs.minSyncPeriodMs', 'ipvs.syncPeriodMs'],
    },
    { name: 'excludeCIDRs', next: withIpvs({ excludeCIDRs: ['10.0.0.0/8'] }), live: ['ipvs.excludeCIDRs'] },
    {
      name: 'schedulerFlags (kube-ipvs extension)',
      next: withIpvs({ schedulerFlags: ['mh-fallback', 'mh-port'] }),
      live: ['ipvs.schedulerFlags'],
    },
    {
      name: 'excludeClusterCIDRs',
      next: withIpvs({ excludeClusterCIDRs: ['10.0.0.0/8'] }),
      live: ['ipvs.excludeClusterCIDRs'],
    },
    {
      name: 'timeouts and strictARP',
      next: withIpvs({ tcpTimeoutSec: 1, tcpFinTimeoutSec: 2, udpTimeoutSec: 3, strictARP: true }),
      live: ['ipvs.strictARP', 'ipvs.tcpFinTimeoutSec', 'ipvs.tcpTimeoutSec', 'ipvs.udpTimeoutSec'],
    },
    {
      name: 'masqueradeAll is live, masqueradeBit is not',
      next: { ...base, iptables: { masqueradeAll: true, masqueradeBit: 13 } },
      live: ['iptables.masqueradeAll'],
      restart: ['iptables.masqueradeBit'],
    },
    { name: 'clusterCIDR', next: { ...base, clusterCIDR: ['10.244.0.0/16'] }, live: ['clusterCIDR'] },
    {
      name: 'local detection',
      next: {
        ...base,
        detectLocalMode: 'BridgeInterface',
        detectLocal: { bridgeInterface: 'cbr0', interfaceNamePrefix: '' },
      },
      live: ['detectLocal.bridgeInterface', 'detectLocalMode'],
    },
    { name: 'nodePortAddresses', next: { ...base, nodePortAddresses: ['primary'] }, live: ['nodePortAddresses'] },
    {
      name: 'node settings and logging (re-applied in place)',
      next: {
        ...base,
        oomScoreAdj: 0,
        conntrack: { ...base.conntrack, maxPerCore: 0, udpTimeoutSec: 5 },
        logging: { format: 'json', verbosity: 2 },
      },
      live: ['conntrack.maxPerCore', 'conntrack.udpTimeoutSec', 'logging.format', 'logging.verbosity', 'oomScoreAdj'],
    },
    {
      name: 'client connection and master',
      next: { ...base, master: 'https://x', clientConnection: { ...base.clientConnection, qps: 1, kubeconfig: '/k' } },
      restart: ['clientConnection.kubeconfig', 'clientConnection.qps', 'master'],
    },
    {
      name: 'identity and servers',
      next: {
        ...base,
        hostnameOverride: 'n',
        bindAddress: '10.0.0.1',
        healthzBindAddress: '',
        metricsBindAddress: '0.0.0.0:1',
      },
      restart: ['bindAddress', 'healthzBindAddress', 'hostnameOverride', 'metricsBindAddress'],
    },
    { name: 'feature gates by name', next: { ...base, featureGates: { A: true } }, restart: ['featureGates.A'] },
    {
      name: 'configSyncPeriod and mode',
      next: { ...base, configSyncPeriodMs: 1, mode: 'iptables' },
      restart: ['configSyncPeriodMs', 'mode'],
    },
    {
      name: 'mixed',
      next: { ...withIpvs({ scheduler: 'sh' }), master: 'https://y' },
      live: ['ipvs.scheduler'],
      restart: ['master'],
    },
  ])('$name', ({ next, live, restart }) => {
    expect(classifyConfigChange(base, next)).toEqual({ live: live ?? [], restart: restart ?? [] });
  });

  it('a feature gate removed or flipped is a restart, both directions', () => {
    const a = { ...base, featureGates: { A: true, B: true } };
    const b = { ...base, featureGates: { A: false } };
    expect(classifyConfigChange(a, b)).toEqual({ live: [], restart: ['featureGates.A', 'featureGates.B'] });
    expect(classifyConfigChange(b, a)).toEqual({ live: [], restart: ['featureGates.A', 'featureGates.B'] });
  });

  it('list order counts as a change', () => {
    const a = withIpvs({ excludeCIDRs: ['10.0.0.0/8', '10.1.0.0/16'] });
    const b = withIpvs({ excludeCIDRs: ['10.1.0.0/16', '10.0.0.0/8'] });
    expect(classifyConfigChange(a, b).live).toEqual(['ipvs.excludeCIDRs']);
  });
});
