import { defaultProxyConfig } from '../../lib/config/decode-config';
import { applyProxyFlags, CONFIG_FLAG_NAMES, IGNORED_FLAG_NAMES, parseProxyFlags } from '../../lib/config/proxy-flags';
import { normalizeFlagNames } from '../../lib/config/flag-names';
import { UnexpectedArgumentError } from '../../lib/errors';

/**
 * Every flag of `kube-proxy --help` on Linux (cmd/kube-proxy/app/options.go AddFlags,
 * component-base logsapi.AddFlags, verflag, the Go flags kube-proxy adds) and the deprecated
 * ones older DaemonSets still carry, with a value of its type.
 */
const KUBE_PROXY_FLAGS: Readonly<Record<string, string>> = {
  '--config': '/var/lib/kube-proxy/config.conf',
  '--write-config-to': '/tmp/out.yaml',
  '--cleanup': 'false',
  '--init-only': 'false',
  '--feature-gates': 'ContextualLogging=true',
  '--kubeconfig': '/k',
  '--master': 'https://10.0.0.1:6443',
  '--kube-api-content-type': 'application/json',
  '--kube-api-burst': '10',
  '--kube-api-qps': '5',
  '--hostname-override': 'node-1',
  '--node-ip-override': '10.0.0.1',
  '--bind-address': '10.0.0.1',
  '--healthz-bind-address': '0.0.0.0:10256',
  '--healthz-bind-addresses': '10.0.0.0/8',
  '--healthz-bind-port': '10256',
  '--metrics-bind-address': '127.0.0.1:10249',
  '--metrics-bind-addresses': '127.0.0.0/8',
  '--metrics-bind-port': '10249',
  '--bind-address-hard-fail': 'false',
  '--profiling': 'false',
  '--show-hidden-metrics-for-version': '1.33',
  '--proxy-mode': 'ipvs',
  '--sync-period': '30s',
  '--min-sync-period': '1s',
  '--masquerade-all': 'false',
  '--iptables-masquerade-bit': '14',
  '--iptables-localhost-nodeports': 'true',
  '--iptables-sync-period': '30s',
  '--iptables-min-sync-period': '1s',
  '--ipvs-sync-period': '30s',
  '--ipvs-min-sync-period': '0s',
  '--ipvs-scheduler': 'rr',
  '--ipvs-exclude-cidrs': '10.50.0.0/16',
  '--ipvs-strict-arp': 'false',
  '--ipvs-tcp-timeout': '0s',
  '--ipvs-tcpfin-timeout': '0s',
  '--ipvs-udp-timeout': '0s',
  '--ipvs-masquerade-bit': '14',
  '--detect-local-mode': 'ClusterCIDR',
  '--pod-bridge-interface': 'cbr0',
  '--pod-interface-name-prefix': 'veth',
  '--cluster-cidrs': '10.244.0.0/16',
  '--cluster-cidr': '10.244.0.0/16',
  '--nodeport-addresses': 'primary',
  '--oom-score-adj': '-999',
  '--conntrack-max-per-core': '32768',
  '--conntrack-min': '131072',
  '--conntrack-tcp-timeout-established': '24h0m0s',
  '--conntrack-tcp-timeout-close-wait': '1h0m0s',
  '--conntrack-tcp-be-liberal': 'false',
  '--conntrack-udp-timeout': '0s',
  '--conntrack-udp-timeout-stream': '0s',
  '--config-sync-period': '15m0s',
  // component-base logs
  '--v': '2',
  '--vmodule': 'proxier=4',
  '--logging-format': 'text',
  '--log-flush-frequency': '5s',
  '--log-json-split-stream': 'false',
  '--log-json-info-buffer-size': '0',
  '--log-text-split-stream': 'false',
  '--log-text-info-buffer-size': '0',
  // verflag, and the Go flag set kube-proxy adds
  '--version': 'false',
  '--boot-id-file': '/proc/sys/kernel/random/boot_id',
  '--machine-id-file': '/etc/machine-id',
  // deprecated or gone from --help, still in older DaemonSets
  '--healthz-port': '10256',
  '--metrics-port': '10249',
  '--proxy-port-range': '',
};

describe("kube-proxy's flags", () => {
  it.each(Object.entries(KUBE_PROXY_FLAGS))('%s parses and applies without a usage or config error', (flag, value) => {
    const flags = parseProxyFlags([`${flag}=${value}`]);
    expect(() => applyProxyFlags(defaultProxyConfig(), flags)).not.toThrow();
  });

  it('every flag kube-ipvs knows is in the list above (so the list is the whole surface)', () => {
    const known = [...CONFIG_FLAG_NAMES, ...IGNORED_FLAG_NAMES];
    // kube-ipvs's own extension, and klog's flags removed in 1.26 (accepted, ignored)
    const extra = [
      '--exclude-cluster-cidr',
      '--log-file-max-size',
      '--add-dir-header',
      '--alsologtostderr',
      '--logtostderr',
      '--one-output',
      '--skip-headers',
      '--skip-log-headers',
      '--log-backtrace-at',
      '--log-dir',
      '--log-file',
      '--stderrthreshold',
    ];
    expect(known.filter((f) => !(f in KUBE_PROXY_FLAGS) && !extra.includes(f))).toEqual([]);
  });

  it('-v 4 and -v=4 are --v', () => {
    expect(parseProxyFlags(['-v', '4']).verbosity).toBe(4);
    expect(parseProxyFlags(['-v=4']).verbosity).toBe(4);
  });
});

describe("flag names normalised as kube-proxy's (component-base WordSepNormalizeFunc, issue 41 item 8)", () => {
  it('`_` in a long flag name is `-`; values and everything after `--` are left alone', () => {
    expect(
      normalizeFlagNames(['--hostname_override=my_node', '--ipvs_scheduler', 'wrr', '-v=2', '--', '--a_b']),
    ).toEqual(['--hostname-override=my_node', '--ipvs-scheduler', 'wrr', '-v=2', '--', '--a_b']);
  });

  it('applies to every flag the parser takes', () => {
    const f = parseProxyFlags(['--hostname_override=node_1', '--ipvs_strict_arp', '--logging_format=json']);
    expect(f.given.get('--hostname-override')).toBe('node_1');
    expect(f.given.get('--ipvs-strict-arp')).toBe(true);
    expect(f.loggingFormat).toBe('json');
  });

  it('a word that is no flag is an UnexpectedArgumentError naming it', () => {
    expect(() => parseProxyFlags(['--v=2', 'services', 'list'])).toThrow(UnexpectedArgumentError);
    try {
      parseProxyFlags(['services', 'list']);
    } catch (e) {
      expect((e as UnexpectedArgumentError).argument).toBe('services');
    }
  });
});
