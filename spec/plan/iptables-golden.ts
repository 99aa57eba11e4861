// The iptables-restore text every plan writes, whatever its sets (kube-proxy proxier.go
// writeIptablesRules: the chain headers, the masquerade tail of *nat, the forward and
// KUBE-IPVS-FILTER tail of *filter). Written by hand from shared/reference/kube-proxy-ipvs.md
// §1.3, not produced by the generator; spec/plan/iptables.test.ts and
// plan-desired-state.test.ts build their golden texts from these pieces.

export const NAT_CHAINS = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-LOAD-BALANCER - [0:0]
:KUBE-MARK-MASQ - [0:0]
`;

export const FILTER_CHAINS = `*filter
:KUBE-FORWARD - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SOURCE-RANGES-FIREWALL - [0:0]
:KUBE-IPVS-FILTER - [0:0]
:KUBE-IPVS-OUT-FILTER - [0:0]
`;

/** The end of *nat with the default masquerade bit 14 (0x004000). */
export const natTail = (
  randomFully: boolean,
): string => `-A KUBE-POSTROUTING -m mark ! --mark 0x004000/0x004000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x004000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE${randomFully ? ' --random-fully' : ''}
-A KUBE-MARK-MASQ -j MARK --or-mark 0x004000
COMMIT
`;

/** The end of *filter with the default masquerade bit; `sets` is KUBE- (IPv4) or KUBE-6- (IPv6). */
export const filterTail = (
  sets: 'KUBE-' | 'KUBE-6-',
): string => `-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x004000/0x004000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-NODE-PORT -m comment --comment "Kubernetes health check node port" -m set --match-set ${sets}HEALTH-CHECK-NODE-PORT dst -j ACCEPT
-A KUBE-IPVS-FILTER -m set --match-set ${sets}LOAD-BALANCER dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set ${sets}CLUSTER-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set ${sets}EXTERNAL-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set ${sets}EXTERNAL-IP-LOCAL dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set ${sets}HEALTH-CHECK-NODE-PORT dst -j RETURN
-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set ${sets}IPVS-IPS dst -j REJECT
COMMIT
`;
