/**
 * Two service ports claiming one virtual server (ip:port): which one keeps it. Pure.
 *
 * The rank follows who may pick the address: a ClusterIP and a NodePort are allocated by the
 * API server (unique in the cluster); a load-balancer IP is written in status by a controller;
 * an externalIP is whatever the Service's author typed (CVE-2020-8554). So a ClusterIP outranks
 * a NodePort, which outranks a load-balancer IP, which outranks an externalIP; then the older
 * Service (metadata.creationTimestamp; none counts as newest) keeps it, so a newcomer never
 * takes over an address in use; then the ServicePortKey (namespace/name:port/family) order.
 * Every part is a property of the claim, never of arrival order: the winner is the same on
 * every sync and after a restart.
 */
import type { ServicePort, ServicePortKey } from '../model/service';
import type { FrontendType } from '../model/views';

const KIND_RANK: Readonly<Record<FrontendType, number>> = { ClusterIP: 0, NodePort: 1, LoadBalancer: 2, ExternalIP: 3 };

/** One service port's claim on a frontend address:port: what it has there, and its age. */
export interface Claim {
  readonly key: ServicePortKey;
  /** what the service port has at this address:port */
  readonly kind: FrontendType;
  /** creationTimestamp in ms; Infinity when unknown */
  readonly createdAt: number;
}

/**
 * The claim `key` makes with the frontend `kind` that produced it (the planner says which:
 * DesiredVirtualServer.kind), never guessed from the address or port: an externalIP on another
 * Service's LB IP at a port equal to its own nodePort is an ExternalIP, not a NodePort.
 */
export function claimOf(key: ServicePortKey, sp: ServicePort | undefined, kind: FrontendType): Claim {
  const ms = sp?.creationTimestamp !== undefined ? Date.parse(sp.creationTimestamp) : NaN;
  return { key, kind, createdAt: Number.isNaN(ms) ? Infinity : ms };
}

/** < 0 when `a` keeps the virtual server over `b`. */
export function compareClaims(a: Claim, b: Claim): number {
  const kind = KIND_RANK[a.kind] - KIND_RANK[b.kind];
  if (kind !== 0) return kind;
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** Why `winner` keeps the virtual server over `loser`, in words for a log line and an Event. */
export function whyWins(winner: Claim, loser: Claim): string {
  if (winner.kind !== loser.kind)
    return `${article(winner.kind)} ${winner.kind} outranks ${article(loser.kind)} ${loser.kind}`;
  if (winner.createdAt !== loser.createdAt)
    return `both are ${winner.kind}s and ${serviceOf(winner.key)} is the older Service`;
  return `both are ${winner.kind}s of the same age and ${winner.key} comes first by name`;
}

function article(kind: FrontendType): string {
  return kind === 'ExternalIP' ? 'an' : 'a';
}

function serviceOf(key: ServicePortKey): string {
  return key.slice(0, key.indexOf(':'));
}
