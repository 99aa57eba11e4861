/**
 * The IPVS table as the reconciler reasons about it: virtual servers by key with their real
 * servers by key. The same shape holds what the kernel showed (a dump) and what kube-ipvs
 * believes it applied since; `applyOpsToTable` moves the second forward by the ops that the
 * kernel accepted, so a partial sync needs no read-back. Pure.
 */
import { IpvsOpResult, VirtualServerEntry } from '../kernel/ipvs/ipvs';
import { IpvsOp } from '../model/ipvs-op';
import { defaultNetmask } from '../netlink/ipvs-codec';
import { RealServerSpec, VirtualServerId, VirtualServerSpec, realServerKey, virtualServerKey } from '../model/ipvs';

/** A real server, with the connection counts a dump showed (none for ones only applied). */
export interface TableRealServer extends RealServerSpec {
  readonly activeConns?: number;
  readonly inactConns?: number;
}

/**
 * One virtual server and its real servers. Most entries are never looked up by real server:
 * a full check finds the kernel's real servers equal to the plan's, and a cold start adds them
 * and is done. Such an entry holds them as a list (the plan's own objects when it can, with
 * their connection counts beside them), and builds the map by realServerKey, which costs a
 * key string and a map slot per real server, only when asked (a partial sync of this virtual
 * server, the views): a key and a copy fewer per real server of the table.
 */
export class TableEntry {
  /** while set: every real server the virtual server has; `keyed` is unset */
  private list: TableRealServer[] | undefined;
  /** whether `list` is this entry's to append to (the plan's arrays are not) */
  private ownsList: boolean;
  /** ActiveConn, InActConn of list[i] at [2i], [2i+1]; unset when all are 0 */
  private conns: Uint32Array | undefined;
  private keyed: Map<string, TableRealServer> | undefined;

  constructor(
    readonly vs: VirtualServerSpec,
    realServers: readonly TableRealServer[] | Map<string, TableRealServer> = [],
    options: { readonly shared?: boolean; readonly conns?: Uint32Array } = {},
  ) {
    if (realServers instanceof Map) {
      this.keyed = realServers;
      this.ownsList = false;
    } else {
      this.list = realServers as TableRealServer[];
      this.ownsList = !options.shared;
      this.conns = options.conns;
    }
  }

  /** The same real servers under another spec (SET_SERVICE). */
  withVirtualServer(vs: VirtualServerSpec): TableEntry {
    if (this.keyed) return new TableEntry(vs, this.keyed);
    const e = new TableEntry(vs, this.list, { shared: true, conns: this.conns });
    e.ownsList = this.ownsList;
    this.ownsList = false;
    return e;
  }

  get size(): number {
    return this.keyed ? this.keyed.size : this.list!.length;
  }

  /** Is this exactly `list`'s real servers, the same objects in the same order (as applied from it)? */
  holds(list: readonly RealServerSpec[]): boolean {
    const mine = this.list;
    if (!mine || mine.length !== list.length) return false;
    if (mine === list) return true;
    for (let i = 0; i < list.length; i++) if (mine[i] !== list[i]) return false;
    return true;
  }

  /** `holds(list)`, with no connection counts beside it: what a read of `list` with none shows. */
  holdsQuietly(list: readonly RealServerSpec[]): boolean {
    return !this.conns && !this.ownsList && this.holds(list);
  }

  /** Every real server, without building keys. */
  values(): Iterable<TableRealServer> {
    return this.keyed ? this.keyed.values() : this.realServersListed();
  }

  private realServersListed(): TableRealServer[] {
    const list = this.list!;
    return this.conns ? list.map((rs, i) => this.withListedConns(rs, i)) : list;
  }

  private withListedConns(rs: TableRealServer, i: number): TableRealServer {
    const active = this.conns![2 * i]!;
    const inact = this.conns![2 * i + 1]!;
    return active === 0 && inact === 0 ? rs : { ...rs, activeConns: active, inactConns: inact };
  }

  /** By realServerKey; built on first use (the entry keeps it from then on). */
  get realServers(): Map<string, TableRealServer> {
    if (!this.keyed) {
      const keyed = new Map<string, TableRealServer>();
      for (const rs of this.realServersListed()) keyed.set(realServerKey(rs), rs);
      this.keyed = keyed;
      this.list = undefined;
      this.conns = undefined;
    }
    return this.keyed;
  }

  /** NEW_DEST accepted: a real server this virtual server did not have. */
  added(rs: RealServerSpec): void {
    if (this.list && this.ownsList && !this.conns) this.list.push(rs);
    else this.realServers.set(realServerKey(rs), rs);
  }
}

/** by virtualServerKey */
export type IpvsTable = Map<string, TableEntry>;

/** Do a dumped real server and a planned one agree on what the diff compares? */
function sameRealServer(d: RealServerSpec, rs: RealServerSpec): boolean {
  return d.address === rs.address && d.port === rs.port && d.af === rs.af && sameRealServerSettings(d, rs);
}

/**
 * Whether `dests` is `planned` in an order kube-ipvs could have added them in: 1, the plan's
 * order; -1, reversed (the kernel lists a virtual server's real servers newest first, so this
 * is what kube-ipvs's own adds look like); 0, neither (the diff compares by key).
 */
function plannedOrder(dests: readonly RealServerSpec[], planned: readonly RealServerSpec[]): 1 | -1 | 0 {
  const n = planned.length;
  if (dests.length !== n) return 0;
  let reversed = true;
  for (let i = 0; i < n && reversed; i++) reversed = sameRealServer(dests[i]!, planned[n - 1 - i]!);
  if (reversed) return -1;
  for (let i = 0; i < n; i++) if (!sameRealServer(dests[i]!, planned[i]!)) return 0;
  return 1;
}

/** Does `spec` say what the dumped `vs` says, field for field (as tableFromDump copies them)? */
function sameSpec(spec: VirtualServerSpec, vs: VirtualServerSpec): boolean {
  return (
    spec.af === vs.af &&
    spec.protocol === vs.protocol &&
    spec.address === vs.address &&
    spec.port === vs.port &&
    spec.fwmark === vs.fwmark &&
    spec.scheduler === vs.scheduler &&
    spec.flags === vs.flags &&
    spec.timeout === vs.timeout &&
    spec.netmask === vs.netmask &&
    spec.peName === vs.peName
  );
}

/**
 * A kernel dump (Ipvs.listAll) as a table. With `desired` (by virtualServerKey), a virtual
 * server whose real servers are exactly the planned ones holds the plan's objects (and the
 * dump's connection counts beside them): no copy, and the diff sees `holds` at once. With
 * `previous` (the last read, as applied since), an entry that shows the same spec and the same
 * plan with no connections is taken over as it is: a periodic full sync of an unchanged table
 * builds no entry, so the last one does not become garbage for the old generation every
 * syncPeriod.
 */
export function tableFromDump(
  entries: readonly VirtualServerEntry[],
  desired?: ReadonlyMap<string, { readonly realServers: readonly RealServerSpec[] }>,
  previous?: IpvsTable,
): IpvsTable {
  const table: IpvsTable = new Map();
  for (let e = 0; e < entries.length; e++) {
    const { vs, dests } = entries[e]!;
    const key = virtualServerKey(vs);
    const before = previous?.get(key);
    const spec: VirtualServerSpec =
      before && sameSpec(before.vs, vs)
        ? before.vs
        : {
            af: vs.af,
            protocol: vs.protocol,
            address: vs.address,
            port: vs.port,
            fwmark: vs.fwmark,
            scheduler: vs.scheduler,
            flags: vs.flags,
            timeout: vs.timeout,
            netmask: vs.netmask,
            peName: vs.peName,
          };
    const planned = desired?.get(key)?.realServers;
    const order = planned ? plannedOrder(dests, planned) : 0;
    if (planned && order !== 0) {
      const n = planned.length;
      let conns: Uint32Array | undefined;
      for (let i = 0; i < n; i++) {
        const d = dests[i]!;
        if (d.activeConns === 0 && d.inactConns === 0) continue;
        conns ??= new Uint32Array(2 * n);
        const at = order < 0 ? n - 1 - i : i;
        conns[2 * at] = d.activeConns;
        conns[2 * at + 1] = d.inactConns;
      }
      const same = !conns && before?.vs === spec && before.holdsQuietly(planned);
      table.set(key, same ? before : new TableEntry(spec, planned, { shared: true, conns }));
      continue;
    }
    const realServers: TableRealServer[] = dests.map((d) => ({
      af: d.af,
      address: d.address,
      port: d.port,
      fwdMethod: d.fwdMethod,
      weight: d.weight,
      uThreshold: d.uThreshold,
      lThreshold: d.lThreshold,
      activeConns: d.activeConns,
      inactConns: d.inactConns,
    }));
    table.set(key, new TableEntry(spec, realServers));
  }
  return table;
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
        table.set(keyOf(op.vs), new TableEntry(op.vs));
        break;
      case 'setService': {
        const e = table.get(keyOf(op.vs));
        if (e) table.set(keyOf(op.vs), e.withVirtualServer(op.vs));
        break;
      }
      case 'delService':
        table.delete(keyOf(op.vs));
        break;
      case 'newDest':
        table.get(keyOf(op.vs))?.added(op.rs);
        break;
      case 'setDest': {
        const rs = table.get(keyOf(op.vs))?.realServers;
        if (!rs) break;
        const key = realServerKey(op.rs);
        const prev = rs.get(key);
        rs.set(
          key,
          prev?.activeConns || prev?.inactConns
            ? { ...op.rs, activeConns: prev.activeConns, inactConns: prev.inactConns }
            : op.rs,
        );
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
