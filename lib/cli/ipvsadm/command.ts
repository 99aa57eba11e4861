// What a parse of ipvsadm arguments gives (parse-args.ts): the typed command, or the refusal
// ipvsadm would print with its exit status (fail() exits 2; popt errors and "Try `ipvsadm -h'"
// exit 255, i.e. ipvsadm's -1).

import { IpvsOp } from '../../kernel/ipvs/ipvs';
import { VirtualServerId } from '../../model/ipvs';

/** The program name ipvsadm prints in its messages (argv[0]). */
export const PROGRAM = 'ipvsadm';
/** DEF_SCHED: the scheduler a new virtual server gets without -s (ipvsadm.c). */
export const DEF_SCHED = 'wlc';
/** IPVS_SVC_PERSISTENT_TIMEOUT (libipvs.h): 6 minutes */
export const DEF_PERSISTENT_TIMEOUT = 360;

/** Which listing, as ipvsadm's FMT_* bits. */
export interface ListFormat {
  readonly numeric: boolean;
  readonly stats: boolean;
  readonly rate: boolean;
  readonly thresholds: boolean;
  readonly persistentConn: boolean;
  readonly nosort: boolean;
  readonly exact: boolean;
  readonly tunInfo: boolean;
  /** -S/--save (FMT_RULE) */
  readonly rule: boolean;
}

/** The listing format with no listing option given. */
export const DEFAULT_FORMAT: ListFormat = Object.freeze({
  numeric: false,
  stats: false,
  rate: false,
  thresholds: false,
  persistentConn: false,
  nosort: false,
  exact: false,
  tunInfo: false,
  rule: false,
});

/** ipvsadm's command names (cmdnames[]), also used to choose kernel error messages */
export type CommandName =
  | 'add-service'
  | 'edit-service'
  | 'delete-service'
  | 'flush'
  | 'list'
  | 'add-server'
  | 'delete-server'
  | 'edit-server'
  | 'set'
  | 'start-daemon'
  | 'stop-daemon'
  | 'restore'
  | 'save'
  | 'zero';

/** One parsed ipvsadm command line: a listing, save/restore, help/version, or a table change. */
export type IpvsadmCommand =
  | { readonly kind: 'list-all'; readonly format: ListFormat }
  | { readonly kind: 'list-service'; readonly format: ListFormat; readonly vs: VirtualServerId }
  | { readonly kind: 'list-timeout' }
  | { readonly kind: 'list-daemon' }
  | { readonly kind: 'list-connections'; readonly format: ListFormat }
  | { readonly kind: 'save'; readonly format: ListFormat }
  | { readonly kind: 'restore' }
  | { readonly kind: 'help' }
  | { readonly kind: 'version' }
  | { readonly kind: 'daemon'; readonly command: 'start-daemon' | 'stop-daemon' }
  /** one change of the table: -A -E -D -a -e -d -C -Z --set */
  | { readonly kind: 'op'; readonly command: CommandName; readonly op: IpvsOp };

/** A refusal, with what ipvsadm prints and its exit status. */
export interface ParseError {
  readonly stderr: string;
  readonly stdout?: string;
  readonly exitCode: number;
}

/** What parseArgs returns: the command, or the message and exit status ipvsadm would give. */
export type ParseResult =
  { readonly ok: true; readonly command: IpvsadmCommand } | ({ readonly ok: false } & ParseError);

/** Thrown inside a parse; parseArgs turns it into its ParseResult. */
export class Fail extends Error {
  constructor(readonly result: ParseError) {
    super(result.stderr);
  }
}

/** ipvsadm's fail(2, ...) */
export function fail(message: string): never {
  throw new Fail({ stderr: `${message}\n`, exitCode: 2 });
}

/** ipvsadm's tryhelp_exit(): "Try `ipvsadm -h'..." and exit status 255. */
export function tryhelp(): never {
  throw new Fail({ stderr: `Try \`${PROGRAM} -h' or '${PROGRAM} --help' for more information.\n`, exitCode: 255 });
}
