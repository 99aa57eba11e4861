import { constants as osConstants } from 'node:os';
import { NetlinkError, errnoName, withOperation } from '../../errors';
import { decodeConntrackFlow, encodeConntrackDelete, encodeConntrackDump } from '../../netlink/conntrack-codec';
import { GenlSocket, GenlSocketOptions, NetlinkTransport, RawTransport, isGenlFailure } from '../../netlink/socket';
import { NETLINK_NETFILTER, NFNETLINK_V0 } from '../../uapi/nfnetlink_conntrack';
import { ConntrackFlow, describeFlow } from '../../model/conntrack';
import { IpFamily } from '../../model/ip-family';
import { PROTOCOL_NAMES } from '../../model/ipvs';
import { Conntrack, ConntrackUnavailableError, DeleteFlowsResult } from './conntrack';

const E = osConstants.errno;

/** errnos meaning "no ctnetlink here" rather than "this request is wrong" */
const UNAVAILABLE = new Set([E.EPROTONOSUPPORT, E.EOPNOTSUPP, E.EAFNOSUPPORT]);

const what = (family: IpFamily, protocol?: number): string =>
  `${family}${protocol === undefined ? '' : ' ' + (PROTOCOL_NAMES[protocol] ?? `proto ${protocol}`)}`;

/**
 * Conntrack over NETLINK_NETFILTER with our codec and the GenlSocket pipelining (nfgenmsg has
 * genlmsghdr's layout). The kernel loads nf_conntrack_netlink on the first ctnetlink message
 * (module alias nfnetlink-subsys-1), as it loads ip_vs's siblings; a kernel without it is
 * ConntrackUnavailableError.
 */
export class ConntrackNetlink implements Conntrack {
  private readonly sock: GenlSocket;

  constructor(transport: NetlinkTransport, options: GenlSocketOptions = {}) {
    // familyId 0 is never sent: every ctnetlink request carries its own message type
    this.sock = new GenlSocket(transport, 0, NFNETLINK_V0, options);
  }

  async listFlows(family: IpFamily, protocol?: number): Promise<ConntrackFlow[]> {
    let replies;
    try {
      replies = await this.sock.request(encodeConntrackDump(family, protocol), { dump: true });
    } catch (e) {
      if (isGenlFailure(e)) {
        if (UNAVAILABLE.has(e.errno)) {
          throw new ConntrackUnavailableError(
            `dump conntrack ${what(family, protocol)}: ${errnoName(e.errno)}: is nf_conntrack_netlink available (modprobe nf_conntrack_netlink)?`,
          );
        }
        throw new NetlinkError(e.errno, 'dump conntrack', what(family, protocol), errnoName(e.errno), e.extack);
      }
      throw withOperation(e, `dump conntrack ${what(family, protocol)}`);
    }
    const out: ConntrackFlow[] = [];
    for (const r of replies) {
      const f = decodeConntrackFlow(r.cmd, r.attrs);
      // the kernel filters by family and (5.8+) protocol; an older one may send others
      if (f.family === family && (protocol === undefined || f.protocol === protocol)) out.push(f);
    }
    return out;
  }

  async deleteFlows(flows: readonly ConntrackFlow[]): Promise<DeleteFlowsResult> {
    if (flows.length === 0) return { deleted: 0, gone: 0, failures: [] };
    const results = await this.sock.batch(flows.map(encodeConntrackDelete));
    let deleted = 0;
    let gone = 0;
    const failures: { flow: ConntrackFlow; error: NetlinkError }[] = [];
    results.forEach((r, i) => {
      if (r === null) deleted++;
      else if (r.errno === E.ENOENT) gone++;
      else
        failures.push({
          flow: flows[i]!,
          error: new NetlinkError(
            r.errno,
            'delete conntrack entry',
            describeFlow(flows[i]!),
            errnoName(r.errno),
            r.extack,
          ),
        });
    });
    return { deleted, gone, failures };
  }

  close(): void {
    this.sock.close();
  }
}

/** Opens a NETLINK_NETFILTER socket; ConntrackUnavailableError when the kernel has no nfnetlink. */
export function openConntrack(options: GenlSocketOptions = {}): ConntrackNetlink {
  let transport: NetlinkTransport;
  try {
    transport = new RawTransport(NETLINK_NETFILTER, 1 << 20);
  } catch (e) {
    throw new ConntrackUnavailableError(`NETLINK_NETFILTER socket: ${(e as Error).message}: is nfnetlink available?`, {
      cause: e,
    });
  }
  return new ConntrackNetlink(transport, options);
}
