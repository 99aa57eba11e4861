import { constants as osConstants } from 'node:os';
import { Sysctl, SysctlError, checkKey } from '../../lib/kernel/sysctl/sysctl';

const E = osConstants.errno;

/**
 * In-memory fake. Unknown keys are ENOENT; a non-integer written to an integer sysctl is
 * EINVAL (proc_dointvec); without root (`privileged: false`) every write is EACCES, as the
 * kernel's root-owned 0644 files answer. Records every write.
 */
export class FakeSysctl implements Sysctl {
  private readonly values: Map<string, string>;
  readonly writes: { key: string; value: string }[] = [];

  constructor(
    initial: Readonly<Record<string, string>> = {},
    private readonly options: { readonly privileged?: boolean } = {},
  ) {
    this.values = new Map(Object.entries(initial));
  }

  async read(key: string): Promise<string> {
    checkKey(key);
    const v = this.values.get(key);
    if (v === undefined) throw new SysctlError(key, 'read', E.ENOENT);
    return v;
  }

  async write(key: string, value: string): Promise<void> {
    checkKey(key);
    const cur = this.values.get(key);
    if (cur === undefined) throw new SysctlError(key, 'write', E.ENOENT, value);
    if (this.options.privileged === false) throw new SysctlError(key, 'write', E.EACCES, value);
    const v = value.trim();
    if (/^-?\d+$/.test(cur) && !/^-?\d+$/.test(v)) throw new SysctlError(key, 'write', E.EINVAL, value);
    this.writes.push({ key, value: v });
    this.values.set(key, v);
  }
}
