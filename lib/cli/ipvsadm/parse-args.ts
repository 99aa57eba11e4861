// argv -> typed command, the way ipvsadm 1.31 parses it (parse_options + process_options):
// same option table, same order of checks, same messages, same exit codes
// (fail() exits 2; popt errors and "Try `ipvsadm -h'" exit 255, i.e. ipvsadm's -1).
//
// Three parts: the option table (option-table.ts: popt's definitions and one handler per
// option), the parse loop here (first the command, then each option's handler, in argv
// order), and the command builder (build-command.ts: the whole-line checks and the typed
// command). Host names are looked up in a pass before the parse (hostNamesNeeded), so the
// parse itself is synchronous.

import { AF_INET6 } from '../../uapi/inet';
import { buildCommand } from './build-command';
import { CommandName, DEFAULT_FORMAT, Fail, IpvsadmCommand, ParseResult, fail, tryhelp } from './command';
import { inetAton } from './inet';
import { FIRST_COMMANDS, HANDLERS, OPTIONS, ParseState, T, newParseState } from './option-table';
import { HostLookups, hostName, splitService } from './parse-values';
import { PoptContext } from './popt';
import { Resolver } from './resolve-names';

export {
  CommandName,
  DEFAULT_FORMAT,
  DEF_PERSISTENT_TIMEOUT,
  DEF_SCHED,
  IpvsadmCommand,
  ListFormat,
  PROGRAM,
  ParseError,
  ParseResult,
} from './command';
export { OPTIONS } from './option-table';
export { HostLookups } from './parse-values';

/** Options of parseArgs. */
export interface ParseOptions {
  /** as ipvsadm's reading_stdin: lines of -R may not be -R again */
  readonly readingStdin?: boolean;
}

/**
 * Parses ipvsadm arguments (without the program name). Never throws for bad input: returns
 * the message and exit status ipvsadm would give. No arguments means "-L" without -n.
 */
export async function parseArgs(
  argv: readonly string[],
  resolver: Resolver,
  opts: ParseOptions = {},
): Promise<ParseResult> {
  return parseArgsCached(argv, resolver, opts, new Map());
}

/**
 * parseArgs with a look-up cache shared by many calls (the lines of a restore). Synchronous
 * (no promise) when every host name it needs is in `hosts` already, as with numeric addresses.
 */
export function parseArgsCached(
  argv: readonly string[],
  resolver: Resolver,
  opts: ParseOptions,
  hosts: HostLookups,
): ParseResult | Promise<ParseResult> {
  const missing = hostNamesNeeded(argv).filter((name) => !hosts.has(name));
  if (missing.length === 0) return parseOnce(argv, opts, newParseState(resolver, hosts));
  return (async () => {
    for (const name of missing) hosts.set(name, await resolver.hostToIPv4(name));
    return parseOnce(argv, opts, newParseState(resolver, hosts));
  })();
}

/**
 * The host names a parse of argv looks up (gethostbyname), once each, in argv order: the
 * IPv4 host of -t/-u/--sctp-service/-r, and -M's mask unless the service is IPv6 by then.
 * Read with the parse's own popt table and address splitting; it stops where the parse
 * stops before any option (no command first, -h, -v) and at a popt error. A name after an
 * option the parse refuses is still looked up: only the look-ups differ, never the result.
 */
export function hostNamesNeeded(argv: readonly string[]): string[] {
  const names = new Set<string>();
  if (argv.length === 0) return [];
  const ctx = new PoptContext(argv, OPTIONS);
  const first = ctx.nextOpt();
  if (!first || first.type === 'error' || firstCommand(first.key, first.arg) === undefined) return [];
  let v6 = false;
  let fwmark = false;
  for (let ev = ctx.nextOpt(); ev && ev.type === 'option'; ev = ctx.nextOpt()) {
    const arg = ev.arg ?? '';
    switch (ev.key) {
      case 't':
      case 'u':
      case T.SCTP_SERVICE:
      case 'r': {
        const words = splitService(arg);
        const name = words && hostName(words);
        if (name !== undefined) names.add(name);
        if (ev.key !== 'r' && words) v6 = words.af === AF_INET6;
        break;
      }
      case 'f':
        fwmark = true;
        v6 = false;
        break;
      case '6':
        if (fwmark) v6 = true;
        break;
      case 'M':
        if (!v6 && inetAton(arg) === undefined) names.add(arg);
        break;
    }
  }
  return [...names];
}

/** The command the first option names; undefined when it names none (the parse then fails). */
function firstCommand(key: string, arg: string | undefined): CommandName | undefined {
  if (key === T.START_DAEMON || key === T.STOP_DAEMON) {
    return arg === 'master' || arg === 'backup' ? (key === T.START_DAEMON ? 'start-daemon' : 'stop-daemon') : undefined;
  }
  return FIRST_COMMANDS[key];
}

function parseOnce(argv: readonly string[], opts: ParseOptions, st: ParseState): ParseResult {
  try {
    return { ok: true, command: parse(argv, opts, st) };
  } catch (e) {
    if (e instanceof Fail) return { ok: false, ...e.result };
    throw e;
  }
}

/** The parse loop: the first option must be a command, then each option's handler in order. */
function parse(argv: readonly string[], opts: ParseOptions, st: ParseState): IpvsadmCommand {
  if (argv.length === 0) return { kind: 'list-all', format: DEFAULT_FORMAT };
  const ctx = new PoptContext(argv, OPTIONS);
  const first = ctx.nextOpt();
  if (!first || first.type === 'error') tryhelp();
  if (first.key === 'h') return { kind: 'help' };
  if (first.key === 'v') return { kind: 'version' };
  const command = firstCommand(first.key, first.arg);
  if (command === undefined) {
    if (first.key === T.START_DAEMON) fail('illegal start-daemon parameter specified');
    if (first.key === T.STOP_DAEMON) fail('illegal start_daemon specified');
    tryhelp();
  }

  for (let ev = ctx.nextOpt(); ev; ev = ctx.nextOpt()) {
    if (ev.type === 'error') throw new Fail({ stderr: `${ev.word}: ${ev.message}\n`, exitCode: 255 });
    const handler = Object.hasOwn(HANDLERS, ev.key) ? HANDLERS[ev.key] : undefined;
    if (!handler) fail(`invalid option \`${ev.word}'`);
    if (handler.opt) {
      if (st.options.has(handler.opt)) fail(`multiple '${handler.opt}' options specified`);
      st.options.add(handler.opt);
    }
    handler.apply(st, ev.arg ?? '', ev.arg);
  }
  return buildCommand(command, st, ctx.args(), opts.readingStdin === true);
}
