/**
 * Fault injection for the crash tests (spec/vm/ownership-crash.vm.test.ts): with
 * KUBE_IPVS_FAULT_KILL_AT=N in its environment the daemon SIGKILLs itself just before the Nth
 * ordered kernel write of its life (ownership record writes and IPVS batches, counted from 1),
 * after one stderr line naming it. A crash at every step, not a sleep. Unset (always, outside
 * those tests): nothing happens but a counter.
 */
const killAt = Number(process.env['KUBE_IPVS_FAULT_KILL_AT'] ?? 0);
let step = 0;

/** One ordered kernel write is about to happen (`what` names it in the stderr line). */
export function faultPoint(what: string): void {
  if (!(killAt > 0)) return;
  step++;
  if (step !== killAt) return;
  process.stderr.write(`KUBE_IPVS_FAULT_KILL_AT=${killAt}: killed before ${what}\n`);
  process.kill(process.pid, 'SIGKILL');
}
