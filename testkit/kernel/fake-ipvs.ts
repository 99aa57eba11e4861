import { isIPv4 } from 'node:net';
import { constants as osConstants } from 'node:os';
import { AF_INET, AF_INET6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../../lib/uapi/inet';
import {
  IP_VS_CONN_F,
  IP_VS_CONN_F_FWD_MASK,
  IP_VS_CONN_F_TUNNEL_TYPE,
  IP_VS_VERSION_CODE,
} from '../../lib/uapi/ip_vs';
import { NetlinkError } from '../../lib/errors';
import {
  IpvsInfo,
  IpvsTimeouts,
  RealServer,
  RealServerId,
  RealServerSpec,
  VirtualServer,
  VirtualServerId,
  VirtualServerSpec,
  IPVS_SCHEDULERS,
  ZERO_STATS,
  canonicalAddress,
  realServerKey,
  realServerOf,
  virtualServerKey,
} from '../../lib/model/ipvs';
import { IpvsRequest, defaultNetmask, observedRealServer, observedVirtualServer } from '../../lib/netlink/ipvs-codec';
import { toNetlinkError } from '../../lib/kernel/ipvs/describe-op';
import { Ipvs, IpvsOp, IpvsOpResult, VirtualServerEntry } from '../../lib/kernel/ipvs/ipvs';

const E = osConstants.errno;

/** Scheduler and persistence-engine modules of Debian's 6.1 kernel. */
export const KERNEL_SCHEDULERS: readonly string[] = IPVS_SCHEDULERS;
export const KERNEL_PERSISTENCE_ENGINES: readonly string[] = ['sip'];

interface ServiceState {
  vs: VirtualServer;
  /** newest first, as the kernel lists them (list_add_rcu at the head) */
  dests: RealServer[];
}

export interface FakeIpvsOptions {
  /** without CAP_NET_ADMIN every request fails with EPERM */
  readonly privileged?: boolean;
  readonly schedulers?: readonly string[];
  readonly connTabSize?: number;
}

/**
 * In-memory fake of the kernel's IPVS table. It validates requests the way
 * net/netfilter/ipvs/ip_vs_ctl.c (Linux 6.1) does and refuses with the same errno; the VM
 * test spec/vm/ipvs-netlink.vm.test.ts ("the fake/kernel refuses misuse with the kernel
 * errno", "fake and kernel objects") pins each refusal and each listed object to the kernel's.
 */
export class FakeIpvs implements Ipvs {
  private readonly services = new Map<string, ServiceState>();
  private config: IpvsTimeouts = { tcp: 900, tcpFin: 120, udp: 300 };
  /** every op applied, in order (for asserting how many a sync needed) */
  readonly applied: IpvsOp[] = [];

  constructor(private readonly options: FakeIpvsOptions = {}) {}

  private fail(req: IpvsRequest, errno: number, opIndex?: number): never {
    throw toNetlinkError(req, { errno }, opIndex);
  }

  private checkPrivilege(req: IpvsRequest): void {
    if (this.options.privileged === false) this.fail(req, E.EPERM);
  }

  private checkServiceId(req: IpvsRequest, id: VirtualServerId): string {
    if (id.af !== AF_INET && id.af !== AF_INET6) this.fail(req, E.EAFNOSUPPORT);
    if (id.fwmark === 0 && ![IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP].includes(id.protocol))
      this.fail(req, E.EPROTONOSUPPORT);
    return virtualServerKey(normalizeId(id));
  }

  private lookup(req: IpvsRequest, id: VirtualServerId): ServiceState {
    const s = this.services.get(this.checkServiceId(req, id));
    if (!s) this.fail(req, E.ESRCH);
    return s;
  }

  private checkSpec(req: IpvsRequest, vs: VirtualServerSpec): void {
    const schedulers = this.options.schedulers ?? KERNEL_SCHEDULERS;
    if (!schedulers.includes(vs.scheduler)) this.fail(req, E.ENOENT);
    if (vs.peName && !KERNEL_PERSISTENCE_ENGINES.includes(vs.peName)) this.fail(req, E.ENOENT);
    const netmask = vs.netmask ?? defaultNetmask(vs.af);
    if (vs.af === AF_INET6 && (netmask < 1 || netmask > 128)) this.fail(req, E.EINVAL);
  }

  private toVirtualServer(vs: VirtualServerSpec): VirtualServer {
    const id = normalizeId(vs);
    return {
      ...id,
      scheduler: vs.scheduler,
      flags: vs.flags ?? 0,
      timeout: vs.timeout ?? 0,
      netmask: vs.netmask ?? defaultNetmask(vs.af),
      peName: vs.peName ?? '',
      stats: ZERO_STATS,
    };
  }

  private checkDest(req: IpvsRequest, svc: VirtualServer, rs: RealServerSpec): RealServer {
    if (rs.af !== svc.af) {
      // mixed families only through a tunnel (ip_vs_genl_set_cmd)
      if ((rs.fwdMethod & IP_VS_CONN_F_FWD_MASK) !== IP_VS_CONN_F.TUNNEL) this.fail(req, E.EINVAL);
    }
    if (!isUnicast(rs.af, rs.address)) this.fail(req, E.EINVAL);
    // ip_vs_add_dest / ip_vs_edit_dest: weight is an int; thresholds must be ordered
    if (rs.weight > 0x7fffffff) this.fail(req, E.ERANGE);
    if ((rs.lThreshold ?? 0) > (rs.uThreshold ?? 0)) this.fail(req, E.ERANGE);
    if (
      rs.tunType === IP_VS_CONN_F_TUNNEL_TYPE.GUE &&
      !rs.tunPort &&
      (rs.fwdMethod & IP_VS_CONN_F_FWD_MASK) === IP_VS_CONN_F.TUNNEL
    ) {
      this.fail(req, E.EINVAL);
    }
    return {
      ...realServerOf({
        ...rs,
        address: canonicalAddress(rs.address),
        fwdMethod: rs.fwdMethod & IP_VS_CONN_F_FWD_MASK,
      }),
      stats: ZERO_STATS,
    };
  }

  private destIndex(s: ServiceState, id: RealServerId): number {
    const key = realServerKey({ ...id, address: canonicalAddress(id.address) });
    return s.dests.findIndex((d) => realServerKey(d) === key);
  }

  private applyOne(op: IpvsOp, opIndex?: number): void {
    const req: IpvsRequest = op;
    this.checkPrivilege(req);
    try {
      switch (op.kind) {
        case 'newService': {
          const key = this.checkServiceId(req, op.vs);
          if (this.services.has(key)) this.fail(req, E.EEXIST);
          this.checkSpec(req, op.vs);
          this.services.set(key, { vs: this.toVirtualServer(op.vs), dests: [] });
          break;
        }
        case 'setService': {
          const s = this.lookup(req, op.vs);
          this.checkSpec(req, op.vs);
          s.vs = { ...this.toVirtualServer(op.vs), stats: s.vs.stats ?? ZERO_STATS };
          break;
        }
        case 'delService': {
          this.lookup(req, op.vs);
          this.services.delete(virtualServerKey(normalizeId(op.vs)));
          break;
        }
        case 'newDest': {
          const s = this.lookup(req, op.vs);
          const rs = this.checkDest(req, s.vs, op.rs);
          if (this.destIndex(s, rs) >= 0) this.fail(req, E.EEXIST);
          s.dests.unshift(rs);
          break;
        }
        case 'setDest': {
          const s = this.lookup(req, op.vs);
          const rs = this.checkDest(req, s.vs, op.rs);
          const i = this.destIndex(s, rs);
          if (i < 0) this.fail(req, E.ENOENT);
          const old = s.dests[i]!;
          s.dests[i] = {
            ...rs,
            activeConns: old.activeConns,
            inactConns: old.inactConns,
            persistConns: old.persistConns,
            stats: old.stats ?? ZERO_STATS,
          };
          break;
        }
        case 'delDest': {
          const s = this.lookup(req, op.vs);
          const i = this.destIndex(s, op.rs);
          if (i < 0) this.fail(req, E.ENOENT);
          s.dests.splice(i, 1);
          break;
        }
        case 'zero': {
          const targets = op.vs ? [this.lookup(req, op.vs)] : [...this.services.values()];
          for (const s of targets) {
            s.vs = { ...s.vs, stats: ZERO_STATS };
            s.dests = s.dests.map((d) => ({ ...d, stats: ZERO_STATS }));
          }
          break;
        }
        case 'flush':
          this.services.clear();
          break;
        case 'setConfig': {
          // 0 leaves a value unchanged (ip_vs_set_timeout applies only non-zero values)
          const t = op.timeouts;
          this.config = {
            tcp: t.tcp || this.config.tcp,
            tcpFin: t.tcpFin || this.config.tcpFin,
            udp: t.udp || this.config.udp,
          };
          break;
        }
      }
    } catch (e) {
      if (e instanceof NetlinkError && opIndex !== undefined) throw toNetlinkError(req, { errno: e.errno }, opIndex);
      throw e;
    }
    this.applied.push(op);
  }

  /**
   * Gives a real server connections, as traffic would (the kernel counts them per dest; a
   * test of graceful termination needs a real server that is not yet drained). Not a request:
   * not in `applied`.
   */
  setConnections(vs: VirtualServerId, rs: RealServerId, conns: { active: number; inactive: number }): void {
    const s = this.services.get(virtualServerKey(normalizeId(vs)));
    const i = s ? this.destIndex(s, rs) : -1;
    if (!s || i < 0) throw new Error(`setConnections: no real server ${realServerKey(rs)} in ${virtualServerKey(vs)}`);
    s.dests[i] = { ...s.dests[i]!, activeConns: conns.active, inactConns: conns.inactive };
  }

  async info(): Promise<IpvsInfo> {
    this.checkPrivilege({ kind: 'getInfo' });
    return { version: IP_VS_VERSION_CODE, connTabSize: this.options.connTabSize ?? 4096 };
  }

  async timeouts(): Promise<IpvsTimeouts> {
    this.checkPrivilege({ kind: 'getConfig' });
    return { ...this.config };
  }

  async listServices(): Promise<VirtualServer[]> {
    this.checkPrivilege({ kind: 'dumpServices' });
    return [...this.services.values()].map((s) => observedVirtualServer(s.vs));
  }

  async getService(id: VirtualServerId): Promise<VirtualServer> {
    const req: IpvsRequest = { kind: 'getService', vs: id };
    this.checkPrivilege(req);
    return observedVirtualServer(this.lookup(req, id).vs);
  }

  async listRealServers(id: VirtualServerId): Promise<RealServer[]> {
    const req: IpvsRequest = { kind: 'dumpDests', vs: id };
    this.checkPrivilege(req);
    // the kernel's GET_DEST dump of a missing service is empty, not ESRCH
    return (this.services.get(this.checkServiceId(req, id))?.dests ?? []).map(observedRealServer);
  }

  async listAll(): Promise<VirtualServerEntry[]> {
    this.checkPrivilege({ kind: 'dumpServices' });
    return [...this.services.values()].map((s) => ({
      vs: observedVirtualServer(s.vs),
      dests: s.dests.map(observedRealServer),
    }));
  }

  async apply(op: IpvsOp): Promise<void> {
    this.applyOne(op);
  }

  async run(ops: readonly IpvsOp[]): Promise<IpvsOpResult[]> {
    return ops.map((op, i) => {
      try {
        this.applyOne(op, i);
        return { ok: true as const };
      } catch (e) {
        if (e instanceof NetlinkError) return { ok: false as const, error: e };
        throw e;
      }
    });
  }

  close(): void {}
}

function normalizeId(id: VirtualServerId): VirtualServerId {
  if (id.fwmark > 0) return { af: id.af, protocol: 0, address: '', port: 0, fwmark: id.fwmark };
  return { af: id.af, protocol: id.protocol, address: canonicalAddress(id.address), port: id.port, fwmark: 0 };
}

// ip_vs_add_dest: an IPv4 real server must be RTN_UNICAST or RTN_LOCAL; IPv6 must be unicast
function isUnicast(af: number, address: string): boolean {
  if (af === AF_INET) {
    if (!isIPv4(address)) return false;
    const [a, b, c, d] = address.split('.').map(Number) as [number, number, number, number];
    if (a === 0) return false;
    if (a >= 224 && a <= 239) return false; // multicast
    return !(a === 255 && b === 255 && c === 255 && d === 255); // limited broadcast
  }
  const canon = canonicalAddress(address);
  return canon !== '::' && !canon.startsWith('ff');
}
