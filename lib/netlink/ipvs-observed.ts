/**
 * IPVS objects as the kernel client observed them: the model's fields plus counters decoded
 * on first read of `stats`. ipvs-codec.ts's decoders build them; the IPVS fake hands out the
 * same shape (observedVirtualServer / observedRealServer, re-exported by ipvs-codec.ts).
 */
import { forEachAttr } from './attr';
import { IPVS_STATS_ATTR } from '../uapi/ip_vs';
import { DecodeError } from '../errors';
import { RealServer, Stats, VirtualServer } from '../model/ipvs';

const STATS_FIELDS = [
  'conns',
  'inpkts',
  'outpkts',
  'inbytes',
  'outbytes',
  'cps',
  'inpps',
  'outpps',
  'inbps',
  'outbps',
] as const;
/** IPVS_STATS_ATTR_* type -> Stats field */
const STATS_FIELD_OF: readonly (string | undefined)[] = (() => {
  const t: (string | undefined)[] = [];
  const byName: Record<string, string> = {
    CONNS: 'conns',
    INPKTS: 'inpkts',
    OUTPKTS: 'outpkts',
    INBYTES: 'inbytes',
    OUTBYTES: 'outbytes',
    CPS: 'cps',
    INPPS: 'inpps',
    OUTPPS: 'outpps',
    INBPS: 'inbps',
    OUTBPS: 'outbps',
  };
  for (const [name, type] of Object.entries(IPVS_STATS_ATTR)) t[type] = byName[name];
  return t;
})();

/**
 * Decodes the payload of IPVS_*_ATTR_STATS64 (all u64) or, without it, IPVS_*_ATTR_STATS (u32
 * but bytes u64).
 */
function decodeStats(payload: Buffer, is64: boolean, path: string): Stats {
  const out: Record<string, bigint> = {};
  for (const f of STATS_FIELDS) out[f] = 0n;
  forEachAttr(payload, `${path}>${is64 ? 'STATS64' : 'STATS'}`, (type, at, len) => {
    const field = STATS_FIELD_OF[type];
    if (!field) return;
    if (len === 8) out[field] = payload.readBigUInt64LE(at);
    else if (len === 4) out[field] = BigInt(payload.readUInt32LE(at));
    else throw new DecodeError(`counter of ${len} bytes`, `${path}>STATS>${field}`, at);
  });
  return out as unknown as Stats;
}

/**
 * Observed objects (decoded by the kernel client, or handed out by the fake) carry their
 * counters and decode them on first read of `stats`: a prototype getter costs nothing per
 * object, where a defined own property tripled the cost of decoding a real server. `stats`
 * is therefore not an own property: spread and JSON drop it, for the kernel's objects and the
 * fake's alike; read it explicitly.
 *
 * The counters' bytes are a copy (~120 bytes), never a view of the reply: a view would keep
 * the whole receive datagram alive as long as the object (a cache of observed state at 10,000
 * services would hold every datagram of the dump).
 */
abstract class LazyStats {
  #bytes: Buffer | undefined;
  #is64: boolean;
  #path: string;
  #cached: Stats | undefined;

  /** `bytes`: a copy of the STATS64 (is64) or STATS payload; or `stats` already known */
  constructor(bytes: Buffer | undefined, is64: boolean, path: string, stats: Stats | undefined) {
    this.#bytes = bytes;
    this.#is64 = is64;
    this.#path = path;
    this.#cached = stats;
  }

  get stats(): Stats | undefined {
    if (this.#cached === undefined && this.#bytes) {
      this.#cached = decodeStats(this.#bytes, this.#is64, this.#path);
      this.#bytes = undefined;
    }
    return this.#cached;
  }
}

/** An observed object's own fields: everything but the lazily decoded counters. */
export type Fields<T> = Omit<T, 'stats'>;

// The fields are the model's (declaration merging); only the counters' getter is the class's.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface ObservedVirtualServer extends Fields<VirtualServer> {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class ObservedVirtualServer extends LazyStats implements VirtualServer {
  constructor(f: Fields<VirtualServer>, bytes: Buffer | undefined, is64: boolean, stats: Stats | undefined) {
    super(bytes, is64, 'IPVS_CMD_ATTR_SERVICE', stats);
    Object.assign(this, f);
  }
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface ObservedRealServer extends Fields<RealServer> {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class ObservedRealServer extends LazyStats implements RealServer {
  constructor(f: Fields<RealServer>, bytes: Buffer | undefined, is64: boolean, stats: Stats | undefined) {
    super(bytes, is64, 'IPVS_CMD_ATTR_DEST', stats);
    Object.assign(this, f);
  }
}

/**
 * A virtual server shaped as the kernel client returns it (own fields, `stats` through a
 * getter), for fakes: spread and JSON then behave the same for both. `stats` are not copied.
 */
export function observedVirtualServer(vs: VirtualServer): VirtualServer {
  const { stats, ...fields } = vs;
  return new ObservedVirtualServer(fields, undefined, false, stats);
}

/** A real server shaped as the kernel client returns it; see observedVirtualServer. */
export function observedRealServer(rs: RealServer): RealServer {
  const { stats, ...fields } = rs;
  return new ObservedRealServer(fields, undefined, false, stats);
}
