import { spawn } from 'node:child_process';
import { ExecError } from '../errors';

/** What a finished child process left behind. `exitCode` is null when a signal killed it. */
export interface ExecResult {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number | null;
}

/**
 * Runs one external command (ipset, iptables-restore, ...). Never throws for a non-zero exit:
 * callers decide (see `checkExec`). Rejects only when the command cannot be started at all.
 */
export interface Execer {
  run(cmd: string, args: readonly string[], stdin?: string): Promise<ExecResult>;
}

/** Throws ExecError (with `line` when `lineOf` finds one in stderr) unless the exit code is 0. */
export function checkExec(
  cmd: string,
  args: readonly string[],
  r: ExecResult,
  lineOf?: (stderr: string) => number | undefined,
): ExecResult {
  if (r.exitCode === 0) return r;
  throw new ExecError([cmd, ...args].join(' '), r.exitCode, r.stderr, lineOf?.(r.stderr));
}

/** The real Execer: child_process.spawn, no shell, stdin written then closed. */
export class ChildProcessExec implements Execer {
  run(cmd: string, args: readonly string[], stdin?: string): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(cmd, [...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', reject);
      // EPIPE when the tool exits before reading all of stdin: its exit code tells the story.
      child.stdin.on('error', () => undefined);
      child.on('close', (code) =>
        resolve({
          stdout: Buffer.concat(out).toString('utf8'),
          stderr: Buffer.concat(err).toString('utf8'),
          exitCode: code,
        }),
      );
      child.stdin.end(stdin ?? '');
    });
  }
}
