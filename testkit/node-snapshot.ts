/**
 * A node's Service-proxy kernel state, read with the kernel's own tools and normalised
 * (sorted lines, no counters, no comment lines, no ipset hash seed), and the lines two such
 * snapshots do not share: the real kube-proxy beside kube-ipvs (spec/vm/kube-proxy-parity),
 * a node after a migration beside one kube-ipvs programmed from scratch (kube-proxy-migration).
 */
import { readFileSync } from 'node:fs';
import { run, tryRun } from './netns';

/** the surfaces snapshot() always reads (a caller may add more, kube-proxy-cleanup.vm does) */
export type Snapshot = Record<string, string[]> & Record<'ipvs' | 'ipset' | 'kube-ipvs0' | 'sysctls', string[]>;

/** the sysctls kube-proxy (either mode) or kube-ipvs set */
export const PROXY_SYSCTLS = [
  'net/ipv4/vs/conntrack',
  'net/ipv4/vs/conn_reuse_mode',
  'net/ipv4/vs/expire_nodest_conn',
  'net/ipv4/vs/expire_quiescent_template',
  'net/ipv4/ip_forward',
  'net/ipv4/conf/all/arp_ignore',
  'net/ipv4/conf/all/arp_announce',
  'net/ipv4/conf/all/route_localnet',
  'net/ipv4/vs/sloppy_tcp',
];

function readIn(ns: string, cmd: string, args: readonly string[]): string {
  return ns ? run('ip', ['netns', 'exec', ns, cmd, ...args]) : run(cmd, args);
}

/**
 * PROXY_SYSCTLS' values in `ns`: read here when it is the current namespace, else one `cat` of
 * them all there (an exec costs the TCG guest 0.2-0.3 s: nine per snapshot were most of its time)
 */
function readSysctls(ns: string): string[] {
  const files = PROXY_SYSCTLS.map((k) => `/proc/sys/${k}`);
  if (!ns) return files.map((f) => readFileSync(f, 'utf8').trim());
  const values = readIn(ns, 'cat', files).trim().split('\n');
  if (values.length !== files.length)
    throw new Error(`cat of ${files.length} sysctls in ${ns} gave ${values.length} lines`);
  return values;
}

/** A save text as sorted lines, comments and blanks out (and ipset's initval, each set's random hash seed). */
const lines = (text: string) =>
  text
    .replace(/ initval 0x[0-9a-f]+/g, '')
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .sort();

/** snapshot()'s `ipvs` alone (`ipvsadm -Sn`, one exec): to wait on before reading the whole node. */
export function ipvsTable(ns: string): string[] {
  return lines(readIn(ns, 'ipvsadm', ['-Sn']));
}

/** The state in network namespace `ns` ('' for the current one). */
export function snapshot(ns: string): Snapshot {
  const tables = (cmd: string, table: string) =>
    lines(
      readIn(ns, cmd, ['-t', table])
        .replace(/ \[\d+:\d+\]$/gm, '')
        .replace(/^(:\S+ \S+) \[\d+:\d+\]$/gm, '$1'),
    );
  const sysctls = readSysctls(ns).map((v, i) => `${PROXY_SYSCTLS[i]} = ${v}`);
  const addrs = tryRun(
    'ip',
    ns ? ['-n', ns, '-o', 'addr', 'show', 'dev', 'kube-ipvs0'] : ['-o', 'addr', 'show', 'dev', 'kube-ipvs0'],
  );
  return {
    ipvs: ipvsTable(ns),
    ipset: lines(readIn(ns, 'ipset', ['save'])),
    'iptables nat': tables('iptables-save', 'nat'),
    'iptables filter': tables('iptables-save', 'filter'),
    'ip6tables nat': tables('ip6tables-save', 'nat'),
    'ip6tables filter': tables('ip6tables-save', 'filter'),
    'kube-ipvs0': lines(
      addrs.stdout
        .split('\n')
        .map((l) => l.split(/\s+/)[3] ?? '')
        .join('\n'),
    ),
    sysctls,
  };
}

export interface Difference {
  surface: string;
  /** the side that holds the line: `a` is labelled kube-proxy, `b` kube-ipvs */
  side: 'kube-proxy' | 'kube-ipvs';
  line: string;
}

/** The lines only one side holds, per surface; `a` is kube-proxy's side, `b` kube-ipvs's. */
export function differences(a: Snapshot, b: Snapshot): Difference[] {
  const out: Difference[] = [];
  for (const surface of Object.keys(a)) {
    const x = new Set(a[surface]);
    const y = new Set(b[surface]);
    for (const line of x) if (!y.has(line)) out.push({ surface, side: 'kube-proxy', line });
    for (const line of y) if (!x.has(line)) out.push({ surface, side: 'kube-ipvs', line });
  }
  return out;
}
