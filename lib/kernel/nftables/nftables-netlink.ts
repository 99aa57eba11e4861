/**
 * NftTables over NETLINK_NETFILTER with our codec (nft-table-codec.ts): a GenlSocket whose
 * requests carry their own nf_tables message types (nfgenmsg has genlmsghdr's layout, as for
 * the generation and ctnetlink), the deletion one nfnetlink batch (GenlSocket.batchRaw's
 * transaction). The kernel loads nf_tables on the first nf_tables message (module alias
 * nfnetlink-subsys-10), as `nft` does.
 */
import { constants as osConstants } from 'node:os';
import { NetlinkError, SocketError, errnoName, withOperation } from '../../errors';
import { NftTable, describeNftTable } from '../../model/nft-table';
import { decodeNewTable, encodeDeleteTables, encodeGetTables } from '../../netlink/nft-table-codec';
import { GenlSocket, GenlSocketOptions, NetlinkTransport, isGenlFailure } from '../../netlink/socket';
import { openRawTransport } from '../../netlink/transport';
import { NETLINK_NETFILTER, NFNETLINK_V0 } from '../../uapi/nfnetlink_conntrack';
import { NftTables } from './nftables';
import { LazySocket } from '../lazy-socket';

const E = osConstants.errno;

/**
 * errnos meaning "no nf_tables here" rather than "this request is wrong": the socket cannot be
 * opened without nfnetlink (EPROTONOSUPPORT, EAFNOSUPPORT), and nfnetlink_rcv_msg refuses a
 * message of a subsystem it cannot load with EINVAL (the dump carries no attribute that could
 * be invalid); EOPNOTSUPP and ENOENT as other kernels say the same.
 */
const NO_NF_TABLES = new Set([E.EPROTONOSUPPORT, E.EAFNOSUPPORT, E.EOPNOTSUPP, E.ENOENT, E.EINVAL]);

const REQUEST_TIMEOUT_MS = 5_000;

/** Lists and deletes nf_tables tables over NETLINK_NETFILTER (see the file comment). */
export class NftTablesNetlink implements NftTables {
  private readonly sock: GenlSocket;

  constructor(transport: NetlinkTransport, options: GenlSocketOptions = {}) {
    // familyId 0 is never sent: every request carries its own message type
    this.sock = new GenlSocket(transport, 0, NFNETLINK_V0, { requestTimeoutMs: REQUEST_TIMEOUT_MS, ...options });
  }

  async listTables(): Promise<NftTable[]> {
    let replies;
    try {
      replies = await this.sock.request(encodeGetTables(), { dump: true });
    } catch (e) {
      if (isGenlFailure(e)) {
        if (NO_NF_TABLES.has(e.errno)) return [];
        throw new NetlinkError(e.errno, 'dump nftables tables', '', errnoName(e.errno), e.extack);
      }
      throw withOperation(e, 'dump nftables tables');
    }
    return replies.map((r) => decodeNewTable(r.cmd, r.attrs));
  }

  async deleteTables(tables: readonly NftTable[]): Promise<void> {
    if (tables.length === 0) return;
    const msgs = encodeDeleteTables(tables);
    let results;
    try {
      results = await this.sock.batchRaw(
        msgs.length,
        (i, w) => {
          const m = msgs[i]!;
          w.raw(m.body);
          return m;
        },
        { transaction: true },
      );
    } catch (e) {
      throw withOperation(e, `delete nftables ${tables.map(describeNftTable).join(', ')}`);
    }
    // any refusal aborted the whole transaction (the members' acks say 0 even then)
    const i = results.findIndex((r) => r !== null);
    if (i < 0) return;
    const f = results[i]!;
    // the batch as a whole (BATCH_BEGIN: permission, no nf_tables, a failed commit), or one table
    const object =
      i > 0 && i <= tables.length ? describeNftTable(tables[i - 1]!) : tables.map(describeNftTable).join(', ');
    throw new NetlinkError(f.errno, 'delete nftables', object, errnoName(f.errno), f.extack);
  }

  close(): void {
    this.sock.close();
  }
}

/** Opens a NETLINK_NETFILTER socket for the tables; throws SocketError (with its errno) when it cannot. */
export function openNftTables(options: GenlSocketOptions = {}): NftTablesNetlink {
  return new NftTablesNetlink(
    openRawTransport(NETLINK_NETFILTER, 256 << 10, 'NETLINK_NETFILTER socket for nftables tables'),
    options,
  );
}

/**
 * NftTables that opens its socket on first use (and again after an open that failed): the
 * daemon holds one from the start and uses it once, after the first full sync. A node without
 * nfnetlink lists no table.
 */
export class LazyNftTables implements NftTables {
  private readonly socket: LazySocket<NftTables>;

  constructor(open: () => NftTables = openNftTables) {
    this.socket = new LazySocket(open, 'nftables tables');
  }

  async listTables(): Promise<NftTable[]> {
    let tables: NftTables;
    try {
      tables = this.socket.get();
    } catch (e) {
      if (e instanceof SocketError && e.errno !== undefined && NO_NF_TABLES.has(e.errno)) return [];
      throw e;
    }
    return tables.listTables();
  }

  async deleteTables(tables: readonly NftTable[]): Promise<void> {
    if (tables.length === 0) return;
    return this.socket.get().deleteTables(tables);
  }

  close(): void {
    this.socket.close();
  }
}
