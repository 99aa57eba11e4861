// -R/--restore: ipvsadm-save text -> one batch of ops.
//
// ipvsadm -R applies each line as it reads it and stops the program at the first line that
// does not parse, leaving the lines before it applied. Here every line is parsed first: one
// bad line means an error naming it, a non-zero exit and nothing applied. Then all changes go
// to the kernel as ONE pipelined batch (Ipvs.run), every refused op is reported.
//
// Lines are split as ipvsadm's config_stream does: on blanks and tabs, no quoting (quotes
// stay part of the word), no comments ("#" is a word and fails as ipvsadm fails on it), and
// empty lines are skipped. Lines must be table changes (-A -E -D -a -e -d -C -Z --set);
// ipvsadm would also run a -L, -S, -h or -v line in the middle of a restore, we refuse them.

import { IpvsOp } from '../../kernel/ipvs/ipvs';
import { CommandName, HostLookups, PROGRAM, parseArgsCached } from './parse-args';
import { parseSaveLine } from './parse-save-line';
import { Resolver } from './resolve-names';

/** One command line of -R input, parsed into its table operation. */
export interface RestoreLine {
  /** 1-based line number in the input */
  readonly lineNo: number;
  readonly text: string;
  readonly command: CommandName;
  readonly op: IpvsOp;
}

/** What a -R parse gives: every line, or the first failure with its line number. */
export type RestoreParse =
  | { readonly ok: true; readonly lines: readonly RestoreLine[] }
  | { readonly ok: false; readonly stderr: string; readonly exitCode: number; readonly lineNo: number };

/** Splits one input line into words as ipvsadm's config_stream_read does. */
export function splitRestoreLine(line: string): string[] {
  const words: string[] = [];
  let start = -1;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 32 || c === 9) {
      if (start >= 0) words.push(line.slice(start, i));
      start = -1;
    } else if (start < 0) start = i;
  }
  if (start >= 0) words.push(line.slice(start));
  return words;
}

const READING_STDIN = { readingStdin: true } as const;

/** Parses a whole ipvsadm-save text; stops at the first bad line. */
export async function parseRestore(text: string, resolver: Resolver): Promise<RestoreParse> {
  const lines: RestoreLine[] = [];
  // each host name is looked up once for the whole text; lines naming none parse synchronously
  const hosts: HostLookups = new Map();
  const raw = text.split('\n');
  if (raw.length > 0 && raw[raw.length - 1] === '') raw.pop();
  for (let i = 0; i < raw.length; i++) {
    const lineNo = i + 1;
    const words = splitRestoreLine(raw[i]!);
    if (words.length === 0) continue;
    const common = parseSaveLine(words);
    if (common) {
      lines.push({ lineNo, text: raw[i]!.trim(), command: common.command, op: common.op });
      continue;
    }
    let r = parseArgsCached(words, resolver, READING_STDIN, hosts);
    if (r instanceof Promise) r = await r;
    const where = (): string => `${PROGRAM}: restore: line ${lineNo}: ${raw[i]!.trim()}\n`;
    if (!r.ok) return { ok: false, stderr: r.stderr + where(), exitCode: r.exitCode, lineNo };
    if (r.command.kind !== 'op') {
      return {
        ok: false,
        stderr: `not a table change (only -A -E -D -a -e -d -C -Z --set lines can be restored)\n${where()}`,
        exitCode: 2,
        lineNo,
      };
    }
    lines.push({ lineNo, text: raw[i]!.trim(), command: r.command.command, op: r.command.op });
  }
  return { ok: true, lines };
}
