/**
 * Netfilter conntrack entries as kube-ipvs sees them: the two tuples of a flow. Pure data;
 * lib/netlink/conntrack-codec.ts maps it to ctnetlink bytes.
 */
import { IpFamily, addressPort } from './ip-family';
import { IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../uapi/inet';

/** One direction of a flow (canonical addresses; ports 0 for protocols without ports). */
export interface ConntrackTuple {
  readonly src: string;
  readonly dst: string;
  readonly srcPort: number;
  readonly dstPort: number;
}

/** One conntrack entry: the original tuple (as the first packet came) and the reply tuple (after NAT/IPVS). */
export interface ConntrackFlow {
  readonly family: IpFamily;
  /** IPPROTO_* of both tuples */
  readonly protocol: number;
  readonly orig: ConntrackTuple;
  readonly reply: ConntrackTuple;
  /** CTA_ZONE; 0 (the default zone) when the kernel sent none */
  readonly zone: number;
  /** CTA_ID: the kernel's id of this entry; a delete carrying it spares a newer entry with the same tuple */
  readonly id?: number;
}

/** The conntrack protocol number of a Service protocol. */
export const CONNTRACK_PROTOCOL = { TCP: IPPROTO_TCP, UDP: IPPROTO_UDP, SCTP: IPPROTO_SCTP } as const;

/** How logs name a flow: "UDP 10.0.0.1:40000 -> 10.96.0.10:53 (reply 10.244.1.5:53 -> 10.0.0.1:40000)". */
export function describeFlow(f: ConntrackFlow): string {
  const name =
    f.protocol === IPPROTO_UDP
      ? 'UDP'
      : f.protocol === IPPROTO_SCTP
        ? 'SCTP'
        : f.protocol === IPPROTO_TCP
          ? 'TCP'
          : `proto ${f.protocol}`;
  return `${name} ${addressPort(f.orig.src, f.orig.srcPort)} -> ${addressPort(f.orig.dst, f.orig.dstPort)} (reply ${addressPort(f.reply.src, f.reply.srcPort)} -> ${addressPort(f.reply.dst, f.reply.dstPort)})${f.zone ? ` zone ${f.zone}` : ''}`;
}

/** The identity of an entry in the kernel's table: family, protocol, zone and orig tuple (what a delete names). */
export function flowKey(f: ConntrackFlow): string {
  return `${f.family}/${f.protocol}/${f.zone}/${addressPort(f.orig.src, f.orig.srcPort)}>${addressPort(f.orig.dst, f.orig.dstPort)}`;
}

/** KubeProxyConfiguration conntrack.*, as lib/config decodes it and lib/kernel/sysctl applies it. */
export interface ConntrackSettings {
  /** nf_conntrack_max = max(maxPerCore x CPUs, min), raised only; default 32768 */
  readonly maxPerCore: number;
  /** default 131072 */
  readonly min: number;
  /** seconds (truncated, as kube-proxy's int(d / time.Second)); default 24h */
  readonly tcpEstablishedTimeoutSec: number;
  /** seconds; default 1h */
  readonly tcpCloseWaitTimeoutSec: number;
  /** nf_conntrack_tcp_be_liberal=1 when true (false leaves the kernel's value) */
  readonly tcpBeLiberal: boolean;
  /** seconds; 0 (the default) leaves the kernel's value */
  readonly udpTimeoutSec: number;
  readonly udpStreamTimeoutSec: number;
}
