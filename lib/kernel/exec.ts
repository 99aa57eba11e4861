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

/** One recorded call. */
export interface ExecCall {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly stdin: string | undefined;
}

/** Wraps an Execer and records every call (benchmarks and VM tests count execs with it). */
export class CountingExec implements Execer {
  readonly calls: ExecCall[] = [];
  constructor(private readonly inner: Execer) {}
  run(cmd: string, args: readonly string[], stdin?: string): Promise<ExecResult> {
    this.calls.push({ cmd, args: [...args], stdin });
    return this.inner.run(cmd, args, stdin);
  }
  /** Number of calls so far; `reset()` starts a new count. */
  get count(): number {
    return this.calls.length;
  }
  reset(): void {
    this.calls.length = 0;
  }
}

/** One expected call of a ScriptedExec and the answer it gets. */
export interface ExpectedExec {
  readonly cmd: string;
  readonly args: readonly string[];
  /** exact stdin; a function to check it; omitted = stdin must be empty or absent */
  readonly stdin?: string | ((stdin: string) => void);
  readonly stdout?: string;
  readonly stderr?: string;
  /** default 0 */
  readonly exitCode?: number | null;
}

/**
 * Execer for unit tests: answers a fixed script of calls, in order. Fails (rejects with a
 * message naming expected and actual) on any unexpected call; `assertDone()` fails when
 * expected calls were never made.
 */
export class ScriptedExec implements Execer {
  readonly calls: ExecCall[] = [];
  private next = 0;
  constructor(private readonly script: readonly ExpectedExec[]) {}

  async run(cmd: string, args: readonly string[], stdin?: string): Promise<ExecResult> {
    const actual = [cmd, ...args].join(' ');
    this.calls.push({ cmd, args: [...args], stdin });
    const exp = this.script[this.next];
    if (!exp) throw new Error(`ScriptedExec: unexpected call #${this.next + 1}: ${actual}`);
    const expected = [exp.cmd, ...exp.args].join(' ');
    if (exp.cmd !== cmd || exp.args.length !== args.length || exp.args.some((a, i) => a !== args[i])) {
      throw new Error(`ScriptedExec: call #${this.next + 1}: expected "${expected}", got "${actual}"`);
    }
    if (typeof exp.stdin === 'function') {
      exp.stdin(stdin ?? '');
    } else if ((exp.stdin ?? '') !== (stdin ?? '')) {
      throw new Error(
        `ScriptedExec: call #${this.next + 1} (${actual}): stdin differs\n--- expected\n${exp.stdin ?? ''}\n--- got\n${stdin ?? ''}`,
      );
    }
    this.next++;
    return { stdout: exp.stdout ?? '', stderr: exp.stderr ?? '', exitCode: exp.exitCode === undefined ? 0 : exp.exitCode };
  }

  /** Throws when some expected calls were not made. */
  assertDone(): void {
    if (this.next < this.script.length) {
      const left = this.script.slice(this.next).map((e) => [e.cmd, ...e.args].join(' '));
      throw new Error(`ScriptedExec: ${left.length} expected call(s) never made: ${left.join('; ')}`);
    }
  }
}
