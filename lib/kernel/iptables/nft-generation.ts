/**
 * The nf_tables ruleset generation of this network namespace, read over NETLINK_NETFILTER
 * (NFT_MSG_GETGEN). The kernel increments it once per committed nf_tables transaction
 * (nf_tables_commit: `while (++base_seq == 0);`, after the new rules are in place), whoever
 * commits: iptables-nft, ip6tables-nft, nft, firewalld, ... It does not move for reads
 * (iptables-nft-save, `nft list`), for a transaction that fails (aborted, nothing committed),
 * nor for ipset or IPVS changes (other subsystems). spec/vm/nft-generation.vm.test.ts measures
 * this on the VM's kernel.
 *
 * The iptables-legacy backend has no such counter: its tables are whole blobs replaced by
 * setsockopt(IPT_SO_SET_REPLACE) with no generation or change notification, so there is no
 * cheap way to know they are unchanged; IptablesSync keeps reading them with iptables-save.
 */
import { NetlinkError, errnoName, withOperation } from '../../errors';
import { decodeNewGen, encodeGetGen } from '../../netlink/nft-gen-codec';
import { GenlSocket, GenlSocketOptions, NetlinkTransport, isGenlFailure } from '../../netlink/socket';
import { openRawTransport } from '../../netlink/transport';
import { NETLINK_NETFILTER, NFNETLINK_V0 } from '../../uapi/nfnetlink_conntrack';
import { LazySocket } from '../lazy-socket';

/** Reads the current ruleset generation (a u32, never 0). */
export interface RulesetGeneration {
  /**
   * Throws NetlinkError (errno: EPERM without CAP_NET_ADMIN, EOPNOTSUPP/EPROTONOSUPPORT
   * without nf_tables), SocketError or NetlinkTimeoutError.
   */
  read(): Promise<number>;
  close(): void;
}

const REQUEST_TIMEOUT_MS = 5_000;

/** NFT_MSG_GETGEN over a GenlSocket (nfgenmsg has genlmsghdr's layout, as for ctnetlink). */
export class NftGenerationNetlink implements RulesetGeneration {
  private readonly sock: GenlSocket;

  constructor(transport: NetlinkTransport, options: GenlSocketOptions = {}) {
    // familyId 0 is never sent: the request carries its own message type
    this.sock = new GenlSocket(transport, 0, NFNETLINK_V0, { requestTimeoutMs: REQUEST_TIMEOUT_MS, ...options });
  }

  async read(): Promise<number> {
    let replies;
    try {
      replies = await this.sock.request(encodeGetGen());
    } catch (e) {
      if (isGenlFailure(e))
        throw new NetlinkError(e.errno, 'read nf_tables generation', '', errnoName(e.errno), e.extack);
      throw withOperation(e, 'read nf_tables generation');
    }
    if (replies.length !== 1) {
      throw new NetlinkError(
        0,
        'read nf_tables generation',
        '',
        `expected one NFT_MSG_NEWGEN reply, got ${replies.length}`,
      );
    }
    return decodeNewGen(replies[0]!.attrs).id;
  }

  close(): void {
    this.sock.close();
  }
}

/** Opens a NETLINK_NETFILTER socket for the generation; throws SocketError when it cannot. */
export function openNftGeneration(options: GenlSocketOptions = {}): NftGenerationNetlink {
  return new NftGenerationNetlink(
    openRawTransport(NETLINK_NETFILTER, 64 << 10, 'NETLINK_NETFILTER socket for the nf_tables generation'),
    options,
  );
}

/**
 * A RulesetGeneration that opens its socket on the first read (and again on the next read
 * after an open that failed), so a node whose iptables backend is legacy, where IptablesSync
 * never reads the generation, never opens one.
 */
export class LazyNftGeneration implements RulesetGeneration {
  private readonly socket: LazySocket<RulesetGeneration>;

  constructor(open: () => RulesetGeneration = openNftGeneration) {
    this.socket = new LazySocket(open, 'read nf_tables generation');
  }

  read(): Promise<number> {
    try {
      return this.socket.get().read();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  close(): void {
    this.socket.close();
  }
}
