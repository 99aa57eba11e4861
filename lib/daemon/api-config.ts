// The daemon's kubeconfig, loaded before anything touches the kernel: a kubeconfig that cannot
// be used (bad YAML, a tokenFile that is not there, an unknown user) stops the start with one
// line (KubeConfigError), before the sysctls, conntrack and oom_score_adj are set.
import { ProxyConfig } from '../config/proxy-config';
import type { ApiKubeConfig } from '../k8s/api-request';
import { loadKubeConfig } from '../k8s/kubeconfig';
import { PROTOBUF_CONTENT_TYPE, isProtobuf } from '../k8s/protobuf';
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
    accept: informerAccept(config.clientConnection.contentType),
  });
}

/**
 * The Accept header of the informers' lists and watches for clientConnection.contentType
 * (--kube-api-content-type; protobuf by default, as kube-proxy's). client-go sends the type
 * and "*\/*"; here JSON is named instead of any type, since JSON and protobuf are what the
 * daemon decodes (the API server answers JSON for what it cannot send in protobuf).
 */
export function informerAccept(contentType: string): string {
  return isProtobuf(contentType) ? `${PROTOBUF_CONTENT_TYPE}, application/json` : 'application/json';
}
