/** The real Ipset: the `ipset` binary through an Execer (and the sets read over netlink, when given). */
import { ChildProcessExec, Execer, checkExec } from '../exec';
import { Ipset, IpsetRunner, IpsetState } from './ipset';
import { ipsetErrorLine } from './ipset-text';
import { IpsetSync, WarnLogger } from './ipset-sync';

/** The ipset binary ExecIpsetRunner runs unless told another. */
export const IPSET_BIN = 'ipset';

/**
 * `ipset save` / `ipset restore -exist` (stdin). Errors: ExecError with the blamed line.
 * With `list` (listIpsets of ipset-netlink.ts in production), observe reads without a process.
 */
export class ExecIpsetRunner implements IpsetRunner {
  readonly list?: () => Promise<IpsetState>;

  constructor(
    private readonly exec: Execer,
    private readonly bin: string = IPSET_BIN,
    list?: () => Promise<IpsetState>,
  ) {
    if (list) this.list = list;
  }

  async save(): Promise<string> {
    const args = ['save'];
    return checkExec(this.bin, args, await this.exec.run(this.bin, args)).stdout;
  }

  async restore(text: string): Promise<void> {
    const args = ['restore', '-exist'];
    checkExec(this.bin, args, await this.exec.run(this.bin, args, text), ipsetErrorLine);
  }
}

/**
 * The production Ipset. `log` receives the quarantine notices (default: the "ipset" component
 * log); `list` reads the sets without a process (the daemon passes listIpsets).
 */
export function createIpset(
  exec: Execer = new ChildProcessExec(),
  bin: string = IPSET_BIN,
  log?: WarnLogger,
  list?: () => Promise<IpsetState>,
): Ipset {
  return new IpsetSync(new ExecIpsetRunner(exec, bin, list), log);
}
