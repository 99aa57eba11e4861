// kube-proxy's verdict for every case of its validation tests that applies to Linux IPVS
// mode (pkg/proxy/apis/config/validation/validation_test.go: TestValidateKubeProxyConfiguration,
// ...IPTablesConfiguration, ...IPVSConfiguration, ...ConntrackConfiguration / LinuxConfiguration,
// TestValidateProxyMode (Linux), ...ClientConnectionConfiguration, TestValidateHostPort,
// ...NodePortAddress, ...ExcludeCIDRs), given as the v1alpha1 file kube-ipvs reads: accepted,
// or refused with a ConfigError naming the field.
//
// kube-proxy's tests validate its internal config, after v1alpha1 defaulting. Where the file
// can't say what a case says, the row says what the file does (`v1alpha1`): a zero syncPeriod
// is defaulted to 30s, and a bind address without a port gets the default port appended
// (proxyutil.AppendPortIfNeeded), so both are accepted by kube-proxy too.
import yaml from 'js-yaml';
import { ConfigError } from '../../lib/errors';
import { decodeProxyConfig, ConfigErrors } from '../../lib/config/decode-config';

/** TestValidateKubeProxyConfiguration's baseConfig, as a v1alpha1 document */
const base = (): Record<string, unknown> => ({
  apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
  kind: 'KubeProxyConfiguration',
  bindAddress: '192.168.59.103',
  healthzBindAddress: '0.0.0.0:10256',
  metricsBindAddress: '127.0.0.1:10249',
  clusterCIDR: '192.168.59.0/24',
  configSyncPeriod: '1s',
  iptables: { masqueradeAll: true, syncPeriod: '5s', minSyncPeriod: '2s' },
  conntrack: { maxPerCore: 1, min: 1, tcpEstablishedTimeout: '5s', tcpCloseWaitTimeout: '5s' },
  logging: { format: 'text' },
});

type Doc = Record<string, unknown>;
const sub = (d: Doc, k: string): Doc => (d[k] ??= {}) as Doc;

interface Case {
  /** kube-proxy's test and case name */
  readonly name: string;
  readonly mutate: (d: Doc) => void;
  /** 'accept', or the field named by the ConfigError */
  readonly verdict: string;
}

const ipvs = (d: Doc, o: Doc): void => {
  d.mode = 'ipvs';
  Object.assign(sub(d, 'ipvs'), o);
};
const iptables = (d: Doc, o: Doc): void => {
  d.mode = 'iptables';
  d.iptables = o;
};
const conntrack = (o: Doc) => (d: Doc) => {
  d.conntrack = {
    maxPerCore: 1,
    min: 1,
    tcpEstablishedTimeout: '5s',
    tcpCloseWaitTimeout: '5s',
    udpTimeout: '5s',
    udpStreamTimeout: '5s',
    ...o,
  };
};

const CASES: readonly Case[] = [
  // ---- TestValidateKubeProxyConfiguration ----
  { name: 'Configuration: basic config, unspecified Mode', mutate: () => {}, verdict: 'accept' },
  {
    name: 'Configuration: Mode specified, extra mode-specific configs',
    mutate: (d) => ipvs(d, { syncPeriod: '10s', minSyncPeriod: '5s' }),
    verdict: 'accept',
  },
  { name: 'Configuration: empty HealthzBindAddress', mutate: (d) => (d.healthzBindAddress = ''), verdict: 'accept' },
  {
    name: 'Configuration: empty NodeIPOverride (v1alpha1: bindAddress unset)',
    mutate: (d) => delete d.bindAddress,
    verdict: 'accept',
  },
  {
    name: 'Configuration: IPv6',
    mutate: (d) =>
      Object.assign(d, {
        bindAddress: 'fd00:192:168:59::103',
        healthzBindAddress: '',
        metricsBindAddress: '[::1]:10249',
        clusterCIDR: 'fd00:192:168:59::/64',
      }),
    verdict: 'accept',
  },
  {
    name: 'Configuration: alternate healthz port',
    mutate: (d) => (d.healthzBindAddress = '0.0.0.0:12345'),
    verdict: 'accept',
  },
  {
    name: 'Configuration: ClusterCIDR is wrong IP family',
    mutate: (d) => (d.clusterCIDR = 'fd00:192:168::/64'),
    verdict: 'accept',
  },
  {
    name: 'Configuration: ClusterCIDR is dual-stack',
    mutate: (d) => (d.clusterCIDR = '192.168.59.0/24,fd00:192:168::/64'),
    verdict: 'accept',
  },
  {
    name: 'Configuration: LocalModeInterfaceNamePrefix',
    mutate: (d) =>
      Object.assign(d, { detectLocalMode: 'InterfaceNamePrefix', detectLocal: { interfaceNamePrefix: 'vethabcde' } }),
    verdict: 'accept',
  },
  {
    name: 'Configuration: LocalModeBridgeInterface',
    mutate: (d) => Object.assign(d, { detectLocalMode: 'BridgeInterface', detectLocal: { bridgeInterface: 'avz' } }),
    verdict: 'accept',
  },
  {
    name: 'Configuration: invalid BindAddress',
    mutate: (d) => (d.bindAddress = '10.10.12.11:2000'),
    verdict: 'bindAddress',
  },
  {
    name: 'Configuration: invalid HealthzBindAddress (v1alpha1: the port is appended)',
    mutate: (d) => (d.healthzBindAddress = '0.0.0.0'),
    verdict: 'accept',
  },
  {
    name: 'Configuration: invalid MetricsBindAddress (v1alpha1: the port is appended)',
    mutate: (d) => (d.metricsBindAddress = '127.0.0.1'),
    verdict: 'accept',
  },
  {
    name: 'Configuration: ClusterCIDR missing subset range',
    mutate: (d) => (d.clusterCIDR = '192.168.59.0'),
    verdict: 'clusterCIDR',
  },
  {
    name: 'Configuration: Invalid number of ClusterCIDRs',
    mutate: (d) => (d.clusterCIDR = '192.168.59.0/24,fd00:192:168::/64,10.0.0.0/16'),
    verdict: 'clusterCIDR',
  },
  {
    name: 'Configuration: ConfigSyncPeriod must be > 0',
    mutate: (d) => (d.configSyncPeriod = '-1s'),
    verdict: 'configSyncPeriod',
  },
  {
    name: 'Configuration: IPVS mode selected without providing required SyncPeriod (v1alpha1: 0 is 30s)',
    mutate: (d) => ipvs(d, { syncPeriod: '0s' }),
    verdict: 'accept',
  },
  {
    name: 'Configuration: SyncPeriod must be > 0',
    mutate: (d) => ipvs(d, { syncPeriod: '-5s', minSyncPeriod: '2s' }),
    verdict: 'ipvs.syncPeriod',
  },
  {
    name: 'Configuration: MinSyncPeriod must be > 0',
    mutate: (d) => ipvs(d, { syncPeriod: '5s', minSyncPeriod: '-2s' }),
    verdict: 'ipvs.minSyncPeriod',
  },
  {
    name: 'Configuration: SyncPeriod must be >= MinSyncPeriod',
    mutate: (d) => ipvs(d, { syncPeriod: '1s', minSyncPeriod: '5s' }),
    verdict: 'ipvs.syncPeriod',
  },
  {
    name: 'Configuration: interfacePrefix is empty',
    mutate: (d) =>
      Object.assign(d, { detectLocalMode: 'InterfaceNamePrefix', detectLocal: { interfaceNamePrefix: '' } }),
    verdict: 'detectLocal.interfaceNamePrefix',
  },
  {
    name: 'Configuration: bridgeInterfaceName is empty',
    mutate: (d) =>
      Object.assign(d, { detectLocalMode: 'BridgeInterface', detectLocal: { interfaceNamePrefix: 'eth0' } }),
    verdict: 'detectLocal.bridgeInterface',
  },
  {
    name: 'Configuration: invalid DetectLocalMode',
    mutate: (d) => (d.detectLocalMode = 'Guess'),
    verdict: 'detectLocalMode',
  },
  {
    name: 'Configuration: invalid logging format',
    mutate: (d) => (d.logging = { format: 'unsupported format' }),
    verdict: 'logging.format',
  },

  // ---- TestValidateKubeProxyIPTablesConfiguration (kube-proxy checks the section of the mode it runs) ----
  {
    name: 'IPTables: valid iptables config',
    mutate: (d) => iptables(d, { masqueradeAll: true, syncPeriod: '5s', minSyncPeriod: '2s' }),
    verdict: 'accept',
  },
  {
    name: 'IPTables: valid custom MasqueradeBit',
    mutate: (d) => iptables(d, { masqueradeBit: 5, masqueradeAll: true, syncPeriod: '5s', minSyncPeriod: '2s' }),
    verdict: 'accept',
  },
  {
    name: 'IPTables: SyncPeriod must be > 0',
    mutate: (d) => iptables(d, { syncPeriod: '-5s', minSyncPeriod: '2s' }),
    verdict: 'iptables.syncPeriod',
  },
  {
    name: 'IPTables: MinSyncPeriod must be > 0',
    mutate: (d) => iptables(d, { masqueradeBit: 5, syncPeriod: '5s', minSyncPeriod: '-1s' }),
    verdict: 'iptables.minSyncPeriod',
  },
  {
    name: 'IPTables: MasqueradeBit cannot be < 0',
    mutate: (d) => iptables(d, { masqueradeBit: -10, syncPeriod: '5s', minSyncPeriod: '2s' }),
    verdict: 'iptables.masqueradeBit',
  },
  {
    name: 'IPTables: SyncPeriod must be >= MinSyncPeriod',
    mutate: (d) => iptables(d, { masqueradeBit: 5, syncPeriod: '1s', minSyncPeriod: '5s' }),
    verdict: 'iptables.syncPeriod',
  },

  // ---- TestValidateKubeProxyIPVSConfiguration (the masquerade bit is iptables.masqueradeBit in v1alpha1) ----
  {
    name: 'IPVS: SyncPeriod is not greater than 0',
    mutate: (d) => ipvs(d, { syncPeriod: '-5s', minSyncPeriod: '2s' }),
    verdict: 'ipvs.syncPeriod',
  },
  {
    name: 'IPVS: SyncPeriod cannot be 0 (v1alpha1: 0 is 30s, above minSyncPeriod 10s)',
    mutate: (d) => ipvs(d, { syncPeriod: '0s', minSyncPeriod: '10s' }),
    verdict: 'accept',
  },
  {
    name: 'IPVS: MinSyncPeriod cannot be less than 0',
    mutate: (d) => ipvs(d, { syncPeriod: '5s', minSyncPeriod: '-1s' }),
    verdict: 'ipvs.minSyncPeriod',
  },
  {
    name: 'IPVS: SyncPeriod must be greater than MinSyncPeriod',
    mutate: (d) => ipvs(d, { syncPeriod: '1s', minSyncPeriod: '5s' }),
    verdict: 'ipvs.syncPeriod',
  },
  {
    name: 'IPVS: SyncPeriod == MinSyncPeriod',
    mutate: (d) => ipvs(d, { syncPeriod: '10s', minSyncPeriod: '10s' }),
    verdict: 'accept',
  },
  {
    name: 'IPVS: SyncPeriod should be > MinSyncPeriod',
    mutate: (d) => ipvs(d, { syncPeriod: '10s', minSyncPeriod: '5s' }),
    verdict: 'accept',
  },
  {
    name: 'IPVS: MinSyncPeriod can be 0',
    mutate: (d) => ipvs(d, { syncPeriod: '5s', minSyncPeriod: '0s' }),
    verdict: 'accept',
  },
  {
    name: 'IPVS: IPVS Timeout can be 0',
    mutate: (d) => ipvs(d, { syncPeriod: '5s', tcpTimeout: '0s', tcpFinTimeout: '0s', udpTimeout: '0s' }),
    verdict: 'accept',
  },
  {
    name: 'IPVS: IPVS Timeout > 0',
    mutate: (d) => ipvs(d, { syncPeriod: '5s', tcpTimeout: '1s', tcpFinTimeout: '2s', udpTimeout: '3s' }),
    verdict: 'accept',
  },
  {
    name: 'IPVS: TCP,TCPFin,UDP Timeouts < 0',
    mutate: (d) => ipvs(d, { syncPeriod: '5s', tcpTimeout: '-1s', udpTimeout: '-1s', tcpFinTimeout: '-1s' }),
    verdict: 'ipvs.tcpTimeout',
  },
  {
    name: 'IPVS: TCPFin Timeout < 0',
    mutate: (d) => ipvs(d, { syncPeriod: '5s', tcpFinTimeout: '-1s' }),
    verdict: 'ipvs.tcpFinTimeout',
  },
  {
    name: 'IPVS: UDP Timeout < 0',
    mutate: (d) => ipvs(d, { syncPeriod: '5s', udpTimeout: '-1s' }),
    verdict: 'ipvs.udpTimeout',
  },
  {
    name: 'IPVS: MasqueradeBit cannot be < 0',
    mutate: (d) => (ipvs(d, {}), (d.iptables = { masqueradeBit: -1 })),
    verdict: 'iptables.masqueradeBit',
  },
  {
    name: 'IPVS: MasqueradeBit cannot be > 31',
    mutate: (d) => (ipvs(d, {}), (d.iptables = { masqueradeBit: 32 })),
    verdict: 'iptables.masqueradeBit',
  },

  // ---- TestValidateKubeProxyConntrackConfiguration / TestValidateKubeProxyLinuxConfiguration ----
  { name: 'Conntrack: valid 5 second timeouts', mutate: conntrack({}), verdict: 'accept' },
  {
    name: 'Conntrack: valid duration equal to 0 second timeout',
    mutate: conntrack({
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
      udpTimeout: '0s',
      udpStreamTimeout: '0s',
    }),
    verdict: 'accept',
  },
  { name: 'Conntrack: invalid MaxPerCore < 0', mutate: conntrack({ maxPerCore: -1 }), verdict: 'conntrack.maxPerCore' },
  { name: 'Conntrack: invalid minimum < 0', mutate: conntrack({ min: -1 }), verdict: 'conntrack.min' },
  {
    name: 'Conntrack: invalid TCPEstablishedTimeout < 0',
    mutate: conntrack({ tcpEstablishedTimeout: '-5s' }),
    verdict: 'conntrack.tcpEstablishedTimeout',
  },
  {
    name: 'Conntrack: invalid TCPCloseWaitTimeout < 0',
    mutate: conntrack({ tcpCloseWaitTimeout: '-5s' }),
    verdict: 'conntrack.tcpCloseWaitTimeout',
  },
  {
    name: 'Conntrack: invalid UDPTimeout < 0',
    mutate: conntrack({ udpTimeout: '-5s' }),
    verdict: 'conntrack.udpTimeout',
  },
  {
    name: 'Conntrack: invalid UDPStreamTimeout < 0',
    mutate: conntrack({ udpStreamTimeout: '-5s' }),
    verdict: 'conntrack.udpStreamTimeout',
  },
  { name: 'Linux: OOMScoreAdj 0', mutate: (d) => (d.oomScoreAdj = 0), verdict: 'accept' },
  {
    name: 'Linux: OOMScoreAdj -1000 (the bottom of the range)',
    mutate: (d) => (d.oomScoreAdj = -1000),
    verdict: 'accept',
  },
  { name: 'Linux: OOMScoreAdj 1000 (the top of the range)', mutate: (d) => (d.oomScoreAdj = 1000), verdict: 'accept' },
  { name: 'Linux: invalid OOMScoreAdj < -1000', mutate: (d) => (d.oomScoreAdj = -1001), verdict: 'oomScoreAdj' },
  { name: 'Linux: invalid OOMScoreAdj > 1000', mutate: (d) => (d.oomScoreAdj = 1001), verdict: 'oomScoreAdj' },

  // ---- testValidateProxyModeLinux ----
  { name: 'ProxyMode: blank mode should default', mutate: (d) => (d.mode = ''), verdict: 'accept' },
  { name: 'ProxyMode: iptables is allowed', mutate: (d) => (d.mode = 'iptables'), verdict: 'accept' },
  { name: 'ProxyMode: ipvs is allowed', mutate: (d) => (d.mode = 'ipvs'), verdict: 'accept' },
  { name: 'ProxyMode: nftables is allowed', mutate: (d) => (d.mode = 'nftables'), verdict: 'accept' },
  { name: 'ProxyMode: winkernel is not allowed', mutate: (d) => (d.mode = 'kernelspace'), verdict: 'mode' },
  { name: 'ProxyMode: invalid mode non-existent', mutate: (d) => (d.mode = 'non-existing'), verdict: 'mode' },

  // ---- TestValidateClientConnectionConfiguration ----
  {
    name: 'ClientConnection: successful 0 value',
    mutate: (d) => (d.clientConnection = { burst: 0 }),
    verdict: 'accept',
  },
  {
    name: 'ClientConnection: successful 5 value',
    mutate: (d) => (d.clientConnection = { burst: 5 }),
    verdict: 'accept',
  },
  {
    name: 'ClientConnection: burst < 0',
    mutate: (d) => (d.clientConnection = { burst: -5 }),
    verdict: 'clientConnection.burst',
  },

  // ---- TestValidateHostPort (as healthzBindAddress) ----
  ...(
    [
      ['all IPs', '0.0.0.0:10256', 'accept'],
      ['localhost', '127.0.0.1:10256', 'accept'],
      ['specific IP', '10.10.10.10:10256', 'accept'],
      ['missing port (v1alpha1: the port is appended)', '10.10.10.10', 'accept'],
      ['digits outside of 1-255', '123.456.789.10:12345', 'healthzBindAddress'],
      ['invalid named-port', '10.10.10.10:foo', 'healthzBindAddress'],
      ['port cannot be 0', '10.10.10.10:0', 'healthzBindAddress'],
      ['port is greater than allowed range', '10.10.10.10:65536', 'healthzBindAddress'],
    ] as const
  ).map(([name, value, verdict]): Case => ({
    name: `HostPort: ${name}`,
    mutate: (d) => (d.healthzBindAddress = value),
    verdict,
  })),

  // ---- TestValidateKubeProxyNodePortAddress ----
  ...(
    [
      ['no addresses', [], 'accept'],
      ['valid 1', ['127.0.0.0/8'], 'accept'],
      ['valid 2', ['0.0.0.0/0'], 'accept'],
      ['valid 3', ['::/0'], 'accept'],
      ['valid 4', ['127.0.0.1/32', '1.2.3.0/24'], 'accept'],
      ['valid 5', ['127.0.0.1/32'], 'accept'],
      ['valid 6', ['::1/128'], 'accept'],
      ['valid 7', ['1.2.3.4/32'], 'accept'],
      ['valid 8', ['10.20.30.0/24'], 'accept'],
      ['valid 9', ['10.20.0.0/16', '100.200.0.0/16'], 'accept'],
      ['valid 10', ['10.0.0.0/8'], 'accept'],
      ['valid 11', ['2001:db8::/32'], 'accept'],
      ['primary', ['primary'], 'accept'],
      ['invalid foo address', ['foo'], '[0]'],
      ['invalid octet address', ['10.0.0.0/0', '1.2.3'], '[1]'],
      ['address cannot be 0', ['127.0.0.1/32', '0', '1.2.3.0/24'], '[1]'],
      ['address missing subnet range', ['127.0.0.1/32', '10.20.30.40', '1.2.3.0/24'], '[1]'],
      ['missing ipv6 subnet ranges', ['::0', '::1', '2001:db8::/32'], '[0]'],
      ['invalid ipv6 ip format', ['::1/128', '2001:db8::/32', '2001:db8:xyz/64'], '[2]'],
      ['invalid primary/CIDR mix 1', ['primary', '127.0.0.1/32'], '[0]'],
      ['invalid primary/CIDR mix 2', ['127.0.0.1/32', 'primary'], '[1]'],
    ] as const
  ).map(([name, list, verdict]): Case => ({
    name: `NodePortAddress: ${name}`,
    mutate: (d) => (d.nodePortAddresses = [...list]),
    verdict: verdict === 'accept' ? verdict : `nodePortAddresses${verdict}`,
  })),

  // ---- TestValidateKubeProxyExcludeCIDRs ----
  ...(
    [
      ['no cidrs', [], 'accept'],
      ['valid 1', ['127.0.0.0/8'], 'accept'],
      ['valid 2', ['0.0.0.0/0'], 'accept'],
      ['valid 3', ['::/0'], 'accept'],
      ['valid 4', ['127.0.0.1/32', '1.2.3.0/24'], 'accept'],
      ['valid 5', ['127.0.0.1/32'], 'accept'],
      ['valid 6', ['::1/128'], 'accept'],
      ['valid 7', ['1.2.3.4/32'], 'accept'],
      ['valid 8', ['10.20.30.0/24'], 'accept'],
      ['valid 9', ['10.20.0.0/16', '100.200.0.0/16'], 'accept'],
      ['valid 10', ['10.0.0.0/8'], 'accept'],
      ['valid 11', ['2001:db8::/32'], 'accept'],
      ['invalid foo address', ['foo'], '[0]'],
      ['invalid octet address', ['10.0.0.0/0', '1.2.3'], '[1]'],
      ['address cannot be 0', ['127.0.0.1/32', '0', '1.2.3.0/24'], '[1]'],
      ['address missing subnet range', ['127.0.0.1/32', '10.20.30.40', '1.2.3.0/24'], '[1]'],
      ['missing ipv6 subnet ranges', ['::0', '::1', '2001:db8::/32'], '[0]'],
      ['invalid ipv6 ip format', ['::1/128', '2001:db8::/32', '2001:db8:xyz/64'], '[2]'],
    ] as const
  ).map(([name, list, verdict]): Case => ({
    name: `ExcludeCIDRs: ${name}`,
    mutate: (d) => ipvs(d, { excludeCIDRs: [...list] }),
    verdict: verdict === 'accept' ? verdict : `ipvs.excludeCIDRs${verdict}`,
  })),

  // ---- the other fields kube-proxy's Validate checks ----
  { name: 'PortRange: empty', mutate: (d) => (d.portRange = ''), verdict: 'accept' },
  { name: 'PortRange: 300-2000', mutate: (d) => (d.portRange = '300-2000'), verdict: 'accept' },
  { name: 'PortRange: 300+1700', mutate: (d) => (d.portRange = '300+1700'), verdict: 'accept' },
  { name: 'PortRange: not a range', mutate: (d) => (d.portRange = '2000-300'), verdict: 'portRange' },
  {
    name: 'ShowHiddenMetricsForVersion: 1.33',
    mutate: (d) => (d.showHiddenMetricsForVersion = '1.33'),
    verdict: 'accept',
  },
  {
    name: 'ShowHiddenMetricsForVersion: not a version',
    mutate: (d) => (d.showHiddenMetricsForVersion = 'latest'),
    verdict: 'showHiddenMetricsForVersion',
  },
  { name: 'Logging: json', mutate: (d) => (d.logging = { format: 'json', verbosity: 4 }), verdict: 'accept' },
  {
    name: 'Logging: vmodule (warned, no effect)',
    mutate: (d) => (d.logging = { format: 'text', vmodule: [{ filePattern: 'proxier', verbosity: 4 }] }),
    verdict: 'accept',
  },
  { name: 'Logging: negative verbosity', mutate: (d) => (d.logging = { verbosity: -1 }), verdict: 'logging.verbosity' },
  {
    name: 'NFTables: MasqueradeBit > 31 in nftables mode',
    mutate: (d) => Object.assign(d, { mode: 'nftables', nftables: { masqueradeBit: 32 } }),
    verdict: 'nftables.masqueradeBit',
  },
];

function verdictOf(doc: Doc): string {
  try {
    decodeProxyConfig(yaml.dump(doc));
    return 'accept';
  } catch (e) {
    // several errors are reported together (issue 25 item 10): the verdict is the first one's field
    if (e instanceof ConfigErrors) return e.errors[0]!.field;
    if (e instanceof ConfigError) return e.field;
    throw e;
  }
}

describe("kube-proxy's validation verdicts on the v1alpha1 file", () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', (_name, c) => {
    const doc = base();
    c.mutate(doc);
    expect(verdictOf(doc)).toBe(c.verdict);
  });

  it('the table has every case once', () => {
    expect(new Set(CASES.map((c) => c.name)).size).toBe(CASES.length);
  });
});

describe('conntrack, oomScoreAdj and logging defaults (v1alpha1 pointers: null is the default, 0 is 0)', () => {
  const doc = (extra: string): string =>
    `apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n${extra}`;

  it("kubeadm's nulls take kube-proxy's defaults", () => {
    const { config } = decodeProxyConfig(
      doc(
        'conntrack:\n  maxPerCore: null\n  min: null\n  tcpCloseWaitTimeout: null\n  tcpEstablishedTimeout: null\n  udpTimeout: 0s\n  udpStreamTimeout: 0s\noomScoreAdj: null\nlogging:\n  flushFrequency: 0\n  verbosity: 0\n',
      ),
    );
    expect(config.conntrack).toEqual({
      maxPerCore: 32768,
      min: 131072,
      tcpEstablishedTimeoutSec: 86400,
      tcpCloseWaitTimeoutSec: 3600,
      tcpBeLiberal: false,
      udpTimeoutSec: 0,
      udpStreamTimeoutSec: 0,
    });
    expect(config.oomScoreAdj).toBe(-999);
    expect(config.logging).toEqual({ format: 'text', verbosity: 0 });
  });

  it('explicit zeros stay zero (leave the kernel value); durations truncate to whole seconds', () => {
    const { config } = decodeProxyConfig(
      doc(
        'conntrack:\n  maxPerCore: 0\n  min: 0\n  tcpEstablishedTimeout: 0s\n  tcpCloseWaitTimeout: 1500ms\n  tcpBeLiberal: true\n  udpTimeout: 1m\n  udpStreamTimeout: 2m30s\noomScoreAdj: 0\n',
      ),
    );
    expect(config.conntrack).toEqual({
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeoutSec: 0,
      tcpCloseWaitTimeoutSec: 1,
      tcpBeLiberal: true,
      udpTimeoutSec: 60,
      udpStreamTimeoutSec: 150,
    });
    expect(config.oomScoreAdj).toBe(0);
  });

  it("refusals carry kube-proxy's wording", () => {
    const message = (extra: string): string => {
      try {
        decodeProxyConfig(doc(extra));
      } catch (e) {
        return (e as Error).message;
      }
      return 'accepted';
    };
    expect(message('mode: kernelspace\n')).toMatch(
      /^mode: "kernelspace": must be iptables, ipvs, nftables or blank \(blank means the best-available proxy \[currently iptables\]\)/,
    );
    expect(message('oomScoreAdj: 1001\n')).toMatch(/^oomScoreAdj: 1001: must be within the range \[-1000, 1000\]/);
    expect(message('conntrack:\n  min: -1\n')).toMatch(/^conntrack.min: -1: must be greater than or equal to 0/);
    expect(message('logging:\n  format: xml\n')).toMatch(/Unsupported log format/);
  });
});
