/**
 * Reads every ipset with ONE netlink dump (NETLINK_NETFILTER, NFNL_SUBSYS_IPSET,
 * IPSET_CMD_SAVE), decoded by lib/netlink/ipset-codec.ts into the IpsetState parseIpsetSave
 * makes of `ipset save`: no process, no text. The kernel loads ip_set on the first message
 * (module alias nfnetlink-subsys-6), as the ipset binary relies on too.
 */
import { constants as osConstants } from 'node:os';
import { NetlinkError, errnoName, withOperation } from '../../errors';
import { IpsetDumpDecoder, UnspelledIpsetTypeError, encodeIpsetDump } from '../../netlink/ipset-codec';
import { GenlSocket, GenlSocketOptions, NetlinkTransport, RawTransport, isGenlFailure } from '../../netlink/socket';
import { IPSET_ERR, IPSET_PROTOCOL_MIN } from '../../uapi/ip_set';
import { NETLINK_NETFILTER, NFNETLINK_V0 } from '../../uapi/nfnetlink_conntrack';
import { IpsetNetlinkUnavailableError, IpsetState } from './ipset';
import { DumpMemo } from '../../netlink/dump-memo';

const E = osConstants.errno;

/** errnos meaning "ip_set over netlink is not usable here" rather than "this request is wrong" */
const UNAVAILABLE = new Set<number>([E.EPROTONOSUPPORT, E.EOPNOTSUPP, E.EAFNOSUPPORT, IPSET_ERR.PROTOCOL]);

const OP = 'dump ipsets';

/** Options of listIpsets: the socket, the ip_set protocol version, and the last dump's memo. */
export interface ListIpsetsOptions extends GenlSocketOptions {
  /** the socket under the dump; default a new NETLINK_NETFILTER socket, closed afterwards */
  readonly transport?: NetlinkTransport;
  /** IPSET_ATTR_PROTOCOL of the request; default IPSET_PROTOCOL_MIN (6) */
  readonly protocol?: number;
  /** the last dump, decoded: the same bytes again are not decoded again (a full sync reads every syncPeriod) */
  readonly memo?: DumpMemo<IpsetState>;
}

/**
 * Every set and its members, as parseIpsetSave(`ipset save`) would give them. One socket per
 * call, closed before returning. Errors: IpsetNetlinkUnavailableError (fall back to `ipset
 * save`), NetlinkError (op "dump ipsets") for another refusal, SocketError, NetlinkTimeoutError,
 * DecodeError for bytes that do not parse.
 */
export async function listIpsets(options: ListIpsetsOptions = {}): Promise<IpsetState> {
  let transport = options.transport;
  if (!transport) {
    try {
      transport = new RawTransport(NETLINK_NETFILTER, 1 << 20);
    } catch (e) {
      throw new IpsetNetlinkUnavailableError(`${OP}: NETLINK_NETFILTER socket: ${(e as Error).message}`, { cause: e });
    }
  }
  // familyId 0 is never sent: the request carries its own message type
  const sock = new GenlSocket(transport, 0, NFNETLINK_V0, options);
  try {
    const protocol = options.protocol ?? IPSET_PROTOCOL_MIN;
    let replies;
    try {
      replies = await sock.request(encodeIpsetDump(protocol), { dump: true });
    } catch (e) {
      if (isGenlFailure(e)) {
        const name = e.errno === IPSET_ERR.PROTOCOL ? 'IPSET_ERR_PROTOCOL' : errnoName(e.errno);
        if (UNAVAILABLE.has(e.errno)) {
          throw new IpsetNetlinkUnavailableError(
            `${OP} (protocol ${protocol}): ${name}${e.extack ? ` [${e.extack}]` : ''}`,
          );
        }
        throw new NetlinkError(e.errno, OP, '', name, e.extack);
      }
      throw withOperation(e, OP);
    }
    const decode = (messages: readonly Buffer[]): IpsetState => {
      const d = new IpsetDumpDecoder();
      for (const m of messages) d.add(m);
      return d.sets;
    };
    const messages = replies.map((r) => r.attrs);
    try {
      return options.memo ? options.memo.whole(messages, decode) : decode(messages);
    } catch (e) {
      if (e instanceof UnspelledIpsetTypeError)
        throw new IpsetNetlinkUnavailableError(`${OP}: ${e.message}`, { cause: e });
      throw e;
    }
  } finally {
    sock.close();
  }
}
