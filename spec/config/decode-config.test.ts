import { ConfigError } from '../../lib/errors';
import { ConfigErrors, decodeProxyConfig, defaultProxyConfig } from '../../lib/config/decode-config';
import { ProxyConfig } from '../../lib/config/proxy-config';

const HEADER = 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n';

/**
 * config.conf of kubeadm's kube-proxy ConfigMap (kubeadm writes every field, zero values
 * included), edited by hand for IPVS with the typo `trictARP` seen in real clusters.
 */
const KUBEADM_CONFIG_CONF = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
bindAddress: 0.0.0.0
bindAddressHardFail: false
clientConnection:
  acceptContentTypes: ""
  burst: 0
  contentType: ""
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 0
clusterCIDR: 10.244.0.0/16
configSyncPeriod: 0s
conntrack:
  maxPerCore: null
  min: null
  tcpBeLiberal: false
  tcpCloseWaitTimeout: null
  tcpEstablishedTimeout: null
  udpStreamTimeout: 0s
  udpTimeout: 0s
detectLocal:
  bridgeInterface: ""
  interfaceNamePrefix: ""
detectLocalMode: ""
enableProfiling: false
healthzBindAddress: ""
hostnameOverride: ""
iptables:
  localhostNodePorts: null
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
ipvs:
  excludeCIDRs: null
  minSyncPeriod: 0s
  scheduler: "wrr"
  trictARP: true
  syncPeriod: 0s
  tcpFinTimeout: 0s
  tcpTimeout: 0s
  udpTimeout: 0s
kind: KubeProxyConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
metricsBindAddress: ""
mode: "ipvs"
nftables:
  masqueradeAll: false
  masqueradeBit: null
  minSyncPeriod: 0s
  syncPeriod: 0s
nodePortAddresses: null
oomScoreAdj: null
portRange: ""
showHiddenMetricsForVersion: ""
winkernel:
  enableDSR: false
  forwardHealthCheckVip: false
  networkName: ""
  rootHnsEndpointName: ""
  sourceVip: ""
`;

type DeepPartial<T> = {
  [K in keyof T]?: T[K] extends readonly unknown[] ? T[K] : T[K] extends object ? DeepPartial<T[K]> : T[K];
};

function withDefaults(p: DeepPartial<ProxyConfig>): ProxyConfig {
  const d = defaultProxyConfig() as unknown as Record<string, unknown>;
  const merge = (a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> => {
    const out = { ...a };
    for (const [k, v] of Object.entries(b)) {
      out[k] =
        v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 0
          ? merge(a[k] as Record<string, unknown>, v as Record<string, unknown>)
          : v;
    }
    return out;
  };
  return merge(d, p as Record<string, unknown>) as unknown as ProxyConfig;
}

function configError(text: string, source?: string): ConfigError {
  try {
    decodeProxyConfig(text, source);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('decoded without a ConfigError');
}

describe('decodeProxyConfig: a real kubeadm config.conf', () => {
  it('warns about ipvs.trictARP, decodes the rest, and zero values take the defaults', () => {
    const { config, warnings } = decodeProxyConfig(KUBEADM_CONFIG_CONF);
    expect(warnings).toEqual([
      {
        field: 'ipvs.trictARP',
        message: expect.stringContaining('unknown field "ipvs.trictARP"'),
        unknownField: true,
      },
    ]);
    expect(config).toEqual(
      withDefaults({
        clientConnection: { kubeconfig: '/var/lib/kube-proxy/kubeconfig.conf' },
        clusterCIDR: ['10.244.0.0/16'],
        ipvs: { scheduler: 'wrr' },
      }),
    );
    expect(config.ipvs.strictARP).toBe(false);
    expect(config).toMatchObject({
      healthzBindAddress: '0.0.0.0:10256',
      metricsBindAddress: '127.0.0.1:10249',
      clientConnection: { qps: 5, burst: 10, contentType: 'application/vnd.kubernetes.protobuf' },
      ipvs: { syncPeriodMs: 30_000, minSyncPeriodMs: 0 },
      iptables: { masqueradeBit: 14 },
      configSyncPeriodMs: 900_000,
      detectLocalMode: 'ClusterCIDR',
    });
  });

  it('the same document as JSON decodes the same', () => {
    const yamlDoc = decodeProxyConfig(KUBEADM_CONFIG_CONF);
    const json = JSON.stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig: '/var/lib/kube-proxy/kubeconfig.conf', qps: 0 },
      clusterCIDR: '10.244.0.0/16',
      ipvs: { scheduler: 'wrr', trictARP: true, syncPeriod: '0s' },
      mode: 'ipvs',
    });
    expect(decodeProxyConfig(json)).toEqual(yamlDoc);
  });
});

describe('decodeProxyConfig: good configurations', () => {
  it.each<{ name: string; yaml: string; want: DeepPartial<ProxyConfig>; warn?: string[] }>([
    { name: 'only apiVersion and kind: every default', yaml: '', want: {} },
    {
      name: 'ipvs block',
      yaml: `ipvs:\n  scheduler: lc\n  syncPeriod: 1m30s\n  minSyncPeriod: 500ms\n  strictARP: true\n  tcpTimeout: 900s\n  tcpFinTimeout: 2m\n  udpTimeout: 1.5s\n  excludeCIDRs: [10.0.0.3/8, "fd00::1/64"]\n`,
      want: {
        ipvs: {
          scheduler: 'lc',
          syncPeriodMs: 90_000,
          minSyncPeriodMs: 500,
          strictARP: true,
          tcpTimeoutSec: 900,
          tcpFinTimeoutSec: 120,
          udpTimeoutSec: 1,
          excludeCIDRs: ['10.0.0.0/8', 'fd00::/64'],
        },
      },
    },
    {
      name: 'kube-ipvs extension ipvs.excludeClusterCIDRs',
      yaml: 'ipvs:\n  excludeClusterCIDRs: ["10.99.1.0/24", "fd99::/64"]\n',
      want: { ipvs: { excludeClusterCIDRs: ['10.99.1.0/24', 'fd99::/64'] } },
    },
    {
      name: 'kube-ipvs extension ipvs.schedulerFlags: in one order, each once',
      yaml: 'ipvs:\n  schedulerFlags: [mh-port, sh-fallback, mh-fallback, mh-port]\n',
      want: { ipvs: { schedulerFlags: ['sh-fallback', 'mh-fallback', 'mh-port'] } },
    },
    {
      name: 'ipvs.schedulerFlags: [] is a list (no flag, not the default)',
      yaml: 'ipvs:\n  schedulerFlags: []\n',
      want: { ipvs: { schedulerFlags: [] } },
    },
    {
      name: 'ipvs.schedulerFlags null: unset (kube-proxy default)',
      yaml: 'ipvs:\n  schedulerFlags: null\n',
      want: { ipvs: { schedulerFlags: null } },
    },
    {
      name: 'dual-stack clusterCIDR canonicalised',
      yaml: 'clusterCIDR: "10.244.1.1/16,FD00:10:244::1/56"\n',
      want: { clusterCIDR: ['10.244.0.0/16', 'fd00:10:244::/56'] },
    },
    {
      name: 'IPv6 bindAddress moves the default servers to IPv6',
      yaml: 'bindAddress: "::"\n',
      want: { bindAddress: '::', healthzBindAddress: '[::]:10256', metricsBindAddress: '[::1]:10249' },
    },
    {
      name: 'bind addresses without port get the default port',
      yaml: 'healthzBindAddress: 10.0.0.1\nmetricsBindAddress: 0.0.0.0:9999\n',
      want: { healthzBindAddress: '10.0.0.1:10256', metricsBindAddress: '0.0.0.0:9999' },
    },
    {
      name: 'masqueradeAll and masqueradeBit 0',
      yaml: 'iptables:\n  masqueradeAll: true\n  masqueradeBit: 0\n',
      want: { iptables: { masqueradeAll: true, masqueradeBit: 0 } },
    },
    {
      name: 'nodePortAddresses primary',
      yaml: 'nodePortAddresses: [primary]\n',
      want: { nodePortAddresses: ['primary'] },
    },
    {
      name: 'nodePortAddresses CIDRs',
      yaml: 'nodePortAddresses: [192.168.1.7/24]\n',
      want: { nodePortAddresses: ['192.168.1.0/24'] },
    },
    {
      name: 'detectLocal bridge',
      yaml: 'detectLocalMode: BridgeInterface\ndetectLocal:\n  bridgeInterface: cbr0\n',
      want: { detectLocalMode: 'BridgeInterface', detectLocal: { bridgeInterface: 'cbr0', interfaceNamePrefix: '' } },
    },
    {
      name: 'featureGates',
      yaml: 'featureGates:\n  ContextualLogging: true\n  LoggingBetaOptions: false\n',
      want: { featureGates: { ContextualLogging: true, LoggingBetaOptions: false } },
    },
    {
      name: 'client connection',
      yaml: 'clientConnection:\n  qps: 50.5\n  burst: 100\n  contentType: application/json\n',
      want: { clientConnection: { kubeconfig: '', qps: 50.5, burst: 100, contentType: 'application/json' } },
    },
    {
      name: 'configSyncPeriod, hostnameOverride',
      yaml: 'configSyncPeriod: 1h\nhostnameOverride: node-1\n',
      want: { configSyncPeriodMs: 3_600_000, hostnameOverride: 'node-1' },
    },
    { name: 'mode iptables: warned, run as ipvs', yaml: 'mode: iptables\n', want: { mode: 'ipvs' }, warn: ['mode'] },
    {
      name: 'nested unknown fields name their full path',
      yaml: 'ipvs:\n  schedular: rr\nconntrack:\n  maxPerCor: 1\nfoo: 1\n',
      want: {},
      warn: ['ipvs.schedular', 'conntrack.maxPerCor', 'foo'],
    },
    {
      name: 'YAML 1.1 booleans, as kube-proxy reads them',
      yaml: 'ipvs:\n  strictARP: yes\niptables:\n  masqueradeAll: on\nfeatureGates:\n  ContextualLogging: off\n  LoggingBetaOptions: Y\n',
      want: {
        ipvs: { strictARP: true },
        iptables: { masqueradeAll: true },
        featureGates: { ContextualLogging: false, LoggingBetaOptions: true },
      },
    },
    { name: 'null anywhere is unset', yaml: 'ipvs: null\nclusterCIDR: null\nfeatureGates: ~\n', want: {} },
  ])('$name', ({ yaml, want, warn }) => {
    const { config, warnings } = decodeProxyConfig(HEADER + yaml);
    expect(config).toEqual(withDefaults(want));
    // no mode: kube-proxy would run iptables, one warning (issue 25 item 10)
    expect(warnings.filter((w) => w.level !== 'info').map((w) => w.field)).toEqual([
      ...(warn ?? []),
      ...(/^mode:/m.test(yaml) ? [] : ['mode']),
    ]);
  });

  it("featureGates: a gate kube-proxy does not know is refused with component-base's words (issue 41 item 7)", () => {
    let error: unknown;
    try {
      decodeProxyConfig(HEADER + 'featureGates:\n  NoSuchGate: true\n  TopologyAwareHints: true\n', 'f.yaml');
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigErrors);
    expect((error as ConfigErrors).errors.map((e) => `${e.field}: ${e.detail}`)).toEqual([
      'featureGates: unrecognized feature gate: NoSuchGate',
      // no longer one of Kubernetes' gates: kube-proxy v1.37 refuses it too
      'featureGates: unrecognized feature gate: TopologyAwareHints',
    ]);
  });

  it('featureGates: a gate kube-proxy knows is a note at info, not a warning', () => {
    const { warnings } = decodeProxyConfig(HEADER + 'mode: ipvs\nfeatureGates:\n  KubeProxyIPVS: true\n');
    expect(warnings).toEqual([
      {
        field: 'featureGates.KubeProxyIPVS',
        level: 'info',
        message: 'feature gate KubeProxyIPVS=true (DEPRECATED in kube-proxy) has no effect in kube-ipvs; accepted',
      },
    ]);
  });

  it('the mode warning says kube-ipvs always runs IPVS', () => {
    const { warnings } = decodeProxyConfig(HEADER + 'mode: nftables\n');
    expect(warnings[0]!.message).toContain('kube-ipvs always runs IPVS');
    expect(warnings[0]!.message).toContain('"nftables"');
  });
});

describe('decodeProxyConfig: bad configurations name the field and the value', () => {
  it.each<{ name: string; text: string; field: string; value: string }>([
    {
      name: 'wrong apiVersion',
      text: 'apiVersion: kubeproxy.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n',
      field: 'apiVersion',
      value: 'v1beta1',
    },
    { name: 'missing apiVersion', text: 'kind: KubeProxyConfiguration\n', field: 'apiVersion', value: 'null' },
    {
      name: 'wrong kind',
      text: 'apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n',
      field: 'kind',
      value: 'KubeletConfiguration',
    },
    {
      name: 'bad clusterCIDR',
      text: HEADER + 'clusterCIDR: 10.244.0.0/33\n',
      field: 'clusterCIDR',
      value: '10.244.0.0/33',
    },
    {
      name: 'two IPv4 clusterCIDRs',
      text: HEADER + 'clusterCIDR: 10.0.0.0/8,10.1.0.0/16\n',
      field: 'clusterCIDR',
      value: '10.0.0.0/8,10.1.0.0/16',
    },
    {
      name: 'bad excludeCIDRs entry',
      text: HEADER + 'ipvs:\n  excludeCIDRs: [10.0.0.0/8, nope]\n',
      field: 'ipvs.excludeCIDRs[1]',
      value: 'nope',
    },
    {
      name: 'bad excludeClusterCIDRs entry',
      text: HEADER + 'ipvs:\n  excludeClusterCIDRs: [10.0.0.0]\n',
      field: 'ipvs.excludeClusterCIDRs[0]',
      value: '10.0.0.0',
    },
    {
      name: 'unknown scheduler flag',
      text: HEADER + 'ipvs:\n  schedulerFlags: [mh-fallback, flag-3]\n',
      field: 'ipvs.schedulerFlags[1]',
      value: 'flag-3',
    },
    {
      name: 'scheduler flags as a string, not a list',
      text: HEADER + 'ipvs:\n  schedulerFlags: mh-fallback,mh-port\n',
      field: 'ipvs.schedulerFlags',
      value: 'mh-fallback,mh-port',
    },
    {
      name: 'negative duration',
      text: HEADER + 'ipvs:\n  syncPeriod: -30s\n',
      field: 'ipvs.syncPeriod',
      value: '-30s',
    },
    {
      name: 'duration without unit',
      text: HEADER + 'configSyncPeriod: "15"\n',
      field: 'configSyncPeriod',
      value: '15',
    },
    {
      name: 'duration as a number',
      text: HEADER + 'ipvs:\n  tcpTimeout: 900\n',
      field: 'ipvs.tcpTimeout',
      value: '900',
    },
    {
      name: 'bad duration in a field kube-ipvs does not use',
      text: HEADER + 'conntrack:\n  udpTimeout: soon\n',
      field: 'conntrack.udpTimeout',
      value: 'soon',
    },
    {
      name: 'unknown scheduler',
      text: HEADER + 'ipvs:\n  scheduler: fastest\n',
      field: 'ipvs.scheduler',
      value: 'fastest',
    },
    {
      name: 'masqueradeBit 32',
      text: HEADER + 'iptables:\n  masqueradeBit: 32\n',
      field: 'iptables.masqueradeBit',
      value: '32',
    },
    {
      name: 'masqueradeBit not an integer',
      text: HEADER + 'iptables:\n  masqueradeBit: 1.5\n',
      field: 'iptables.masqueradeBit',
      value: '1.5',
    },
    {
      name: 'bad healthzBindAddress',
      text: HEADER + 'healthzBindAddress: "localhost:10256"\n',
      field: 'healthzBindAddress',
      value: 'localhost:10256',
    },
    {
      name: 'bad metricsBindAddress port',
      text: HEADER + 'metricsBindAddress: "0.0.0.0:99999"\n',
      field: 'metricsBindAddress',
      value: '0.0.0.0:99999',
    },
    {
      name: 'bad bindAddress',
      text: HEADER + 'bindAddress: "0.0.0.0:80"\n',
      field: 'bindAddress',
      value: '0.0.0.0:80',
    },
    {
      name: 'unknown detectLocalMode',
      text: HEADER + 'detectLocalMode: PodCIDR\n',
      field: 'detectLocalMode',
      value: 'PodCIDR',
    },
    {
      name: 'BridgeInterface without a bridge',
      text: HEADER + 'detectLocalMode: BridgeInterface\n',
      field: 'detectLocal.bridgeInterface',
      value: 'BridgeInterface',
    },
    {
      name: 'InterfaceNamePrefix without a prefix',
      text: HEADER + 'detectLocalMode: InterfaceNamePrefix\n',
      field: 'detectLocal.interfaceNamePrefix',
      value: 'InterfaceNamePrefix',
    },
    {
      name: 'nodePortAddresses not CIDRs',
      text: HEADER + 'nodePortAddresses: [eth0]\n',
      field: 'nodePortAddresses[0]',
      value: 'eth0',
    },
    {
      name: 'strictARP not a boolean',
      text: HEADER + 'ipvs:\n  strictARP: "maybe"\n',
      field: 'ipvs.strictARP',
      value: 'maybe',
    },
    { name: 'strictARP a number', text: HEADER + 'ipvs:\n  strictARP: 1\n', field: 'ipvs.strictARP', value: '1' },
    { name: 'ipvs not a mapping', text: HEADER + 'ipvs: rr\n', field: 'ipvs', value: 'a mapping' },
    {
      name: 'excludeCIDRs a string',
      text: HEADER + 'ipvs:\n  excludeCIDRs: 10.0.0.0/8\n',
      field: 'ipvs.excludeCIDRs',
      value: '10.0.0.0/8',
    },
    {
      name: 'featureGates value not a bool',
      text: HEADER + 'featureGates:\n  Foo: "enabled"\n',
      field: 'featureGates.Foo',
      value: 'enabled',
    },
    {
      name: 'negative burst',
      text: HEADER + 'clientConnection:\n  burst: -1\n',
      field: 'clientConnection.burst',
      value: '-1',
    },
    {
      name: 'minSyncPeriod above syncPeriod',
      text: HEADER + 'ipvs:\n  minSyncPeriod: 1m\n',
      field: 'ipvs.syncPeriod',
      value: '1m0s',
    },
    {
      name: 'hostnameOverride a number',
      text: HEADER + 'hostnameOverride: 12\n',
      field: 'hostnameOverride',
      value: '12',
    },
  ])('$name', ({ text, field, value }) => {
    const e = configError(text);
    expect(e.code).toBe('KIPVS_CONFIG');
    expect(e.field).toBe(field);
    expect(e.message.startsWith(`${field}: `)).toBe(true);
    expect(e.message).toContain(value);
  });

  it.each([
    ['not YAML', 'a: 1\nipvs: [\n', /^not valid YAML or JSON: .* at line 3, column 1$/],
    [
      'duplicate key',
      HEADER + 'mode: ipvs\nmode: ipvs\n',
      /^not valid YAML or JSON: duplicated mapping key at line 4, column 1$/,
    ],
    ['a list', '- a\n', /expected a KubeProxyConfiguration object, got a list/],
    ['empty', '', /expected a KubeProxyConfiguration object, got null/],
    ['comments only', '# nothing\n', /got null/],
    ['two documents', HEADER + '---\n' + HEADER, /not valid YAML or JSON/],
  ])('%s', (_name, text, message) => {
    expect(configError(text).message).toMatch(message);
  });

  it('the source file prefixes the message', () => {
    const e = configError(HEADER + 'ipvs:\n  scheduler: x\n', '/var/lib/kube-proxy/config.conf');
    expect(e.message).toMatch(/^\/var\/lib\/kube-proxy\/config.conf: ipvs.scheduler: unknown IPVS scheduler "x"/);
    expect(e.field).toBe('ipvs.scheduler');
  });
});

describe('decodeProxyConfig as strict as kube-proxy, every error at once, the mode said once (issue 25 item 10)', () => {
  const thrown = (text: string): ConfigError => {
    try {
      decodeProxyConfig(text, '/etc/kp.yaml');
    } catch (e) {
      if (e instanceof ConfigError) return e;
      throw e;
    }
    throw new Error('no error');
  };

  it('every validation error is reported at once, each naming its field', () => {
    const e = thrown(
      HEADER +
        'mode: ipvs\nclusterCIDR: not-a-cidr\noomScoreAdj: 5000\nipvs:\n  scheduler: nope\n  strictARP: "yes"\nconntrack:\n  min: "x"\nconfigSyncPeriod: 15\n',
    );
    expect(e.message).toMatch(/^\/etc\/kp\.yaml: 6 errors:\n/);
    for (const field of [
      'clusterCIDR',
      'oomScoreAdj',
      'ipvs.scheduler',
      'ipvs.strictARP',
      'conntrack.min',
      'configSyncPeriod',
    ]) {
      expect(e.message).toContain(`${field}: `);
    }
  });

  it('one error per line, each naming the file, the field and the value; unknown fields in the same pass (issue 41 item 11)', () => {
    const e = thrown(
      HEADER + 'mode: ipvs\noomScoreAdj: 5000\nipvs:\n  trictARP: true\n  scheduler: nope\nclusterCIDR: 10.0.0.0/33\n',
    );
    expect(e.message.split('\n')).toEqual([
      '/etc/kp.yaml: 3 errors, and 1 unknown field:',
      '  /etc/kp.yaml: clusterCIDR: "10.0.0.0/33" is not a valid CIDR: prefix length 33 > 32',
      `  /etc/kp.yaml: ipvs.scheduler: unknown IPVS scheduler "nope" (known: rr wrr lc wlc lblc lblcr dh sh sed nq mh fo ovf twos; '' means rr)`,
      '  /etc/kp.yaml: oomScoreAdj: 5000: must be within the range [-1000, 1000]',
      '  /etc/kp.yaml: unknown field "ipvs.trictARP" ignored (is it misspelled? ipvs has: syncPeriod, minSyncPeriod, scheduler, excludeCIDRs, strictARP, tcpTimeout, tcpFinTimeout, udpTimeout, excludeClusterCIDRs, schedulerFlags)',
    ]);
    // one error and an unknown field: the typo is still said with it
    expect(thrown(HEADER + 'mode: ipvs\noomScoreAdj: 5000\nipvs:\n  trictARP: true\n').message.split('\n')).toEqual([
      '/etc/kp.yaml: 1 error, and 1 unknown field:',
      '  /etc/kp.yaml: oomScoreAdj: 5000: must be within the range [-1000, 1000]',
      expect.stringMatching(/^ {2}\/etc\/kp\.yaml: unknown field "ipvs\.trictARP" ignored/),
    ]);
  });

  it('the cross-field errors come with the field errors, not only once those are fixed (issue 39 item 9)', () => {
    const e = thrown(HEADER + 'mode: ipvs\noomScoreAdj: 5000\nipvs:\n  strictARP: 3\nclientConnection:\n  burst: -3\n');
    expect(e.message).toMatch(/^\/etc\/kp\.yaml: 3 errors:\n/);
    for (const field of ['oomScoreAdj', 'ipvs.strictARP', 'clientConnection.burst']) {
      expect(e.message).toContain(`${field}: `);
    }
    expect((e as ConfigErrors).errors.map((x) => x.field)).toEqual([
      'ipvs.strictARP',
      'oomScoreAdj',
      'clientConnection.burst',
    ]);
  });

  it.each([
    // the syncPeriod that did not decode is not compared with minSyncPeriod as the default 30s
    ['ipvs:\n  syncPeriod: soon\n  minSyncPeriod: 1h\n', ['ipvs.syncPeriod']],
    ['ipvs:\n  minSyncPeriod: [1]\n  syncPeriod: 1s\n', ['ipvs.minSyncPeriod']],
    ['ipvs: 5\n', ['ipvs']],
    ['detectLocalMode: BridgeInterface\ndetectLocal:\n  bridgeInterface: 7\n', ['detectLocal.bridgeInterface']],
    ['detectLocalMode: 7\n', ['detectLocalMode']],
    ['clientConnection:\n  burst: "-3"\n', ['clientConnection.burst']],
  ])('a cross-field check over a field that did not decode says nothing more: %j', (yaml, fields) => {
    const e = thrown(HEADER + 'mode: ipvs\n' + yaml);
    expect(e instanceof ConfigErrors ? e.errors.map((x) => x.field) : [e.field]).toEqual(fields);
  });

  it('one error stays one error, as before', () => {
    expect(thrown(HEADER + 'mode: ipvs\noomScoreAdj: 5000\n').message).toBe(
      '/etc/kp.yaml: oomScoreAdj: 5000: must be within the range [-1000, 1000]',
    );
  });

  it.each([
    ['ipvs:\n  strictARP: "yes"\n', 'ipvs.strictARP'],
    ["iptables:\n  masqueradeAll: 'on'\n", 'iptables.masqueradeAll'],
    ['featureGates:\n  A: "true"\n', 'featureGates.A'],
    ['hostnameOverride: yes\n', 'hostnameOverride'],
  ])(
    'a quoted YAML 1.1 boolean for a bool, or a bare one for a string, is refused as kube-proxy refuses it: %j',
    (yaml, field) => {
      expect(thrown(HEADER + 'mode: ipvs\n' + yaml).field).toBe(field);
    },
  );

  it('a mode left empty (kubeadm) warns once: kube-proxy would run iptables, kube-ipvs runs IPVS', () => {
    const { warnings } = decodeProxyConfig(HEADER);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.field).toBe('mode');
    expect(warnings[0]!.message).toMatch(/kube-proxy would run iptables/);
    expect(warnings[0]!.message).toMatch(/kube-ipvs runs IPVS instead/);
    expect(decodeProxyConfig(HEADER + 'mode: nftables\n').warnings[0]!.message).toMatch(
      /kube-proxy would run nftables/,
    );
    expect(decodeProxyConfig(HEADER + 'mode: ipvs\n').warnings).toEqual([]);
  });
});
