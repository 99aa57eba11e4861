import { ExecResult, Execer } from '../lib/kernel/exec';

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
