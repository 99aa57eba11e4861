/**
 * The effective configuration of one kube-ipvs process: KubeProxyConfiguration
 * (kubeproxy.config.k8s.io/v1alpha1) decoded, defaulted and validated, with the command-line
 * flags applied on top. Durations are milliseconds. Field names follow the API's.
 *
 * Built by lib/config/decode-config.ts (file) and lib/config/proxy-flags.ts (flags on top);
 * lib/config/load-config.ts does both.
 */
import type { ConntrackSettings } from '../model/conntrack';
import { LocalDetector } from '../plan/iptables';
import type { LogFormat } from '../log';
import type { SchedulerFlag } from '../model/ipvs';

/** How the proxy tells local traffic (detectLocalMode): ClusterCIDR, NodeCIDR, ... */
export type DetectLocalMode = LocalDetector['kind'];

/** The ipvs section of the configuration (KubeProxyIPVSConfiguration). */
export interface IpvsConfig {
  /** '' means rr */
  readonly scheduler: string;
  readonly syncPeriodMs: number;
  readonly minSyncPeriodMs: number;
  /** canonical CIDRs, both families; virtual servers inside are never touched */
  readonly excludeCIDRs: readonly string[];
  readonly strictARP: boolean;
  /** seconds; 0 leaves the kernel's value */
  readonly tcpTimeoutSec: number;
  readonly tcpFinTimeoutSec: number;
  readonly udpTimeoutSec: number;
  /**
   * kube-ipvs extension (multi-CNI): endpoints inside these CIDRs are ignored; a Service all
   * of whose endpoints are excluded gets nothing on this node. Canonical CIDRs, both families.
   * Set in the file as `ipvs.excludeClusterCIDRs` (a list; kube-proxy itself warns about it as
   * an unknown field and ignores it) or with `--exclude-cluster-cidr CIDR[,CIDR]`.
   */
  readonly excludeClusterCIDRs: readonly string[];
  /**
   * kube-ipvs extension: the node's IPVS scheduler flags (ipvsadm's names), for every Service
   * without its own kube-ipvs.io/scheduler-flags annotation; each applies to the virtual servers
   * of its scheduler (sh-* to sh, mh-* to mh). null when unset: kube-proxy's default (mh-port
   * for mh). A list replaces that default ([] is no flag at all). Set in the file as
   * `ipvs.schedulerFlags` (a list; kube-proxy decodes the file leniently, logs the unknown
   * field and ignores it, see README "Scheduler flags").
   */
  readonly schedulerFlags: readonly SchedulerFlag[] | null;
}

/**
 * conntrack sysctls kube-proxy sets at start (cmd/kube-proxy/app, pkg/proxy/conntrack). A
 * field left null in the file takes kube-proxy's default; an explicit 0 means "leave the
 * kernel's value" (maxPerCore 0 also ignores min).
 */
/** conntrack.* (seconds; the shape lives in model/, where the kernel's sysctl surface reads it too) */
export type ConntrackConfig = ConntrackSettings;

/** component-base LoggingConfiguration, the parts kube-ipvs honours; the logging flags win. */
export interface LoggingConfig {
  readonly format: LogFormat;
  /** klog verbosity (--v) */
  readonly verbosity: number;
}

/** The proxy's whole configuration, decoded and checked (KubeProxyConfiguration, flags applied). */
export interface ProxyConfig {
  /** 'ipvs' (anything else was warned about and is run as ipvs) */
  readonly mode: string;
  readonly hostnameOverride: string;
  /** canonical IP */
  readonly bindAddress: string;
  /** `IP:port` / `[IPv6]:port`; '' = server disabled (only an explicit empty flag does that) */
  readonly healthzBindAddress: string;
  readonly metricsBindAddress: string;
  readonly clientConnection: {
    readonly kubeconfig: string;
    readonly qps: number;
    readonly burst: number;
    readonly contentType: string;
  };
  /** --master: API server URL overriding the kubeconfig's; '' when unset */
  readonly master: string;
  /** canonical CIDRs, at most one per family */
  readonly clusterCIDR: readonly string[];
  readonly detectLocalMode: DetectLocalMode;
  readonly detectLocal: { readonly bridgeInterface: string; readonly interfaceNamePrefix: string };
  /** canonical CIDRs and/or 'primary'; empty = every local address */
  readonly nodePortAddresses: readonly string[];
  readonly iptables: { readonly masqueradeAll: boolean; readonly masqueradeBit: number };
  readonly ipvs: IpvsConfig;
  readonly configSyncPeriodMs: number;
  readonly conntrack: ConntrackConfig;
  /** written to /proc/self/oom_score_adj at start; default -999 (kube-proxy's) */
  readonly oomScoreAdj: number;
  readonly logging: LoggingConfig;
  readonly featureGates: Readonly<Record<string, boolean>>;
}
