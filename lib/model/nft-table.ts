/**
 * An nf_tables table, named as `nft list tables` names it, and kube-proxy's nftables-mode
 * tables: `table ip kube-proxy` and `table ip6 kube-proxy` (k8s pkg/proxy/nftables,
 * kubeProxyTable in knftables' IPv4Family and IPv6Family). kube-proxy deletes exactly those two
 * when it starts in iptables or ipvs mode (cmd/kube-proxy/app/server_linux.go platformCleanup,
 * pkg/proxy/nftables/cleanup.go); an `inet kube-proxy` is someone else's.
 */
import { NFPROTO } from '../uapi/nf_tables';

/** An nf_tables table: its family and name. */
export interface NftTable {
  /** nfgen_family: NFPROTO_* */
  readonly family: number;
  readonly name: string;
}

const FAMILY_NAMES: Readonly<Record<number, string>> = {
  [NFPROTO.INET]: 'inet',
  [NFPROTO.IPV4]: 'ip',
  [NFPROTO.ARP]: 'arp',
  [NFPROTO.NETDEV]: 'netdev',
  [NFPROTO.BRIDGE]: 'bridge',
  [NFPROTO.IPV6]: 'ip6',
};

/** "ip", "ip6", "inet", ... as nft spells the family; "family N" for one it does not know */
export const nftFamilyName = (family: number): string => FAMILY_NAMES[family] ?? `family ${family}`;

/** "table ip kube-proxy" */
export const describeNftTable = (t: NftTable): string => `table ${nftFamilyName(t.family)} ${t.name}`;

/** kube-proxy's nftables-mode table name (in each of its two families) */
export const KUBE_PROXY_NFT_TABLE = 'kube-proxy';

/** One of the two tables kube-proxy's nftables mode leaves: exactly `ip kube-proxy` or `ip6 kube-proxy`. */
export const isKubeProxyNftTable = (t: NftTable): boolean =>
  t.name === KUBE_PROXY_NFT_TABLE && (t.family === NFPROTO.IPV4 || t.family === NFPROTO.IPV6);
