/**
 * The IPVS table as the reconciler reasons about it: virtual servers by key with their real
 * servers by key. The same shape holds what the kernel showed (a dump) and what kube-ipvs
 * believes it applied since; `applyOpsToTable` moves the second forward by the ops that the
 * kernel accepted, so a partial sync needs no read-back. Pure.
 */
import { IpvsOp, IpvsOpResult, VirtualServerEntry } from '../kernel/ipvs/ipvs';
import { defaultNetmask } from '../netlink/ipvs-codec';
import { RealServerSpec, VirtualServerId, VirtualServerSpec, realServerKey, virtualServerKey } from '../model/ipvs';

/** A real server with the connection counts a dump showed (0 for ones we only applied). */
export interface TableRealServer extends RealServerSpec {
  readonly activeConns: number;
  readonly inactConns: number;
}

export interface TableEntry {
  readonly vs: VirtualServerSpec;
  /** by realServerKey */
  readonly realServers: Map<string, TableRealServer>;
}

/** by virtualServerKey */
export type IpvsTable = Map<string, TableEntry>;

/** A kernel dump (Ipvs.listAll) as a table. */
export function tableFromDump(entries: readonly VirtualServerEntry[]): IpvsTable {
  const table: IpvsTable = new Map();
  for (const { vs, dests } of entries) {
    const realServers = new Map<string, TableRealServer>();
    for (const d of dests) {
      realServers.set(realServerKey(d), {
        af: d.af, address: d.address, port: d.port, fwdMethod: d.fwdMethod, weight: d.weight,
        uThreshold: d.uThreshold, lThreshold: d.lThreshold,
        activeConns: d.activeConns, inactConns: d.inactConns,
      });
    }
    const spec: VirtualServerSpec = {
      af: vs.af, protocol: vs.protocol, address: vs.address, port: vs.port, fwmark: vs.fwmark,
      scheduler: vs.scheduler, flags: vs.flags, timeout: vs.timeout, netmask: vs.netmask, peName: vs.peName,
    };
    table.set(virtualServerKey(vs), { vs: spec, realServers });
  }
  return table;
}

function withConns(rs: RealServerSpec, prev?: TableRealServer): TableRealServer {
  return { ...rs, activeConns: prev?.activeConns ?? 0, inactConns: prev?.inactConns ?? 0 };
}

/**
 * virtualServerKey for ops taken in order: the ops of one virtual server come together and
 * share its spec object (the diff's order), so the key is built once for them, not once per
 * real server (a cold start applies 100,000). The key depends on the spec alone.
 */
export function virtualServerKeyer(): (vs: VirtualServerId) => string {
  let last: VirtualServerId | undefined;
  let key = '';
  return (vs) => {
    if (vs !== last) {
      last = vs;
      key = virtualServerKey(vs);
    }
    return key;
  };
}

/** Moves `table` forward by the ops whose result is ok (in order). Mutates `table`. */
export function applyOpsToTable(table: IpvsTable, ops: readonly IpvsOp[], results: readonly IpvsOpResult[]): void {
  const keyOf = virtualServerKeyer();
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (!results[i]?.ok) continue;
    switch (op.kind) {
      case 'newService':
        table.set(keyOf(op.vs), { vs: op.vs, realServers: new Map() });
        break;
      case 'setService': {
        const e = table.get(keyOf(op.vs));
        if (e) table.set(keyOf(op.vs), { vs: op.vs, realServers: e.realServers });
        break;
      }
      case 'delService':
        table.delete(keyOf(op.vs));
        break;
      case 'newDest':
      case 'setDest': {
        const rs = table.get(keyOf(op.vs))?.realServers;
        if (!rs) break;
        const key = realServerKey(op.rs);
        rs.set(key, withConns(op.rs, rs.get(key)));
        break;
      }
      case 'delDest':
        table.get(keyOf(op.vs))?.realServers.delete(realServerKey(op.rs));
        break;
      case 'flush':
        table.clear();
        break;
      default:
        break;
    }
  }
}

/** Do two specs describe the same kernel service settings (what SET_SERVICE would change)? */
export function sameServiceSettings(a: VirtualServerSpec, b: VirtualServerSpec): boolean {
  return (
    a.scheduler === b.scheduler &&
    (a.flags ?? 0) === (b.flags ?? 0) &&
    (a.timeout ?? 0) === (b.timeout ?? 0) &&
    (a.netmask ?? defaultNetmask(a.af)) === (b.netmask ?? defaultNetmask(b.af)) &&
    (a.peName ?? '') === (b.peName ?? '')
  );
}

/** Do two real servers have the same settings (what SET_DEST would change)? */
export function sameRealServerSettings(a: RealServerSpec, b: RealServerSpec): boolean {
  return (
    a.weight === b.weight &&
    a.fwdMethod === b.fwdMethod &&
    (a.uThreshold ?? 0) === (b.uThreshold ?? 0) &&
    (a.lThreshold ?? 0) === (b.lThreshold ?? 0)
  );
}
