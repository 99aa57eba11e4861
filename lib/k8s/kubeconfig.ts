/**
 * How kube-ipvs finds the API server, as kube-proxy does (cmd/kube-proxy createClient):
 * --kubeconfig FILE if given; else --master alone if given; else in-cluster (the pod's
 * service-account token and KUBERNETES_SERVICE_HOST/PORT); else client-node's default
 * loading (KUBECONFIG, ~/.kube/config). --master replaces the server URL of the loaded
 * cluster either way.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { User } from '@kubernetes/client-node';
import { load as loadYaml } from 'js-yaml';
import { KubeIpvsError } from '../errors';
import { ApiCallObserver, ApiKubeConfig, ApiLog, TokenFile } from './api-request';
import { TokenBucketRateLimiter } from './rate-limit';

/** The kubeconfig or --master cannot be used; names the file or URL. */
export class KubeConfigError extends KubeIpvsError {
  readonly code = 'KIPVS_KUBECONFIG' as const;
}

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Where the API client's configuration comes from: --kubeconfig, --master, in-cluster, and limits. */
export interface KubeConfigOptions {
  /** --kubeconfig / clientConnection.kubeconfig; '' or undefined when unset */
  readonly kubeconfig?: string;
  /** --master; '' or undefined when unset */
  readonly master?: string;
  /** environment to read KUBERNETES_SERVICE_HOST/PORT from (default process.env) */
  readonly env?: NodeJS.ProcessEnv;
  /** prefix of the service-account directory (tests; default '') */
  readonly inClusterRoot?: string;
  /** every API request, for the rest_client_* metrics */
  readonly observer?: ApiCallObserver;
  /** where a refused credential and an unreadable token file are logged */
  readonly log?: ApiLog;
  /** for TokenFile's period (tests; default Date.now) */
  readonly clock?: () => number;
  /** the User-Agent header of every request (default: undici's) */
  readonly userAgent?: string;
  /** clientConnection.qps / burst: client-go's token bucket on every request start (none when qps is 0 or absent) */
  readonly qps?: number;
  readonly burst?: number;
  /** the Accept header of the informers' lists and watches (default application/json) */
  readonly accept?: string;
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

/** Loads the API client's config: --kubeconfig, else --master alone, else in-cluster, else the default. */
export function loadKubeConfig(options: KubeConfigOptions): ApiKubeConfig {
  const kc = new ApiKubeConfig();
  kc.observer = options.observer;
  kc.log = options.log;
  kc.userAgent = options.userAgent;
  if (options.accept) kc.accept = options.accept;
  if (options.qps && options.qps > 0)
    kc.rateLimiter = new TokenBucketRateLimiter(options.qps, Math.max(1, options.burst ?? 1));
  const master = options.master || undefined;
  if (master) checkMaster(master);
  const env = options.env ?? process.env;
  const root = options.inClusterRoot ?? '';
  if (options.kubeconfig) {
    try {
      kc.loadFromFile(options.kubeconfig);
      checkCurrentUser(kc);
      kc.origin = `kubeconfig ${options.kubeconfig}`;
      useTokenFile(kc, rawTokens(options.kubeconfig, kc.getCurrentUser()), options);
    } catch (e) {
      throw new KubeConfigError(`kubeconfig ${options.kubeconfig}: ${loadErrorText(e)}`);
    }
  } else if (master) {
    // kube-proxy with --master and no kubeconfig: that server, no credentials; plain http
    // needs skipTLSVerify for client-node to accept it (there is no TLS to skip)
    kc.loadFromClusterAndUser(
      { name: 'master', server: master, skipTLSVerify: master.startsWith('http:') },
      { name: 'anonymous' },
    );
    kc.origin = `--master ${master} (no kubeconfig)`;
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
    kc.origin = 'in-cluster config';
    useTokenFile(kc, {}, options);
  } else {
    try {
      kc.loadFromDefault();
      checkCurrentUser(kc);
      const file = defaultKubeconfigFile(env);
      kc.origin = file ? `kubeconfig ${file}` : 'default kubeconfig (KUBECONFIG, ~/.kube/config, in-cluster)';
      useTokenFile(kc, file ? rawTokens(file, kc.getCurrentUser()) : {}, options);
    } catch (e) {
      throw new KubeConfigError(`default kubeconfig (KUBECONFIG, ~/.kube/config): ${loadErrorText(e)}`);
    }
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new KubeConfigError(
      `kubeconfig ${options.kubeconfig || '(default)'}: no current cluster (current-context ${JSON.stringify(kc.getCurrentContext())})`,
    );
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

/**
 * What a failed load says, in one line and without the file's text: js-yaml's message quotes
 * the lines around the error (a token, a client key: a secret in the log), so a YAML error is
 * its reason with the line and column (1-based) only. The reason itself quotes the file where
 * it names a tag, an alias or a tag handle (`token: !<secret>` gives "unknown scalar tag
 * !<secret>"), so it is cut before the first quote: every js-yaml reason (4.x, and client-node's
 * 5.x) quotes the file only after `!<`, `"` or `: `. The cause is not kept either: a logger
 * that prints causes would print the quote.
 */
function loadErrorText(e: unknown): string {
  const y = e as { name?: unknown; reason?: unknown; mark?: { line?: unknown; column?: unknown } };
  if (y?.name === 'YAMLException') {
    const reason = yamlReason(y.reason);
    if (typeof y.mark?.line === 'number' && typeof y.mark.column === 'number')
      return `YAML error at line ${y.mark.line + 1}, column ${y.mark.column + 1}: ${reason}`;
    return `YAML error: ${reason}`;
  }
  const text = e instanceof Error ? e.message : String(e);
  return text.split('\n')[0]!;
}

/** js-yaml's reason up to where it would quote the file (see loadErrorText). */
function yamlReason(reason: unknown): string {
  const text = typeof reason === 'string' && reason !== '' ? reason.split('\n')[0]! : 'malformed';
  const quote = /!<|"|: /.exec(text);
  if (!quote) return text;
  return `${text.slice(0, quote.index).trimEnd() || 'malformed'} (the file's text withheld)`;
}

/**
 * The current context's user must be in the file, as client-go's validation requires
 * (client-node would send requests without credentials).
 */
function checkCurrentUser(kc: ApiKubeConfig): void {
  const name = kc.getCurrentContext();
  const context = kc.getContextObject(name);
  if (context?.user && !kc.users.some((u) => u.name === context.user)) {
    throw new Error(`user ${JSON.stringify(context.user)} of context ${JSON.stringify(name)} was not found`);
  }
}

/** The current user's bearer token file and static token as the kubeconfig writes them. */
interface RawTokens {
  readonly file?: string;
  readonly token?: string;
}

/**
 * The current user's token file as client-go reads it: `tokenFile` (client-go's field, what
 * kubeadm writes; client-node ignores it) or `token-file` (client-node's spelling, which it
 * reads once at load and never again), relative to the kubeconfig's directory.
 */
function rawTokens(file: string, user: User | null): RawTokens {
  if (!user) return {};
  const doc = loadYaml(readFileSync(file, 'utf8')) as
    { users?: { name?: string; user?: Record<string, unknown> }[] } | null | undefined;
  const raw = doc?.users?.find((u) => u?.name === user.name)?.user;
  const given = raw?.tokenFile ?? raw?.['token-file'];
  const token = typeof raw?.token === 'string' && raw.token !== '' ? raw.token : undefined;
  if (typeof given !== 'string' || given === '') return { token };
  return { file: path.isAbsolute(given) ? given : path.join(path.dirname(file), given), token };
}

/**
 * Moves the current user's token file to a TokenFile (re-read every minute and after a 401):
 * the raw `tokenFile`/`token-file`, or client-node's in-cluster tokenFile auth provider (whose
 * own re-read knows nothing of 401s). A `token` given beside the file is the fallback, as in
 * client-go; a file that cannot be read at start with no such fallback is an error there too.
 */
function useTokenFile(kc: ApiKubeConfig, raw: RawTokens, options: KubeConfigOptions): void {
  const user = kc.getCurrentUser();
  if (!user) return;
  const provider = user.authProvider as { name?: string; config?: { tokenFile?: string } } | undefined;
  const fromProvider = provider?.config?.tokenFile && !user.exec ? provider.config.tokenFile : undefined;
  const file = raw.file ?? fromProvider;
  if (!file) return;
  const tokenFile = new TokenFile(file, raw.token, options.clock, undefined, options.log);
  tokenFile.current(); // unreadable and no fallback: refuse the config now, as client-go does
  kc.tokenFile = tokenFile;
  // client-node's own copies (read once, or re-read without 401 handling) are dropped
  const replaced: User = {
    ...user,
    token: undefined,
    authProvider: fromProvider === file ? undefined : user.authProvider,
  };
  kc.users = kc.users.map((u) => (u.name === user.name ? replaced : u));
}

/** The file client-node's loadFromDefault read, when it is one file. */
function defaultKubeconfigFile(env: NodeJS.ProcessEnv): string | undefined {
  const list = (env.KUBECONFIG ?? '').split(path.delimiter).filter(Boolean);
  if (list.length === 1) return existsSync(list[0]!) ? list[0] : undefined;
  if (list.length > 1) return undefined;
  const home = env.HOME ? path.join(env.HOME, '.kube', 'config') : '';
  return home && existsSync(home) ? home : undefined;
}

function restoreEnv(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}
