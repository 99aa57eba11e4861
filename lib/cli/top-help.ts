import { Command } from 'commander';

/**
 * `kube-ipvs --help`: every command main.ts dispatches, then the proxy's own flags (kube-proxy's,
 * from lib/config/proxy-flags.ts). Each command has its own --help; this is the one place an
 * operator learns they exist.
 */

/** The subcommands lib/cli/main.ts dispatches on argv[0], as a user types them. */
export const CLI_COMMANDS: readonly { readonly name: string; readonly usage: string; readonly summary: string }[] = [
  {
    name: 'service',
    usage: 'kube-ipvs service list',
    summary: "one row per virtual server with its Service and backends (the daemon's, else the kernel's)",
  },
  {
    name: 'status',
    usage: 'kube-ipvs status [--verbose]',
    summary: "the running daemon's mode, node, features, syncs and counts",
  },
  {
    name: 'diff',
    usage: 'kube-ipvs diff',
    summary: 'what a full sync would change in the IPVS table now, as ipvsadm commands',
  },
  {
    name: 'ipvsadm',
    usage: 'kube-ipvs ipvsadm ARGS',
    summary: "ipvsadm 1.31's command line and output (-Ln, -Sn, -A/-a, ...)",
  },
  {
    name: 'cleanup',
    usage: 'kube-ipvs cleanup',
    summary: 'remove what kube-proxy (IPVS mode) or kube-ipvs left in the kernel (kube-proxy --cleanup)',
  },
  { name: 'version', usage: 'kube-ipvs version', summary: 'print the version and exit (as --version)' },
  { name: 'help', usage: 'kube-ipvs help [COMMAND]', summary: "this help, or COMMAND's own (as COMMAND --help)" },
];

/**
 * What to say of a word on the proxy's command line that is no flag (kube-proxy takes no
 * arguments): commander's "unknown command" with its nearest-command suggestion over
 * CLI_COMMANDS (`services` -> "(Did you mean service?)"), or, for a command given after a
 * flag, that it must come first.
 */
export function unknownCommandMessage(word: string): string {
  const program = new Command('kube-ipvs')
    .exitOverride()
    .showSuggestionAfterError()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  for (const c of CLI_COMMANDS) program.command(c.name).allowUnknownOption().allowExcessArguments();
  try {
    program.parse([word], { from: 'user' });
  } catch (e) {
    const { code, message } = e as { code?: string; message?: string };
    if (code === 'commander.unknownCommand' && message) return message.replace(/^error: /, '');
    throw e;
  }
  return `'${word}' is a command: give it first (kube-ipvs ${word} ...), before any flag`;
}

/** The kube-ipvs --help text: the commands, then the proxy's flags. */
export function formatTopHelp(proxyHelp: string): string {
  const width = Math.max(...CLI_COMMANDS.map((c) => c.usage.length));
  return [
    'Usage: kube-ipvs [kube-proxy flags]     the proxy (kube-proxy --proxy-mode=ipvs)',
    '       kube-ipvs COMMAND [ARGS]         (COMMAND --help for its own)',
    '       kube-ipvs --version              print the version and exit',
    '',
    'Commands:',
    ...CLI_COMMANDS.map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    '',
    // the proxy's help opens with commander's own "Usage:" line, said above already
    proxyHelp.replace(/^Usage: .*\n+/, ''),
  ].join('\n');
}
