#!/usr/bin/env node
// kube-ipvs command line: `kube-ipvs <subcommand> ...`.
// `ipvsadm` takes the rest of argv raw and parses it the way ipvsadm does, so it is
// dispatched before commander (whose option parsing would get in the way).

import { Command } from 'commander';
import { openIpvs } from '../kernel/ipvs/ipvs-netlink';
import { main as ipvsadmMain } from './ipvsadm/ipvsadm';
import { runCleanup } from './cleanup';

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
  // `kube-ipvs cleanup`, and kube-proxy's `--cleanup` flag among its other flags
  if (args[0] === 'cleanup') return runCleanup(args.slice(1));
  if (args.includes('--cleanup')) return runCleanup(args);
  let code = 0;
  const program = new Command('kube-ipvs')
    .description('A drop-in replacement for kube-proxy --proxy-mode=ipvs')
    .exitOverride();
  program
    .command('ipvsadm')
    .description('ipvsadm 1.31 compatible view and control of the IPVS table (arguments as ipvsadm takes them)')
    .allowUnknownOption()
    .helpOption(false)
    .argument('[args...]');
  program
    .command('cleanup')
    .description('remove IPVS services, kube-ipvs0, KUBE-* chains and sets (kube-proxy --cleanup)')
    .allowUnknownOption()
    .argument('[args...]');
  try {
    await program.parseAsync([...argv]);
  } catch (e) {
    code = typeof (e as { exitCode?: unknown }).exitCode === 'number' ? (e as { exitCode: number }).exitCode : 1;
  }
  return code;
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
