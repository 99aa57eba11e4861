import { percentile, summarize } from '../../../scripts/bench/datapath-stats';
import { namesEndpoint, serviceChainOf } from '../../../scripts/bench/nft-text';

describe('the datapath bench: percentiles and the window summary', () => {
  it('takes the nearest rank', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([1, 2, 3], 50)).toBe(2);
    expect(percentile([], 50)).toBeUndefined();
  });

  it('sorts the samples and rates the completed connections over the window', () => {
    const s = summarize([5, 1, 3, 2, 4], 2, 2);
    expect(s).toEqual({
      connections: 5,
      errors: 2,
      seconds: 2,
      perSecond: 2.5,
      connectP50Ms: 3,
      connectP99Ms: 5,
      connectMaxMs: 5,
    });
  });
});

describe("kube-proxy's nftables table as nft lists it", () => {
  const map = [
    'table ip kube-proxy {',
    '\tmap service-ips {',
    '\t\ttype ipv4_addr . inet_proto . inet_service : verdict',
    '\t\tcomment "ClusterIP, ExternalIP and LoadBalancer IP traffic"',
    '\t\telements = { 10.96.1.0 . tcp . 80 : goto service-ULMVA6XW-kube-ipvs-bench/svc-0/tcp/http,',
    '\t\t\t     10.96.1.10 . tcp . 80 : goto "service-ABCDEFGH-kube-ipvs-bench/svc-10/tcp/http",',
    '\t\t\t     10.96.1.1 . udp . 80 : goto service-UDPUDPUD-kube-ipvs-bench/svc-1/udp/dns }',
    '\t}',
    '}',
  ].join('\n');

  it("finds a ClusterIP's service chain, quoted or not, and only for its own address and protocol", () => {
    expect(serviceChainOf(map, '10.96.1.0', 80)).toBe('service-ULMVA6XW-kube-ipvs-bench/svc-0/tcp/http');
    expect(serviceChainOf(map, '10.96.1.10', 80)).toBe('service-ABCDEFGH-kube-ipvs-bench/svc-10/tcp/http');
    expect(serviceChainOf(map, '10.96.1.1', 80)).toBeUndefined();
    expect(serviceChainOf(map, '10.96.1.1', 80, 'udp')).toBe('service-UDPUDPUD-kube-ipvs-bench/svc-1/udp/dns');
    expect(serviceChainOf(map, '10.96.1.0', 443)).toBeUndefined();
    expect(serviceChainOf(map, '0.96.1.0', 80)).toBeUndefined();
  });

  it('sees an endpoint in a v1.37 service chain (as nft 1.0.6 listed one), the whole address and port', () => {
    const chain = [
      'table ip kube-proxy {',
      '\tchain service-O6UKKYV4-bench/svc-0/tcp/http {',
      '\t\tmeta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.100.0.0 . 8080, 1 : 10.200.1.23 . 8080 }',
      '\t}',
      '}',
    ].join('\n');
    expect(namesEndpoint(chain, '10.200.1.23', 8080)).toBe(true);
    expect(namesEndpoint(chain, '10.100.0.0', 8080)).toBe(true);
    expect(namesEndpoint(chain, '10.200.1.2', 8080)).toBe(false);
    expect(namesEndpoint(chain, '0.200.1.23', 8080)).toBe(false);
    expect(namesEndpoint(chain, '10.100.0.0', 80)).toBe(false);
    expect(namesEndpoint('dnat ip to 10.100.0.7:8080', '10.100.0.7', 8080)).toBe(true);
  });

  it("sees an endpoint by an older release's endpoint chain name", () => {
    const chain = 'vmap { 0 : goto endpoint-AAAA-ns/svc-0/tcp/http__10.200.1.23/8080 }';
    expect(namesEndpoint(chain, '10.200.1.23', 8080)).toBe(true);
    expect(namesEndpoint(chain, '10.200.1.2', 8080)).toBe(false);
    expect(namesEndpoint(chain, '10.200.1.23', 80)).toBe(false);
  });
});
