/** The real Ipset: the `ipset` binary through an Execer. */
import { ChildProcessExec, Execer, checkExec } from '../exec';
import { Ipset, IpsetRunner } from './ipset';
import { ipsetErrorLine } from './ipset-text';
import { IpsetSync, WarnLogger } from './ipset-sync';

export const IPSET_BIN = 'ipset';

/** `ipset save` / `ipset restore -exist` (stdin). Errors: ExecError with the blamed line. */
export class ExecIpsetRunner implements IpsetRunner {
  constructor(private readonly exec: Execer, private readonly bin: string = IPSET_BIN) {}

  async save(): Promise<string> {
    const args = ['save'];
    return checkExec(this.bin, args, await this.exec.run(this.bin, args)).stdout;
  }

  async restore(text: string): Promise<void> {
    const args = ['restore', '-exist'];
    checkExec(this.bin, args, await this.exec.run(this.bin, args, text), ipsetErrorLine);
  }
}

/** The production Ipset. `log` receives the quarantine notices (default: the "ipset" component log). */
export function createIpset(exec: Execer = new ChildProcessExec(), bin: string = IPSET_BIN, log?: WarnLogger): Ipset {
  return new IpsetSync(new ExecIpsetRunner(exec, bin), log);
}
