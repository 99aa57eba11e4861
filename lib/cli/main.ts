#!/usr/bin/env node
// kube-ipvs command line: `kube-ipvs ipvsadm ...`, `kube-ipvs cleanup ...`, the operator views
// (`kube-ipvs service list`, `status`, `diff`: lib/cli/views), or, with anything else, the
// proxy taking kube-proxy's flags (lib/cli/proxy-command.ts).
// `ipvsadm` takes the rest of argv raw and parses it the way ipvsadm does.

import { openIpvs } from '../kernel/ipvs/ipvs-netlink';
import { main as ipvsadmMain } from './ipvsadm/ipvsadm';
import { runCleanup } from './cleanup';
import { defaultProxyCommandDeps, proxyMain } from './proxy-command';
import { isViewCommand, runViews } from './views/views-command';

export async function run(argv: readonly string[]): Promise<number> {
  const args = argv.slice(2);
  if (args[0] === 'ipvsadm') {
    return ipvsadmMain(args.slice(1), {
      ipvs: () => openIpvs(),
      stdout: process.stdout,
      stderr: process.stderr,
      stdin: process.stdin,
    });
  }
  if (args[0] === 'cleanup') return runCleanup(args.slice(1));
  if (isViewCommand(args[0])) return runViews(args);
  // anything else is the proxy itself, with kube-proxy's flags (including `--cleanup`)
  return proxyMain(args, defaultProxyCommandDeps());
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
