import { spawn } from 'node:child_process';
import { ExecError, ExecTimeoutError } from '../errors';

export { ExecTimeoutError };

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

/** Options of ChildProcessExec. */
export interface ChildProcessExecOptions {
  /** a command still running after this long is killed (SIGKILL); default 5 min */
  readonly timeoutMs?: number;
}

/**
 * A command still running after this long is stuck. Not a minute: `ipset restore` / `ipset save`
 * of a large node took longer than that on a slow (emulated, loaded) machine in `make bench`,
 * and with a minute's limit every full sync timed out and the node never converged.
 */
export const DEFAULT_EXEC_TIMEOUT_MS = 5 * 60_000;

/**
 * The real Execer: child_process.spawn, no shell, stdin written then closed. A command that
 * outlives `timeoutMs` is killed with SIGKILL and rejects with ExecTimeoutError naming it.
 */
export class ChildProcessExec implements Execer {
  readonly timeoutMs: number;
  constructor(opts: ChildProcessExecOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS;
  }

  run(cmd: string, args: readonly string[], stdin?: string): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(cmd, [...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let settled = false;
      const settle = (f: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        f();
      };
      const timer = setTimeout(() => {
        const fail = () =>
          settle(() => reject(new ExecTimeoutError([cmd, ...args].join(' '), this.timeoutMs, child.pid)));
        // settled once the process is gone (reaped), not merely signalled; a process that
        // already exited while a grandchild holds its pipes fails at once
        if (child.exitCode !== null || child.signalCode !== null) return fail();
        child.once('exit', fail);
        child.kill('SIGKILL');
      }, this.timeoutMs);
      child.stdout.on('data', (b: Buffer) => out.push(b));
      child.stderr.on('data', (b: Buffer) => err.push(b));
      child.on('error', (e) => settle(() => reject(e)));
      // EPIPE when the tool exits before reading all of stdin: its exit code tells the story.
      child.stdin.on('error', () => undefined);
      child.on('close', (code) =>
        settle(() =>
          resolve({
            stdout: Buffer.concat(out).toString('utf8'),
            stderr: Buffer.concat(err).toString('utf8'),
            exitCode: code,
          }),
        ),
      );
      child.stdin.end(stdin ?? '');
    });
  }
}

/** How one command ended, for metrics: its program's base name and ok (exit 0) or error. */
export type ExecObservation = { readonly program: string; readonly result: 'ok' | 'error' };

/** An Execer that reports every command it ran (kube_ipvs_execs_total{program,result}). */
export class ObservedExec implements Execer {
  constructor(
    private readonly inner: Execer,
    private readonly observe: (o: ExecObservation) => void,
  ) {}

  async run(cmd: string, args: readonly string[], stdin?: string): Promise<ExecResult> {
    const program = cmd.slice(cmd.lastIndexOf('/') + 1);
    let r: ExecResult;
    try {
      r = await this.inner.run(cmd, args, stdin);
    } catch (e) {
      this.observe({ program, result: 'error' });
      throw e;
    }
    this.observe({ program, result: r.exitCode === 0 ? 'ok' : 'error' });
    return r;
  }
}
