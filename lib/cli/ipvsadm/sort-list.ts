// The orders ipvsadm 1.31 lists in: libipvs' ipvs_cmp_services / ipvs_cmp_dests, sorted with
// glibc 2.36's qsort (a merge sort), and the faster total orders format-list.ts uses when
// they give the same result.

import { VirtualServerEntry } from '../../kernel/ipvs/ipvs';
import { AddressFamily, RealServer, VirtualServer, addressToBytes, parseIPv4 } from '../../model/ipvs';
import { AF_INET, AF_INET6 } from '../../uapi/inet';

/** The 32-bit big-endian words of an address as libipvs sees them in union nf_inet_addr. */
function words(af: AddressFamily, address: string): readonly number[] {
  if (!address) return [0, 0, 0, 0];
  if (af === AF_INET) {
    const v = parseIPv4(address);
    if (v >= 0) return [v, 0, 0, 0];
  }
  const b = addressToBytes(af, address);
  const w = [0, 0, 0, 0];
  for (let i = 0; i < b.length / 4; i++) w[i] = b.readUInt32BE(i * 4);
  return w;
}

/** `int r = a - b` with a, b unsigned 32-bit: wraps, so values 2^31 or more apart compare "wrong". */
const diff32 = (a: number, b: number): number => (a - b) | 0;

/** libipvs compares addresses as the first one's family: 4 words for IPv6, 1 for IPv4. */
function cmpWords(af1: AddressFamily, w1: readonly number[], w2: readonly number[]): number {
  if (af1 === AF_INET6) {
    let r = 0;
    for (let i = 0; r === 0 && i < 4; i++) r = diff32(w1[i]!, w2[i]!);
    return r;
  }
  return diff32(w1[0]!, w2[0]!);
}

/** A service or real server with its address words computed once, not once per comparison. */
interface Keyed<T> {
  readonly item: T;
  readonly words: readonly number[];
}

function cmpServicesKeyed(a: Keyed<VirtualServer>, b: Keyed<VirtualServer>): number {
  const s1 = a.item;
  const s2 = b.item;
  let r = diff32(s1.fwmark, s2.fwmark);
  if (r !== 0) return r;
  r = s1.af - s2.af;
  if (r !== 0) return r;
  r = s1.protocol - s2.protocol;
  if (r !== 0) return r;
  r = cmpWords(s1.af, a.words, b.words);
  if (r !== 0) return r;
  return s1.port - s2.port;
}

function cmpDestsKeyed(a: Keyed<RealServer>, b: Keyed<RealServer>): number {
  const r = cmpWords(a.item.af, a.words, b.words);
  if (r !== 0) return r;
  return a.item.port - b.item.port;
}

const keyed = <T extends { readonly af: AddressFamily; readonly address: string }>(item: T): Keyed<T> => ({
  item,
  words: words(item.af, item.address),
});

/** ipvs_cmp_services(): fwmark, af, protocol, address, port (each a wrapping int difference). */
export function cmpServices(s1: VirtualServer, s2: VirtualServer): number {
  return cmpServicesKeyed(keyed(s1), keyed(s2));
}

/** ipvs_cmp_dests(): address (as the first one's family), then port. */
export function cmpDests(d1: RealServer, d2: RealServer): number {
  return cmpDestsKeyed(keyed(d1), keyed(d2));
}

/**
 * glibc 2.36 qsort() for arrays that fit in memory: top-down merge sort (msort_with_tmp),
 * left half n/2, ties and "<= 0" taken from the left. Replicated step by step because the
 * comparators above are not transitive, so another algorithm would order differently.
 */
export function glibcQsort<T>(items: readonly T[], cmp: (a: T, b: T) => number): T[] {
  const a = [...items];
  if (a.length > 1) msort(a, new Array<T>(a.length), 0, a.length, cmp);
  return a;
}

/** msort_with_tmp on a[lo, hi), in place, through tmp */
function msort<T>(a: T[], tmp: T[], lo: number, hi: number, cmp: (a: T, b: T) => number): void {
  const n = hi - lo;
  if (n <= 1) return;
  const mid = lo + Math.floor(n / 2);
  msort(a, tmp, lo, mid, cmp);
  msort(a, tmp, mid, hi, cmp);
  let i = lo;
  let j = mid;
  let k = lo;
  while (i < mid && j < hi) {
    if (cmp(a[i]!, a[j]!) <= 0) tmp[k++] = a[i++]!;
    else tmp[k++] = a[j++]!;
  }
  while (i < mid) tmp[k++] = a[i++]!;
  // what is left of the right half is already in place
  for (let x = lo; x < k; x++) a[x] = tmp[x]!;
}

/**
 * The services in ipvs_cmp_services order, as glibcQsort sorts them. When every service is
 * IPv4 and the fwmarks and the addresses each span less than 2^31, the comparator's wrapping
 * differences are exact, so it is a total order on (fwmark, protocol, address, port), and
 * any stable sort gives glibc's merge sort's result: the engine's sort on precomputed keys
 * then (a comparison function over objects decoded the address words at every one of the
 * sort's n log n comparisons).
 */
export function sortServices(entries: readonly VirtualServerEntry[]): readonly VirtualServerEntry[] {
  const n = entries.length;
  if (n <= 1) return entries;
  const hi = new Array<number>(n);
  const lo = new Array<number>(n);
  let minMark = Infinity;
  let maxMark = -Infinity;
  let minAddr = Infinity;
  let maxAddr = -Infinity;
  for (let i = 0; i < n; i++) {
    const vs = entries[i]!.vs;
    if (vs.af !== AF_INET) return sortServicesGlibc(entries);
    const a = vs.address ? parseIPv4(vs.address) : 0;
    if (a < 0) return sortServicesGlibc(entries);
    const mark = vs.fwmark >>> 0;
    if (mark < minMark) minMark = mark;
    if (mark > maxMark) maxMark = mark;
    if (a < minAddr) minAddr = a;
    if (a > maxAddr) maxAddr = a;
    hi[i] = mark * 256 + vs.protocol;
    lo[i] = a * 65536 + vs.port;
  }
  if (maxMark - minMark >= 2 ** 31 || maxAddr - minAddr >= 2 ** 31) return sortServicesGlibc(entries);
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((x, y) => hi[x]! - hi[y]! || lo[x]! - lo[y]!);
  return order.map((i) => entries[i]!);
}

const sortServicesGlibc = (entries: readonly VirtualServerEntry[]): VirtualServerEntry[] =>
  glibcQsort(
    entries.map((e) => ({ item: e.vs, words: words(e.vs.af, e.vs.address), entry: e })),
    cmpServicesKeyed,
  ).map((k) => k.entry);

/**
 * A service's real servers in ipvs_cmp_dests order, as glibcQsort sorts them; for IPv4 real
 * servers whose addresses span less than 2^31 the order is total (see sortServices), and the
 * kernel's list (newest first) is often already in order or in reverse.
 */
export function sortDests(dests: readonly RealServer[]): readonly RealServer[] {
  const n = dests.length;
  if (n <= 1) return dests;
  const keys = new Array<number>(n);
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const d = dests[i]!;
    const a = d.af === AF_INET ? parseIPv4(d.address) : -1;
    if (a < 0) return sortDestsGlibc(dests);
    if (a < min) min = a;
    if (a > max) max = a;
    keys[i] = a * 65536 + d.port;
  }
  if (max - min >= 2 ** 31) return sortDestsGlibc(dests);
  let ascending = true;
  let descending = true;
  for (let i = 1; i < n; i++) {
    if (keys[i - 1]! > keys[i]!) ascending = false;
    if (keys[i - 1]! <= keys[i]!) descending = false;
  }
  if (ascending) return dests;
  // strictly descending: no ties whose order a reversal would swap
  if (descending) return [...dests].reverse();
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((x, y) => keys[x]! - keys[y]!);
  return order.map((i) => dests[i]!);
}

const sortDestsGlibc = (dests: readonly RealServer[]): RealServer[] =>
  glibcQsort(dests.map(keyed), cmpDestsKeyed).map((k) => k.item);
