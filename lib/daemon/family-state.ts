/**
 * The daemon's families: chosen once at start-up (families.ts), and the primary family, which
 * follows the Node object's addresses while the proxy runs (kube-proxy refuses to run on a node
 * that cannot proxy its primary family).
 */
import { ProxyConfig } from '../config/proxy-config';
import { KernelFamilySupport } from '../kernel/family-support';
import {
  FamilyChoice,
  FamilySupportError,
  PrimaryFamily,
  checkPrimaryFamily,
  chooseFamilies,
  primaryFamily,
  primarySourceText,
} from './families';
import { DaemonLog, KernelSurfaces } from './kernel-surfaces';
import { familyOfValidAddress } from '../model/ip-family';

/** The chosen families and the current primary family, which follows the Node's addresses. */
export class FamilyState {
  primary: PrimaryFamily;

  constructor(
    readonly choice: FamilyChoice,
    private readonly config: ProxyConfig,
    private readonly log: DaemonLog,
  ) {
    this.primary = primaryFamily(config.bindAddress, []);
  }

  /** false (logged) when the node cannot proxy the primary family */
  checked(): boolean {
    try {
      checkPrimaryFamily(this.choice, this.primary);
      return true;
    } catch (e) {
      this.log.error((e as Error).message);
      return false;
    }
  }

  /** kube-proxy's getLocalDetectors: a note when the primary family has no clusterCIDR */
  logDetectLocal(): void {
    const { config, primary } = this;
    if (
      config.detectLocalMode === 'ClusterCIDR' &&
      !config.clusterCIDR.some((c) => familyOfValidAddress(c) === primary.family)
    ) {
      this.log.info(
        `detect-local-mode ClusterCIDR, but no clusterCIDR of the primary family ${primary.family}: no local-traffic rule for it`,
        {
          primaryFamily: primary.family,
          clusterCIDRs: config.clusterCIDR,
        },
      );
    }
  }

  /**
   * The Node object's addresses (`infoNodeIPs`, as nodeInfo read them; `nodeIPs`, kube-proxy's
   * node IPs for the log) may move the primary family; false when the new one cannot be proxied.
   */
  onNodeIPs(infoNodeIPs: readonly string[], nodeIPs: readonly string[]): boolean {
    const next = primaryFamily(this.config.bindAddress, infoNodeIPs);
    if (next.family === this.primary.family && next.source === this.primary.source) return true;
    this.primary = next;
    this.log.info(
      `primary IP family ${next.family} (${primarySourceText(next)}); node IPs ${nodeIPs.join(', ') || 'none'}`,
      {
        primaryFamily: next.family,
        primaryFrom: next.source,
        nodeIPs,
      },
    );
    this.logDetectLocal();
    return this.checked();
  }
}

/**
 * Both families whenever the node supports both (kube-proxy's dual-stack MetaProxier), logged;
 * undefined (logged, kernel closed) when the node cannot proxy the primary family.
 */
export async function chooseDaemonFamilies(
  kernel: KernelSurfaces,
  config: ProxyConfig,
  log: DaemonLog,
): Promise<FamilyState | undefined> {
  let choice: FamilyChoice;
  try {
    choice = await chooseFamilies(new KernelFamilySupport({ iptables: kernel.iptables }));
  } catch (e) {
    if (!(e instanceof FamilySupportError)) throw e;
    log.error(e.message);
    kernel.close();
    return undefined;
  }
  const state = new FamilyState(choice, config, log);
  const { primary } = state;
  log.info(
    `${choice.dualStack ? 'dual-stack' : 'single-stack'}: families ${choice.families.join(',')}, ` +
      `primary family ${primary.family} (${primarySourceText(primary)})`,
    {
      families: choice.families,
      dualStack: choice.dualStack,
      primaryFamily: primary.family,
      primaryFrom: primary.source,
    },
  );
  for (const f of ['ipv4', 'ipv6'] as const) {
    if (!choice.checks[f].supported)
      log.warn(`${f} is not proxied: ${choice.checks[f].reason}`, { family: f, reason: choice.checks[f].reason });
  }
  if (!state.checked()) {
    kernel.close();
    return undefined;
  }
  return state;
}
