// What the VM benches share: a node's network namespace as the proxies under test get it, and
// the JSON line each result is written as.
import { appendFileSync } from 'node:fs';
import { connectToLab } from '../../testkit/lab-client';
import { run, tryRun } from '../../testkit/netns';
import { NODE_IP } from './lab-bench-objects';
import type { LogLine, LoggedProcess } from '../../testkit/processes';

/** A fresh network namespace `ns` for one node: routed to the lab (connectToLab `slot`), the node's address on a dummy eth9, lo up. */
export function benchNodeNamespace(ns: string, slot: number): void {
  tryRun('ip', ['netns', 'del', ns]);
  run('ip', ['netns', 'add', ns]);
  connectToLab(ns, slot);
  const x = (...args: string[]) => run('ip', ['-n', ns, ...args]);
  x('link', 'add', 'eth9', 'type', 'dummy');
  x('addr', 'add', `${NODE_IP}/24`, 'dev', 'eth9');
  x('link', 'set', 'eth9', 'up');
  x('link', 'set', 'lo', 'up');
}

/** Prints one result as a JSON line, and appends it to BENCH_OUT when set. */
export function recordLine(fields: Record<string, unknown>): void {
  const line = JSON.stringify(fields);
  console.log(line);
  if (process.env.BENCH_OUT) appendFileSync(process.env.BENCH_OUT, line + '\n');
}

/**
 * Resolves when `proc`'s Service and EndpointSlice caches are synced: kube-ipvs's `informers
 * synced` line, or client-go's "Caches are synced" for kube-proxy's service and endpoint slice
 * configs.
 */
export function cachesSynced(
  side: 'kube-proxy' | 'kube-ipvs',
  proc: LoggedProcess,
  timeoutMs: number,
): Promise<unknown> {
  if (side === 'kube-ipvs')
    return proc.waitFor((l) => l.message === 'informers synced', 'informers synced', 0, timeoutMs);
  const cache = (name: string) =>
    proc.waitFor((l: LogLine) => l.message === 'Caches are synced' && l.controller === name, name, 0, timeoutMs);
  return Promise.all([cache('service config'), cache('endpoint slice config')]);
}
