// The effective configuration: the --config file (or kube-proxy's defaults when there is
// none), then every flag given on top, then the cross-field checks again.
import { readFile as fsReadFile } from 'node:fs/promises';
import { ConfigError } from '../errors';
import {
  ConfigWarning,
  decodeProxyConfig,
  defaultProxyConfig,
  modeWarning,
  validateProxyConfig,
} from './decode-config';
import { ProxyConfig } from './proxy-config';
import { applyProxyFlags, ProxyFlags } from './proxy-flags';

/** The configuration from --config and the flags, with the warnings about it. */
export interface LoadedConfig {
  readonly config: ProxyConfig;
  /** file warnings first (unknown fields, mode), then flag warnings */
  readonly warnings: readonly ConfigWarning[];
}

/** Reads a configuration file as text (fs.readFile by default; tests pass their own). */
export type ReadConfigFile = (path: string) => Promise<string>;

const readUtf8: ReadConfigFile = (path) => fsReadFile(path, 'utf8');

/** Throws ConfigError (an unreadable file is one too, naming --config). */
export async function loadProxyConfig(flags: ProxyFlags, readFile: ReadConfigFile = readUtf8): Promise<LoadedConfig> {
  let base: ProxyConfig = defaultProxyConfig();
  const warnings: ConfigWarning[] = [];
  if (flags.configFile !== undefined) {
    let text: string;
    try {
      text = await readFile(flags.configFile);
    } catch (e) {
      const code = (e as { code?: string }).code;
      throw new ConfigError('--config', `cannot read ${flags.configFile}: ${code ?? (e as Error).message}`, {
        cause: e,
      });
    }
    const decoded = decodeProxyConfig(text, flags.configFile);
    base = decoded.config;
    // the mode is said once: a --proxy-mode given wins over the file's (and warns itself)
    warnings.push(...decoded.warnings.filter((w) => !(flags.given.has('--proxy-mode') && w.field === 'mode')));
  } else if (!flags.given.has('--proxy-mode')) {
    // no file and no --proxy-mode: kube-proxy's flag default is blank, which it runs as iptables
    warnings.push(modeWarning('--proxy-mode', ''));
  }
  const applied = applyProxyFlags(base, flags);
  warnings.push(...applied.warnings);
  validateProxyConfig(applied.config);
  return { config: applied.config, warnings };
}
