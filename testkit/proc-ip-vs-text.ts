// Test double: a table as the kernel prints it in /proc/net/ip_vs (ip_vs_info_seq_show(),
// net/netfilter/ipvs/ip_vs_ctl.c, 6.1), for driving the /proc listing against FakeIpvs.
// The parser's own tests use text captured from the real kernel instead.
import { VirtualServerEntry } from '../lib/kernel/ipvs/ipvs';
import { IpvsInfo, addressToBytes } from '../lib/model/ipvs';
import { AF_INET6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../lib/uapi/inet';
import { IP_VS_CONN_F, IP_VS_SVC_F } from '../lib/uapi/ip_vs';

const HZ = 250;
const X = (v: number, w: number): string => (v >>> 0).toString(16).toUpperCase().padStart(w, '0');
const left = (v: string | number, w: number): string => String(v).padEnd(w);

/** %pI6: every group, four lower-case digits */
function fullIPv6(address: string): string {
  const b = addressToBytes(AF_INET6, address);
  const g: string[] = [];
  for (let i = 0; i < 16; i += 2) g.push(b.readUInt16BE(i).toString(16).padStart(4, '0'));
  return g.join(':');
}

function hostPort(af: number, address: string, port: number): string {
  return af === AF_INET6
    ? `[${fullIPv6(address)}]:${X(port, 4)}`
    : `${X(addressToBytes(af as 2, address).readUInt32BE(0), 8)}:${X(port, 4)}`;
}

function fwdName(fwd: number): string {
  switch (fwd & 7) {
    case IP_VS_CONN_F.LOCALNODE:
      return 'Local';
    case IP_VS_CONN_F.TUNNEL:
      return 'Tunnel';
    case IP_VS_CONN_F.DROUTE:
      return 'Route';
    default:
      return 'Masq';
  }
}

const PROTO: Readonly<Record<number, string>> = { [IPPROTO_TCP]: 'TCP', [IPPROTO_UDP]: 'UDP', [IPPROTO_SCTP]: 'SCTP' };

/** The /proc/net/ip_vs text of these entries, in their order (HZ 250 for the timeout). */
export function procIpVsText(
  entries: readonly VirtualServerEntry[],
  info: IpvsInfo = { version: 0x010201, connTabSize: 4096 },
): string {
  const v = info.version;
  let out =
    `IP Virtual Server version ${(v >> 16) & 255}.${(v >> 8) & 255}.${v & 255} (size=${info.connTabSize})\n` +
    'Prot LocalAddress:Port Scheduler Flags\n' +
    '  -> RemoteAddress:Port Forward Weight ActiveConn InActConn\n';
  for (const { vs, dests } of entries) {
    const ops = vs.flags & IP_VS_SVC_F.ONEPACKET ? 'ops ' : '';
    if (vs.fwmark) out += `FWM  ${X(vs.fwmark, 8)} ${vs.scheduler} ${ops}`;
    else if (vs.af === AF_INET6)
      out += `${PROTO[vs.protocol]}  ${hostPort(vs.af, vs.address, vs.port)} ${vs.scheduler} `;
    else out += `${PROTO[vs.protocol]}  ${hostPort(vs.af, vs.address, vs.port)} ${vs.scheduler} ${ops}`;
    // an IPv6 prefix length is kept in a __be32 as given and shown through ntohl()
    const mask = vs.af === AF_INET6 ? Buffer.from(Uint32Array.of(vs.netmask).buffer).readUInt32BE(0) : vs.netmask;
    out += vs.flags & IP_VS_SVC_F.PERSISTENT ? `persistent ${vs.timeout * HZ} ${X(mask, 8)}\n` : '\n';
    for (const d of dests) {
      out += `  -> ${hostPort(d.af, d.address, d.port)}      ${left(fwdName(d.fwdMethod), 7)} ${left(d.weight, 6)} ${left(d.activeConns, 10)} ${left(d.inactConns, 10)}\n`;
    }
  }
  // one flat string, as the daemon's read of the file into a Buffer gives it: the parser's
  // first indexOf would otherwise flatten the concatenation, counted as the parser's
  // allocation in scripts/bench/full-sync-alloc.ts
  return Buffer.from(out, 'latin1').toString('latin1');
}
