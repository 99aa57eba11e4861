import { createGenericNetlink } from 'netlink';
import { Commands } from 'netlink/dist/genl/structs';
import { KubeIpvsError, NetlinkTimeoutError, SocketError } from '../../errors';
import { IpvsInfo, IpvsTimeouts, RealServer, VirtualServer, VirtualServerId } from '../../model/ipvs';
import {
  IpvsRequest,
  decodeConfig,
  decodeDest,
  decodeInfo,
  decodeService,
  encodeIpvsRequest,
  replyNest,
} from '../../netlink/ipvs-codec';
import { GenlReply, GenlSocket, GenlSocketOptions, NetlinkTransport, RawTransport, isGenlFailure } from '../../netlink/socket';
import { IPVS_CMD_ATTR, IPVS_GENL_NAME, IPVS_GENL_VERSION } from '../../netlink/uapi/ip_vs';
import { describeRequest, toNetlinkError } from './describe-op';
import { Ipvs, IpvsOp, IpvsOpResult, VirtualServerEntry } from './ipvs';

const OK: IpvsOpResult = Object.freeze({ ok: true as const });

/** The IPVS generic-netlink family is not registered: ip_vs is not loaded (or not built). */
export class IpvsUnavailableError extends KubeIpvsError {
  readonly code = 'KIPVS_IPVS_UNAVAILABLE' as const;
}

export interface IpvsNetlinkOptions extends GenlSocketOptions {
  /**
   * sockets used for listAll's per-service dest dumps; the kernel runs one dump at a time
   * per socket, so several sockets overlap the round trips
   */
  readonly dumpSockets?: number;
}

/** Resolves the IPVS family id through nlctrl (CTRL_CMD_GETFAMILY). */
export async function resolveIpvsFamily(): Promise<number> {
  const ctrl = createGenericNetlink();
  try {
    const [msg] = await ctrl.ctrlRequest(Commands.GET_FAMILY, { familyName: IPVS_GENL_NAME }, { timeout: 5000 });
    if (msg?.familyId === undefined) throw new IpvsUnavailableError('nlctrl returned no family id for IPVS');
    return msg.familyId;
  } catch (e) {
    if (e instanceof KubeIpvsError) throw e;
    const errno = (e as { errno?: number }).errno;
    throw new IpvsUnavailableError(
      `IPVS generic netlink family not found${errno ? ` (errno ${errno})` : ''}: is the ip_vs kernel module loaded?`,
      { cause: e },
    );
  } finally {
    ctrl.socket.socket.close();
  }
}

/** Opens an IPVS client on real netlink sockets. */
export async function openIpvs(options: IpvsNetlinkOptions = {}): Promise<IpvsNetlink> {
  const familyId = await resolveIpvsFamily();
  return new IpvsNetlink(() => new RawTransport(), familyId, options);
}

/** The Ipvs interface over generic netlink; our own codec, the `netlink` package's socket. */
export class IpvsNetlink implements Ipvs {
  private readonly main: GenlSocket;
  private dumpPool: GenlSocket[] = [];

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
      if (e instanceof SocketError) throw new SocketError(`${what}: ${e.message}`, e.errno, { cause: e });
      if (e instanceof NetlinkTimeoutError) throw new NetlinkTimeoutError(`${what}: ${e.message}`, e.timeoutMs, { cause: e });
      throw e;
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
    return replies.map((r) => decodeService(replyNest(r.attrs, IPVS_CMD_ATTR.SERVICE, 'IPVS_CMD_NEW_SERVICE')));
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
    const encoded = ops.map((op) => {
      const e = encodeIpvsRequest(op);
      return { cmd: e.cmd, attrs: e.attrs };
    });
    const failures = await this.main.batch(encoded);
    return failures.map((f, i) => (f === null ? OK : { ok: false as const, error: toNetlinkError(ops[i]!, f, i) }));
  }

  close(): void {
    this.main.close();
    for (const s of this.dumpPool) s.close();
    this.dumpPool = [];
  }
}
