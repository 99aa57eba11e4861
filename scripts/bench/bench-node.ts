// What the VM benches share: a node's network namespace as the proxies under test get it, and
// the JSON line each result is written as.
import { appendFileSync } from 'node:fs';
import { connectToLab } from '../../testkit/lab-client';
import { run, tryRun } from '../../testkit/netns';
import { NODE_IP } from './lab-bench-objects';

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
