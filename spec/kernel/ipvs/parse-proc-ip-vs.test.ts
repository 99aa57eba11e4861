// /proc/net/ip_vs text -> table. The text below was captured from Debian's 6.1 kernel in the
// VM (ipvsadm built the table: every protocol, both families, fwmarks shared by an IPv4 and an
// IPv6 service, ops, persistence with masks, the sip engine, scheduler flags, every forwarding
// method); trailing blanks are the kernel's.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { KUBE_IPVS_NODE_FLAGS } from '../../../lib/cli/node-flags';
import { ProcIpVsBlocks, ProcIpVsParseError, parseProcIpVs } from '../../../lib/kernel/ipvs/parse-proc-ip-vs';
import { RealServer } from '../../../lib/model/ipvs';
import { AF_INET, AF_INET6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../../lib/uapi/ip_vs';

const REAL =
  [
    'IP Virtual Server version 1.2.1 (size=4096)',
    'Prot LocalAddress:Port Scheduler Flags',
    '  -> RemoteAddress:Port Forward Weight ActiveConn InActConn',
    'TCP  FFFFFFFF:0001 wlc  ',
    'TCP  0A000008:13C4 rr  persistent 15000 FFFFFFFF',
    'TCP  [2001:0db8:aaaa:bbbb:cccc:dddd:eeee:0001]:FFFF rr ',
    '  -> [2001:0db8:aaaa:bbbb:cccc:dddd:eeee:ffff]:FFFF      Masq    1      0          0         ',
    'TCP  64000001:01BB wrr  persistent 90000 FFFFFFFF',
    'TCP  C8000001:01BB wrr  persistent 2700000 FFFFFFFF',
    'SCTP  0A000005:0F1C wlc  ',
    '  -> 0A000006:0F1C      Masq    1      0          0         ',
    'UDP  [2001:0db8:0000:0000:0000:0000:0000:0002]:0035 rr ',
    'TCP  0A000006:0050 sh  ',
    'TCP  0A000007:0050 wlc  ',
    'TCP  0A000004:0050 sh  persistent 12500 FFFFFF00',
    'TCP  0A630001:0050 rr  ',
    '  -> 0A630002:0050      Masq    0      0          0         ',
    '  -> 0A630001:0050      Route   5      0          0         ',
    'TCP  0A000001:0050 rr  ',
    '  -> [2001:0db8:0000:0000:0000:0000:0000:0077]:0050      Tunnel  1      0          0         ',
    '  -> 0AC80001:0050      Route   2147483647 0          0         ',
    '  -> C8010101:0050      Route   0      0          0         ',
    '  -> C0A80104:0050      Tunnel  1      0          0         ',
    '  -> C0A80103:0050      Tunnel  1      0          0         ',
    '  -> C0A80102:0050      Tunnel  1      0          0         ',
    '  -> C0A80101:1F90      Masq    3      0          0         ',
    'UDP  0A000004:0035 mh ops  ',
    '  -> 0AF40102:14E9      Masq    0      0          0         ',
    '  -> 0AF40101:0035      Masq    1      0          0         ',
    'TCP  01020304:FFFF wlc  ',
    'TCP  [2001:0db8:0000:0000:0000:0000:0000:0001]:01BB wlc persistent 90000 30000000',
    '  -> C0A80109:01BB      Tunnel  1      0          0         ',
    '  -> [2001:0db8:0000:0000:0000:0000:0000:0009]:01BB      Route   1      0          0         ',
    '  -> [2001:0db8:0000:0000:0000:0000:0000:0010]:20FB      Masq    1      0          0         ',
    'TCP  00000001:0000 wlc  persistent 250 FFFFFFFF',
    'FWM  FFFFFFFF wlc ',
    'FWM  80000000 lc ',
    'FWM  00000005 lc ',
    'FWM  00000005 wlc persistent 2500 40000000',
    '  -> [fd00:0000:0000:0000:0000:0000:0000:0004]:0063      Masq    1      0          0         ',
    '  -> [fd00:0000:0000:0000:0000:0000:0000:0005]:0000      Masq    1      0          0         ',
    'FWM  00000006 wlc persistent 2500 00000040',
    '  -> 0AF40006:0000      Route   1      0          0         ',
    'FWM  00000007 wrr ',
    'FWM  00000007 rr ',
  ].join('\n') + '\n';

const HEAD = REAL.split('\n').slice(0, 3).join('\n') + '\n';

/** A real server as the parser gives it: what /proc shows, and 0 for every RealServer field it does not. */
const shown = (
  d: Pick<RealServer, 'af' | 'address' | 'port' | 'fwdMethod' | 'weight' | 'activeConns' | 'inactConns'>,
): RealServer => ({
  ...d,
  uThreshold: 0,
  lThreshold: 0,
  persistConns: 0,
  tunType: 0,
  tunPort: 0,
  tunFlags: 0,
});

describe('parseProcIpVs on the real kernel text', () => {
  const t = parseProcIpVs(REAL);
  const find = (address: string, port: number) => t.services.find((s) => s.address === address && s.port === port)!;

  it('reads the banner as GET_INFO gives it, and every service in the kernel order', () => {
    expect(t.info).toEqual({ version: 0x010201, connTabSize: 4096 });
    expect(t.services.map((s) => (s.fwmark ? `FWM ${s.fwmark}` : `${s.protocol} ${s.address}:${s.port}`))).toEqual([
      '6 255.255.255.255:1',
      '6 10.0.0.8:5060',
      '6 2001:db8:aaaa:bbbb:cccc:dddd:eeee:1:65535',
      '6 100.0.0.1:443',
      '6 200.0.0.1:443',
      '132 10.0.0.5:3868',
      '17 2001:db8::2:53',
      '6 10.0.0.6:80',
      '6 10.0.0.7:80',
      '6 10.0.0.4:80',
      '6 10.99.0.1:80',
      '6 10.0.0.1:80',
      '17 10.0.0.4:53',
      '6 1.2.3.4:65535',
      '6 2001:db8::1:443',
      '6 0.0.0.1:0',
      'FWM 4294967295',
      'FWM 2147483648',
      'FWM 5',
      'FWM 5',
      'FWM 6',
      'FWM 7',
      'FWM 7',
    ]);
  });

  it('an IPv4 service: hex address and port, scheduler, real servers in list order with every method', () => {
    const s = find('10.0.0.1', 80);
    expect(s).toMatchObject({
      af: AF_INET,
      protocol: IPPROTO_TCP,
      fwmark: 0,
      scheduler: 'rr',
      onePacket: false,
      persistent: undefined,
    });
    expect(s.dests).toEqual([
      shown({
        af: AF_INET6,
        address: '2001:db8::77',
        port: 80,
        fwdMethod: IP_VS_CONN_F.TUNNEL,
        weight: 1,
        activeConns: 0,
        inactConns: 0,
      }),
      shown({
        af: AF_INET,
        address: '10.200.0.1',
        port: 80,
        fwdMethod: IP_VS_CONN_F.DROUTE,
        weight: 2147483647,
        activeConns: 0,
        inactConns: 0,
      }),
      shown({
        af: AF_INET,
        address: '200.1.1.1',
        port: 80,
        fwdMethod: IP_VS_CONN_F.DROUTE,
        weight: 0,
        activeConns: 0,
        inactConns: 0,
      }),
      shown({
        af: AF_INET,
        address: '192.168.1.4',
        port: 80,
        fwdMethod: IP_VS_CONN_F.TUNNEL,
        weight: 1,
        activeConns: 0,
        inactConns: 0,
      }),
      shown({
        af: AF_INET,
        address: '192.168.1.3',
        port: 80,
        fwdMethod: IP_VS_CONN_F.TUNNEL,
        weight: 1,
        activeConns: 0,
        inactConns: 0,
      }),
      shown({
        af: AF_INET,
        address: '192.168.1.2',
        port: 80,
        fwdMethod: IP_VS_CONN_F.TUNNEL,
        weight: 1,
        activeConns: 0,
        inactConns: 0,
      }),
      shown({
        af: AF_INET,
        address: '192.168.1.1',
        port: 8080,
        fwdMethod: IP_VS_CONN_F.MASQ,
        weight: 3,
        activeConns: 0,
        inactConns: 0,
      }),
    ]);
  });

  it('IPv6 addresses come out as inet_ntop prints them; ops, persistence and SCTP are read', () => {
    const v6 = find('2001:db8::1', 443);
    expect(v6).toMatchObject({
      af: AF_INET6,
      scheduler: 'wlc',
      persistent: { timeoutJiffies: 90000, netmaskWord: 0x30000000 },
    });
    expect(v6.dests.map((d) => `${d.address}:${d.port}`)).toEqual([
      '192.168.1.9:443',
      '2001:db8::9:443',
      '2001:db8::10:8443',
    ]);
    expect(find('2001:db8:aaaa:bbbb:cccc:dddd:eeee:1', 65535).dests[0]!.address).toBe(
      '2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff',
    );
    expect(find('10.0.0.4', 53)).toMatchObject({ protocol: IPPROTO_UDP, scheduler: 'mh', onePacket: true });
    // the IPv6 line never prints "ops" (-A -u [2001:db8::2]:53 -o)
    expect(find('2001:db8::2', 53)).toMatchObject({ protocol: IPPROTO_UDP, onePacket: false });
    expect(find('10.0.0.4', 80).persistent).toEqual({ timeoutJiffies: 12500, netmaskWord: 0xffffff00 });
    expect(find('10.0.0.5', 3868)).toMatchObject({
      protocol: IPPROTO_SCTP,
      dests: [expect.objectContaining({ address: '10.0.0.6', port: 3868 })],
    });
    expect(find('10.99.0.1', 80).dests.map((d) => d.fwdMethod)).toEqual([IP_VS_CONN_F.MASQ, IP_VS_CONN_F.DROUTE]);
  });

  it('fwmark services: the mark, no family (/proc does not show it), their own real servers', () => {
    const marks = t.services.filter((s) => s.fwmark === 5);
    expect(marks.map((s) => [s.af, s.scheduler, s.dests.length])).toEqual([
      [undefined, 'lc', 0],
      [undefined, 'wlc', 2],
    ]);
    expect(marks[1]!.dests.map((d) => d.address)).toEqual(['fd00::4', 'fd00::5']);
    expect(t.services.find((s) => s.fwmark === 6)!.dests).toEqual([
      shown({
        af: AF_INET,
        address: '10.244.0.6',
        port: 0,
        fwdMethod: IP_VS_CONN_F.DROUTE,
        weight: 1,
        activeConns: 0,
        inactConns: 0,
      }),
    ]);
  });

  it('the last line needs no newline; a real server found in place reads the same as one parsed word by word', () => {
    const t3 = parseProcIpVs(
      `${HEAD}TCP  0A000001:0050 rr \n  -> 0A000002:1F90      Masq    1      0          0\n  -> 0A000003:1F90      Route   7      1          2`,
    );
    expect(t3.services[0]!.dests).toEqual([
      shown({
        af: AF_INET,
        address: '10.0.0.2',
        port: 8080,
        fwdMethod: IP_VS_CONN_F.MASQ,
        weight: 1,
        activeConns: 0,
        inactConns: 0,
      }),
      shown({
        af: AF_INET,
        address: '10.0.0.3',
        port: 8080,
        fwdMethod: IP_VS_CONN_F.DROUTE,
        weight: 7,
        activeConns: 1,
        inactConns: 2,
      }),
    ]);
    // an IPv6 real server takes the word-by-word path; the IPv4 one after it the scan again
    const t4 = parseProcIpVs(
      `${HEAD}TCP  0A000001:0050 rr \n  -> [fd00:0000:0000:0000:0000:0000:0000:0004]:0050      Tunnel  1      0          0\n  -> FFFFFFFF:FFFF      Local   0      0          0\n`,
    );
    expect(t4.services[0]!.dests.map((d) => `${d.address}:${d.port}/${d.fwdMethod}`)).toEqual([
      `fd00::4:80/${IP_VS_CONN_F.TUNNEL}`,
      `255.255.255.255:65535/${IP_VS_CONN_F.LOCALNODE}`,
    ]);
  });

  it('the empty table', () => {
    expect(parseProcIpVs(HEAD)).toEqual({ info: { version: 0x010201, connTabSize: 4096 }, services: [] });
  });

  it('Local and connection counts', () => {
    const t2 = parseProcIpVs(
      `${HEAD}TCP  0A000001:0050 rr \n  -> 0A000002:1F90      Local   5      12         345       \n`,
    );
    expect(t2.services[0]!.dests).toEqual([
      shown({
        af: AF_INET,
        address: '10.0.0.2',
        port: 8080,
        fwdMethod: IP_VS_CONN_F.LOCALNODE,
        weight: 5,
        activeConns: 12,
        inactConns: 345,
      }),
    ]);
  });
});

describe('parseProcIpVs refuses text the kernel does not print, naming the line', () => {
  it.each([
    ['no banner', 'hello\n', 1, /not the IPVS banner/],
    ['a title changed', HEAD.replace('InActConn', 'Inactive'), 3, /title/],
    [
      'a real server first',
      `${HEAD}  -> 0A000002:1F90      Masq    1      0          0         \n`,
      4,
      /before any service/,
    ],
    [
      'an unknown method',
      `${HEAD}TCP  0A000001:0050 rr \n  -> 0A000002:1F90      Bypass  1      0          0\n`,
      5,
      /unknown forwarding method 'Bypass'/,
    ],
    ['a short address', `${HEAD}TCP  0A0001:0050 rr \n`, 4, /bad service address/],
    ['a lower-case IPv4 address', `${HEAD}TCP  0a000001:0050 rr \n`, 4, /bad service address/],
    ['an unknown protocol', `${HEAD}ICMP 0A000001:0050 rr \n`, 4, /not a service line/],
    ['junk flags', `${HEAD}TCP  0A000001:0050 rr sticky\n`, 4, /bad service flags/],
    [
      'a bad weight',
      `${HEAD}TCP  0A000001:0050 rr \n  -> 0A000002:1F90      Masq    x      0          0\n`,
      5,
      /bad weight/,
    ],
    ['a compressed IPv6 address', `${HEAD}TCP  [2001:db8::1]:01BB rr \n`, 4, /bad service address/],
    [
      'an empty line between real servers',
      `${HEAD}TCP  0A000001:0050 rr \n  -> 0A000002:1F90      Masq    1      0          0\n\n  -> 0A000003:1F90      Masq    1      0          0\n`,
      6,
      /not a service line/,
    ],
    [
      'a second newline at the end',
      `${HEAD}TCP  0A000001:0050 rr \n  -> 0A000002:1F90      Masq    1      0          0\n\n`,
      6,
      /not a service line/,
    ],
    [
      'a real server line cut short',
      `${HEAD}TCP  0A000001:0050 rr \n  -> 0A000002:1F90      Masq    1      0`,
      5,
      /not a real server line/,
    ],
  ])('%s', (_name, text, line, message) => {
    let err: unknown;
    try {
      parseProcIpVs(text);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ProcIpVsParseError);
    expect((err as ProcIpVsParseError).line).toBe(line);
    expect((err as ProcIpVsParseError).code).toBe('KIPVS_PROC_IP_VS_PARSE');
    expect((err as Error).message).toMatch(message);
  });
});

describe("parseProcIpVs with the last parse's blocks", () => {
  it('reads what a parse without them reads, and the second time hands out the same services', () => {
    const blocks = new ProcIpVsBlocks();
    const first = parseProcIpVs(REAL, blocks);
    expect(first).toEqual(parseProcIpVs(REAL));
    const second = parseProcIpVs(REAL, blocks);
    expect(second).toEqual(first);
    second.services.forEach((s, i) => expect(s).toBe(first.services[i]));
  });

  it('a block whose connection count moved is parsed again; the blocks around it are not', () => {
    const blocks = new ProcIpVsBlocks();
    const first = parseProcIpVs(REAL, blocks);
    const moved = REAL.replace(
      '  -> 0AF40101:0035      Masq    1      0          0',
      '  -> 0AF40101:0035      Masq    1      7          0',
    );
    const second = parseProcIpVs(moved, blocks);
    expect(second).toEqual(parseProcIpVs(moved));
    const changed = second.services
      .map((s, i) => (s === first.services[i] ? '' : `${s.address}:${s.port}`))
      .filter(Boolean);
    expect(changed).toEqual(['10.0.0.4:53']);
    expect(
      second.services.find((s) => s.port === 53 && s.protocol === IPPROTO_UDP && s.address === '10.0.0.4')!.dests[1]!
        .activeConns,
    ).toBe(7);
  });

  it('a service added in front moves every block, and each is still found by its text', () => {
    const blocks = new ProcIpVsBlocks();
    const first = parseProcIpVs(REAL, blocks);
    const added = HEAD + 'TCP  0A0000FE:0050 rr  \n' + REAL.slice(HEAD.length);
    const second = parseProcIpVs(added, blocks);
    expect(second).toEqual(parseProcIpVs(added));
    expect(second.services.slice(1).every((s, i) => s === first.services[i])).toBe(true);
  });

  it('names the right line of a bad line after blocks it took as they were, and keeps the last good blocks', () => {
    const blocks = new ProcIpVsBlocks();
    const first = parseProcIpVs(REAL, blocks);
    const lines = REAL.split('\n').length - 1;
    expect(() => parseProcIpVs(REAL + 'TCP  0a000001:0050 rr \n', blocks)).toThrow(
      expect.objectContaining({ line: lines + 1 }) as unknown as Error,
    );
    expect(parseProcIpVs(REAL, blocks).services[0]).toBe(first.services[0]);
  });

  // the periodic full sync parses a new text every 30 s: the blocks it keeps must not hold on to
  // the texts they came from, or a block changed once keeps a whole text of its generation alive
  it('holds about one text, however many parses each changed one block', () => {
    const script = `
      const { ProcIpVsBlocks, parseProcIpVs } = require(${JSON.stringify(join(__dirname, '../../../lib/kernel/ipvs/parse-proc-ip-vs.js'))});
      const head = ${JSON.stringify(HEAD)};
      const hex = (n, w) => n.toString(16).toUpperCase().padStart(w, '0');
      // 5,000 services of 20 real servers; generation g moves a connection count of service g
      const text = (g) => {
        const lines = [head];
        for (let s = 0; s < 5000; s++) {
          lines.push('TCP  0A' + hex(s, 6) + ':0050 rr \\n');
          for (let d = 0; d < 20; d++)
            lines.push('  -> 0B' + hex(s * 20 + d, 6) + ':1F90      Masq    1      ' + (s === g ? 1 : 0) + '          0\\n');
        }
        return lines.join('');
      };
      const blocks = new ProcIpVsBlocks();
      let t = text(-1);
      const length = t.length;
      parseProcIpVs(t, blocks);
      t = undefined;
      gc();
      const first = process.memoryUsage().heapUsed;
      for (let g = 0; g < 8; g++) parseProcIpVs(text(g), blocks);
      gc();
      process.stdout.write(JSON.stringify({ length, grew: process.memoryUsage().heapUsed - first }));`;
    const r = spawnSync(process.execPath, [...KUBE_IPVS_NODE_FLAGS, '-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    const { length, grew } = JSON.parse(r.stdout) as { length: number; grew: number };
    expect(length).toBeGreaterThan(5 * 2 ** 20);
    // eight generations each kept alive would be eight texts
    expect(grew).toBeLessThan(length / 2);
  });
});
