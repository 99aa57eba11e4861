#!/usr/bin/env -S node --max-semi-space-size=16 --expose-gc
// kube-ipvs command line: `kube-ipvs ipvsadm ...`, `kube-ipvs cleanup ...`, the operator views
// (`kube-ipvs service list`, `status`, `diff`: lib/cli/views), `version` and `help [COMMAND]`,
// or, with anything else, the proxy taking kube-proxy's flags (lib/cli/proxy-command.ts; a
// word there that is no flag is taken as a mistyped command, the nearest one suggested).
// Every flag name but ipvsadm's is normalised as kube-proxy's pflag set does: `_` is `-`.
// `ipvsadm` takes the rest of argv raw and parses it the way ipvsadm does. `--version` on the
// proxy's command line prints the version and exits 0 whatever else is given, as kube-proxy's
// does (the image's /usr/local/bin/kube-proxy is this same entry point: kubeadm's DaemonSet
// runs it by that name).
//
// Each command's modules are loaded only when that command runs: `kube-ipvs ipvsadm -Ln`
// must not pay for the daemon's (winston, commander, YAML, client-node), which took seconds
// of a listing in the VM where every module file is read over 9p.

import { UsageError } from '../errors';
import { normalizeFlagNames } from '../config/flag-names';
import {
  formatVersion,
  nodeSatisfies,
  PackageInfo,
  readPackageInfo,
  VersionRequest,
  versionRequest,
  withoutVersionFlags,
} from './version';

/** Runs the kube-ipvs command line (argv as process.argv) and resolves to the exit code. */
export async function run(argv: readonly string[]): Promise<number> {
  const args = argv.slice(2);
  const pkg = readPackageInfo();
  // under an older Node the daemon dies deep in undici (Node 20: a TypeError at load): say why
  if (!nodeSatisfies(process.version, pkg.nodeRange)) {
    process.stderr.write(
      `kube-ipvs: needs Node ${pkg.nodeRange} (package.json engines); this is Node ${process.version}\n`,
    );
    return 1;
  }
  if (args[0] === 'ipvsadm') {
    const { main: ipvsadmMain } = await import('./ipvsadm/ipvsadm');
    const { openIpvs } = await import('../kernel/ipvs/ipvs-netlink');
    const { readProcText } = await import('../kernel/ipvs/read-proc-ip-vs');
    return ipvsadmMain(args.slice(1), {
      ipvs: () => openIpvs(),
      procIpVs: async () => readProcText(),
      stdout: process.stdout,
      stderr: process.stderr,
      stdin: process.stdin,
    });
  }
  // every other command's flags are named as kube-proxy's are: `_` is `-` (pflag's normalisation)
  return runCommand(normalizeFlagNames(args), pkg);
}

async function runCommand(args: readonly string[], pkg: PackageInfo): Promise<number> {
  if (args[0] === 'cleanup') {
    const { runCleanup } = await import('./cleanup');
    return runCleanup(args.slice(1));
  }
  if (args[0] === 'version' || args[0] === 'help') return runVersionOrHelp(args, pkg);
  const views = await import('./views/views-command');
  if (views.isViewCommand(args[0])) return views.runViews(args);
  // anything else is the proxy itself, with kube-proxy's flags (including `--cleanup`)
  let version: VersionRequest | undefined;
  try {
    version = versionRequest(args);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`kube-ipvs: ${e.message}\nRun 'kube-ipvs --help' for usage.\n`);
    return 2;
  }
  if (version !== undefined) {
    process.stdout.write(formatVersion(pkg, version));
    return 0;
  }
  const { defaultProxyCommandDeps, proxyMain } = await import('./proxy-command');
  return proxyMain(withoutVersionFlags(args), defaultProxyCommandDeps());
}

/**
 * `kube-ipvs version` (as --version) and `kube-ipvs help [COMMAND]` (as --help, or as
 * COMMAND --help).
 */
async function runVersionOrHelp(args: readonly string[], pkg: PackageInfo): Promise<number> {
  const usage = (message: string): number => {
    process.stderr.write(`kube-ipvs: ${message}\nRun 'kube-ipvs --help' for usage.\n`);
    return 2;
  };
  if (args[0] === 'version') {
    if (args.length > 1) return usage(`version takes no arguments, got '${args[1]}'`);
    process.stdout.write(formatVersion(pkg, 'print'));
    return 0;
  }
  const { CLI_COMMANDS, unknownCommandMessage } = await import('./top-help');
  if (args.length > 2) return usage(`help takes one command, got '${args.slice(1).join(' ')}'`);
  const topic = args[1];
  if (topic !== undefined && topic !== 'help' && topic !== 'version') {
    if (!CLI_COMMANDS.some((c) => c.name === topic)) return usage(unknownCommandMessage(topic));
    return runCommand([topic, '--help'], pkg);
  }
  const { defaultProxyCommandDeps, proxyMain } = await import('./proxy-command');
  return proxyMain(['--help'], defaultProxyCommandDeps());
}

if (require.main === module) {
  run(process.argv).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`kube-ipvs: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exitCode = 1;
    },
  );
}
