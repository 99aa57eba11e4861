import winston from 'winston';

/**
 * The process-wide logger (winston). Level from KUBE_IPVS_LOG_LEVEL (default "info").
 * Modules log through `log.child({ component: '<name>' })` so every line says who wrote it.
 *
 * Two formats, as kube-proxy's `--logging-format`:
 * - json (the default until the CLI chooses): one object a line with klog's JSON keys (ts in
 *   seconds, v, msg) plus level, component and the structured fields;
 * - text: klog's header (`I1123 15:30:12.123456    4242 proxier] "sync done" full=true ...`).
 */
export type LogFormat = 'text' | 'json';
/** The --logging-format values. */
export const LOG_FORMATS: readonly LogFormat[] = ['text', 'json'];

/** klog verbosity of a winston level (what `--v` must be for the line to show) */
const VERBOSITY: Readonly<Record<string, number>> = { error: 0, warn: 0, info: 0, verbose: 2, debug: 4 };
/** klog's severity letters */
const SEVERITY: Readonly<Record<string, string>> = { error: 'E', warn: 'W' };

const LEVEL = Symbol.for('level');

/** the structured fields of a log record: everything but winston's own keys */
function fieldsOf(info: winston.Logform.TransformableInfo): [string, unknown][] {
  return Object.entries(info).filter(
    ([k]) => k !== 'level' && k !== 'message' && k !== 'timestamp' && k !== 'component',
  );
}

function klogValue(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean' || v === null || v === undefined) return String(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (v instanceof Error) return JSON.stringify(v.message);
  return JSON.stringify(v);
}

const pad = (n: number, w = 2): string => String(n).padStart(w, '0');

/** klog's text line: Lmmdd hh:mm:ss.uuuuuu threadid file:line] msg (component stands for file:line) */
export function formatText(info: winston.Logform.TransformableInfo, now: Date = new Date()): string {
  const level = String(info[LEVEL as unknown as string] ?? info.level);
  const sev = SEVERITY[level] ?? 'I';
  const d = now;
  const head =
    `${sev}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:` +
    `${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}000 ${String(process.pid).padStart(7)} ${String(info.component ?? 'kube-ipvs')}]`;
  const kv = fieldsOf(info)
    .map(([k, v]) => ` ${k}=${klogValue(v)}`)
    .join('');
  return `${head} ${JSON.stringify(String(info.message))}${kv}`;
}

/** component-base's JSON keys (ts, v, msg) plus level and component, then the fields */
export function formatJson(info: winston.Logform.TransformableInfo, now: Date = new Date()): string {
  const level = String(info[LEVEL as unknown as string] ?? info.level);
  const out: Record<string, unknown> = { ts: now.getTime() / 1000, level, v: VERBOSITY[level] ?? 0 };
  if (info.component !== undefined) out.component = info.component;
  out.msg = info.message;
  for (const [k, v] of fieldsOf(info)) out[k] = v instanceof Error ? v.message : v;
  return JSON.stringify(out);
}

const lineFormat = (format: LogFormat) =>
  winston.format.printf((info) => (format === 'text' ? formatText(info) : formatJson(info)));

/** The process logger (winston), on stderr; JSON until setLogFormat says otherwise. */
export const log: winston.Logger = winston.createLogger({
  level: process.env.KUBE_IPVS_LOG_LEVEL ?? 'info',
  format: lineFormat('json'),
  transports: [new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'verbose', 'debug'] })],
});

/** `--logging-format`: text (klog) or json. */
export function setLogFormat(format: LogFormat): void {
  log.format = lineFormat(format);
}

/** A child logger tagged with a component name. */
export function componentLog(component: string): winston.Logger {
  return log.child({ component });
}

/** winston level for a kube-proxy (klog) verbosity: 0-1 info, 2-3 verbose, 4 and above debug. */
export function levelForVerbosity(v: number): 'info' | 'verbose' | 'debug' {
  return v >= 4 ? 'debug' : v >= 2 ? 'verbose' : 'info';
}

/** `--v=N`: sets the process-wide logger level (see levelForVerbosity). */
export function setVerbosity(v: number): void {
  log.level = levelForVerbosity(v);
}
