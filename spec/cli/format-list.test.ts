// Golden text written by hand from ipvsadm 1.31's printf formats (see the comment on each
// case), some lines taken from real ipvsadm output in the VM. Never produced by the formatter.
import {
  cmpDests,
  cmpServices,
  formatLargeNum,
  formatListAll,
  formatListService,
  formatTimeouts,
  glibcQsort,
} from '../../lib/cli/ipvsadm/format-list';
import { DEFAULT_FORMAT, ListFormat } from '../../lib/cli/ipvsadm/parse-args';
import { ServicesTable, StaticNames } from '../../lib/cli/ipvsadm/resolve-names';
import { AF_INET6, IPPROTO_SCTP, IPPROTO_UDP } from '../../lib/uapi/inet';
import { IP_VS_CONN_F, IP_VS_CONN_F_TUNNEL_TYPE, IP_VS_SVC_F, IP_VS_TUNNEL_ENCAP_FLAG } from '../../lib/uapi/ip_vs';
import { entry, rs, stats, vs } from './builders';

const INFO = { version: 0x010201, connTabSize: 4096 };
const fmt = (p: Partial<ListFormat>): ListFormat => ({ ...DEFAULT_FORMAT, ...p });
const N = fmt({ numeric: true });
const lines = (...l: string[]): string => l.map((x) => `${x}\n`).join('');

const BANNER = 'IP Virtual Server version 1.2.1 (size=4096)';
const TITLE = [
  'Prot LocalAddress:Port Scheduler Flags',
  '  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn',
];

describe('formatListAll, default format (-Ln)', () => {
  it('prints the kube-proxy README example byte for byte, trailing spaces included', () => {
    const table = [
      entry(
        vs({ address: '10.0.0.1', port: 443, flags: IP_VS_SVC_F.PERSISTENT, timeout: 10800 }),
        rs({ address: '192.168.0.1', port: 6443, activeConns: 1 }),
      ),
      entry(vs({ address: '10.0.0.10', port: 53 }), rs({ address: '172.17.0.2', port: 53 })),
      entry(vs({ address: '10.0.0.10', port: 53, protocol: IPPROTO_UDP }), rs({ address: '172.17.0.2', port: 53 })),
    ];
    expect(formatListAll(INFO, table, N)).toBe(
      lines(
        BANNER,
        ...TITLE,
        'TCP  10.0.0.1:443 rr persistent 10800',
        '  -> 192.168.0.1:6443             Masq    1      1          0         ',
        'TCP  10.0.0.10:53 rr',
        '  -> 172.17.0.2:53                Masq    1      0          0         ',
        'UDP  10.0.0.10:53 rr',
        '  -> 172.17.0.2:53                Masq    1      0          0         ',
      ),
    );
  });

  it('names every forwarding method and prints weight 0 and huge weights with %-6d', () => {
    const t = [
      entry(
        vs(),
        rs({ address: '192.168.0.1', fwdMethod: IP_VS_CONN_F.MASQ, weight: 0 }),
        rs({ address: '192.168.0.2', fwdMethod: IP_VS_CONN_F.LOCALNODE, weight: 2147483647, inactConns: 12 }),
        rs({ address: '192.168.0.3', fwdMethod: IP_VS_CONN_F.TUNNEL, weight: 100 }),
        rs({ address: '192.168.0.4', fwdMethod: IP_VS_CONN_F.DROUTE, weight: 0xffffffff }),
      ),
    ];
    expect(formatListAll(INFO, t, N)).toBe(
      lines(
        BANNER,
        ...TITLE,
        'TCP  10.0.0.1:80 rr',
        '  -> 192.168.0.1:80               Masq    0      0          0         ',
        '  -> 192.168.0.2:80               Local   2147483647 0          12        ',
        '  -> 192.168.0.3:80               Tunnel  100    0          0         ',
        '  -> 192.168.0.4:80               Route   -1     0          0         ',
      ),
    );
  });

  it('prints scheduler flags by scheduler, persistence with mask and pe, ops', () => {
    const t = [
      entry(
        vs({
          address: '10.0.0.1',
          scheduler: 'sh',
          flags: IP_VS_SVC_F.SCHED1 | IP_VS_SVC_F.SCHED2 | IP_VS_SVC_F.SCHED3 | IP_VS_SVC_F.PERSISTENT,
          timeout: 50,
          netmask: 0xffffff00,
          peName: 'sip',
        }),
      ),
      entry(vs({ address: '10.0.0.2', scheduler: 'mh', flags: IP_VS_SVC_F.SCHED2 })),
      entry(vs({ address: '10.0.0.3', scheduler: 'wlc', flags: IP_VS_SVC_F.SCHED1 | IP_VS_SVC_F.SCHED3 })),
      entry(vs({ address: '10.0.0.4', protocol: IPPROTO_UDP, port: 53, flags: IP_VS_SVC_F.ONEPACKET })),
      // pe without persistence is not shown by -L (only by -S)
      entry(vs({ address: '10.0.0.5', peName: 'sip' })),
      entry(vs({ address: '10.0.0.6', scheduler: 'sh', flags: IP_VS_SVC_F.SCHED3 })),
    ];
    expect(formatListAll(INFO, t, N)).toBe(
      lines(
        BANNER,
        ...TITLE,
        'TCP  10.0.0.1:80 sh (sh-fallback,sh-port) persistent 50 mask 255.255.255.0 pe sip',
        'TCP  10.0.0.2:80 mh (mh-port)',
        'TCP  10.0.0.3:80 wlc (flag-1,flag-3)',
        'TCP  10.0.0.5:80 rr',
        'TCP  10.0.0.6:80 sh ()',
        'UDP  10.0.0.4:53 rr ops',
      ),
    );
  });

  it('prints IPv6 in brackets, untruncated, masks as prefix length, fwmark services last', () => {
    const t = [
      entry(vs({ fwmark: 7, af: AF_INET6, protocol: 0, address: '', port: 0, netmask: 128 })),
      entry(
        vs({ fwmark: 5, protocol: 0, address: '', port: 0, flags: IP_VS_SVC_F.PERSISTENT, timeout: 10, netmask: 64 }),
      ),
      entry(
        vs({
          af: AF_INET6,
          address: '2001:db8:aaaa:bbbb:cccc:dddd:eeee:1',
          port: 443,
          flags: IP_VS_SVC_F.PERSISTENT,
          timeout: 360,
          netmask: 48,
        }),
        rs({ af: AF_INET6, address: '2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff', port: 8443 }),
      ),
      entry(vs({ protocol: IPPROTO_SCTP, address: '10.0.0.5', port: 3868, scheduler: 'wlc' })),
    ];
    expect(formatListAll(INFO, t, N)).toBe(
      lines(
        BANNER,
        ...TITLE,
        'SCTP 10.0.0.5:3868 wlc',
        'TCP  [2001:db8:aaaa:bbbb:cccc:dddd:eeee:1]:443 rr persistent 360 mask 48',
        '  -> [2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff]:8443 Masq    1      0          0         ',
        'FWM  5 rr persistent 10 mask 0.0.0.64',
        'FWM  7 IPv6 rr',
      ),
    );
  });

  it('--nosort keeps the kernel order of services and real servers', () => {
    const t = [
      entry(vs({ address: '10.0.0.9' }), rs({ address: '192.168.0.9' }), rs({ address: '192.168.0.1' })),
      entry(vs({ address: '10.0.0.1' })),
    ];
    expect(formatListAll(INFO, t, fmt({ numeric: true, nosort: true }))).toBe(
      lines(
        BANNER,
        ...TITLE,
        'TCP  10.0.0.9:80 rr',
        '  -> 192.168.0.9:80               Masq    1      0          0         ',
        '  -> 192.168.0.1:80               Masq    1      0          0         ',
        'TCP  10.0.0.1:80 rr',
      ),
    );
    expect(formatListAll(INFO, t, N)).toBe(
      lines(
        BANNER,
        ...TITLE,
        'TCP  10.0.0.1:80 rr',
        'TCP  10.0.0.9:80 rr',
        '  -> 192.168.0.1:80               Masq    1      0          0         ',
        '  -> 192.168.0.9:80               Masq    1      0          0         ',
      ),
    );
  });
});

describe('sorting as libipvs + glibc qsort', () => {
  it('int subtraction: addresses 2^31 or more apart and fwmark 0xffffffff compare "backwards"', () => {
    const t = [
      entry(vs({ address: '10.0.0.1' })),
      entry(vs({ address: '200.0.0.1' })),
      entry(vs({ fwmark: 0xffffffff, protocol: 0, address: '', port: 0 })),
    ];
    // 10.0.0.1 - 200.0.0.1 = 0x42000000 as int (> 0); 0 - 0xffffffff = 1 (> 0)
    expect(formatListAll(INFO, t, N)).toBe(
      lines(BANNER, ...TITLE, 'FWM  -1 rr', 'TCP  200.0.0.1:80 rr', 'TCP  10.0.0.1:80 rr'),
    );
  });

  it('follows glibc merge sort on a cycle A<B<C<A', () => {
    // A=10.0.0.1, B=100.0.0.1, C=200.0.0.1: A<B, B<C, but A-C wraps positive so C<A.
    // input [C,B,A]: right half [B,A] -> [A,B]; merge [C] with [A,B]: C<A -> [C,A,B]
    const A = vs({ address: '10.0.0.1' });
    const B = vs({ address: '100.0.0.1' });
    const C = vs({ address: '200.0.0.1' });
    expect(glibcQsort([C, B, A], cmpServices).map((s) => s.address)).toEqual(['200.0.0.1', '10.0.0.1', '100.0.0.1']);
    expect(glibcQsort([A, B, C], cmpServices).map((s) => s.address)).toEqual(['10.0.0.1', '100.0.0.1', '200.0.0.1']);
  });

  it('orders by af, then protocol TCP < UDP < SCTP, then port; real servers by address then port', () => {
    const t = [
      entry(vs({ af: AF_INET6, address: '2001:db8::1' })),
      entry(vs({ protocol: IPPROTO_SCTP, address: '10.0.0.1' })),
      entry(vs({ protocol: IPPROTO_UDP, address: '10.0.0.1' })),
      entry(
        vs({ address: '10.0.0.1', port: 443 }),
        rs({ address: '192.168.0.2', port: 1 }),
        rs({ address: '192.168.0.1', port: 9 }),
        rs({ address: '192.168.0.1', port: 8 }),
      ),
      entry(vs({ address: '10.0.0.1', port: 80 })),
    ];
    expect(formatListAll(INFO, t, N)).toBe(
      lines(
        BANNER,
        ...TITLE,
        'TCP  10.0.0.1:80 rr',
        'TCP  10.0.0.1:443 rr',
        '  -> 192.168.0.1:8                Masq    1      0          0         ',
        '  -> 192.168.0.1:9                Masq    1      0          0         ',
        '  -> 192.168.0.2:1                Masq    1      0          0         ',
        'UDP  10.0.0.1:80 rr',
        'SCTP 10.0.0.1:80 rr',
        'TCP  [2001:db8::1]:80 rr',
      ),
    );
  });
});

describe("sorting: the fast paths give glibc qsort's order", () => {
  // seeded xorshift: the same tables every run
  let seed = 0x2545f491;
  const rand = (n: number): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  const ipv4 = (base: number, spread: number): string => {
    const v = (base + rand(spread)) >>> 0;
    return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
  };
  /** the reference: every list through glibcQsort with libipvs' comparators, printed unsorted */
  const reference = (t: ReturnType<typeof entry>[]): string =>
    formatListAll(
      INFO,
      glibcQsort(
        t.map((e) => e.vs),
        cmpServices,
      ).map((v) => {
        const e = t.find((x) => x.vs === v)!;
        return { vs: v, dests: glibcQsort(e.dests, cmpDests) };
      }),
      fmt({ numeric: true, nosort: true }),
    );

  it.each([
    ['close addresses, few ports (ties)', 0x0a000000, 40, 3],
    ['addresses spanning more than 2^31 (wrapping compares)', 0x01000000, 0xf0000000, 2],
    ['one /24', 0xc0a80100, 256, 1],
  ])('%s', (_name, base, spread, ports) => {
    for (let round = 0; round < 30; round++) {
      const t = Array.from({ length: 1 + rand(40) }, () => {
        const dests = Array.from({ length: rand(12) }, () =>
          rs({ address: ipv4(base, spread), port: 8000 + rand(ports) }),
        );
        // the kernel's list is often in order or in reverse: test those shapes too
        const shape = rand(3);
        const ordered = shape === 0 ? glibcQsort(dests, cmpDests) : dests;
        return entry(
          vs({
            address: ipv4(base, spread),
            port: 80 + rand(ports),
            protocol: [6, 17][rand(2)]!,
            fwmark: rand(4) === 0 ? 1 + rand(3) : 0,
          }),
          ...(shape === 1 ? [...ordered].reverse() : ordered),
        );
      });
      for (const e of t) if (e.vs.fwmark) Object.assign(e.vs, { address: '', port: 0, protocol: 0 });
      expect(formatListAll(INFO, t, N)).toBe(reference(t));
      expect(formatListAll(INFO, t, fmt({ numeric: true, rule: true }))).toBe(
        formatListAll(
          INFO,
          glibcQsort(
            t.map((e) => e.vs),
            cmpServices,
          ).map((v) => {
            const e = t.find((x) => x.vs === v)!;
            return { vs: v, dests: glibcQsort(e.dests, cmpDests) };
          }),
          fmt({ numeric: true, rule: true, nosort: true }),
        ),
      );
    }
  });
});

describe('numbers (print_largenum)', () => {
  it.each<[bigint, boolean, string]>([
    [0n, false, '        0'],
    [99999999n, false, ' 99999999'],
    [100000000n, false, '  100000K'],
    [999999999n, false, '  999999K'],
    [1000000000n, false, '    1000M'],
    [99999999999n, false, '   99999M'],
    [100000000000n, false, '     100G'],
    [99999999999999n, false, '   99999G'],
    [100000000000000n, false, '     100T'],
    [18446744073709551615n, false, '18446744T'],
    [5n, true, '        5'],
    [12345678n, true, ' 12345678'],
    [123456789n, true, ' 123456789'],
    [18446744073709551615n, true, ' 18446744073709551615'],
  ])('%s exact=%s', (n, exact, text) => {
    expect(formatLargeNum(n, exact)).toBe(text);
  });
});

describe('other list formats', () => {
  const table = [
    entry(
      vs({
        address: '10.0.0.1',
        stats: stats({
          conns: 1234n,
          inpkts: 123456789n,
          outpkts: 5n,
          inbytes: 100000000000n,
          outbytes: 7n,
          cps: 3n,
          inpps: 4n,
          outpps: 5n,
          inbps: 999999999n,
          outbps: 123n,
        }),
      }),
      rs({
        address: '192.168.0.1',
        port: 8080,
        uThreshold: 100,
        lThreshold: 5,
        activeConns: 2,
        inactConns: 3,
        persistConns: 4,
        weight: 7,
        stats: stats({
          conns: 1n,
          inpkts: 2n,
          outpkts: 3n,
          inbytes: 4n,
          outbytes: 5n,
          cps: 123456789n,
          inpps: 6n,
          outpps: 7n,
          inbps: 100000000n,
          outbps: 9n,
        }),
      }),
    ),
  ];

  it('--stats: %-33s then five 9-wide numbers; title from ipvsadm', () => {
    expect(formatListAll(INFO, table, fmt({ numeric: true, stats: true }))).toBe(
      lines(
        BANNER,
        'Prot LocalAddress:Port               Conns   InPkts  OutPkts  InBytes OutBytes',
        '  -> RemoteAddress:Port',
        'TCP  10.0.0.1:80                      1234  123456K        5     100G        7',
        '  -> 192.168.0.1:8080                    1        2        3        4        5',
      ),
    );
  });

  it('--rate: real-server CPS/InPPS/OutPPS are plain %8llu, never suffixed', () => {
    expect(formatListAll(INFO, table, fmt({ numeric: true, rate: true }))).toBe(
      lines(
        BANNER,
        'Prot LocalAddress:Port                 CPS    InPPS   OutPPS    InBPS   OutBPS',
        '  -> RemoteAddress:Port',
        'TCP  10.0.0.1:80                         3        4        5  999999K      123',
        '  -> 192.168.0.1:8080             123456789        6        7  100000K        9',
      ),
    );
  });

  it('--stats --exact widens instead of suffixing', () => {
    expect(formatListAll(INFO, table, fmt({ numeric: true, stats: true, exact: true })).split('\n')[3]).toBe(
      'TCP  10.0.0.1:80                      1234 123456789        5 100000000000        7',
    );
  });

  it('--thresholds and --persistent-conn: service lines stay in the default format', () => {
    expect(formatListAll(INFO, table, fmt({ numeric: true, thresholds: true }))).toBe(
      lines(
        BANNER,
        'Prot LocalAddress:Port            Uthreshold Lthreshold ActiveConn InActConn ',
        '  -> RemoteAddress:Port',
        'TCP  10.0.0.1:80 rr',
        '  -> 192.168.0.1:8080             100        5          2          3         ',
      ),
    );
    expect(formatListAll(INFO, table, fmt({ numeric: true, persistentConn: true }))).toBe(
      lines(
        BANNER,
        'Prot LocalAddress:Port            Weight    PersistConn ActiveConn InActConn ',
        '  -> RemoteAddress:Port',
        'TCP  10.0.0.1:80 rr',
        '  -> 192.168.0.1:8080             7         4           2          3         ',
      ),
    );
  });

  it('precedence when several are given: stats > rate > thresholds > persistent-conn > tun-info', () => {
    const title = (p: Partial<ListFormat>): string =>
      formatListAll(INFO, [], fmt({ numeric: true, ...p })).split('\n')[1]!;
    expect(title({ rate: true, stats: true })).toMatch(/Conns/);
    expect(title({ rate: true, thresholds: true })).toMatch(/CPS/);
    expect(title({ thresholds: true, persistentConn: true })).toMatch(/Uthreshold/);
    expect(title({ tunInfo: true, persistentConn: true })).toMatch(/PersistConn/);
  });

  it('--tun-info: ipip, gue:port:csum, gre:csum, n/a for other methods', () => {
    const t = [
      entry(
        vs(),
        rs({ address: '192.168.1.1', port: 8080, weight: 3 }),
        rs({
          address: '192.168.1.2',
          fwdMethod: IP_VS_CONN_F.TUNNEL,
          tunType: IP_VS_CONN_F_TUNNEL_TYPE.GUE,
          tunPort: 6080,
          tunFlags: IP_VS_TUNNEL_ENCAP_FLAG.CSUM,
        }),
        rs({
          address: '192.168.1.3',
          fwdMethod: IP_VS_CONN_F.TUNNEL,
          tunType: IP_VS_CONN_F_TUNNEL_TYPE.GRE,
          tunFlags: IP_VS_TUNNEL_ENCAP_FLAG.NOCSUM,
        }),
        rs({ address: '192.168.1.4', fwdMethod: IP_VS_CONN_F.TUNNEL, tunType: IP_VS_CONN_F_TUNNEL_TYPE.IPIP }),
        rs({
          address: '192.168.1.5',
          fwdMethod: IP_VS_CONN_F.TUNNEL,
          tunType: IP_VS_CONN_F_TUNNEL_TYPE.GUE,
          tunPort: 1,
          tunFlags: IP_VS_TUNNEL_ENCAP_FLAG.REMCSUM,
        }),
      ),
    ];
    expect(formatListAll(INFO, t, fmt({ numeric: true, tunInfo: true }))).toBe(
      lines(
        BANNER,
        'Prot LocalAddress:Port Scheduler Flags',
        '  -> RemoteAddress:Port           Forward TunnelInfo    Weight ActiveConn InActConn',
        'TCP  10.0.0.1:80 rr',
        '  -> 192.168.1.1:8080             Masq    n/a           3      0          0         ',
        '  -> 192.168.1.2:80               Tunnel  gue:6080:+c   1      0          0         ',
        '  -> 192.168.1.3:80               Tunnel  gre:-c        1      0          0         ',
        '  -> 192.168.1.4:80               Tunnel  ipip          1      0          0         ',
        '  -> 192.168.1.5:80               Tunnel  gue:1:r+c     1      0          0         ',
      ),
    );
  });

  it('-L -t: no banner, title and the one service', () => {
    expect(formatListService(table[0]!, N)).toBe(
      lines(...TITLE, 'TCP  10.0.0.1:80 rr', '  -> 192.168.0.1:8080             Masq    7      2          3         '),
    );
  });

  it('--timeout', () => {
    expect(formatTimeouts({ tcp: 900, tcpFin: 120, udp: 300 })).toBe('Timeout (tcp tcpfin udp): 900 120 300\n');
  });
});

describe('-S / --save (FMT_RULE)', () => {
  it('prints -A/-a lines, options in ipvsadm order, tunnels, fwmark -6, --sctp-service', () => {
    const t = [
      entry(
        vs({
          address: '10.0.0.4',
          scheduler: 'sh',
          flags: IP_VS_SVC_F.PERSISTENT | IP_VS_SVC_F.SCHED1 | IP_VS_SVC_F.SCHED2,
          timeout: 50,
          netmask: 0xffffff00,
          peName: 'sip',
        }),
        rs({ address: '192.168.1.1', port: 8080, weight: 3 }),
        rs({
          address: '192.168.1.2',
          fwdMethod: IP_VS_CONN_F.TUNNEL,
          tunType: IP_VS_CONN_F_TUNNEL_TYPE.GUE,
          tunPort: 6080,
          tunFlags: IP_VS_TUNNEL_ENCAP_FLAG.CSUM,
        }),
        rs({ address: '192.168.1.3', fwdMethod: IP_VS_CONN_F.TUNNEL, tunType: IP_VS_CONN_F_TUNNEL_TYPE.GRE }),
        rs({ address: '192.168.1.4', fwdMethod: IP_VS_CONN_F.TUNNEL }),
        rs({ address: '192.168.1.5', fwdMethod: IP_VS_CONN_F.LOCALNODE, weight: 0 }),
        rs({ address: '192.168.1.6', fwdMethod: IP_VS_CONN_F.DROUTE }),
      ),
      entry(
        vs({
          protocol: IPPROTO_UDP,
          address: '10.0.0.4',
          port: 53,
          scheduler: 'mh',
          flags: IP_VS_SVC_F.ONEPACKET | IP_VS_SVC_F.SCHED1,
        }),
      ),
      entry(vs({ protocol: IPPROTO_SCTP, address: '10.0.0.5', port: 3868, scheduler: 'wlc', peName: 'sip' })),
      entry(
        vs({
          af: AF_INET6,
          address: '2001:db8::1',
          port: 443,
          flags: IP_VS_SVC_F.PERSISTENT,
          timeout: 360,
          netmask: 48,
        }),
        rs({ af: AF_INET6, address: '2001:db8::10', port: 8443 }),
      ),
      entry(
        vs({
          fwmark: 5,
          af: AF_INET6,
          protocol: 0,
          address: '',
          port: 0,
          flags: IP_VS_SVC_F.PERSISTENT,
          timeout: 10,
          netmask: 128,
        }),
        rs({ af: AF_INET6, address: 'fd00::5', port: 0 }),
      ),
      entry(
        vs({ fwmark: 6, protocol: 0, address: '', port: 0, flags: IP_VS_SVC_F.PERSISTENT, timeout: 10, netmask: 64 }),
      ),
    ];
    expect(formatListAll(INFO, t, fmt({ numeric: true, rule: true }))).toBe(
      lines(
        '-A -t 10.0.0.4:80 -s sh -p 50 -M 255.255.255.0 --pe sip -b sh-fallback,sh-port',
        '-a -t 10.0.0.4:80 -r 192.168.1.1:8080 -m -w 3',
        '-a -t 10.0.0.4:80 -r 192.168.1.2:80 -i -w 1 --tun-type gue --tun-port 6080 --tun-csum',
        '-a -t 10.0.0.4:80 -r 192.168.1.3:80 -i -w 1 --tun-type gre --tun-nocsum',
        '-a -t 10.0.0.4:80 -r 192.168.1.4:80 -i -w 1 --tun-type ipip',
        '-a -t 10.0.0.4:80 -r 192.168.1.5:80 -g -w 0',
        '-a -t 10.0.0.4:80 -r 192.168.1.6:80 -g -w 1',
        '-A -u 10.0.0.4:53 -s mh -o -b mh-fallback',
        '-A --sctp-service 10.0.0.5:3868 -s wlc --pe sip',
        '-A -t [2001:db8::1]:443 -s rr -p 360 -M 48',
        '-a -t [2001:db8::1]:443 -r [2001:db8::10]:8443 -m -w 1',
        '-A -f 5 -6 -s rr -p 10',
        '-a -f 5 -6 -r [fd00::5]:0 -m -w 1',
        '-A -f 6 -s rr -p 10 -M 0.0.0.64',
      ),
    );
  });
});

describe('without -n: names from the host table and /etc/services', () => {
  const services = new ServicesTable(
    [
      '# comment',
      'http\t\t80/tcp\t\twww\t\t# WorldWideWeb HTTP',
      'domain\t\t53/tcp',
      'domain\t\t53/udp',
      'http-alt\t8080/tcp\twebcache',
      'other-http\t80/tcp',
      'diameter\t3868/sctp',
    ].join('\n'),
  );
  const names = new StaticNames(
    {
      '10.0.0.1': 'web-frontend-service.example.test',
      '192.168.1.1': 'backend-one-with-a-rather-long-name.example.test',
      '2001:db8::1': 'v6vip.example.test',
    },
    services,
  );

  it('resolves hosts and ports by protocol, truncates IPv4 names to 33 / 28 columns', () => {
    const t = [
      entry(
        vs({ address: '10.0.0.1' }),
        rs({ address: '192.168.1.1', port: 8080 }),
        rs({ address: '192.168.1.2', port: 53 }),
      ),
      entry(vs({ protocol: IPPROTO_UDP, address: '10.0.0.2', port: 53 }), rs({ address: '192.168.1.3', port: 8080 })),
      entry(vs({ protocol: IPPROTO_SCTP, address: '10.0.0.3', port: 3868 })),
      entry(
        vs({ af: AF_INET6, address: '2001:db8::1', port: 80 }),
        rs({ af: AF_INET6, address: '2001:db8::2', port: 80 }),
      ),
      entry(vs({ fwmark: 3, protocol: 0, address: '', port: 0 }), rs({ address: '192.168.1.4', port: 80 })),
    ];
    expect(formatListAll(INFO, t, DEFAULT_FORMAT, names)).toBe(
      lines(
        BANNER,
        ...TITLE,
        'TCP  web-frontend-service.example rr',
        '  -> backend-one-with-a-rather-lo Masq    1      0          0         ',
        '  -> 192.168.1.2:domain           Masq    1      0          0         ',
        'UDP  10.0.0.2:domain rr',
        '  -> 192.168.1.3:8080             Masq    1      0          0         ',
        'SCTP 10.0.0.3:diameter rr',
        'TCP  [v6vip.example.test]:http rr',
        '  -> [2001:db8::2]:http           Masq    1      0          0         ',
        'FWM  3 rr',
        '  -> 192.168.1.4:80               Masq    1      0          0         ',
      ),
    );
  });

  it("-S without -n: names untruncated up to the 59 characters of ipvsadm's buffer", () => {
    const t = [entry(vs({ address: '10.0.0.1' }), rs({ address: '192.168.1.1', port: 8080 }))];
    expect(formatListAll(INFO, t, fmt({ rule: true }), names)).toBe(
      lines(
        '-A -t web-frontend-service.example.test:http -s rr',
        '-a -t web-frontend-service.example.test:http -r backend-one-with-a-rather-long-name.example.test:http-alt -m -w 1',
      ),
    );
    const long = new StaticNames({ '10.0.0.1': 'a'.repeat(70) }, services);
    expect(formatListAll(INFO, [entry(vs())], fmt({ rule: true }), long)).toBe(lines(`-A -t ${'a'.repeat(59)} -s rr`));
  });
});
