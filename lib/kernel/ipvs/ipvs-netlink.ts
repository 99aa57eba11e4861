import { constants as osConstants } from 'node:os';
import { KubeIpvsError, NetlinkError, SocketError, errnoName, withOperation } from '../../errors';
import { AttrReader, AttrWriter } from '../../netlink/attr';
import { GENL_ID_CTRL } from '../../uapi/netlink';
import { IpvsInfo, IpvsTimeouts, RealServer, VirtualServer, VirtualServerId } from '../../model/ipvs';
import {
  IpvsRequest,
  decodeConfig,
  decodeDest,
  decodeInfo,
  decodeService,
  encodeIpvsRequest,
  replyNest,
  writeIpvsRequest,
} from '../../netlink/ipvs-codec';
import {
  GenlReply,
  GenlSocket,
  GenlSocketOptions,
  NetlinkTransport,
  RawTransport,
  isGenlFailure,
} from '../../netlink/socket';
import { IPVS_CMD_ATTR, IPVS_GENL_NAME, IPVS_GENL_VERSION } from '../../uapi/ip_vs';
import { describeRequest, toNetlinkError } from './describe-op';
import { extendedAckProblem } from '../../netlink/ext-ack';
import { DumpMemo } from '../../netlink/dump-memo';
import { Ipvs, IpvsOp, IpvsOpResult, VirtualServerEntry } from './ipvs';

const { ENOENT } = osConstants.errno;
const OK: IpvsOpResult = Object.freeze({ ok: true as const });

/** The IPVS generic-netlink family is not registered: ip_vs is not loaded (or not built). */
export class IpvsUnavailableError extends KubeIpvsError {
  readonly code = 'KIPVS_IPVS_UNAVAILABLE' as const;
}

/** Options of the IPVS netlink client: the socket's, and how many sockets dump destinations. */
export interface IpvsNetlinkOptions extends GenlSocketOptions {
  /**
   * sockets used for listAll's per-service dest dumps; the kernel runs one dump at a time
   * per socket, so several sockets overlap the round trips
   */
  readonly dumpSockets?: number;
}

/** nlctrl (include/uapi/linux/genetlink.h): CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID / _NAME */
const CTRL_CMD_GETFAMILY = 3;
const CTRL_ATTR_FAMILY_ID = 1;
const CTRL_ATTR_FAMILY_NAME = 2;
const CTRL_VERSION = 2;

/**
 * Resolves the IPVS family id through nlctrl (CTRL_CMD_GETFAMILY). Only ENOENT (no family of
 * that name: ip_vs not loaded, or not built) is IpvsUnavailableError; any other refusal (e.g.
 * EPERM) is a NetlinkError with its errno, and a socket failure or timeout keeps its class.
 * The transport is closed before returning.
 */
export async function resolveIpvsFamily(transport: NetlinkTransport = new RawTransport()): Promise<number> {
  const ctrl = new GenlSocket(transport, GENL_ID_CTRL, CTRL_VERSION, { requestTimeoutMs: 5000 });
  try {
    const attrs = new AttrWriter().string(CTRL_ATTR_FAMILY_NAME, IPVS_GENL_NAME).finish();
    let replies: GenlReply[];
    try {
      replies = await ctrl.request({ cmd: CTRL_CMD_GETFAMILY, attrs: Buffer.from(attrs) });
    } catch (e) {
      if (!isGenlFailure(e)) throw e;
      if (e.errno === ENOENT) {
        throw new IpvsUnavailableError(
          'IPVS generic netlink family not found (ENOENT): is the ip_vs kernel module loaded?',
        );
      }
      throw new NetlinkError(e.errno, 'resolve generic netlink family', IPVS_GENL_NAME, errnoName(e.errno), e.extack);
    }
    for (const r of replies) {
      const id = AttrReader.parse(r.attrs, 'CTRL_CMD_NEWFAMILY', { FAMILY_ID: CTRL_ATTR_FAMILY_ID }).u16(
        CTRL_ATTR_FAMILY_ID,
      );
      if (id !== undefined) return id;
    }
    throw new IpvsUnavailableError('nlctrl returned no family id for IPVS');
  } finally {
    ctrl.close();
  }
}

let warnedNoExtAck = false;

/** Opens an IPVS client on real netlink sockets. */
export async function openIpvs(options: IpvsNetlinkOptions = {}): Promise<IpvsNetlink> {
  const familyId = await resolveIpvsFamily();
  const why = extendedAckProblem();
  if (why !== undefined && !warnedNoExtAck) {
    warnedNoExtAck = true;
    // the logger (winston) is loaded only to say this: `kube-ipvs ipvsadm` never needs it
    // otherwise, and loading it took seconds of every CLI run in the VM
    const { log } = await import('../../log');
    log.warn(`netlink: kernel error messages (extended ack) are off, errors carry the errno only: ${why}`);
  }
  return new IpvsNetlink(() => new RawTransport(), familyId, options);
}

/** The Ipvs interface over generic netlink; our own codec, the `netlink` package's socket. */
export class IpvsNetlink implements Ipvs {
  private readonly main: GenlSocket;
  private dumpPool: GenlSocket[] = [];
  /** the last service dump, decoded: a full sync reads it every syncPeriod */
  private readonly serviceDumps = new DumpMemo<VirtualServer>();

  constructor(
    private readonly newTransport: () => NetlinkTransport,
    readonly familyId: number,
    private readonly options: IpvsNetlinkOptions = {},
  ) {
    this.main = this.newSocket();
  }

  private newSocket(): GenlSocket {
    return new GenlSocket(this.newTransport(), this.familyId, IPVS_GENL_VERSION, this.options);
  }

  private async request(req: IpvsRequest, sock: GenlSocket = this.main): Promise<GenlReply[]> {
    const enc = encodeIpvsRequest(req);
    try {
      return await sock.request({ cmd: enc.cmd, attrs: enc.attrs }, { dump: enc.dump });
    } catch (e) {
      if (isGenlFailure(e)) throw toNetlinkError(req, e);
      const { operation, object } = describeRequest(req);
      // name the operation; a DecodeError keeps its own class (and attribute path)
      const what = `${operation}${object ? ' ' + object : ''}`;
      throw withOperation(e, what);
    }
  }

  async info(): Promise<IpvsInfo> {
    const [reply] = await this.request({ kind: 'getInfo' });
    if (!reply) throw new SocketError('GET_INFO: no reply');
    return decodeInfo(reply.attrs);
  }

  async timeouts(): Promise<IpvsTimeouts> {
    const [reply] = await this.request({ kind: 'getConfig' });
    if (!reply) throw new SocketError('GET_CONFIG: no reply');
    return decodeConfig(reply.attrs);
  }

  async listServices(): Promise<VirtualServer[]> {
    const replies = await this.request({ kind: 'dumpServices' });
    return this.serviceDumps.each(
      replies.map((r) => r.attrs),
      (attrs) => decodeService(replyNest(attrs, IPVS_CMD_ATTR.SERVICE, 'IPVS_CMD_NEW_SERVICE')),
    );
  }

  async getService(id: VirtualServerId): Promise<VirtualServer> {
    const [reply] = await this.request({ kind: 'getService', vs: id });
    if (!reply) throw new SocketError('GET_SERVICE: no reply');
    return decodeService(replyNest(reply.attrs, IPVS_CMD_ATTR.SERVICE, 'IPVS_CMD_NEW_SERVICE'));
  }

  async listRealServers(id: VirtualServerId, sock: GenlSocket = this.main): Promise<RealServer[]> {
    const replies = await this.request({ kind: 'dumpDests', vs: id }, sock);
    return replies.map((r) => decodeDest(replyNest(r.attrs, IPVS_CMD_ATTR.DEST, 'IPVS_CMD_NEW_DEST'), id.af));
  }

  async listAll(): Promise<VirtualServerEntry[]> {
    const services = await this.listServices();
    const want = Math.max(1, Math.min(this.options.dumpSockets ?? 4, services.length));
    while (this.dumpPool.length < want - 1) this.dumpPool.push(this.newSocket());
    const socks = [this.main, ...this.dumpPool.slice(0, want - 1)];
    const out: VirtualServerEntry[] = new Array(services.length);
    let next = 0;
    // each socket walks the list; one dump in progress per socket, as the kernel requires
    await Promise.all(
      socks.map(async (sock) => {
        while (next < services.length) {
          const i = next++;
          const vs = services[i]!;
          out[i] = { vs, dests: await this.listRealServers(vs, sock) };
        }
      }),
    );
    return out;
  }

  async apply(op: IpvsOp): Promise<void> {
    await this.request(op);
  }

  async run(ops: readonly IpvsOp[]): Promise<IpvsOpResult[]> {
    let failures: Awaited<ReturnType<GenlSocket['batch']>>;
    try {
      // each op encoded straight into the datagram that carries it
      failures = await this.main.batchWritten(ops.length, (i, w) => writeIpvsRequest(w, ops[i]!));
    } catch (e) {
      // the socket failed or stopped answering: no op's result is known; name the batch
      const first = describeRequest(ops[0]!);
      const what = `run ${ops.length} IPVS ops (first: ${first.operation}${first.object ? ' ' + first.object : ''})`;
      throw withOperation(e, what);
    }
    return failures.map((f, i) => (f === null ? OK : { ok: false as const, error: toNetlinkError(ops[i]!, f, i) }));
  }

  close(): void {
    this.main.close();
    for (const s of this.dumpPool) s.close();
    this.dumpPool = [];
  }
}
