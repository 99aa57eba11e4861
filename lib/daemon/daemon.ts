/**
 * The proxy process: wiring only (informers -> trackers -> proxier -> kernel surfaces).
 * STUB in this commit; implemented by the proxier work.
 */
import { ProxyConfig } from '../config/proxy-config';

export interface DaemonOptions {
  /** --config FILE, watched for live changes; undefined when flags only */
  readonly configFile?: string;
  /** re-reads and re-validates the config file (for live reload) */
  readonly reloadConfig?: () => Promise<ProxyConfig>;
  /** --v */
  readonly verbosity: number;
}

/** Runs until SIGTERM/SIGINT; resolves to the process exit code. */
export async function runDaemon(config: ProxyConfig, options: DaemonOptions): Promise<number> {
  void config;
  void options;
  throw new Error('runDaemon: not implemented yet');
}
