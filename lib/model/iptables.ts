/**
 * kube-proxy IPVS-mode iptables vocabulary (K8S pkg/proxy/ipvs/proxier.go `iptablesJumpChain`,
 * `iptablesChains`): the jump rules, the KUBE-* chains per table, and the shape of a family's
 * rules (IptablesPlan) that plan/iptables.ts computes and kernel/iptables applies. Pure data.
 */
import { IpFamily } from './ip-family';
import { BuiltinChain, BuiltinChainName, Chain, ChainName, Table } from './names';

/** A rule in a built-in chain that sends traffic into a KUBE-* chain. */
export interface JumpRule {
  readonly table: Table;
  readonly from: BuiltinChainName;
  readonly to: ChainName;
  readonly comment: string;
}

/** kube-proxy `iptablesJumpChain`, in its order (each is prepended with `-I`, in this order). */
export const JUMP_RULES: readonly JumpRule[] = [
  { table: 'nat', from: BuiltinChain.OUTPUT, to: Chain.SERVICES, comment: 'kubernetes service portals' },
  { table: 'nat', from: BuiltinChain.PREROUTING, to: Chain.SERVICES, comment: 'kubernetes service portals' },
  { table: 'nat', from: BuiltinChain.POSTROUTING, to: Chain.POSTROUTING, comment: 'kubernetes postrouting rules' },
  { table: 'filter', from: BuiltinChain.FORWARD, to: Chain.FORWARD, comment: 'kubernetes forwarding rules' },
  { table: 'filter', from: BuiltinChain.INPUT, to: Chain.NODE_PORT, comment: 'kubernetes health check rules' },
  { table: 'filter', from: BuiltinChain.INPUT, to: Chain.PROXY_FIREWALL, comment: 'kube-proxy firewall rules' },
  { table: 'filter', from: BuiltinChain.FORWARD, to: Chain.PROXY_FIREWALL, comment: 'kube-proxy firewall rules' },
  { table: 'filter', from: BuiltinChain.INPUT, to: Chain.IPVS_FILTER, comment: 'kubernetes ipvs access filter' },
  { table: 'filter', from: BuiltinChain.OUTPUT, to: Chain.IPVS_OUT_FILTER, comment: 'kubernetes ipvs access filter' },
];

/** kube-proxy `iptablesChains`: declared (so flushed and rewritten) in every restore, in this order. */
export const KUBE_CHAINS: { readonly [T in Table]: readonly ChainName[] } = {
  nat: [Chain.SERVICES, Chain.POSTROUTING, Chain.NODE_PORT, Chain.LOAD_BALANCER, Chain.MARK_MASQ],
  filter: [Chain.FORWARD, Chain.NODE_PORT, Chain.PROXY_FIREWALL, Chain.SOURCE_RANGES_FIREWALL, Chain.IPVS_FILTER, Chain.IPVS_OUT_FILTER],
};

/** The rules of one table: chains declared, then `-A ...` lines. */
export interface TableRules {
  readonly chains: readonly ChainName[];
  readonly rules: readonly string[];
}

export interface IptablesPlan {
  readonly family: IpFamily;
  readonly jumps: readonly JumpRule[];
  readonly nat: TableRules;
  readonly filter: TableRules;
}

/** The match of a jump rule, as written after `-I <from> ` / `-A <from> `. */
export function jumpRuleSpec(j: JumpRule): string {
  return `-m comment --comment "${j.comment}" -j ${j.to}`;
}
