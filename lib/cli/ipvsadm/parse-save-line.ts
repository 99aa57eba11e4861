// The two line shapes `ipvsadm -Sn` prints for almost every entry of a large table, parsed
// without the general option parser (popt emulation, option tables, checks): a restore of
// 10,000 x 10 is 110,000 such lines.
//
//   -A -t|-u 1.2.3.4:80 -s rr
//   -a -t|-u 1.2.3.4:80 -r 5.6.7.8:8080 -m|-g|-i -w 1
//
// Only strict dotted-quad IPv4 addresses and decimal ports are taken; anything else (names,
// IPv6, fwmarks, persistence, flags, other options or order, an out-of-range number) returns
// undefined and the line goes through parseArgs. The op is the one parseArgs gives for the
// same words (spec/cli/parse-save-line.test.ts compares them).

import { IpvsOp } from '../../kernel/ipvs/ipvs';
import { VirtualServerId, parseIPv4 } from '../../model/ipvs';
import { AF_INET, IPPROTO_TCP, IPPROTO_UDP } from '../../uapi/inet';
import { IP_VS_CONN_F, IP_VS_CONN_F_TUNNEL_TYPE, IP_VS_TUNNEL_ENCAP_FLAG } from '../../uapi/ip_vs';
import { CommandName } from './parse-args';

const IP_VS_SCHEDNAME_MAXLEN = 16;

/** "1.2.3.4:80" -> address and port; undefined unless strictly that shape */
function ipv4Port(s: string): { address: string; port: number } | undefined {
  const colon = s.indexOf(':');
  if (colon < 0 || s.length - colon - 1 < 1 || s.length - colon - 1 > 5) return undefined;
  const address = s.slice(0, colon);
  if (parseIPv4(address) < 0) return undefined;
  const port = digits(s, colon + 1);
  if (port < 0 || port > 65535) return undefined;
  return { address, port };
}

/** decimal digits from `from` to the end, at most 10; -1 when not */
function digits(s: string, from: number): number {
  if (from >= s.length || s.length - from > 10) return -1;
  let n = 0;
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return -1;
    n = n * 10 + (c - 48);
  }
  return n;
}

const PROTO: Readonly<Record<string, number>> = { '-t': IPPROTO_TCP, '-u': IPPROTO_UDP };
const FWD: Readonly<Record<string, number>> = {
  '-m': IP_VS_CONN_F.MASQ,
  '-g': IP_VS_CONN_F.DROUTE,
  '-i': IP_VS_CONN_F.TUNNEL,
};

// the -a lines of one service follow each other: they share one (immutable) service id
let lastService: { protocol: number; word: string; id: VirtualServerId | undefined } = {
  protocol: -1,
  word: '',
  id: undefined,
};

/** The service of an -a line ("1.2.3.4:80" with its protocol), the previous line's when the same. */
function serviceId(protocol: number, word: string): VirtualServerId | undefined {
  if (lastService.protocol === protocol && lastService.word === word) return lastService.id;
  const a = ipv4Port(word);
  const id: VirtualServerId | undefined = a && { af: AF_INET, protocol, address: a.address, port: a.port, fwmark: 0 };
  lastService = { protocol, word, id };
  return id;
}

/** The op of a common -S line, or undefined: then parseArgs must parse it. */
export function parseSaveLine(
  words: readonly string[],
): { readonly command: CommandName; readonly op: IpvsOp } | undefined {
  const protocol = PROTO[words[1]!];
  if (protocol === undefined) return undefined;
  if (words[0] === '-A' && words.length === 5 && words[3] === '-s') {
    const vs = ipv4Port(words[2]!);
    const scheduler = words[4]!;
    // port 0 is refused (non-persistent); a scheduler word that looks like an option is left to popt
    if (!vs || vs.port === 0 || scheduler.startsWith('-')) return undefined;
    return {
      command: 'add-service',
      op: {
        kind: 'newService',
        vs: {
          af: AF_INET,
          protocol,
          address: vs.address,
          port: vs.port,
          fwmark: 0,
          scheduler: scheduler.slice(0, IP_VS_SCHEDNAME_MAXLEN),
          flags: 0,
          timeout: 0,
          netmask: 0xffffffff,
          peName: '',
        },
      },
    };
  }
  if (words[0] === '-a' && words.length === 8 && words[3] === '-r' && words[6] === '-w') {
    const vs = serviceId(protocol, words[2]!);
    const rs = ipv4Port(words[4]!);
    const fwdMethod = FWD[words[5]!];
    const weight = digits(words[7]!, 0);
    if (!vs || !rs || fwdMethod === undefined || weight < 0 || weight > 2147483647) return undefined;
    // direct routing and tunnelling cannot change the port: the service's is used
    const port = fwdMethod === IP_VS_CONN_F.MASQ ? rs.port : vs.port;
    return {
      command: 'add-server',
      op: {
        kind: 'newDest',
        vs,
        rs:
          fwdMethod === IP_VS_CONN_F.TUNNEL
            ? {
                af: AF_INET,
                address: rs.address,
                port,
                fwdMethod,
                weight,
                uThreshold: 0,
                lThreshold: 0,
                tunType: IP_VS_CONN_F_TUNNEL_TYPE.IPIP,
                tunPort: 0,
                tunFlags: IP_VS_TUNNEL_ENCAP_FLAG.NOCSUM,
              }
            : { af: AF_INET, address: rs.address, port, fwdMethod, weight, uThreshold: 0, lThreshold: 0 },
      },
    };
  }
  return undefined;
}
