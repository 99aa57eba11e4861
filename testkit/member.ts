import { ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';

/** A supervised process (the lab's, the node's): its command line (kept for a restart) and its log file. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether process `pid` is still there. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export class Member {
  child: ChildProcess | undefined;
  constructor(
    readonly name: string,
    readonly cmd: string,
    readonly args: readonly string[],
    readonly logFile: string,
  ) {}

  start(): void {
    const log = fs.openSync(this.logFile, 'a');
    this.child = spawn(this.cmd, this.args, { stdio: ['ignore', log, log] });
    fs.closeSync(log);
    const child = this.child;
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      console.log(`${this.name} exited (${code ?? signal})`);
    });
  }

  /** SIGTERM, then SIGKILL if it has not exited after `graceMs`; resolves once it has exited. */
  async stop(graceMs = 30_000): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(t);
  }

  get running(): boolean {
    return this.child !== undefined;
  }
}
