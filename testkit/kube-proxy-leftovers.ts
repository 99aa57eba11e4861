// What a node looks like after kube-proxy (IPVS mode) ran on it, plus foreign objects that
// cleanup must leave alone: iptables-restore and ipset-restore text, for fakes and the VM; and
// what its nftables mode leaves: `nft -f` text.
import { IpFamily } from '../lib/model/ip-family';
import { SetName, ipsetName } from '../lib/model/names';

/** Foreign objects seeded next to kube-proxy's. */
export const FOREIGN = {
  NAT_CHAIN: 'FOREIGN-NAT',
  FILTER_CHAIN: 'FOREIGN-FILTER',
  /** kubelet's chains: KUBE- prefixed but not kube-proxy's */
  KUBELET_NAT_CHAIN: 'KUBE-MARK-DROP',
  KUBELET_FILTER_CHAIN: 'KUBE-FIREWALL',
  SET: 'FOREIGN-SET',
  SET6: 'FOREIGN-SET6',
  LINK: 'foreign0',
} as const;

/** iptables-restore (--noflush) text seeding kube-proxy's chains, jumps and rules, and foreign ones. */
export function kubeProxyIptablesSeed(family: IpFamily): string {
  const s = (base: (typeof SetName)[keyof typeof SetName]) => ipsetName(base, family);
  const foreignNet = family === 'ipv4' ? '10.250.0.0/16' : 'fd00:250::/64';
  const foreignSet = family === 'ipv4' ? FOREIGN.SET : FOREIGN.SET6;
  return [
    '*nat',
    ':KUBE-SERVICES - [0:0]',
    ':KUBE-POSTROUTING - [0:0]',
    ':KUBE-NODE-PORT - [0:0]',
    ':KUBE-LOAD-BALANCER - [0:0]',
    ':KUBE-MARK-MASQ - [0:0]',
    `:${FOREIGN.KUBELET_NAT_CHAIN} - [0:0]`,
    `:${FOREIGN.NAT_CHAIN} - [0:0]`,
    '-I OUTPUT 1 -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-I PREROUTING 1 -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-I POSTROUTING 1 -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    `-A POSTROUTING -s ${foreignNet} -j MASQUERADE`,
    `-A ${FOREIGN.NAT_CHAIN} -j RETURN`,
    `-A ${FOREIGN.KUBELET_NAT_CHAIN} -j MARK --or-mark 0x8000`,
    `-A KUBE-SERVICES -m set --match-set ${s(SetName.CLUSTER_IP)} dst,dst -j KUBE-MARK-MASQ`,
    '-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT',
    `-A KUBE-SERVICES -m set --match-set ${s(SetName.CLUSTER_IP)} dst,dst -j ACCEPT`,
    `-A KUBE-POSTROUTING -m set --match-set ${s(SetName.LOOP_BACK)} dst,dst,src -j MASQUERADE`,
    '-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN',
    '-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000',
    '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE',
    '-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000',
    `-A KUBE-NODE-PORT -p tcp -m set --match-set ${s(SetName.NODE_PORT_TCP)} dst -j KUBE-MARK-MASQ`,
    'COMMIT',
    '*filter',
    ':KUBE-FORWARD - [0:0]',
    ':KUBE-NODE-PORT - [0:0]',
    ':KUBE-PROXY-FIREWALL - [0:0]',
    ':KUBE-SOURCE-RANGES-FIREWALL - [0:0]',
    ':KUBE-IPVS-FILTER - [0:0]',
    ':KUBE-IPVS-OUT-FILTER - [0:0]',
    `:${FOREIGN.KUBELET_FILTER_CHAIN} - [0:0]`,
    `:${FOREIGN.FILTER_CHAIN} - [0:0]`,
    '-I INPUT 1 -m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT',
    '-I INPUT 1 -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL',
    '-I INPUT 1 -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER',
    `-A INPUT -j ${FOREIGN.KUBELET_FILTER_CHAIN}`,
    `-A INPUT -p tcp --dport 2222 -j ${FOREIGN.FILTER_CHAIN}`,
    '-I FORWARD 1 -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
    '-I FORWARD 1 -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL',
    '-I OUTPUT 1 -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-OUT-FILTER',
    `-A ${FOREIGN.FILTER_CHAIN} -m set --match-set ${foreignSet} src -j ACCEPT`,
    `-A ${FOREIGN.KUBELET_FILTER_CHAIN} -m mark --mark 0x8000/0x8000 -j DROP`,
    '-A KUBE-FORWARD -m mark --mark 0x4000/0x4000 -j ACCEPT',
    `-A KUBE-PROXY-FIREWALL -m set --match-set ${s(SetName.LOAD_BALANCER_FW)} dst,dst -j KUBE-SOURCE-RANGES-FIREWALL`,
    '-A KUBE-SOURCE-RANGES-FIREWALL -j DROP',
    `-A KUBE-IPVS-FILTER -m set --match-set ${s(SetName.CLUSTER_IP)} dst,dst -j RETURN`,
    `-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set ${s(SetName.IPVS_IPS)} dst -j REJECT`,
    'COMMIT',
    '',
  ].join('\n');
}

/** ipset restore text: the sets the iptables seed references (both families) and foreign sets. */
export function kubeProxyIpsetSeed(): string {
  const lines: string[] = [];
  for (const family of ['ipv4', 'ipv6'] as IpFamily[]) {
    const f = family === 'ipv4' ? 'inet' : 'inet6';
    const vip = family === 'ipv4' ? '10.96.0.10' : 'fd00:96::10';
    const n = (b: (typeof SetName)[keyof typeof SetName]) => ipsetName(b, family);
    lines.push(
      `create ${n(SetName.CLUSTER_IP)} hash:ip,port family ${f} hashsize 1024 maxelem 65536`,
      `add ${n(SetName.CLUSTER_IP)} ${vip},tcp:80`,
      `create ${n(SetName.LOOP_BACK)} hash:ip,port,ip family ${f} hashsize 1024 maxelem 65536`,
      `create ${n(SetName.LOAD_BALANCER_FW)} hash:ip,port family ${f} hashsize 1024 maxelem 65536`,
      `create ${n(SetName.IPVS_IPS)} hash:ip family ${f} hashsize 1024 maxelem 65536`,
      `add ${n(SetName.IPVS_IPS)} ${vip}`,
      `create ${n(SetName.NODE_PORT_TCP)} bitmap:port range 0-65535`,
      `create ${n(SetName.LOAD_BALANCER_SOURCE_CIDR)} hash:ip,port,net family ${f} hashsize 1024 maxelem 65536`,
    );
  }
  lines.push(
    `create ${FOREIGN.SET} hash:ip family inet hashsize 1024 maxelem 65536`,
    `add ${FOREIGN.SET} 192.0.2.1`,
    `create ${FOREIGN.SET6} hash:ip family inet6 hashsize 1024 maxelem 65536`,
  );
  return lines.join('\n') + '\n';
}

/** One Service as kube-proxy's nftables mode programs it: its ClusterIP, TCP port and endpoint ("ip:port"). */
export interface NftService {
  readonly vip: string;
  readonly port: number;
  readonly endpoint: string;
}

/** kube-proxy v1.37's iptables mode (ipv4), one Service with an endpoint and one without: nat and filter */
export const IPTABLES_MODE =
  [
    '*nat',
    ':KUBE-SERVICES - [0:0]',
    ':KUBE-POSTROUTING - [0:0]',
    ':KUBE-MARK-MASQ - [0:0]',
    ':KUBE-NODEPORTS - [0:0]',
    ':KUBE-PROXY-CANARY - [0:0]',
    ':KUBE-SVC-ERIFXISQEP7F7OF4 - [0:0]',
    ':KUBE-SEP-IT2ZTR26TO4XFPTO - [0:0]',
    ':KUBE-EXT-ERIFXISQEP7F7OF4 - [0:0]',
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    '-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000',
    '-A KUBE-SERVICES -d 10.96.0.10/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-ERIFXISQEP7F7OF4',
    '-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS',
    '-A KUBE-NODEPORTS -p tcp -m comment --comment "default/web:http" -m tcp --dport 30080 -j KUBE-EXT-ERIFXISQEP7F7OF4',
    '-A KUBE-EXT-ERIFXISQEP7F7OF4 -j KUBE-SVC-ERIFXISQEP7F7OF4',
    '-A KUBE-SVC-ERIFXISQEP7F7OF4 -m comment --comment "default/web:http -> 10.244.1.2:8080" -j KUBE-SEP-IT2ZTR26TO4XFPTO',
    '-A KUBE-SEP-IT2ZTR26TO4XFPTO -p tcp -m comment --comment "default/web:http" -m tcp -j DNAT --to-destination 10.244.1.2:8080',
    'COMMIT',
    '*filter',
    ':KUBE-SERVICES - [0:0]',
    ':KUBE-EXTERNAL-SERVICES - [0:0]',
    ':KUBE-NODEPORTS - [0:0]',
    ':KUBE-PROXY-FIREWALL - [0:0]',
    ':KUBE-FORWARD - [0:0]',
    ':KUBE-PROXY-CANARY - [0:0]',
    '-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
    '-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS',
    '-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES',
    '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
    '-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD',
    '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES',
    '-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL',
    '-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    '-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment "default/empty:http has no endpoints" -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable',
    '-A KUBE-EXTERNAL-SERVICES -p tcp -m comment --comment "default/empty:http has no endpoints" -m addrtype --dst-type LOCAL -m tcp --dport 30081 -j REJECT --reject-with icmp-port-unreachable',
    '-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP',
    'COMMIT',
  ].join('\n') + '\n';

/** iptables mode's canary in the mangle table (its Monitor creates it in mangle, nat and filter) */
export const IPTABLES_MODE_MANGLE = '*mangle\n:KUBE-PROXY-CANARY - [0:0]\nCOMMIT\n';

/**
 * `nft -f` text of a table as kube-proxy's nftables mode writes it (abridged: one Service): a
 * map of service verdicts, DNAT chains hooked at prerouting and output, a filter chain that
 * rejects. Left behind, it keeps sending `svc.vip` to `svc.endpoint`.
 */
export function kubeProxyNftTable(family: 'ip' | 'ip6', svc: NftService): string {
  const addr = family === 'ip' ? 'ipv4_addr' : 'ipv6_addr';
  const endpoint = family === 'ip' ? svc.endpoint : svc.endpoint.replace(/^(.*):(\d+)$/, '[$1]:$2');
  return `
table ${family} kube-proxy {
  comment "rules for kube-proxy"
  map service-ips {
    type ${addr} . inet_proto . inet_service : verdict
    elements = { ${svc.vip} . tcp . ${svc.port} : goto service-web }
  }
  chain nat-prerouting {
    type nat hook prerouting priority dstnat; policy accept;
    jump services
  }
  chain nat-output {
    type nat hook output priority -100; policy accept;
    jump services
  }
  chain services {
    ${family} daddr . meta l4proto . th dport vmap @service-ips
  }
  chain service-web {
    meta l4proto tcp dnat to ${endpoint}
  }
  chain filter-forward {
    type filter hook forward priority -110; policy accept;
    ct state new ${family} daddr ${svc.vip} tcp dport ${svc.port + 1} reject
  }
}
`;
}

/** A table of someone else's named like kube-proxy's, in the inet family: never kube-proxy's. */
export const INET_KUBE_PROXY_NFT_TABLE = `
table inet kube-proxy {
  chain input {
    type filter hook input priority 0; policy accept;
  }
}
`;
