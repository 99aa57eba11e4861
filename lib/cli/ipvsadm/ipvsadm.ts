// `kube-ipvs ipvsadm ...`: ipvsadm 1.31's command line over the Ipvs interface.
// main(argv, deps) -> exit status; output is written to deps.stdout / deps.stderr only.

import { constants as osConstants } from 'node:os';
import { getSystemErrorMessage } from 'node:util';
import { NetlinkError } from '../../errors';
import { Ipvs, VirtualServerEntry } from '../../kernel/ipvs/ipvs';
import { listAllViaProc } from '../../kernel/ipvs/list-via-proc';
import { AddressFamily } from '../../model/ipvs';
import { formatListAll, formatListService, formatTimeouts } from './format-list';
import { CommandName, ListFormat, PROGRAM, parseArgs } from './parse-args';
import { RestoreLine, parseRestore } from './restore';
import type { IpvsadmCommand } from './command';
import { Names, Resolver, SystemResolver } from './resolve-names';
import { USAGE, VERSION_LINE } from './usage';

const E = osConstants.errno;

/** Where ipvsadm writes its output (process.stdout / process.stderr fit). */
export interface TextSink {
  write(chunk: string): unknown;
}

/** Name look-ups for parsing host[:port] and for listings without -n. */
export interface NameService extends Resolver {
  names(addresses: Iterable<{ af: AddressFamily; address: string }>): Promise<Names>;
}

/** What the ipvsadm command runs against: the IPVS table, stdio, name look-ups, /proc. */
export interface IpvsadmDeps {
  /** the table, or how to open it (opened only when a command needs the kernel) */
  readonly ipvs: Ipvs | (() => Promise<Ipvs>);
  readonly stdout: TextSink;
  readonly stderr: TextSink;
  /** read by -R */
  readonly stdin: AsyncIterable<string | Buffer>;
  readonly names?: NameService;
  /**
   * reads /proc/net/ip_vs: -L/-S listings that show nothing /proc lacks take the real servers
   * from it (one read) instead of one netlink dump per service (kernel/ipvs/list-via-proc.ts);
   * without it every listing is netlink only
   */
  readonly procIpVs?: () => Promise<string>;
}

/** Exit statuses as ipvsadm's: fail() 2, a refused kernel request -1 (255), a failed listing 1. */
export const EXIT = { OK: 0, LIST_FAILED: 1, USAGE: 2, KERNEL: 255 } as const;

type StrerrorFunc = CommandName | 'get-services' | 'get-dests' | 'get-service';

/** libipvs' ipvs_strerror(): per-function messages first, then generic ones, then strerror(). */
export function ipvsStrerror(func: StrerrorFunc, errno: number): string {
  const table: ReadonlyArray<readonly [StrerrorFunc | undefined, number, string]> = [
    ['add-service', E.EEXIST, 'Service already exists'],
    ['add-service', E.ENOENT, 'Scheduler or persistence engine not found'],
    ['edit-service', E.ESRCH, 'No such service'],
    ['edit-service', E.ENOENT, 'Scheduler or persistence engine not found'],
    ['delete-service', E.ESRCH, 'No such service'],
    ['zero', E.ESRCH, 'No such service'],
    ['add-server', E.ESRCH, 'Service not defined'],
    ['add-server', E.EEXIST, 'Destination already exists'],
    ['edit-server', E.ESRCH, 'Service not defined'],
    ['edit-server', E.ENOENT, 'No such destination'],
    ['delete-server', E.ESRCH, 'Service not defined'],
    ['delete-server', E.ENOENT, 'No such destination'],
    ['start-daemon', E.EEXIST, 'Daemon has already run'],
    ['stop-daemon', E.ESRCH, 'No daemon is running'],
    ['get-services', E.ESRCH, 'No such service'],
    ['get-dests', E.ESRCH, 'No such service'],
    ['get-service', E.ESRCH, 'No such service'],
    [undefined, E.EPERM, 'Permission denied (you must be root)'],
    [undefined, E.EINVAL, 'Invalid operation.  Possibly wrong module version, address not unicast, ...'],
    [undefined, E.ENOPROTOOPT, 'Protocol not available'],
    [undefined, E.ENOMEM, 'Memory allocation problem'],
    [undefined, E.EOPNOTSUPP, 'Operation not supported with IPv6'],
    [undefined, E.EAFNOSUPPORT, 'Operation not supported with specified address family'],
    [undefined, E.EMSGSIZE, 'Module is wrong version'],
  ];
  for (const [f, err, msg] of table) if ((f === undefined || f === func) && err === errno) return msg;
  try {
    return getSystemErrorMessage(-errno);
  } catch {
    return `Unknown error ${errno}`;
  }
}

function errorText(func: StrerrorFunc, e: unknown): string {
  if (e instanceof NetlinkError) return ipvsStrerror(func, e.errno);
  return e instanceof Error ? e.message : String(e);
}

async function readAll(stdin: AsyncIterable<string | Buffer>): Promise<string> {
  const parts: string[] = [];
  for await (const chunk of stdin) parts.push(typeof chunk === 'string' ? chunk : chunk.toString('utf8'));
  return parts.join('');
}

function addressesOf(entries: readonly VirtualServerEntry[]): { af: AddressFamily; address: string }[] {
  const out: { af: AddressFamily; address: string }[] = [];
  for (const e of entries) {
    if (!e.vs.fwmark) out.push({ af: e.vs.af, address: e.vs.address });
    for (const d of e.dests) out.push({ af: d.af, address: d.address });
  }
  return out;
}

/** Runs one ipvsadm command line (argv without the program name); returns the exit status. */
export async function main(argv: readonly string[], deps: IpvsadmDeps): Promise<number> {
  const names = deps.names ?? new SystemResolver();
  const { stdout, stderr } = deps;
  const parsed = await parseArgs(argv, names);
  if (!parsed.ok) {
    if (parsed.stdout) stdout.write(parsed.stdout);
    stderr.write(parsed.stderr);
    return parsed.exitCode;
  }
  const cmd = parsed.command;
  if (cmd.kind === 'help') {
    stdout.write(USAGE);
    return EXIT.OK;
  }
  if (cmd.kind === 'version') {
    stdout.write(`${VERSION_LINE}\n`);
    return EXIT.OK;
  }
  if (cmd.kind === 'daemon' || cmd.kind === 'list-daemon' || cmd.kind === 'list-connections')
    return unsupported(cmd, stderr);

  // the restore text is checked completely before the kernel is touched
  let restore: Awaited<ReturnType<typeof parseRestore>> | undefined;
  if (cmd.kind === 'restore') {
    restore = await parseRestore(await readAll(deps.stdin), names);
    if (!restore.ok) {
      stderr.write(restore.stderr);
      return restore.exitCode;
    }
  }

  let ipvs: Ipvs;
  const opened = typeof deps.ipvs === 'function';
  try {
    ipvs = typeof deps.ipvs === 'function' ? await deps.ipvs() : deps.ipvs;
  } catch (e) {
    stderr.write(
      `Can't initialize ipvs: ${e instanceof Error ? e.message : String(e)}\n` +
        'Are you sure that IP Virtual Server is built in the kernel or as module?\n',
    );
    return EXIT.USAGE;
  }
  try {
    switch (cmd.kind) {
      case 'list-all':
      case 'save':
        return await listAll(ipvs, cmd.format, names, stdout, stderr, deps.procIpVs);
      case 'list-service':
        return await listService(ipvs, cmd, names, stdout, stderr);
      case 'list-timeout':
        try {
          stdout.write(formatTimeouts(await ipvs.timeouts()));
          return EXIT.OK;
        } catch (e) {
          stderr.write(`${errorText('list', e)}\n`);
          return EXIT.LIST_FAILED;
        }
      case 'op':
        try {
          await ipvs.apply(cmd.op);
          return EXIT.OK;
        } catch (e) {
          stderr.write(`${errorText(cmd.command, e)}\n`);
          return EXIT.KERNEL;
        }
      case 'restore':
        return await runRestore(ipvs, restore!.ok ? restore!.lines : [], stderr);
    }
    return assertNever(cmd);
  } finally {
    if (opened) ipvs.close();
  }
}

/** ipvsadm's sync daemon and connection listing: not kube-ipvs's (a usage error). */
function unsupported(
  cmd: Extract<IpvsadmCommand, { kind: 'daemon' | 'list-daemon' | 'list-connections' }>,
  stderr: IpvsadmDeps['stderr'],
): number {
  const what = cmd.kind === 'daemon' ? `--${cmd.command}` : cmd.kind === 'list-daemon' ? '--daemon' : '-c/--connection';
  stderr.write(`${PROGRAM}: ${what} is not supported by kube-ipvs\n`);
  return EXIT.USAGE;
}

/** `ipvsadm -R`: the checked lines in one run; each line the kernel refused named on stderr. */
async function runRestore(ipvs: Ipvs, lines: readonly RestoreLine[], stderr: IpvsadmDeps['stderr']): Promise<number> {
  if (lines.length === 0) return EXIT.OK;
  const results = await ipvs.run(lines.map((l) => l.op));
  let failed = 0;
  results.forEach((r, i) => {
    if (r.ok) return;
    failed++;
    const l = lines[i]!;
    stderr.write(
      `${PROGRAM}: restore: line ${l.lineNo}: ${ipvsStrerror(l.command, r.error.errno)} (${r.error.message})\n`,
    );
  });
  return failed ? EXIT.KERNEL : EXIT.OK;
}

function assertNever(x: never): never {
  throw new Error(`unhandled command ${JSON.stringify(x)}`);
}

/** Listings that show only what /proc/net/ip_vs has for a real server (see list-via-proc.ts). */
export function procCanList(format: ListFormat): boolean {
  return !format.stats && !format.rate && !format.thresholds && !format.persistentConn;
}

async function listAll(
  ipvs: Ipvs,
  format: ListFormat,
  names: NameService,
  stdout: TextSink,
  stderr: TextSink,
  procIpVs: (() => Promise<string>) | undefined,
): Promise<number> {
  let text: string;
  try {
    const { info, entries } =
      procIpVs && procCanList(format)
        ? await listAllViaProc(ipvs, procIpVs, { tunnelDetails: format.rule || format.tunInfo })
        : await Promise.all([ipvs.info(), ipvs.listAll()]).then(([info, entries]) => ({ info, entries }));
    const n = format.numeric ? undefined : await names.names(addressesOf(entries));
    text = formatListAll(info, entries, format, n);
  } catch (e) {
    stderr.write(`${errorText('get-services', e)}\n`);
    return EXIT.LIST_FAILED;
  }
  stdout.write(text);
  return EXIT.OK;
}

async function listService(
  ipvs: Ipvs,
  cmd: { readonly format: ListFormat; readonly vs: Parameters<Ipvs['getService']>[0] },
  names: NameService,
  stdout: TextSink,
  stderr: TextSink,
): Promise<number> {
  let text: string;
  try {
    const vs = await ipvs.getService(cmd.vs);
    const dests = await ipvs.listRealServers(vs);
    const entry = { vs, dests };
    const n = cmd.format.numeric ? undefined : await names.names(addressesOf([entry]));
    text = formatListService(entry, cmd.format, n);
  } catch (e) {
    stderr.write(`${errorText('get-service', e)}\n`);
    return EXIT.LIST_FAILED;
  }
  stdout.write(text);
  return EXIT.OK;
}
