// The churn benchmark's load: endpoint updates at a fixed rate across random Services, written
// into a fake API server in this process (an HTTP client in the TCG guest could not send
// 1,000/s). Each update replaces endpoint 0 of a Service (a pod replaced) and carries
// endpoints.kubernetes.io/last-change-trigger-time (its write time). The Services come from a
// fixed-seed generator: every run, and both sides of the bench (the daemon, daemon-churn.ts,
// and kube-proxy's pattern, peer-churn.ts), change the same Services in the same order.
import { FakeApiServer } from '../../testkit/fake-apiserver';
import { benchSlice } from './daemon-fixtures';

export interface ChurnWrite {
  /** the Service's index (benchServiceName(service)) */
  readonly service: number;
  /** the change's number: endpoint 0 became replacementIP(gen) */
  readonly gen: number;
  /** when it was written into the API server (Date.now()), also its trigger time */
  readonly atMs: number;
}

export interface ChurnLoad {
  readonly server: FakeApiServer;
  readonly services: number;
  readonly endpoints: number;
  /** updates per second */
  readonly rate: number;
  readonly seconds: number;
  /** change numbers start here (replacementIP of each must differ from the earlier changes') */
  readonly firstGen: number;
  /** after each write (a cheap intake for a peer in this process) */
  readonly onWrite?: (w: ChurnWrite) => void;
}

export interface ChurnWritten {
  readonly updates: number;
  readonly startMs: number;
  readonly lastWriteAtMs: number;
  /** from the start to the last write */
  readonly seconds: number;
}

/** The fixed-seed sequence of Service indexes in [0, services). */
export function churnServices(services: number): () => number {
  let seed = 12345;
  return () => Math.floor(((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000) * services);
}

/** The change number `gen` maps into replacementIP's range (1..65535). */
export const churnGen = (firstGen: number, n: number): number => ((firstGen + n) % 65535) + 1;

/** Writes o.rate updates a second for o.seconds: every write due by now, then a 1 ms yield. */
export async function generateChurn(o: ChurnLoad): Promise<ChurnWritten> {
  const next = churnServices(o.services);
  let sent = 0;
  const startMs = Date.now();
  const end = startMs + o.seconds * 1000;
  for (let now = startMs; now < end; now = Date.now()) {
    // every write due by now, then yield (the watch streams to the daemon meanwhile, or the
    // peer's sync loop runs)
    const due = Math.floor(((now - startMs) * o.rate) / 1000);
    for (; sent < due; sent++) {
      const service = next();
      const gen = churnGen(o.firstGen, sent);
      const at = new Date();
      o.server.update(benchSlice(service, o.endpoints, gen, at));
      o.onWrite?.({ service, gen, atMs: at.getTime() });
    }
    await new Promise((r) => setTimeout(r, 1));
  }
  const lastWriteAtMs = Date.now();
  return { updates: sent, startMs, lastWriteAtMs, seconds: (lastWriteAtMs - startMs) / 1000 };
}
