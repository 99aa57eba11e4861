// The daemon's kubeconfig, loaded before anything touches the kernel: a kubeconfig that cannot
// be used (bad YAML, a tokenFile that is not there, an unknown user) stops the start with one
// line (KubeConfigError), before the sysctls, conntrack and oom_score_adj are set.
import { ProxyConfig } from '../config/proxy-config';
import type { ApiKubeConfig } from '../k8s/api-request';
import { loadKubeConfig } from '../k8s/kubeconfig';
import { componentLog } from '../log';
import { BuildInfo, userAgent } from '../model/build-info';

export { KubeConfigError } from '../k8s/kubeconfig';

/** clientConnection.kubeconfig / --master as kube-proxy reads them; throws KubeConfigError. */
export function loadDaemonKubeConfig(config: ProxyConfig, build?: BuildInfo): ApiKubeConfig {
  return loadKubeConfig({
    ...(config.clientConnection.kubeconfig ? { kubeconfig: config.clientConnection.kubeconfig } : {}),
    ...(config.master ? { master: config.master } : {}),
    log: componentLog('api'),
    ...(build ? { userAgent: userAgent(build) } : {}),
    // client-go's token bucket (kube-proxy's defaults, qps 5 burst 10, come from the config)
    qps: config.clientConnection.qps,
    burst: config.clientConnection.burst,
  });
}
