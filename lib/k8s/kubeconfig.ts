/**
 * How kube-ipvs finds the API server, as kube-proxy does (cmd/kube-proxy createClient):
 * --kubeconfig FILE if given; else --master alone if given; else in-cluster (the pod's
 * service-account token and KUBERNETES_SERVICE_HOST/PORT); else client-node's default
 * loading (KUBECONFIG, ~/.kube/config). --master replaces the server URL of the loaded
 * cluster either way.
 */
import { existsSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeIpvsError } from '../errors';

/** The kubeconfig or --master cannot be used; names the file or URL. */
export class KubeConfigError extends KubeIpvsError {
  readonly code = 'KIPVS_KUBECONFIG' as const;
}

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface KubeConfigOptions {
  /** --kubeconfig / clientConnection.kubeconfig; '' or undefined when unset */
  readonly kubeconfig?: string;
  /** --master; '' or undefined when unset */
  readonly master?: string;
  /** environment to read KUBERNETES_SERVICE_HOST/PORT from (default process.env) */
  readonly env?: NodeJS.ProcessEnv;
  /** prefix of the service-account directory (tests; default '') */
  readonly inClusterRoot?: string;
}

function checkMaster(master: string): URL {
  let url: URL;
  try {
    url = new URL(master);
  } catch {
    throw new KubeConfigError(`--master ${JSON.stringify(master)} is not a URL (want http(s)://host:port)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new KubeConfigError(`--master ${master}: scheme must be http or https`);
  }
  return url;
}

export function loadKubeConfig(options: KubeConfigOptions): KubeConfig {
  const kc = new KubeConfig();
  const master = options.master || undefined;
  if (master) checkMaster(master);
  const env = options.env ?? process.env;
  const root = options.inClusterRoot ?? '';
  if (options.kubeconfig) {
    try {
      kc.loadFromFile(options.kubeconfig);
    } catch (e) {
      throw new KubeConfigError(`kubeconfig ${options.kubeconfig}: ${(e as Error).message}`, { cause: e });
    }
  } else if (master) {
    // kube-proxy with --master and no kubeconfig: that server, no credentials; plain http
    // needs skipTLSVerify for client-node to accept it (there is no TLS to skip)
    kc.loadFromClusterAndUser({ name: 'master', server: master, skipTLSVerify: master.startsWith('http:') }, { name: 'anonymous' });
    return kc;
  } else if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && existsSync(root + SERVICE_ACCOUNT_TOKEN)) {
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    // loadFromCluster reads process.env; honour an injected env
    process.env.KUBERNETES_SERVICE_HOST = env.KUBERNETES_SERVICE_HOST;
    process.env.KUBERNETES_SERVICE_PORT = env.KUBERNETES_SERVICE_PORT;
    try {
      kc.loadFromCluster(root);
    } finally {
      restoreEnv('KUBERNETES_SERVICE_HOST', saved.host);
      restoreEnv('KUBERNETES_SERVICE_PORT', saved.port);
    }
  } else {
    try {
      kc.loadFromDefault();
    } catch (e) {
      throw new KubeConfigError(`default kubeconfig (KUBECONFIG, ~/.kube/config): ${(e as Error).message}`, { cause: e });
    }
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new KubeConfigError(`kubeconfig ${options.kubeconfig || '(default)'}: no current cluster (current-context ${JSON.stringify(kc.getCurrentContext())})`);
  }
  if (master) {
    const replaced = { ...cluster, server: master, skipTLSVerify: cluster.skipTLSVerify || master.startsWith('http:') };
    kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? replaced : c));
  } else if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) {
    // client-node refuses plain http unless skipTLSVerify is set; kube-proxy does not
    kc.clusters = kc.clusters.map((c) => (c.name === cluster.name ? { ...c, skipTLSVerify: true } : c));
  }
  return kc;
}

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
