/**
 * `kube-ipvs service list`, `kube-ipvs status` and `kube-ipvs diff`: the operator views, read
 * from the running daemon's /kube-ipvs/ endpoints (--server, default kube-proxy's
 * metricsBindAddress http://127.0.0.1:10249) with node:http alone: nothing of the daemon (nor
 * @kubernetes/client-node) is loaded. `service list` falls back to the kernel (the IPVS table
 * and the ipsets) when the daemon does not answer, and says so.
 *
 * Exit codes: 0 done; 1 the view could not be had (status/service list); `diff` as diff(1):
 * 0 no changes, 1 changes, 2 trouble; 2 for a bad command line.
 */
import { Command, Option } from 'commander';
import { VirtualServerEntry } from '../../kernel/ipvs/ipvs';
import { IpvsUnavailableError, openIpvs } from '../../kernel/ipvs/ipvs-netlink';
import { ExecIpsetRunner } from '../../kernel/ipset/ipset-restore';
import { parseIpsetSave } from '../../kernel/ipset/ipset-text';
import { ChildProcessExec } from '../../kernel/exec';
import { SetMembers } from '../../model/ipset-claims';
import { DEFAULT_VIEWS_SERVER, DiffResponse, ServiceListResponse, StatusResponse, VIEW_PATHS } from '../../model/views';
import { formatChangeLine } from '../ipvsadm/format-list';
import { formatServiceList } from './format-service-list';
import { formatStatus } from './format-status';
import { kernelServiceList } from './kernel-service-list';
import { DaemonUnreachableError, FetchView, httpFetchView } from './views-client';

interface Writer {
  write(text: string): unknown;
}

/** What the commands reach; tests give a fake daemon and fakes. */
export interface ViewsEnv {
  fetchView(server: string): FetchView;
  /** the IPVS table and the ipsets (`ipset save`), for the fallback; `setsError` when ipset failed */
  readKernel(): Promise<{ entries: VirtualServerEntry[]; sets: SetMembers; setsError?: string }>;
  readonly stdout: Writer;
  readonly stderr: Writer;
  now(): number;
}

/** The real environment: HTTP to the daemon, the kernel's IPVS table, process stdio and clock. */
export function realViewsEnv(): ViewsEnv {
  return {
    fetchView: (server) => httpFetchView(server),
    async readKernel() {
      const ipvs = await openIpvs();
      let entries: VirtualServerEntry[];
      try {
        entries = await ipvs.listAll();
      } finally {
        ipvs.close();
      }
      try {
        return { entries, sets: parseIpsetSave(await new ExecIpsetRunner(new ChildProcessExec()).save()) };
      } catch (e) {
        return { entries, sets: new Map(), setsError: (e as Error).message };
      }
    },
    stdout: process.stdout,
    stderr: process.stderr,
    now: () => Date.now(),
  };
}

const COMMANDS = ['service', 'status', 'diff'] as const;

/** Is argv[0] one of the view commands? */
export function isViewCommand(first: string | undefined): boolean {
  return (COMMANDS as readonly (string | undefined)[]).includes(first);
}

type Output = 'text' | 'json';

const json = (v: unknown) => `${JSON.stringify(v, null, 2)}\n`;

async function serviceList(env: ViewsEnv, server: string, output: Output): Promise<number> {
  let list: ServiceListResponse;
  try {
    list = await env.fetchView(server)<ServiceListResponse>(VIEW_PATHS.services);
  } catch (e) {
    if (!(e instanceof DaemonUnreachableError)) {
      env.stderr.write(`kube-ipvs service list: ${(e as Error).message}\n`);
      return 1;
    }
    let kernel: Awaited<ReturnType<ViewsEnv['readKernel']>>;
    try {
      kernel = await env.readKernel();
    } catch (k) {
      const why = k instanceof IpvsUnavailableError ? k.message : (k as Error).message;
      env.stderr.write(
        `kube-ipvs service list: the daemon does not answer (${e.message}) and the kernel cannot be read: ${why}\n`,
      );
      return 1;
    }
    list = kernelServiceList(kernel.entries, kernel.sets);
    const note =
      `kube-ipvs daemon not reachable (${e.message}): rows from the kernel's IPVS table alone; ` +
      `Service names unknown, types from kube-proxy's ipsets${kernel.setsError ? ` (unavailable: ${kernel.setsError})` : ''}, weight 0 shown as draining`;
    if (output === 'json') env.stderr.write(`${note}\n`);
    else env.stdout.write(`# ${note}\n`);
  }
  env.stdout.write(output === 'json' ? json(list) : formatServiceList(list));
  return 0;
}

async function status(env: ViewsEnv, server: string, output: Output, verbose: boolean): Promise<number> {
  try {
    const s = await env.fetchView(server)<StatusResponse>(VIEW_PATHS.status);
    env.stdout.write(output === 'json' ? json(s) : formatStatus(s, { verbose, now: env.now() }));
    return 0;
  } catch (e) {
    env.stderr.write(`kube-ipvs status: ${(e as Error).message}\n`);
    return 1;
  }
}

async function diff(env: ViewsEnv, server: string, output: Output): Promise<number> {
  let d: DiffResponse;
  try {
    d = await env.fetchView(server)<DiffResponse>(VIEW_PATHS.diff);
  } catch (e) {
    const hint =
      e instanceof DaemonUnreachableError ? ' (the diff needs the running daemon: it holds the desired state)' : '';
    env.stderr.write(`kube-ipvs diff: ${(e as Error).message}${hint}\n`);
    return 2;
  }
  env.stdout.write(output === 'json' ? json(d) : d.changes.map((c) => `${formatChangeLine(c)}\n`).join(''));
  return d.changes.length === 0 ? 0 : 1;
}

/** argv: from the command word on (`service list -o json`, `status --verbose`, `diff`). */
export async function runViews(argv: readonly string[], env: ViewsEnv = realViewsEnv()): Promise<number> {
  let code = 0;
  const server = () => new Option('--server <url>', "the daemon's metrics server").default(DEFAULT_VIEWS_SERVER);
  const output = () => new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text');
  const program = new Command('kube-ipvs')
    .exitOverride()
    .configureOutput({ writeOut: (s) => env.stdout.write(s), writeErr: (s) => env.stderr.write(s) });
  const service = program.command('service').description('Services as kube-ipvs programs them');
  service
    .command('list')
    .description('one row per frontend (virtual server) with its Service and backends')
    .addOption(server())
    .addOption(output())
    .action(async (o: { server: string; output: Output }) => {
      code = await serviceList(env, o.server, o.output);
    });
  program
    .command('status')
    .description('mode, node, devices, features, syncs and counts of the running daemon')
    .addOption(server())
    .addOption(output())
    .option('--verbose', 'also the effective configuration and totals')
    .action(async (o: { server: string; output: Output; verbose?: boolean }) => {
      code = await status(env, o.server, o.output, o.verbose ?? false);
    });
  program
    .command('diff')
    .description(
      'what a full sync would change in the IPVS table now, as ipvsadm commands (changes nothing); exit 1 when something differs',
    )
    .addOption(server())
    .addOption(output())
    .action(async (o: { server: string; output: Output }) => {
      code = await diff(env, o.server, o.output);
    });
  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (e) {
    const exit = (e as { exitCode?: unknown }).exitCode;
    // --help / --version exit 0; any refusal of the command line is 2
    return exit === 0 ? 0 : 2;
  }
  return code;
}
