import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { constants as osConstants } from 'node:os';
import { KubeIpvsError, errnoName } from '../../errors';

const E = osConstants.errno;

/** The sysctls the IPVS proxier sets (K8S pkg/proxy/ipvs/proxier.go NewProxier, pkg/util/kernel/constants.go). */
export const SYSCTL = {
  VS_CONNTRACK: 'net/ipv4/vs/conntrack',
  VS_CONN_REUSE_MODE: 'net/ipv4/vs/conn_reuse_mode',
  VS_EXPIRE_NODEST_CONN: 'net/ipv4/vs/expire_nodest_conn',
  VS_EXPIRE_QUIESCENT_TEMPLATE: 'net/ipv4/vs/expire_quiescent_template',
  IP_FORWARD: 'net/ipv4/ip_forward',
  ARP_IGNORE: 'net/ipv4/conf/all/arp_ignore',
  ARP_ANNOUNCE: 'net/ipv4/conf/all/arp_announce',
} as const;

/** Reading or writing a sysctl failed; names the sysctl and the errno. */
export class SysctlError extends KubeIpvsError {
  readonly code = 'KIPVS_SYSCTL' as const;
  readonly errnoName: string;
  constructor(
    readonly key: string,
    readonly op: 'read' | 'write',
    readonly errno: number,
    readonly value?: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${op} sysctl ${key}${value === undefined ? '' : ` = ${value}`}: ${errnoName(errno)}` +
        (errno === E.ENOENT ? ' (is the module loaded?)' : ''),
      options,
    );
    this.errnoName = errnoName(errno);
  }
}

/**
 * Kernel parameters under /proc/sys. Keys use slashes, as the path does ("net/ipv4/ip_forward").
 * Implemented over the filesystem (ProcSysctl, with a root directory so tests can use a temp
 * dir) and in memory (FakeSysctl, testkit/kernel/fake-sysctl.ts). Errors are SysctlError with a positive errno: ENOENT for a
 * sysctl that does not exist, EINVAL for a value the kernel refuses, EACCES/EPERM without
 * privilege.
 */
export interface Sysctl {
  /** The value, trimmed of its trailing newline. */
  read(key: string): Promise<string>;
  /** Writes `value` (a newline is not needed). */
  write(key: string, value: string): Promise<void>;
}

/** Throws unless `key` is a sysctl name (dots or slashes, no '..'). */
export function checkKey(key: string): void {
  if (key === '' || key.startsWith('/') || key.split('/').some((p) => p === '' || p === '.' || p === '..')) {
    throw new SysctlError(key, 'read', E.EINVAL);
  }
}

const errnoOf = (e: unknown): number => {
  const n = (e as NodeJS.ErrnoException).errno;
  return typeof n === 'number' ? Math.abs(n) : E.EIO;
};

/** Sysctl over the files under a root (/proc/sys by default). */
export class ProcSysctl implements Sysctl {
  constructor(readonly root = '/proc/sys') {}

  async read(key: string): Promise<string> {
    checkKey(key);
    try {
      return (await readFile(join(this.root, key), 'utf8')).trim();
    } catch (e) {
      throw new SysctlError(key, 'read', errnoOf(e), undefined, { cause: e });
    }
  }

  async write(key: string, value: string): Promise<void> {
    checkKey(key);
    try {
      // flag r+: a sysctl is never created; a missing one is ENOENT as in /proc/sys
      await writeFile(join(this.root, key), `${value}\n`, { flag: 'r+' });
    } catch (e) {
      throw new SysctlError(key, 'write', errnoOf(e), value, { cause: e });
    }
  }
}

/** Sets `key` to `value` only if it differs (kube-proxy's EnsureSysctl). Returns the previous value when it wrote. */
export async function ensureSysctl(
  s: Sysctl,
  key: string,
  value: string,
): Promise<{ changed: boolean; previous: string }> {
  const previous = await s.read(key);
  if (previous === value) return { changed: false, previous };
  await s.write(key, value);
  return { changed: true, previous };
}
