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

/** Moves `table` forward by the ops whose result is ok (in order). Mutates `table`. */
export function applyOpsToTable(table: IpvsTable, ops: readonly IpvsOp[], results: readonly IpvsOpResult[]): void {
  // the ops of one virtual server come together and share its spec object (the diff's order):
  // its key is built and its entry found once for them, not once per real server (a cold
  // start applies 100,000 real servers)
  let lastVs: VirtualServerId | undefined;
  let lastEntry: TableEntry | undefined;
  const remember = (vs: VirtualServerId | undefined, entry: TableEntry | undefined) => {
    lastVs = vs;
    lastEntry = entry;
  };
  const entryOf = (vs: VirtualServerId): TableEntry | undefined => {
    if (vs !== lastVs) remember(vs, table.get(virtualServerKey(vs)));
    return lastEntry;
  };
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    if (!results[i]?.ok) continue;
    switch (op.kind) {
      case 'newService': {
        const entry: TableEntry = { vs: op.vs, realServers: new Map() };
        table.set(virtualServerKey(op.vs), entry);
        remember(op.vs, entry);
        break;
      }
      case 'setService': {
        const e = entryOf(op.vs);
        if (!e) break;
        const entry: TableEntry = { vs: op.vs, realServers: e.realServers };
        table.set(virtualServerKey(op.vs), entry);
        remember(op.vs, entry);
        break;
      }
      case 'delService':
        table.delete(virtualServerKey(op.vs));
        remember(op.vs, undefined);
        break;
      case 'newDest':
      case 'setDest': {
        const rs = entryOf(op.vs)?.realServers;
        if (!rs) break;
        const key = realServerKey(op.rs);
        rs.set(key, withConns(op.rs, rs.get(key)));
        break;
      }
      case 'delDest':
        entryOf(op.vs)?.realServers.delete(realServerKey(op.rs));
        break;
      case 'flush':
        table.clear();
        remember(undefined, undefined);
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
