// A rolling update of one Service with 100 endpoints, as a Deployment rollout with maxSurge
// 25% and maxUnavailable 25% shows it in the EndpointSlice: each step, a quarter of the old
// pods go terminating and as many new pods are ready; the next step the terminating ones are
// gone. Each step is one API write (into the in-process fake API server); the step ends when the kernel serves exactly the ready
// pods (real servers with weight > 0; a terminating pod's real server drains at weight 0).
import { Ipvs } from '../../lib/kernel/ipvs/ipvs';
import { AF_INET, IPPROTO_TCP } from '../../lib/uapi/inet';
import { realServerKey, VirtualServerId } from '../../lib/model/ipvs';
import { FakeApiServer, FakeObject } from '../../testkit/fake-apiserver';
import { LoggedProcess } from '../../testkit/processes';
import { endpointSlice, service, SliceEndpoint } from './daemon-fixtures';
import { syncsIn, total } from './sync-log';

export const ROLLOUT_SERVICE = 'rollout';
export const ROLLOUT_CLUSTER_IP = '10.97.0.1';
const PODS = 100;
const STEP = 25;
const oldPod = (n: number) => `10.250.0.${n + 1}`;
const newPod = (n: number) => `10.250.1.${n + 1}`;

/** The rollout Service and its slice before the rollout (100 old pods ready), for the fixtures. */
export function rolloutObjects(): FakeObject[] {
  return [
    service(ROLLOUT_SERVICE, ROLLOUT_CLUSTER_IP),
    endpointSlice(
      ROLLOUT_SERVICE,
      Array.from({ length: PODS }, (_, n) => ({ address: oldPod(n) })),
    ),
  ];
}

/** Step s (1..PODS/STEP + 1): old pods [0, STEP*(s-1)) gone, [STEP*(s-1), STEP*s) terminating, the rest ready; new pods [0, STEP*s) ready. */
function stepEndpoints(s: number): SliceEndpoint[] {
  const out: SliceEndpoint[] = [];
  for (let n = STEP * (s - 1); n < PODS; n++)
    out.push({ address: oldPod(n), state: n < STEP * s ? 'terminating' : 'ready' });
  for (let n = 0; n < Math.min(PODS, STEP * s); n++) out.push({ address: newPod(n) });
  return out;
}

export interface RolloutResult {
  readonly steps: number;
  /** per step, API write -> kernel serving exactly the ready pods */
  readonly stepMs: number[];
  readonly totalMs: number;
  readonly ipvsWrites: number;
  readonly execs: number;
}

export async function runRollout(server: FakeApiServer, daemon: LoggedProcess, ipvs: Ipvs): Promise<RolloutResult> {
  const vs: VirtualServerId = { af: AF_INET, protocol: IPPROTO_TCP, address: ROLLOUT_CLUSTER_IP, port: 80, fwmark: 0 };
  const from = daemon.lines.length;
  const stepMs: number[] = [];
  const steps = PODS / STEP + 1;
  for (let s = 1; s <= steps; s++) {
    const eps = stepEndpoints(s);
    const want = new Set(eps.filter((e) => e.state !== 'terminating').map((e) => `${e.address}:8080`));
    const start = Date.now();
    server.update(endpointSlice(ROLLOUT_SERVICE, eps));
    for (;;) {
      const serving = (await ipvs.listRealServers(vs)).filter((d) => d.weight > 0).map(realServerKey);
      if (serving.length === want.size && serving.every((r) => want.has(r))) break;
      if (Date.now() - start > 120_000)
        throw new Error(
          `rollout step ${s}: the kernel serves ${serving.length} real servers, not the ${want.size} ready pods, after 120 s`,
        );
      await new Promise((r) => setTimeout(r, 5));
    }
    stepMs.push(Date.now() - start);
  }
  // the log line of the last step's sync comes after its kernel change
  await daemon.waitFor((l) => l.message === 'sync done' && (l.ipvsWrites as number) > 0, 'the last rollout sync', from);
  await new Promise((r) => setTimeout(r, 500));
  const syncs = syncsIn(daemon.lines.slice(from));
  return {
    steps,
    stepMs,
    totalMs: stepMs.reduce((a, b) => a + b, 0),
    ipvsWrites: total(syncs, 'ipvsWrites'),
    execs: total(syncs, 'execs'),
  };
}
