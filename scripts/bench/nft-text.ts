// What the kube-proxy bench reads of kube-proxy's nftables-mode table (`nft list ...` text), pure:
// the chain a ClusterIP:port jumps to in its service-ips map, and whether a service chain
// sends to an endpoint. kube-proxy's nftables proxier names chains
// service-HASH-NS/NAME/PROTO/PORTNAME (pkg/proxy/nftables/proxier.go) and rewrites a Service's
// chain, its endpoints in it, in one transaction: an endpoint named there is in the datapath.

/** The chain `vip` . tcp . `port` goes to in `nft list map ip kube-proxy service-ips`'s text; undefined when absent. */
export function serviceChainOf(mapText: string, vip: string, port: number, protocol = 'tcp'): string | undefined {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`(?:^|[\\s{,])${esc(vip)} \\. ${protocol} \\. ${port} : (?:goto|jump) "?([^",}\\s]+)"?`, 'm');
  return re.exec(mapText)?.[1];
}

/**
 * Whether `text` (a service chain's listing) sends to endpoint `ip`:`port`: v1.37 writes the
 * endpoints inline, `dnat ip to numgen random mod N map { 0 : IP . PORT, ... }`; one endpoint may
 * print as IP:PORT; older releases wrote endpoint chains named ...__IP/PORT. Either spelling, the whole address and port.
 */
export function namesEndpoint(text: string, ip: string, port: number): boolean {
  const esc = ip.replace(/\./g, '\\.');
  return new RegExp(`(?:[\\s{,:]${esc} \\. ${port}|\\s${esc}:${port}|__${esc}/${port})(?![0-9])`).test(text);
}
