import { ExecResult, Execer } from '../lib/kernel/exec';
import { ExecCall } from './counting-exec';

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
    return {
      stdout: exp.stdout ?? '',
      stderr: exp.stderr ?? '',
      exitCode: exp.exitCode === undefined ? 0 : exp.exitCode,
    };
  }

  /** Throws when some expected calls were not made. */
  assertDone(): void {
    if (this.next < this.script.length) {
      const left = this.script.slice(this.next).map((e) => [e.cmd, ...e.args].join(' '));
      throw new Error(`ScriptedExec: ${left.length} expected call(s) never made: ${left.join('; ')}`);
    }
  }
}
