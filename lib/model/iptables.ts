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
  filter: [
    Chain.FORWARD,
    Chain.NODE_PORT,
    Chain.PROXY_FIREWALL,
    Chain.SOURCE_RANGES_FIREWALL,
    Chain.IPVS_FILTER,
    Chain.IPVS_OUT_FILTER,
  ],
};

/** The rules of one table: chains declared, then `-A ...` lines. */
export interface TableRules {
  readonly chains: readonly ChainName[];
  readonly rules: readonly string[];
}

/** The iptables rules of one family: the jump rules and the nat and filter tables' chains. */
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

/** iptables mode's canary chain, also in the mangle table (kube-proxy's cleanup deletes it there too) */
export const IPTABLES_MODE_CANARY = 'KUBE-PROXY-CANARY';
/**
 * What kube-proxy's iptables mode (K8S pkg/proxy/iptables/proxier.go) leaves that IPVS mode
 * never writes: its own chains per table (nat KUBE-SERVICES, KUBE-POSTROUTING and
 * KUBE-MARK-MASQ, and filter KUBE-FORWARD and KUBE-PROXY-FIREWALL, are IPVS mode's too, and
 * are rewritten by the first sync), its per-Service chains (`isServiceChainName`), and its
 * jump into the shared KUBE-PROXY-FIREWALL under another comment. Left in place after a switch
 * to IPVS, filter KUBE-SERVICES and KUBE-EXTERNAL-SERVICES keep REJECTing every Service that
 * had no endpoints at the switch, for good, whatever endpoints it gets later.
 */
export const IPTABLES_MODE_CHAINS: { readonly [T in Table]: readonly string[] } = {
  nat: ['KUBE-NODEPORTS', IPTABLES_MODE_CANARY],
  filter: ['KUBE-SERVICES', 'KUBE-EXTERNAL-SERVICES', 'KUBE-NODEPORTS', IPTABLES_MODE_CANARY],
};
/** nat: KUBE-SVC-/SVL- (per Service), KUBE-SEP- (per endpoint), KUBE-FW-/EXT- (firewall, external) */
export const IPTABLES_MODE_CHAIN_PREFIXES: readonly string[] = [
  'KUBE-SVC-',
  'KUBE-SVL-',
  'KUBE-SEP-',
  'KUBE-FW-',
  'KUBE-EXT-',
];
/** iptables mode's comment on its INPUT/OUTPUT/FORWARD jumps to KUBE-PROXY-FIREWALL */
export const IPTABLES_MODE_FIREWALL_COMMENT = 'kubernetes load balancer firewall';

/** Whether `chain` in `table` is one only kube-proxy's iptables mode makes. */
export function isIptablesModeChain(table: Table, chain: string): boolean {
  return (
    IPTABLES_MODE_CHAINS[table].includes(chain) ||
    (table === 'nat' && IPTABLES_MODE_CHAIN_PREFIXES.some((p) => chain.startsWith(p)))
  );
}

/** Whether a built-in rule's tokens are iptables mode's jump to the shared KUBE-PROXY-FIREWALL. */
export function isIptablesModeFirewallJump(tokens: readonly string[]): boolean {
  const comment = tokens.indexOf('--comment');
  const jump = tokens.indexOf('-j');
  return (
    comment >= 0 &&
    tokens[comment + 1] === IPTABLES_MODE_FIREWALL_COMMENT &&
    jump >= 0 &&
    tokens[jump + 1] === Chain.PROXY_FIREWALL
  );
}
