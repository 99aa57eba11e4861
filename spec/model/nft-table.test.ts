import { describeNftTable, isKubeProxyNftTable } from '../../lib/model/nft-table';

// NFPROTO_* literals (netfilter.h): INET 1, IPV4 2, ARP 3, NETDEV 5, BRIDGE 7, IPV6 10
describe('nf_tables tables', () => {
  it('are named as nft names them', () => {
    expect([1, 2, 3, 5, 7, 10, 42].map((family) => describeNftTable({ family, name: 't' }))).toEqual([
      'table inet t',
      'table ip t',
      'table arp t',
      'table netdev t',
      'table bridge t',
      'table ip6 t',
      'table family 42 t',
    ]);
  });

  it("kube-proxy's nftables-mode tables are exactly ip and ip6 kube-proxy", () => {
    const tables = [
      [2, 'kube-proxy'],
      [10, 'kube-proxy'],
      [1, 'kube-proxy'],
      [7, 'kube-proxy'],
      [2, 'kube-proxy2'],
      [2, 'Kube-proxy'],
      [2, 'foreign'],
    ] as const;
    expect(tables.filter(([family, name]) => isKubeProxyNftTable({ family, name }))).toEqual([
      [2, 'kube-proxy'],
      [10, 'kube-proxy'],
    ]);
  });
});
