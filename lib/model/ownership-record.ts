/**
 * kube-ipvs's ownership record, one set per family (KUBE-IPVS-OWNED, KUBE-6-IPVS-OWNED): a
 * hash:ip,port set created with `comment`, one member per virtual server kube-ipvs programmed
 * (`10.96.0.10,tcp:80`), its comment what it programmed there: `rr/0x0000/0` (scheduler, flags,
 * persistence timeout). While an edit is in flight the comment names both states
 * (`rr/0x0000/0|wlc/0x0000/0`): a SIGKILL between the record's write and the kernel's change
 * leaves a record true of either kernel state. So a restart tells kube-ipvs's own virtual
 * server from one another program made later at the same ip:port (a stale record), and one
 * it created from one a tenant's Service merely names. Pure: the life cycle (record before
 * create, forget after delete) is proxier/ownership-record.ts; the rule reading it is
 * model/ipset-claims.ts.
 */
import { VirtualServer, VirtualServerSpec } from './ipvs';

/** What kube-ipvs programmed on one virtual server, as its record says. */
export interface RecordedState {
  readonly scheduler: string;
  /** IP_VS_SVC_F_* (without HASHED) */
  readonly flags: number;
  /** persistence timeout, seconds */
  readonly timeout: number;
}

/** The record's maxelem is never below kube-proxy's default for its sets. */
const RECORD_MIN_MAXELEM = 65536;

/** The state a spec programs (or a kernel virtual server holds). */
export function recordedStateOf(vs: Pick<VirtualServerSpec, 'scheduler' | 'flags' | 'timeout'>): RecordedState {
  return { scheduler: vs.scheduler, flags: vs.flags ?? 0, timeout: vs.timeout ?? 0 };
}

function formatOne(s: RecordedState): string {
  return `${s.scheduler}/0x${s.flags.toString(16).padStart(4, '0')}/${s.timeout}`;
}

/** The comment for these states (deduplicated, in order): `rr/0x0000/0|wlc/0x0000/0`. */
export function formatRecordedStates(states: readonly RecordedState[]): string {
  return [...new Set(states.map(formatOne))].join('|');
}

const ONE = /^([a-z]{1,15})\/0x([0-9a-f]{1,8})\/(\d{1,10})$/;

/** The states a comment names; undefined when it is not one kube-ipvs writes. */
export function parseRecordedStates(comment: string): RecordedState[] | undefined {
  const out: RecordedState[] = [];
  for (const part of comment.split('|')) {
    const m = ONE.exec(part);
    if (!m) return undefined;
    out.push({ scheduler: m[1]!, flags: parseInt(m[2]!, 16), timeout: Number(m[3]) });
  }
  return out.length > 0 ? out : undefined;
}

/**
 * Whether a record member's comment is true of the kernel's virtual server: 'match' (one of its
 * states is what the kernel holds), 'legacy' (no comment: a record an earlier kube-ipvs wrote,
 * which said only the ip:port), or the states it names when none matches.
 */
export function checkRecord(
  comment: string | undefined,
  vs: Pick<VirtualServer, 'scheduler' | 'flags' | 'timeout'>,
): 'match' | 'legacy' | { readonly recorded: string } {
  if (comment === undefined || comment === '') return 'legacy';
  const states = parseRecordedStates(comment);
  if (states?.some((s) => s.scheduler === vs.scheduler && s.flags === vs.flags && s.timeout === vs.timeout))
    return 'match';
  return { recorded: comment };
}

/** The record's maxelem for `entries` members: room to double, never below RECORD_MIN_MAXELEM. */
export function recordMaxelem(entries: number): number {
  let m = RECORD_MIN_MAXELEM;
  while (m < entries * 2) m *= 2;
  return m;
}
