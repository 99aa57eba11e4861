/** The real Iptables: iptables(-nft|-legacy)-save / -restore through an Execer. */
import { componentLog } from '../../log';
import { ChildProcessExec, Execer, checkExec } from '../exec';
import { detectBackend, iptablesBinary } from './detect-backend';
import { Iptables, IptablesBackend, IptablesBackendMode, IptablesRunner } from './iptables';
import { GenerationPeers, IptablesSync } from './iptables-sync';
import { RulesetGeneration } from './nft-generation';
import { IpFamily } from '../../model/ip-family';
import { Table } from '../../model/names';

/** kube-proxy pkg/util/iptables: wait up to 5 s for the xtables lock, polling every 100 ms. */
export const RESTORE_ARGS = ['--noflush', '-w', '5', '-W', '100000'] as const;

/** "Error occurred at line: 3" (legacy and nft parse errors) or "line 3 failed" / "line 3: ..." */
export function iptablesErrorLine(stderr: string): number | undefined {
  const m = /Error occurred at line: (\d+)/.exec(stderr) ?? /\bline (\d+)(?: failed|:)/.exec(stderr);
  return m ? Number(m[1]) : undefined;
}

/** Options of ExecIptablesRunner: the family, backend, exec, and nf_tables generation. */
export interface ExecIptablesOptions {
  readonly family: IpFamily;
  /** default 'auto' */
  readonly backend?: IptablesBackendMode;
  readonly exec?: Execer;
  /**
   * The nf_tables generation (nft-generation.ts), shared by both families: used only when the
   * backend is nft, to skip the periodic verify's saves while nobody committed anything.
   */
  readonly generation?: RulesetGeneration;
  /** the other families' IptablesSync of this network namespace (one GenerationPeers for all) */
  readonly peers?: GenerationPeers;
}

/** Runs iptables-save / iptables-restore for one family, the backend detected on first use. */
export class ExecIptablesRunner implements IptablesRunner {
  readonly family: IpFamily;
  private chosen: Promise<IptablesBackend> | undefined;
  private readonly exec: Execer;
  private readonly mode: IptablesBackendMode;

  constructor(opts: ExecIptablesOptions) {
    this.family = opts.family;
    this.exec = opts.exec ?? new ChildProcessExec();
    this.mode = opts.backend ?? 'auto';
  }

  /** Decided once per instance, and logged; a detection that failed is tried again on the next call. */
  backend(): Promise<IptablesBackend> {
    this.chosen ??= (async () => {
      const log = componentLog('iptables');
      if (this.mode !== 'auto') {
        log.info(`iptables backend ${this.mode} (${this.family}): set by configuration`, {
          backend: this.mode,
          family: this.family,
        });
        return this.mode;
      }
      const d = await detectBackend(this.exec, this.family);
      log.info(`iptables backend ${d.backend} (${this.family}): ${d.reason}`, {
        backend: d.backend,
        family: this.family,
        reason: d.reason,
      });
      return d.backend;
    })();
    const chosen = this.chosen;
    chosen.catch(() => {
      if (this.chosen === chosen) this.chosen = undefined;
    });
    return chosen;
  }

  async save(table: Table | 'mangle'): Promise<string> {
    const bin = iptablesBinary(this.family, await this.backend(), 'save');
    const args = ['-t', table];
    return checkExec(bin, args, await this.exec.run(bin, args)).stdout;
  }

  async restore(text: string): Promise<void> {
    const bin = iptablesBinary(this.family, await this.backend(), 'restore');
    checkExec(bin, RESTORE_ARGS, await this.exec.run(bin, RESTORE_ARGS, text), iptablesErrorLine);
  }
}

/** The production Iptables for one family. */
export function createIptables(opts: ExecIptablesOptions): Iptables {
  return new IptablesSync(new ExecIptablesRunner(opts), {
    ...(opts.generation ? { generation: opts.generation } : {}),
    ...(opts.peers ? { peers: opts.peers } : {}),
  });
}
