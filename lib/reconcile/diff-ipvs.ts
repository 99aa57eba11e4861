/**
 * IPVS ops from (current table entry, desired virtual server): the smallest change, as data.
 * Pure. Used per touched virtual server (partial sync: current = what was applied) and for the
 * whole table (full sync: current = the kernel's dump).
 *
 * Graceful termination (kube-proxy graceful_termination.go): a TCP real server that is no
 * longer desired is not deleted but set to weight 0 (draining; the drain check deletes it
 * once its connections are gone); UDP and SCTP real servers are deleted at once (with
 * expire_nodest_conn=1 their flows move on the next packet). A draining real server that is
 * desired again gets its weight back with SET_DEST (no delete+add). A virtual server that is
 * no longer desired is deleted at once, as kube-proxy does.
 */
import { IpvsOp } from '../model/ipvs-op';
import { IPPROTO_TCP } from '../uapi/inet';
import { realServerKey, virtualServerKey } from '../model/ipvs';
import { DesiredVirtualServer } from '../plan/service-plan';
import { IpvsTable, TableEntry, sameRealServerSettings, sameServiceSettings } from './ipvs-table';

/** kube-proxy IsRsGracefulTerminationNeeded: not for UDP and SCTP. */
export function needsGracefulTermination(protocol: number): boolean {
  return protocol === IPPROTO_TCP;
}

/**
 * Ops turning `current` (undefined: absent) into `desired` (undefined: must go), appended to
 * `ops` (a whole table's diff appends every virtual server's to one array: no array per
 * virtual server, 10,000 per full sync at 10,000 Services).
 */
export function diffVirtualServer(
  current: TableEntry | undefined,
  desired: DesiredVirtualServer | undefined,
  ops: IpvsOp[] = [],
): IpvsOp[] {
  if (!desired) {
    if (current) ops.push({ kind: 'delService', vs: current.vs });
    return ops;
  }
  const vs = desired.vs;
  if (!current) {
    ops.push({ kind: 'newService', vs });
    for (const rs of desired.realServers) ops.push({ kind: 'newDest', vs, rs });
    return ops;
  }
  if (!sameServiceSettings(current.vs, vs)) ops.push({ kind: 'setService', vs });
  // the plan's own real servers, as a full check's read or a cold start left them
  if (current.holds(desired.realServers)) return ops;
  let found = 0;
  for (const rs of desired.realServers) {
    const have = current.realServers.get(realServerKey(rs));
    if (!have) ops.push({ kind: 'newDest', vs, rs });
    else {
      found++;
      if (!sameRealServerSettings(have, rs)) ops.push({ kind: 'setDest', vs, rs });
    }
  }
  // desired real servers are one per key (the planner's): when each was found and there are
  // no others, none is left over (the usual case of a full check, 100,000 times at 10,000 x 10)
  if (found === current.size) return ops;
  const wanted = new Set(desired.realServers.map(realServerKey));
  const graceful = needsGracefulTermination(vs.protocol);
  for (const [key, have] of current.realServers) {
    if (wanted.has(key)) continue;
    if (!graceful) ops.push({ kind: 'delDest', vs, rs: have });
    else if (have.weight !== 0) ops.push({ kind: 'setDest', vs, rs: { ...stripConns(have), weight: 0 } });
  }
  return ops;
}

function stripConns<T extends { activeConns?: number; inactConns?: number }>(
  rs: T,
): Omit<T, 'activeConns' | 'inactConns'> {
  const { activeConns: _a, inactConns: _i, ...rest } = rs;
  return rest;
}

/**
 * Ops for a whole table: every desired virtual server, and every current one that `owned`
 * says kube-ipvs owns (foreign services — keepalived's, fwmark ones, excludeCIDRs — are never
 * named). Ops of one virtual server stay together; new services before deletions.
 */
export function diffIpvsTable(
  current: IpvsTable,
  desired: ReadonlyMap<string, DesiredVirtualServer>,
  owned: (entry: TableEntry) => boolean,
): IpvsOp[] {
  const ops: IpvsOp[] = [];
  // forEach, not for-of: no [key, value] array per entry
  desired.forEach((want, key) => void diffVirtualServer(current.get(key), want, ops));
  current.forEach((have, key) => {
    if (!desired.has(key) && owned(have)) diffVirtualServer(have, undefined, ops);
  });
  return ops;
}

/** The virtual server an op is about, as its key. */
export function opVirtualServerKey(op: IpvsOp): string | undefined {
  return 'vs' in op && op.vs ? virtualServerKey(op.vs) : undefined;
}

/** An op as text (for comparing op lists and for logs). */
export function opKey(op: IpvsOp): string {
  const vs = opVirtualServerKey(op) ?? '';
  const rs = 'rs' in op ? ` ${realServerKey(op.rs)} w${'weight' in op.rs ? op.rs.weight : '-'}` : '';
  const sched =
    op.kind === 'newService' || op.kind === 'setService'
      ? ` ${op.vs.scheduler}/${op.vs.flags ?? 0}/${op.vs.timeout ?? 0}`
      : '';
  return `${op.kind} ${vs}${rs}${sched}`;
}

/**
 * Drift: the ops the kernel needs beyond what the tracked state says it needs (`expected`,
 * the diff against what kube-ipvs applied; a config change re-plans everything, and those
 * ops are not drift).
 */
export function driftOps(ops: readonly IpvsOp[], expected: readonly IpvsOp[]): IpvsOp[] {
  const keys = new Set(expected.map(opKey));
  return ops.filter((o) => !keys.has(opKey(o)));
}
