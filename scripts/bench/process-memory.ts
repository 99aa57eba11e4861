// Memory and metrics of the daemon process under benchmark: VmRSS from /proc/<pid>/status,
// and the daemon's Prometheus text (/metrics, prom-client's default nodejs_* series included).
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** VmRSS of process `pid`, bytes. */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(m[1]) * 1024;
}

/** utime, stime, cutime and cstime (clock ticks) of a /proc stat line: the fields after the command name, which may hold spaces */
function statTicks(stat: string): { user: number; system: number; childUser: number; childSystem: number } {
  // state is field 3
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return { user: f[11]!, system: f[12]!, childUser: f[13]!, childSystem: f[14]! };
}

/** CPU seconds of process `pid` from /proc/PID/stat: its own (utime + stime; stime alone as `system`) and the children it reaped (cutime + cstime). */
export function cpuSeconds(pid: number, clockTicks = 100): { self: number; system: number; children: number } {
  const t = statTicks(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  return {
    self: (t.user + t.system) / clockTicks,
    system: t.system / clockTicks,
    children: (t.childUser + t.childSystem) / clockTicks,
  };
}

/**
 * CPU seconds (utime + stime) of each thread of process `pid`, summed by thread name with digits
 * dropped ("node" the main thread, "V8 DefaultWorke" V8's GC and compiler workers, "libuv-worker"
 * the thread pool that reads files): where a process's CPU goes that its main thread's profile misses.
 */
export function threadCpuSeconds(pid: number, clockTicks = 100): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    let comm: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim().replace(/\d+/g, '');
    } catch {
      continue; // the thread ended meanwhile
    }
    const t = statTicks(stat);
    out[comm] = (out[comm] ?? 0) + (t.user + t.system) / clockTicks;
  }
  return out;
}

/** `after` minus `before`, per key (a key only in `after` counts from 0), scaled by `scale`. */
export function perKeyDelta(
  before: Record<string, number>,
  after: Record<string, number>,
  scale = 1,
): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([k, v]) => [k, (v - (before[k] ?? 0)) * scale]));
}

/** The median of `xs` (the mean of the middle two of an even count); undefined when empty. */
export function median(xs: readonly number[]): number | undefined {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : undefined;
}

/** One scrape: series text (name plus labels, as exposed) -> value. */
export type Scrape = Map<string, number>;

/**
 * One scrape, retried (up to `attempts`, 1 s apart) when the daemon does not answer: a daemon
 * busy with a long sync answers late or 408 (node's headersTimeout); `onRetry` counts those.
 */
export async function scrape(url: string, attempts = 10, onRetry?: (why: string) => void): Promise<Scrape> {
  let r: Response | undefined;
  for (let a = 1; ; a++) {
    let why: string;
    try {
      r = await fetch(url);
      if (r.ok) break;
      why = `HTTP ${r.status}`;
    } catch (e) {
      why = (e as Error).message;
    }
    if (a >= attempts) throw new Error(`GET ${url}: ${why} (${attempts} attempts)`);
    onRetry?.(why);
    await new Promise((res) => setTimeout(res, 1000));
  }
  return parseScrape(await r.text());
}

/** Prometheus text: each series (name and labels as written) to its value. */
export function parseScrape(text: string): Scrape {
  const out: Scrape = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    out.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return out;
}

export function metric(s: Scrape, series: string): number {
  const v = s.get(series);
  if (v === undefined) throw new Error(`the daemon's /metrics has no ${series}`);
  return v;
}

/**
 * The sum of every series of `name` whatever its labels (kube-proxy labels its series by
 * ip_family; kube-ipvs does not), or of those whose labels ("{...}", '' for none) `keep` takes.
 */
export function sumSeries(s: Scrape, name: string, keep?: (labels: string) => boolean): number | undefined {
  let sum: number | undefined;
  for (const [k, v] of s) {
    if (k !== name && !k.startsWith(`${name}{`)) continue;
    if (keep && !keep(k.slice(name.length))) continue;
    sum = (sum ?? 0) + v;
  }
  return sum;
}

/**
 * What a histogram observed between two scrapes: count, mean, and the bucket bounds of p99 and
 * max; series of the same bucket under other labels (kube-proxy's ip_family) are added up.
 */
export function histogramDelta(
  before: Scrape,
  after: Scrape,
  name: string,
): { count: number; meanSeconds: number; p99AtMostSeconds: number; maxAtMostSeconds: number } {
  const byLe = new Map<number, number>();
  for (const [k, v] of after) {
    const m = new RegExp(`^${name}_bucket\\{(?:.*,)?le="([^"]+)"`).exec(k);
    if (!m) continue;
    const le = m[1] === '+Inf' ? Infinity : Number(m[1]);
    byLe.set(le, (byLe.get(le) ?? 0) + v - (before.get(k) ?? 0));
  }
  const buckets = [...byLe].map(([le, n]) => ({ le, n })).sort((a, b) => a.le - b.le);
  const total = (s: Scrape, series: string) => sumSeries(s, series) ?? 0;
  if (sumSeries(after, `${name}_count`) === undefined) throw new Error(`the /metrics scraped has no ${name}_count`);
  const count = total(after, `${name}_count`) - total(before, `${name}_count`);
  const sum = total(after, `${name}_sum`) - total(before, `${name}_sum`);
  const first = (n: number) => buckets.find((b) => b.n >= n)?.le ?? Infinity;
  return {
    count,
    meanSeconds: count ? sum / count : 0,
    p99AtMostSeconds: first(Math.ceil(count * 0.99)),
    maxAtMostSeconds: first(count),
  };
}

/**
 * Where a process's memory is, from its own /metrics: for kube-ipvs prom-client's V8 heap
 * (committed and used, per space) and the memory outside it (Buffers); for kube-proxy Go's
 * runtime (heap in use, allocated, and what it holds from the OS). RSS alone cannot tell a
 * grown-but-empty heap from retained state.
 */
export function heapBreakdown(s: Scrape): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of s) {
    const space = /^nodejs_heap_space_size_(total|used)_bytes\{space="([^"]+)"\}$/.exec(k);
    if (space) out[`${space[2]}${space[1] === 'total' ? 'Total' : 'Used'}`] = v;
  }
  const names: Record<string, string> = {
    nodejs_heap_size_total_bytes: 'heapTotal',
    nodejs_heap_size_used_bytes: 'heapUsed',
    nodejs_external_memory_bytes: 'external',
    go_memstats_heap_inuse_bytes: 'goHeapInuse',
    go_memstats_heap_alloc_bytes: 'goHeapAlloc',
    go_memstats_heap_idle_bytes: 'goHeapIdle',
    go_memstats_heap_released_bytes: 'goHeapReleased',
    go_memstats_sys_bytes: 'goSys',
    // kube-ipvs's quiet-time collections so far (lib/daemon/idle-collector.ts)
    kube_ipvs_idle_collection_duration_seconds_count: 'idleCollections',
    kube_ipvs_idle_collection_duration_seconds_sum: 'idleCollectionSeconds',
  };
  for (const [series, name] of Object.entries(names)) {
    const v = s.get(series);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

/** One mapping of /proc/PID/smaps: its name (path, [heap], '' ...), permissions, and sizes in kB. */
export interface SmapsEntry {
  readonly name: string;
  readonly perms: string;
  sizeKb: number;
  rssKb: number;
  pssKb: number;
  anonKb: number;
}

/** /proc/PID/smaps text, one entry per mapping: the one parser the breakdowns below read. */
export function smapsEntries(text: string): SmapsEntry[] {
  const out: SmapsEntry[] = [];
  let cur: SmapsEntry | undefined;
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      cur = { name: head[2]!, perms: head[1]!, sizeKb: 0, rssKb: 0, pssKb: 0, anonKb: 0 };
      out.push(cur);
      continue;
    }
    const kv = /^(Size|Rss|Pss|Anonymous):\s+(\d+) kB$/.exec(line);
    if (!kv || !cur) continue;
    const kb = Number(kv[2]);
    if (kv[1] === 'Size') cur.sizeKb = kb;
    else if (kv[1] === 'Rss') cur.rssKb = kb;
    else if (kv[1] === 'Pss') cur.pssKb = kb;
    else cur.anonKb = kb;
  }
  return out;
}

/**
 * Where resident memory is mapped: file-backed (code, node's binary), malloc's brk heap, and the
 * anonymous mappings (V8's heap pages, malloc's thread arenas and large allocations) as totals
 * and the largest few, in bytes.
 */
export function mappingsOf(entries: readonly SmapsEntry[], largest = 8): Record<string, unknown> {
  let file = 0;
  let brk = 0;
  let anon = 0;
  let anonMappings = 0;
  const anons: SmapsEntry[] = [];
  for (const e of entries) {
    if (e.name === '[heap]') brk += e.rssKb;
    else if (e.name === '' || e.name.startsWith('[anon')) {
      anon += e.rssKb;
      anonMappings++;
      if (e.rssKb > 0) anons.push(e);
    } else file += e.rssKb;
  }
  anons.sort((a, b) => b.rssKb - a.rssKb);
  return {
    fileBytes: file * 1024,
    brkHeapBytes: brk * 1024,
    anonBytes: anon * 1024,
    anonMappings,
    largestAnon: anons.slice(0, largest).map((a) => ({ sizeBytes: a.sizeKb * 1024, rssBytes: a.rssKb * 1024 })),
  };
}

/**
 * /proc/PID/smaps_rollup: Rss, Pss and the anonymous part (bytes). PSS splits each shared page
 * among the processes mapping it, so a binary or library other processes map too counts for a
 * share only; `Anonymous` is what no file backs (heaps, arenas, stacks): the process's own cost.
 */
export interface MemoryRollup {
  readonly rss: number;
  readonly pss: number;
  readonly anon: number;
}

/** Parses smaps_rollup (or one smaps entry's) "Key:  N kB" lines into bytes by key. */
export function parseKbLines(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^(\w+):\s+(\d+) kB$/gm)) out[m[1]!] = Number(m[2]) * 1024;
  return out;
}

export function rollupOf(text: string): MemoryRollup {
  const kb = parseKbLines(text);
  if (kb.Rss === undefined || kb.Pss === undefined || kb.Anonymous === undefined)
    throw new Error('smaps_rollup without Rss, Pss or Anonymous');
  return { rss: kb.Rss, pss: kb.Pss, anon: kb.Anonymous };
}

export function smapsRollup(pid: number): MemoryRollup {
  return rollupOf(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
}

/**
 * The kinds of mapping an RSS breakdown separates: the process's own executable file (node's
 * binary, kube-proxy's static Go binary), shared libraries (.so, node's .node addons), malloc's
 * brk heap, anonymous mappings (glibc's thread arenas and large allocations, V8's heap spaces and
 * code, Go's heap and goroutine stacks: Go allocates all of them by mmap), the main thread's
 * stack, and the rest (other files, [vdso], [vvar], ...).
 */
export const MAPPING_KINDS = [
  'executable',
  'shared libraries',
  'heap (brk)',
  'anonymous mmaps',
  'stack',
  'other',
] as const;
export type MappingKind = (typeof MAPPING_KINDS)[number];

export function mappingKind(name: string, exe: string): MappingKind {
  if (name === '[heap]') return 'heap (brk)';
  if (name === '[stack]') return 'stack';
  if (name === '' || name.startsWith('[anon')) return 'anonymous mmaps';
  const file = name.replace(/ \(deleted\)$/, '');
  if (file === exe) return 'executable';
  if (/\.so(\.[\d.]+)?$/.test(file) || file.endsWith('.node')) return 'shared libraries';
  return 'other';
}

/** Rss, Pss and Anonymous (bytes) per kind of mapping; `exe` is the process's executable. */
export function breakdownOf(entries: readonly SmapsEntry[], exe: string): Record<MappingKind, MemoryRollup> {
  const out = Object.fromEntries(MAPPING_KINDS.map((k) => [k, { rss: 0, pss: 0, anon: 0 }])) as Record<
    MappingKind,
    { rss: number; pss: number; anon: number }
  >;
  for (const e of entries) {
    const k = out[mappingKind(e.name, exe)];
    k.rss += e.rssKb * 1024;
    k.pss += e.pssKb * 1024;
    k.anon += e.anonKb * 1024;
  }
  return out;
}

/** Process `pid`'s /proc/PID/smaps, read once: by kind of mapping, and file/brk/anonymous with the largest anonymous mappings. */
export function residentMemory(pid: number): {
  kinds: Record<MappingKind, MemoryRollup>;
  maps: Record<string, unknown>;
} {
  const entries = smapsEntries(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
  return { kinds: breakdownOf(entries, readlinkSync(`/proc/${pid}/exe`)), maps: mappingsOf(entries) };
}
