// What the kube-proxy bench reads of kube-proxy's nftables-mode table (`nft list ...` text), pure:
// the chain a ClusterIP:port jumps to in its service-ips map, and whether a service chain's
// endpoint vmap names an endpoint. kube-proxy's nftables proxier names chains
// service-HASH-NS/NAME/PROTO/PORTNAME and endpoint-HASH-NS/NAME/PROTO/PORTNAME__IP/PORT
// (pkg/proxy/nftables/proxier.go), and writes a service chain's vmap and its endpoint chains in
// one transaction: an endpoint named there is in the kernel's datapath.

/** The chain `vip` . tcp . `port` goes to in `nft list map ip kube-proxy service-ips`'s text; undefined when absent. */
export function serviceChainOf(mapText: string, vip: string, port: number, protocol = 'tcp'): string | undefined {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(`(?:^|[\\s{,])${esc(vip)} \\. ${protocol} \\. ${port} : (?:goto|jump) "?([^",}\\s]+)"?`, 'm');
  return re.exec(mapText)?.[1];
}

/** Whether `text` (a chain's listing, or the whole table's) names endpoint `ip`:`port` (its endpoint chain). */
export function namesEndpoint(text: string, ip: string, port: number): boolean {
  const needle = `__${ip}/${port}`;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
    if (!/[0-9]/.test(text[at + needle.length] ?? '')) return true;
  }
  return false;
}
