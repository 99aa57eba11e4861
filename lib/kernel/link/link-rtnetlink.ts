// its modules one by one: the package index also loads its nl80211 and wireguard codecs
import { createNetlink, NetlinkSocket } from 'netlink/dist/netlink';
import { NetlinkError, SocketError, errnoName } from '../../errors';
import { decodeAck } from '../../netlink/nlmsg';
import { enableExtendedAck } from '../../netlink/ext-ack';
import { NETLINK_ROUTE, NLMSG } from '../../uapi/netlink';
import { IpFamily } from '../../model/ip-family';
import { Link } from './link';
import { LinkAddress, LinkInfo } from '../../model/link';
import { GenlSocket, RawTransport } from '../../netlink/socket';
import { DumpMemo } from '../../netlink/dump-memo';
import {
  RTM,
  RtnlRequest,
  decodeAddress,
  decodeLink,
  encodeDelAddr,
  encodeDelLink,
  encodeGetAddrs,
  encodeGetLink,
  encodeGetLinks,
  encodeNewAddr,
  encodeNewDummy,
} from '../../netlink/rtnl-codec';

/** A reply message: type and the payload after struct nlmsghdr. */
export interface RtnlReply {
  readonly type: number;
  readonly flags: number;
  readonly payload: Buffer;
}

/**
 * Sends one request and returns its replies (all parts of a dump; [] for a plain ACK).
 * Throws NetlinkError when the kernel answers with an error, SocketError when the socket fails.
 */
export interface RtnlTransport {
  request(req: RtnlRequest): Promise<RtnlReply[]>;
  close(): void;
}

const REQUEST_TIMEOUT_MS = 10_000;

/** NETLINK_ROUTE through the `netlink` package's NetlinkSocket (sequence numbers, multipart). */
export class PackageRtnlTransport implements RtnlTransport {
  /** why the kernel's extended-ack messages are off on this socket; undefined when on */
  readonly extAckProblem: string | undefined;

  constructor(private readonly sock: NetlinkSocket = createNetlink(NETLINK_ROUTE)) {
    this.extAckProblem = enableExtendedAck(sock.socket, NETLINK_ROUTE);
  }

  async request(req: RtnlRequest): Promise<RtnlReply[]> {
    let msgs;
    try {
      // checkError: false: the package turns an NLMSG_ERROR into an Error with text only;
      // we decode the errno ourselves
      [msgs] = await this.sock.request(req.type, [req.payload], {
        flags: req.flags,
        checkError: false,
        timeout: REQUEST_TIMEOUT_MS,
      });
    } catch (e) {
      const errno = (e as NodeJS.ErrnoException).errno;
      throw new SocketError(`rtnetlink ${req.operation} ${req.object}: ${(e as Error).message}`, errno, { cause: e });
    }
    const out: RtnlReply[] = [];
    for (const m of msgs) {
      if (m.type === NLMSG.ERROR) {
        const ack = decodeAck({ type: m.type, flags: m.flags, seq: m.seq, pid: m.port, payload: m.data });
        if (ack.errno !== 0)
          throw new NetlinkError(ack.errno, req.operation, req.object, errnoName(ack.errno), ack.extack);
        continue;
      }
      if (m.type === NLMSG.DONE || m.type === NLMSG.NOOP) continue;
      out.push({ type: m.type, flags: m.flags, payload: m.data });
    }
    return out;
  }

  close(): void {
    this.sock.close();
  }
}

/** Link over rtnetlink. */
export class LinkRtnetlink implements Link {
  private batchSocket: GenlSocket | undefined;
  /** each family's last address dump, decoded: a full sync reads them every syncPeriod */
  private readonly addressDumps = { ipv4: new DumpMemo<LinkAddress>(), ipv6: new DumpMemo<LinkAddress>() };

  /** `openBatch`: the socket addAddresses and deleteAddresses pipeline their requests over */
  constructor(
    private readonly t: RtnlTransport,
    private readonly openBatch: () => GenlSocket = () => new GenlSocket(new RawTransport(NETLINK_ROUTE), 0, 0),
  ) {}

  async listLinks(): Promise<LinkInfo[]> {
    const replies = await this.t.request(encodeGetLinks());
    return replies
      .filter((r) => r.type === RTM.NEWLINK)
      .map((r) => decodeLink(r.payload))
      .sort((a, b) => a.index - b.index);
  }

  async getLink(name: string): Promise<LinkInfo> {
    const replies = await this.t.request(encodeGetLink(name));
    const r = replies.find((x) => x.type === RTM.NEWLINK);
    if (r === undefined) throw new SocketError(`get link ${name}: no RTM_NEWLINK in the reply`);
    return decodeLink(r.payload);
  }

  async addDummy(name: string): Promise<void> {
    await this.t.request(encodeNewDummy(name));
  }

  async deleteLink(index: number): Promise<void> {
    await this.t.request(encodeDelLink(index));
  }

  async listAddresses(family: IpFamily): Promise<LinkAddress[]> {
    const replies = await this.t.request(encodeGetAddrs(family));
    const messages = replies.filter((r) => r.type === RTM.NEWADDR).map((r) => r.payload);
    return this.addressDumps[family]
      .each(messages, decodeAddress)
      .filter((a) => a.family === family)
      .sort(compareAddresses);
  }

  async addAddress(index: number, address: string): Promise<void> {
    await this.t.request(encodeNewAddr(index, address));
  }

  async deleteAddress(index: number, address: string): Promise<void> {
    await this.t.request(encodeDelAddr(index, address));
  }

  addAddresses(index: number, addresses: readonly string[]): Promise<(NetlinkError | null)[]> {
    return this.batch(addresses.map((a) => encodeNewAddr(index, a)));
  }

  deleteAddresses(index: number, addresses: readonly string[]): Promise<(NetlinkError | null)[]> {
    return this.batch(addresses.map((a) => encodeDelAddr(index, a)));
  }

  private async batch(reqs: readonly RtnlRequest[]): Promise<(NetlinkError | null)[]> {
    if (reqs.length === 0) return [];
    this.batchSocket ??= this.openBatch();
    const failures = await this.batchSocket.batchRaw(reqs.length, (i, w) => {
      const r = reqs[i]!;
      w.raw(r.payload);
      return r;
    });
    return failures.map((f, i) => {
      if (!f) return null;
      const r = reqs[i]!;
      return new NetlinkError(f.errno, r.operation, r.object, errnoName(f.errno), f.extack);
    });
  }

  close(): void {
    this.t.close();
    this.batchSocket?.close();
  }
}

/** Orders addresses by interface index, then address text. */
export function compareAddresses(a: LinkAddress, b: LinkAddress): number {
  return a.ifindex - b.ifindex || (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);
}

/** Opens a NETLINK_ROUTE socket. */
export async function openLink(): Promise<Link> {
  return new LinkRtnetlink(new PackageRtnlTransport());
}
