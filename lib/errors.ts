import { getSystemErrorName } from 'node:util';
import { constants as osConstants } from 'node:os';

const E = osConstants.errno;

/** Base of every error kube-ipvs raises on purpose. `code` is the stable contract; messages may change. */
export abstract class KubeIpvsError extends Error {
  abstract readonly code: `KIPVS_${string}`;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Name of a positive kernel errno ("ENOENT"), or "errno N" when unknown. */
export function errnoName(errno: number): string {
  // libuv names 95 ENOTSUP (glibc's alias); the kernel, iproute2 and ipvsadm say EOPNOTSUPP
  if (errno === E.EOPNOTSUPP) return 'EOPNOTSUPP';
  try {
    return getSystemErrorName(-errno);
  } catch {
    return `errno ${errno}`;
  }
}

/**
 * The kernel refused a netlink request. `operation` and `object` say what was asked
 * ("add virtual server", "TCP 10.96.0.10:80"), `errno` is positive.
 */
export class NetlinkError extends KubeIpvsError {
  readonly code = 'KIPVS_NETLINK' as const;
  readonly errnoName: string;
  constructor(
    readonly errno: number,
    readonly operation: string,
    readonly object: string,
    readonly reason: string,
    readonly extack?: string,
    readonly opIndex?: number,
  ) {
    super(`${operation}${object ? ' ' + object : ''}: ${reason}${extack ? ` [${extack}]` : ''} (${errnoName(errno)})`);
    this.errnoName = errnoName(errno);
  }
}

/** Bytes from the kernel (or a golden file) that do not parse. */
export class DecodeError extends KubeIpvsError {
  readonly code = 'KIPVS_DECODE' as const;
  constructor(
    message: string,
    readonly path: string,
    readonly offset: number,
  ) {
    super(`decode ${path} at offset ${offset}: ${message}`);
  }
}

/** The netlink socket itself failed (send error, receive overrun, closed, timeout). */
export class SocketError extends KubeIpvsError {
  readonly code = 'KIPVS_SOCKET' as const;
  constructor(
    message: string,
    readonly errno?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A netlink request got no answer in time (`timeoutMs` without a message for it). Its sequence
 * number is forgotten, so a late answer is ignored.
 */
export class NetlinkTimeoutError extends KubeIpvsError {
  readonly code = 'KIPVS_NETLINK_TIMEOUT' as const;
  constructor(
    message: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * `e` with the operation named in front of its message when it is a socket failure or a
 * timeout (the socket layer cannot know what its caller was doing); anything else unchanged.
 * Every netlink surface rethrows through it: `throw withOperation(e, 'dump ipsets')`.
 */
export function withOperation(e: unknown, what: string): unknown {
  if (e instanceof SocketError) return new SocketError(`${what}: ${e.message}`, e.errno, { cause: e });
  if (e instanceof NetlinkTimeoutError)
    return new NetlinkTimeoutError(`${what}: ${e.message}`, e.timeoutMs, { cause: e });
  return e;
}

/** Bad command-line usage or bad input text; CLIs exit 2 (ipvsadm exits 2 for parse errors too). */
export class UsageError extends KubeIpvsError {
  readonly code = 'KIPVS_USAGE' as const;
}

/**
 * A word on the proxy's command line that is no flag and no flag's value (`kube-ipvs services
 * list`): kube-proxy takes no arguments, so it is most likely a mistyped command.
 */
export class UnexpectedArgumentError extends UsageError {
  constructor(
    readonly argument: string,
    options?: { cause?: unknown },
  ) {
    super(`unexpected argument '${argument}'`, options);
  }
}

/**
 * A child process (ipset, iptables-restore, ...) failed. `line` is the 1-based line of the
 * restore input the tool blamed, when it named one.
 */
export class ExecError extends KubeIpvsError {
  readonly code = 'KIPVS_EXEC' as const;
  constructor(
    readonly cmd: string,
    readonly exitCode: number | null,
    readonly stderr: string,
    readonly line?: number,
  ) {
    super(
      `${cmd} failed (exit ${exitCode ?? 'signal'}${line !== undefined ? `, line ${line}` : ''}): ${stderr.trim()}`,
    );
  }
}

/** A child process did not exit within its time limit and was killed (SIGKILL). */
export class ExecTimeoutError extends KubeIpvsError {
  readonly code = 'KIPVS_EXEC_TIMEOUT' as const;
  constructor(
    /** the command line, "iptables-nft-restore --noflush -w 5 -W 100000" */
    readonly cmd: string,
    readonly timeoutMs: number,
    /** the process killed */
    readonly pid?: number,
  ) {
    super(`${cmd}: no exit after ${timeoutMs} ms; killed (SIGKILL)`);
  }
}

/**
 * An ipset kube-ipvs manages exists with another type (or family) than wanted. Never resolved
 * silently: destroying it could break whoever made it.
 */
export class IpsetTypeMismatchError extends KubeIpvsError {
  readonly code = 'KIPVS_IPSET_TYPE_MISMATCH' as const;
  constructor(
    readonly setName: string,
    readonly existing: string,
    readonly wanted: string,
  ) {
    super(
      `ipset ${setName} exists as ${existing}, kube-ipvs needs ${wanted}; destroy it by hand (ipset destroy ${setName}) if it is stale`,
    );
  }
}

/**
 * The kernel refused a netlink request with one of `errnos` (positive). The one errno
 * predicate every surface builds its own (isNoDevice, isNotFound, ...) from: errno, never text.
 */
export function hasErrno(e: unknown, ...errnos: number[]): e is NetlinkError {
  return e instanceof NetlinkError && errnos.includes(e.errno);
}

/** The object already exists (EEXIST). */
export const isExists = (e: unknown): boolean => hasErrno(e, E.EEXIST);
/** The object is not there: a missing virtual server is ESRCH, a missing real server ENOENT. */
export const isNotFound = (e: unknown): boolean => hasErrno(e, E.ESRCH, E.ENOENT);
/** The caller lacks CAP_NET_ADMIN. */
export const isPermission = (e: unknown): boolean => hasErrno(e, E.EPERM);

/**
 * The errno of `e` or of an error in its cause chain when it is EPERM or EACCES: a NetlinkError's
 * or SocketError's, a SysctlError's, a Node system error's (negative errno, its code). The errno
 * the kernel gave, never the text.
 */
export function privilegeErrno(e: unknown): 'EPERM' | 'EACCES' | undefined {
  for (let x: unknown = e, depth = 0; x instanceof Error && depth < 8; x = x.cause, depth++) {
    const errno = (x as { errno?: unknown }).errno;
    const n = typeof errno === 'number' ? Math.abs(errno) : undefined;
    if (n === E.EPERM) return 'EPERM';
    if (n === E.EACCES) return 'EACCES';
  }
  return undefined;
}

/**
 * The process lacks the privilege the kernel asked for (EPERM or EACCES): kube-ipvs, like
 * kube-proxy, runs as root (privileged: true in the DaemonSet). One line says so and what it
 * needed; the command exits 1.
 */
export class NeedsRootError extends KubeIpvsError {
  readonly code = 'KIPVS_NEEDS_ROOT' as const;
  constructor(
    /** what it needed root for: "the IPVS table", "--init-only's conntrack sysctls" */
    readonly what: string,
    readonly errnoName: 'EPERM' | 'EACCES',
    options?: { cause?: unknown },
  ) {
    const first = options?.cause instanceof Error ? options.cause.message : '';
    super(`kube-ipvs needs root (CAP_NET_ADMIN) for ${what}${first ? `: ${first}` : ` (${errnoName})`}`, options);
  }
}

/** `e` as a NeedsRootError naming `what` when the kernel refused it for want of privilege; else undefined. */
export function asNeedsRoot(e: unknown, what: string): NeedsRootError | undefined {
  const errno = privilegeErrno(e);
  return errno === undefined ? undefined : new NeedsRootError(what, errno, { cause: e });
}

/**
 * A KubeProxyConfiguration file or a kube-proxy flag has a value kube-ipvs cannot run with.
 * `field` is the field path (`ipvs.scheduler`) or the flag (`--ipvs-scheduler`); the message
 * names both the field and the offending value. The proxy exits 1 without touching the kernel.
 */
export class ConfigError extends KubeIpvsError {
  readonly code = 'KIPVS_CONFIG' as const;
  /**
   * @param detail what is wrong, naming the value
   * @param options.source the file the field was read from, when it came from one
   */
  constructor(
    readonly field: string,
    readonly detail: string,
    options?: { cause?: unknown; source?: string },
  ) {
    super([options?.source, field, detail].filter((p) => p).join(': '), options);
    this.source = options?.source;
  }
  readonly source: string | undefined;
}

/**
 * An ipset member helper (model/ipset.ts entry*) was given a value ipset cannot hold: not an
 * address, a port out of range, an unknown protocol, mixed families, ... `entry` is the member
 * as it was asked for (JSON-quoted in the message when it holds odd characters).
 */
export class InvalidIpsetEntryError extends KubeIpvsError {
  readonly code = 'KIPVS_INVALID_IPSET_ENTRY' as const;
  constructor(
    readonly entry: string,
    readonly reason: string,
  ) {
    super(`invalid ipset entry ${quoteIfOdd(entry)}: ${reason}`);
  }
}

/**
 * A planner input that would reach iptables rule text is not what its field must be (an
 * address, a CIDR, a port, an interface name). `field` names it: "lbOutFilter[2].lbIP".
 */
export class InvalidPlanInputError extends KubeIpvsError {
  readonly code = 'KIPVS_INVALID_PLAN_INPUT' as const;
  constructor(
    readonly field: string,
    readonly value: string,
    readonly reason: string,
  ) {
    super(`${field} ${quoteIfOdd(value)}: ${reason}`);
  }
}

/**
 * The iptables rule writer was handed a rule that is not one safe line (a newline, a control
 * character, an unbalanced quote): nothing is written.
 */
export class UnsafeRuleTextError extends KubeIpvsError {
  readonly code = 'KIPVS_UNSAFE_RULE_TEXT' as const;
  constructor(
    readonly rule: string,
    readonly reason: string,
  ) {
    super(`refusing to write iptables rule ${JSON.stringify(rule)}: ${reason}`);
  }
}

/** The value as is when it is plain printable text, else JSON-quoted (newlines, spaces, ...). */
export function quoteIfOdd(value: string): string {
  return /^[\x21-\x7e]+$/.test(value) ? value : JSON.stringify(value);
}

/**
 * A request to the API server got no answer: the connection was refused, the name did not
 * resolve, TLS failed. The message is client-go's: `Get "URL": dial tcp HOST:PORT: connect:
 * connection refused`, the URL and the cause on one line.
 */
export class ApiConnectionError extends KubeIpvsError {
  readonly code = 'KIPVS_API_CONNECTION' as const;
  constructor(
    /** "GET" */
    readonly method: string,
    readonly url: string,
    /** what went wrong, in Go's words: "dial tcp 10.0.0.1:6443: connect: connection refused" */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    const verb = method.charAt(0).toUpperCase() + method.slice(1).toLowerCase();
    super(`${verb} "${url}": ${reason}`, options);
  }
}

/** A view (service list, status, diff) asked of a daemon that has not listed Services and EndpointSlices yet. */
export class NotSyncedError extends KubeIpvsError {
  readonly code = 'KIPVS_NOT_SYNCED' as const;
}

/**
 * An object whose JSON does not have the API's shape where the proxy reads it (a list that is
 * not a list, a null element, a number for a string): refused whole, nothing of it is used.
 */
export class MalformedObjectError extends KubeIpvsError {
  readonly code = 'KIPVS_MALFORMED_OBJECT' as const;
  constructor(
    readonly field: string,
    readonly value: string,
    readonly reason: string,
  ) {
    super(`${field || '(object)'}: ${reason}`);
  }
}
