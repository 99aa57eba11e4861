// KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1) from YAML or JSON text to a
// defaulted, validated ProxyConfig.
//
// Decoding is lenient the way kube-proxy's is (strict first, then lenient with a warning): an
// unknown field is a warning naming its full path (kubeadm ConfigMaps carry typos such as
// `ipvs.trictARP`) and decoding goes on. A value of the wrong type, an invalid value, or a
// wrong apiVersion/kind is a ConfigError naming the field path and the value; every such
// error of one file is reported at once (kube-proxy aggregates its validation errors), a
// heading line then one line each, "FILE: field: detail", the file's unknown fields listed
// after them (the same pass: not a second start to learn of a typo); the cross-field checks are among them,
// each over fields that decoded (one over a field that did not is left out: it would judge
// the default in its place). Types are as strict as kube-proxy's
// decoder (YAML 1.1 read as go-yaml v2 reads it, then JSON into typed fields): a bare `yes`
// is a boolean, a quoted "yes" a string, refused for a bool field as a bare `yes` is for a
// string field.
//
// Zero values mean "unset", as in kube-proxy's SetDefaults_KubeProxyConfiguration: kubeadm
// writes every field, `syncPeriod: 0s`, `qps: 0`, `healthzBindAddress: ""`, and they default.
import yaml from 'js-yaml';
import { ConfigError } from '../errors';
import { LOG_FORMATS, LogFormat } from '../log';
import {
  parseBindAddress,
  parseClusterCidrs,
  configCidr,
  parseConntrackCount,
  parseDetectLocalMode,
  parseDuration,
  parseIP,
  parseMasqueradeBit,
  parseNodePortAddresses,
  parseOomScoreAdj,
  parsePortRange,
  parseProxyMode,
  parseScheduler,
  parseSchedulerFlags,
  parseShowHiddenMetricsForVersion,
} from './config-values';
import { formatDurationMs } from './duration';
import { ProxyConfig } from './proxy-config';
import { familyOfValidAddress } from '../model/ip-family';
import { checkFeatureGates } from './feature-gates';

/** The apiVersion of a KubeProxyConfiguration document. */
export const API_VERSION = 'kubeproxy.config.k8s.io/v1alpha1';
/** The kind of a kube-proxy configuration document. */
export const KIND = 'KubeProxyConfiguration';

/** kube-proxy's default healthz port (ports.ProxyHealthzPort). */
export const HEALTHZ_PORT = 10256;
/** kube-proxy's default metrics port (ports.ProxyStatusPort). */
export const METRICS_PORT = 10249;

/** Something kube-ipvs accepted but the operator should know about. */
export interface ConfigWarning {
  /** field path (`ipvs.trictARP`) or flag (`--proxy-mode`) */
  readonly field: string;
  readonly message: string;
  /** 'info': a note (logged at info), not a warning */
  readonly level?: 'info';
  /** a field the schema does not have (a typo such as `ipvs.trictARP`): listed with the errors too */
  readonly unknownField?: true;
}

/** A decoded configuration document and the warnings its decoding gave. */
export interface DecodedConfig {
  readonly config: ProxyConfig;
  readonly warnings: readonly ConfigWarning[];
}

/** kube-proxy's v1alpha1 defaults, with the bind addresses that follow `bindAddress`. */
export function defaultProxyConfig(bindAddress = '0.0.0.0'): ProxyConfig {
  const v6 = familyOfValidAddress(bindAddress) === 'ipv6';
  return {
    mode: 'ipvs',
    hostnameOverride: '',
    bindAddress,
    healthzBindAddress: v6 ? `[::]:${HEALTHZ_PORT}` : `0.0.0.0:${HEALTHZ_PORT}`,
    metricsBindAddress: v6 ? `[::1]:${METRICS_PORT}` : `127.0.0.1:${METRICS_PORT}`,
    clientConnection: { kubeconfig: '', qps: 5, burst: 10, contentType: 'application/vnd.kubernetes.protobuf' },
    master: '',
    clusterCIDR: [],
    detectLocalMode: 'ClusterCIDR',
    detectLocal: { bridgeInterface: '', interfaceNamePrefix: '' },
    nodePortAddresses: [],
    iptables: { masqueradeAll: false, masqueradeBit: 14 },
    ipvs: {
      scheduler: '',
      syncPeriodMs: 30_000,
      minSyncPeriodMs: 0,
      excludeCIDRs: [],
      strictARP: false,
      tcpTimeoutSec: 0,
      tcpFinTimeoutSec: 0,
      udpTimeoutSec: 0,
      excludeClusterCIDRs: [],
      schedulerFlags: null,
    },
    configSyncPeriodMs: 15 * 60_000,
    conntrack: {
      maxPerCore: 32 * 1024,
      min: 128 * 1024,
      tcpEstablishedTimeoutSec: 24 * 3600,
      tcpCloseWaitTimeoutSec: 3600,
      tcpBeLiberal: false,
      udpTimeoutSec: 0,
      udpStreamTimeoutSec: 0,
    },
    oomScoreAdj: -999,
    logging: { format: 'text', verbosity: 0 },
    featureGates: {},
  };
}

// ---- the v1alpha1 field schema (every field the API has, so only real unknowns warn) ----

type Leaf = 'string' | 'bool' | 'int' | 'float' | 'duration' | 'stringList' | 'boolMap' | 'any';
interface Fields {
  readonly [name: string]: Leaf | Fields;
}

const SCHEMA: Fields = {
  apiVersion: 'string',
  kind: 'string',
  featureGates: 'boolMap',
  clientConnection: {
    kubeconfig: 'string',
    acceptContentTypes: 'string',
    contentType: 'string',
    qps: 'float',
    burst: 'int',
  },
  // component-base LoggingConfiguration: format and verbosity are honoured (the logging flags
  // win); flushFrequency, vmodule and the options are accepted and have no effect here
  logging: { format: 'string', verbosity: 'int', flushFrequency: 'any', vmodule: 'any', options: 'any' },
  hostnameOverride: 'string',
  bindAddress: 'string',
  healthzBindAddress: 'string',
  metricsBindAddress: 'string',
  bindAddressHardFail: 'bool',
  enableProfiling: 'bool',
  showHiddenMetricsForVersion: 'string',
  mode: 'string',
  iptables: {
    masqueradeBit: 'int',
    masqueradeAll: 'bool',
    localhostNodePorts: 'bool',
    syncPeriod: 'duration',
    minSyncPeriod: 'duration',
  },
  ipvs: {
    syncPeriod: 'duration',
    minSyncPeriod: 'duration',
    scheduler: 'string',
    excludeCIDRs: 'stringList',
    strictARP: 'bool',
    tcpTimeout: 'duration',
    tcpFinTimeout: 'duration',
    udpTimeout: 'duration',
    // kube-ipvs extension (multi-CNI), see IpvsConfig.excludeClusterCIDRs
    excludeClusterCIDRs: 'stringList',
    // kube-ipvs extension (scheduler flags), see IpvsConfig.schedulerFlags
    schedulerFlags: 'stringList',
  },
  nftables: { masqueradeBit: 'int', masqueradeAll: 'bool', syncPeriod: 'duration', minSyncPeriod: 'duration' },
  winkernel: {
    networkName: 'string',
    sourceVip: 'string',
    enableDSR: 'bool',
    rootHnsEndpointName: 'string',
    forwardHealthCheckVip: 'bool',
  },
  detectLocalMode: 'string',
  detectLocal: { bridgeInterface: 'string', interfaceNamePrefix: 'string' },
  clusterCIDR: 'string',
  nodePortAddresses: 'stringList',
  oomScoreAdj: 'int',
  conntrack: {
    maxPerCore: 'int',
    min: 'int',
    tcpEstablishedTimeout: 'duration',
    tcpCloseWaitTimeout: 'duration',
    tcpBeLiberal: 'bool',
    udpTimeout: 'duration',
    udpStreamTimeout: 'duration',
  },
  configSyncPeriod: 'duration',
  portRange: 'string',
  windowsRunAsService: 'bool',
};

/** Decoded values by field path ('ipvs.scheduler'); durations in ms; absent/null fields missing. */
type Values = Map<string, unknown>;

const describe = (v: unknown): string =>
  v === null || v === undefined
    ? 'null'
    : Array.isArray(v)
      ? 'a list'
      : typeof v === 'object'
        ? 'a mapping'
        : `${typeof v} ${JSON.stringify(v)}`;

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * kube-proxy reads YAML 1.1 (go-yaml v2 under sigs.k8s.io/yaml), where a bare `yes`/`on`/`y`
 * is a boolean; js-yaml's core schema is YAML 1.2 and gives strings. This schema resolves
 * go-yaml v2's bare booleans (replacing the core schema's bool type, same tag); a quoted
 * "yes" stays a string, which kube-proxy's JSON decode refuses for a bool field.
 */
const YAML11_BOOLS: Readonly<Record<string, boolean>> = Object.fromEntries([
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'].map((t) => [t, true] as const),
  ...['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'].map((t) => [t, false] as const),
]);
const YAML11_SCHEMA = yaml.CORE_SCHEMA.extend({
  implicit: [
    new yaml.Type('tag:yaml.org,2002:bool', {
      kind: 'scalar',
      resolve: (data: unknown) => typeof data === 'string' && Object.prototype.hasOwnProperty.call(YAML11_BOOLS, data),
      construct: (data: string) => YAML11_BOOLS[data],
      predicate: (o: unknown) => typeof o === 'boolean',
      represent: (o: object) => String(o),
    }),
  ],
});

/** Collects ConfigErrors so that every one is reported at once. */
class Problems {
  readonly errors: ConfigError[] = [];
  /** fn's value, or `fallback` after recording its ConfigError */
  attempt<T>(fn: () => T, fallback: T): T {
    try {
      return fn();
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      this.add(e);
      return fallback;
    }
  }
  /** records an error once (a field checked twice, as the mode's section and as itself, says it once) */
  add(e: ConfigError): void {
    if (e instanceof ConfigErrors) for (const one of e.errors) this.add(one);
    else if (!this.errors.some((x) => x.field === e.field && x.detail === e.detail)) this.errors.push(e);
  }
  /**
   * one error as itself; several, or any with unknown fields beside them, as one ConfigErrors
   * listing them all
   */
  throwAny(unknownFields: readonly ConfigWarning[] = []): void {
    if (this.errors.length === 1 && unknownFields.length === 0) throw this.errors[0]!;
    if (this.errors.length > 0) throw new ConfigErrors(this.errors, { unknownFields });
  }
}

/**
 * Several validation errors of one configuration, reported together (kube-proxy's aggregate),
 * one line each after a heading line, every line naming the file, the field and the value;
 * the unknown fields of the same file follow (kube-proxy's strict decoding names them; both
 * ignore them), so one pass shows everything wrong with the file.
 */
export class ConfigErrors extends ConfigError {
  /** one line per error, then one per unknown field: "FILE: field: detail" */
  readonly lines: readonly string[];
  constructor(
    readonly errors: readonly ConfigError[],
    options?: { source?: string; unknownFields?: readonly ConfigWarning[] },
  ) {
    const unknown = options?.unknownFields ?? [];
    const lines = [
      ...errors.map((e) => [options?.source, e.field, e.detail].filter((p) => p).join(': ')),
      ...unknown.map((w) => [options?.source, w.message].filter((p) => p).join(': ')),
    ];
    const also = unknown.length === 0 ? '' : `, and ${unknown.length} unknown field${unknown.length === 1 ? '' : 's'}`;
    super(
      '',
      `${errors.length} error${errors.length === 1 ? '' : 's'}${also}:\n${lines.map((l) => `  ${l}`).join('\n')}`,
      {
        ...(options?.source !== undefined ? { source: options.source } : {}),
      },
    );
    this.lines = lines;
    this.unknownFields = unknown;
  }
  readonly unknownFields: readonly ConfigWarning[];
}

function decodeLeaf(kind: Leaf, value: unknown, path: string): unknown {
  const wrongType = (want: string): ConfigError => new ConfigError(path, `expected ${want}, got ${describe(value)}`);
  switch (kind) {
    case 'any':
      return value;
    case 'string':
    case 'duration':
      if (typeof value !== 'string')
        throw wrongType(kind === 'string' ? 'a string' : 'a duration string such as "30s"');
      return kind === 'string' ? value : parseDuration(value, path);
    case 'bool':
      if (typeof value !== 'boolean') throw wrongType('true or false');
      return value;
    case 'int':
      if (typeof value !== 'number' || !Number.isInteger(value)) throw wrongType('an integer');
      return value;
    case 'float':
      if (typeof value !== 'number') throw wrongType('a number');
      return value;
    case 'stringList':
      if (!Array.isArray(value)) throw wrongType('a list of strings');
      return value.map((item, i) => {
        if (typeof item !== 'string')
          throw new ConfigError(`${path}[${i}]`, `expected a string, got ${describe(item)}`);
        return item;
      });
    case 'boolMap': {
      if (!isMapping(value)) throw wrongType('a mapping of name: true|false');
      const out: Record<string, boolean> = {};
      const problems = new Problems();
      for (const [k, v] of Object.entries(value))
        out[k] = problems.attempt(() => decodeLeaf('bool', v, `${path}.${k}`) as boolean, false);
      problems.throwAny();
      return out;
    }
  }
}

function walk(
  obj: Record<string, unknown>,
  fields: Fields,
  prefix: string,
  values: Values,
  warnings: ConfigWarning[],
  problems: Problems,
): void {
  for (const [name, value] of Object.entries(obj)) {
    const path = prefix ? `${prefix}.${name}` : name;
    const kind = Object.prototype.hasOwnProperty.call(fields, name) ? fields[name] : undefined;
    if (kind === undefined) {
      // kube-proxy's strict decoding: `unknown field "ipvs.trictARP"`; what the section has beside it
      const has = prefix ? ` ${prefix} has: ${Object.keys(fields).join(', ')}` : '';
      warnings.push({
        field: path,
        message: `unknown field "${path}" ignored (is it misspelled?${has})`,
        unknownField: true,
      });
      continue;
    }
    if (value === null || value === undefined) continue; // null is "unset", as in Go
    if (typeof kind === 'string') {
      problems.attempt(() => values.set(path, decodeLeaf(kind, value, path)), undefined);
    } else if (!isMapping(value)) {
      problems.add(new ConfigError(path, `expected a mapping, got ${describe(value)}`));
    } else {
      walk(value, kind, path, values, warnings, problems);
    }
  }
}

/**
 * Decodes, defaults and validates a KubeProxyConfiguration. `source` (the file name) prefixes
 * error messages. Throws ConfigError.
 */
export function decodeProxyConfig(text: string, source?: string): DecodedConfig {
  try {
    return decode(text);
  } catch (e) {
    if (e instanceof ConfigErrors && source !== undefined)
      throw new ConfigErrors(e.errors, { source, unknownFields: e.unknownFields });
    if (e instanceof ConfigError && source !== undefined)
      throw new ConfigError(e.field, e.detail, { source, cause: e });
    throw e;
  }
}

function decode(text: string): DecodedConfig {
  let doc: unknown;
  try {
    doc = yaml.load(text, { schema: YAML11_SCHEMA });
  } catch (e) {
    // one line: js-yaml's message carries a multi-line source excerpt
    const { reason, mark } = e as { reason?: string; mark?: { line: number; column: number } };
    const where = mark ? ` at line ${mark.line + 1}, column ${mark.column + 1}` : '';
    throw new ConfigError('', `not valid YAML or JSON: ${reason ?? (e as Error).message}${where}`, { cause: e });
  }
  if (!isMapping(doc)) throw new ConfigError('', `expected a ${KIND} object, got ${describe(doc)}`);
  if (doc.apiVersion !== API_VERSION) {
    throw new ConfigError(
      'apiVersion',
      `${describe(doc.apiVersion ?? null)} is not supported, expected "${API_VERSION}"`,
    );
  }
  if (doc.kind !== KIND)
    throw new ConfigError('kind', `${describe(doc.kind ?? null)} is not supported, expected "${KIND}"`);

  const values: Values = new Map();
  const warnings: ConfigWarning[] = [];
  const problems = new Problems();
  walk(doc, SCHEMA, '', values, warnings, problems);
  const config = buildConfig(values, warnings, problems);
  // both stages at once (issue 39 item 9): the cross-field checks too, but only those over
  // fields that decoded (one over a field that did not would judge its default in its place,
  // or say its error again)
  const failed = problems.errors.map((e) => e.field);
  // the gates as kube-proxy checks them (unknown, locked), once their values decoded
  if (!failed.some((bad) => related('featureGates', bad))) {
    const gates = checkFeatureGates(config.featureGates, 'featureGates');
    for (const e of gates.errors) problems.add(e);
    warnings.push(...gates.notes.map((n) => ({ ...n, level: 'info' as const })));
  }
  for (const check of crossFieldChecks(config))
    if (!check.fields.some((f) => failed.some((bad) => related(f, bad)))) problems.add(check.error);
  problems.throwAny(warnings.filter((w) => w.unknownField));
  return { config, warnings };
}

function buildConfig(v: Values, warnings: ConfigWarning[], problems: Problems): ProxyConfig {
  const p = <T>(fn: () => T, fallback: T): T => problems.attempt(fn, fallback);
  const str = (path: string): string => (v.get(path) as string | undefined) ?? '';
  /** zero is "unset" (kube-proxy defaults zero values) */
  const nonZero = <T>(path: string, fallback: T): T => {
    const value = v.get(path) as T | undefined;
    return value === undefined || (value as unknown) === 0 || (value as unknown) === '' ? fallback : value;
  };
  const list = (path: string): string[] => (v.get(path) as string[] | undefined) ?? [];

  const bindAddress =
    str('bindAddress') === '' ? '0.0.0.0' : p(() => parseIP(str('bindAddress'), 'bindAddress'), '0.0.0.0');
  const d = defaultProxyConfig(bindAddress);
  const mode = p(() => parseProxyMode(str('mode'), 'mode'), 'ipvs');
  if (mode !== 'ipvs') warnings.push(modeWarning('mode', mode));
  p(() => validateModeSection(v, mode), undefined);
  p(() => parsePortRange(str('portRange'), 'portRange'), undefined);
  p(
    () => parseShowHiddenMetricsForVersion(str('showHiddenMetricsForVersion'), 'showHiddenMetricsForVersion'),
    undefined,
  );
  /** a pointer field of v1alpha1: null (absent) takes the default, an explicit 0 stays 0 */
  const pointer = <T>(path: string, fallback: T): T => (v.has(path) ? (v.get(path) as T) : fallback);
  const seconds = (ms: number): number => Math.trunc(ms / 1000);
  const oomScoreAdj = v.get('oomScoreAdj');
  const vmodule = v.get('logging.vmodule');
  if (Array.isArray(vmodule) ? vmodule.length > 0 : vmodule !== undefined && vmodule !== '') {
    warnings.push({
      field: 'logging.vmodule',
      message: 'logging.vmodule has no effect in kube-ipvs (logging.verbosity and --v do); ignored',
    });
  }

  const masqueradeBit = v.get('iptables.masqueradeBit');
  return {
    mode: 'ipvs',
    hostnameOverride: str('hostnameOverride'),
    bindAddress,
    healthzBindAddress:
      str('healthzBindAddress') === ''
        ? d.healthzBindAddress
        : p(
            () => parseBindAddress(str('healthzBindAddress'), 'healthzBindAddress', HEALTHZ_PORT),
            d.healthzBindAddress,
          ),
    metricsBindAddress:
      str('metricsBindAddress') === ''
        ? d.metricsBindAddress
        : p(
            () => parseBindAddress(str('metricsBindAddress'), 'metricsBindAddress', METRICS_PORT),
            d.metricsBindAddress,
          ),
    clientConnection: {
      kubeconfig: str('clientConnection.kubeconfig'),
      qps: nonZero('clientConnection.qps', d.clientConnection.qps),
      burst: nonZero('clientConnection.burst', d.clientConnection.burst),
      contentType: nonZero('clientConnection.contentType', d.clientConnection.contentType),
    },
    master: '',
    clusterCIDR: p(() => parseClusterCidrs(str('clusterCIDR').split(','), 'clusterCIDR'), []),
    detectLocalMode: p(() => parseDetectLocalMode(str('detectLocalMode'), 'detectLocalMode'), d.detectLocalMode),
    detectLocal: {
      bridgeInterface: str('detectLocal.bridgeInterface'),
      interfaceNamePrefix: str('detectLocal.interfaceNamePrefix'),
    },
    nodePortAddresses: p(() => parseNodePortAddresses(list('nodePortAddresses'), 'nodePortAddresses'), []),
    iptables: {
      masqueradeAll: (v.get('iptables.masqueradeAll') as boolean | undefined) ?? false,
      masqueradeBit:
        masqueradeBit === undefined
          ? d.iptables.masqueradeBit
          : p(() => parseMasqueradeBit(masqueradeBit as number, 'iptables.masqueradeBit'), d.iptables.masqueradeBit),
    },
    ipvs: {
      scheduler: p(() => parseScheduler(str('ipvs.scheduler'), 'ipvs.scheduler'), ''),
      syncPeriodMs: nonZero('ipvs.syncPeriod', d.ipvs.syncPeriodMs),
      minSyncPeriodMs: nonZero('ipvs.minSyncPeriod', d.ipvs.minSyncPeriodMs),
      excludeCIDRs: list('ipvs.excludeCIDRs').map((c, i) => p(() => configCidr(c, `ipvs.excludeCIDRs[${i}]`), c)),
      strictARP: (v.get('ipvs.strictARP') as boolean | undefined) ?? false,
      tcpTimeoutSec: Math.trunc(nonZero('ipvs.tcpTimeout', 0) / 1000),
      tcpFinTimeoutSec: Math.trunc(nonZero('ipvs.tcpFinTimeout', 0) / 1000),
      udpTimeoutSec: Math.trunc(nonZero('ipvs.udpTimeout', 0) / 1000),
      excludeClusterCIDRs: list('ipvs.excludeClusterCIDRs').map((c, i) =>
        p(() => configCidr(c, `ipvs.excludeClusterCIDRs[${i}]`), c),
      ),
      // absent (or null): unset, kube-proxy's default; a list, even [], replaces it
      schedulerFlags: v.has('ipvs.schedulerFlags')
        ? p(() => parseSchedulerFlags(list('ipvs.schedulerFlags'), 'ipvs.schedulerFlags'), null)
        : null,
    },
    configSyncPeriodMs: nonZero('configSyncPeriod', d.configSyncPeriodMs),
    conntrack: {
      maxPerCore: p(
        () => parseConntrackCount(pointer('conntrack.maxPerCore', d.conntrack.maxPerCore), 'conntrack.maxPerCore'),
        d.conntrack.maxPerCore,
      ),
      min: p(() => parseConntrackCount(pointer('conntrack.min', d.conntrack.min), 'conntrack.min'), d.conntrack.min),
      tcpEstablishedTimeoutSec: seconds(
        pointer('conntrack.tcpEstablishedTimeout', d.conntrack.tcpEstablishedTimeoutSec * 1000),
      ),
      tcpCloseWaitTimeoutSec: seconds(
        pointer('conntrack.tcpCloseWaitTimeout', d.conntrack.tcpCloseWaitTimeoutSec * 1000),
      ),
      tcpBeLiberal: (v.get('conntrack.tcpBeLiberal') as boolean | undefined) ?? false,
      udpTimeoutSec: seconds(pointer('conntrack.udpTimeout', 0)),
      udpStreamTimeoutSec: seconds(pointer('conntrack.udpStreamTimeout', 0)),
    },
    oomScoreAdj:
      oomScoreAdj === undefined
        ? d.oomScoreAdj
        : p(() => parseOomScoreAdj(oomScoreAdj as number, 'oomScoreAdj'), d.oomScoreAdj),
    logging: {
      format: p(() => parseLogFormat(str('logging.format'), 'logging.format'), 'text' as LogFormat),
      verbosity: p(() => parseVerbosity(pointer('logging.verbosity', 0), 'logging.verbosity'), 0),
    },
    featureGates: (v.get('featureGates') as Record<string, boolean> | undefined) ?? {},
  };
}

/** logging.format: '' is text (component-base's default); kube-proxy knows text and json. */
export function parseLogFormat(text: string, field: string): LogFormat {
  if (text === '') return 'text';
  if (!(LOG_FORMATS as readonly string[]).includes(text)) {
    throw new ConfigError(field, `${JSON.stringify(text)}: Unsupported log format (one of ${LOG_FORMATS.join(', ')})`);
  }
  return text as LogFormat;
}

/** logging.verbosity is a uint32 (klog's Level). */
function parseVerbosity(value: number, field: string): number {
  if (value < 0 || value > 0xffffffff) throw new ConfigError(field, `${value}: must be a non-negative integer`);
  return value;
}

/**
 * kube-proxy validates the sync periods and masquerade bit of the mode it runs (its
 * SyncPeriod comes from that mode's section). kube-ipvs always runs ipvs, whose section is
 * checked by validateProxyConfig; a file written for iptables or nftables is checked as
 * kube-proxy would check it, so a rollback to kube-proxy never fails on a file kube-ipvs took.
 */
function validateModeSection(v: Values, mode: string): void {
  const section = mode === 'nftables' ? 'nftables' : mode === 'iptables' || mode === '' ? 'iptables' : undefined;
  if (section === undefined) return;
  const bit = v.get(`${section}.masqueradeBit`);
  if (bit !== undefined) parseMasqueradeBit(bit as number, `${section}.masqueradeBit`);
  // zero is unset: v1alpha1 defaults syncPeriod 30s and minSyncPeriod 1s
  const sync = (v.get(`${section}.syncPeriod`) as number | undefined) || 30_000;
  const minSync = (v.get(`${section}.minSyncPeriod`) as number | undefined) || 1_000;
  if (minSync > sync) {
    throw new ConfigError(
      `${section}.syncPeriod`,
      `${formatDurationMs(sync)} must be greater than or equal to ${section}.minSyncPeriod (${formatDurationMs(minSync)})`,
    );
  }
}

/**
 * The warning for a `mode` (or --proxy-mode) other than ipvs: what kube-proxy would run
 * (blank: iptables, its default on Linux; kubeadm leaves the field blank) and what kube-ipvs
 * does instead.
 */
export function modeWarning(field: string, mode: string): ConfigWarning {
  const kubeProxyRuns = mode === '' ? 'iptables (blank is its default on Linux)' : mode;
  return {
    field,
    message:
      `${field} is "${mode}": kube-proxy would run ${kubeProxyRuns}; kube-ipvs runs IPVS instead ` +
      "(kube-ipvs always runs IPVS: kube-proxy's IPVS-mode virtual servers, ipsets and KUBE-* chains)",
  };
}

/** One cross-field check that failed: its error and every field it read. */
interface CrossFieldError {
  readonly error: ConfigError;
  readonly fields: readonly string[];
}

/** `a` and `b` are one field, or one holds the other (`ipvs` and `ipvs.syncPeriod`, `x` and `x[0]`); '' holds all. */
function related(a: string, b: string): boolean {
  const holds = (outer: string, inner: string) =>
    outer === '' || inner === outer || inner.startsWith(`${outer}.`) || inner.startsWith(`${outer}[`);
  return holds(a, b) || holds(b, a);
}

function crossFieldChecks(c: ProxyConfig): CrossFieldError[] {
  const out: CrossFieldError[] = [];
  const fail = (fields: readonly string[], field: string, detail: string) =>
    out.push({ error: new ConfigError(field, detail), fields });
  if (c.ipvs.syncPeriodMs <= 0)
    fail(['ipvs.syncPeriod'], 'ipvs.syncPeriod', `${formatDurationMs(c.ipvs.syncPeriodMs)}: must be greater than 0`);
  else if (c.ipvs.minSyncPeriodMs > c.ipvs.syncPeriodMs) {
    fail(
      ['ipvs.syncPeriod', 'ipvs.minSyncPeriod'],
      'ipvs.syncPeriod',
      `${formatDurationMs(c.ipvs.syncPeriodMs)} must be greater than or equal to ipvs.minSyncPeriod (${formatDurationMs(c.ipvs.minSyncPeriodMs)})`,
    );
  }
  if (c.configSyncPeriodMs <= 0)
    fail(['configSyncPeriod'], 'configSyncPeriod', `${formatDurationMs(c.configSyncPeriodMs)}: must be greater than 0`);
  if (c.clientConnection.burst < 0)
    fail(['clientConnection.burst'], 'clientConnection.burst', `${c.clientConnection.burst}: must be non-negative`);
  if (c.detectLocalMode === 'BridgeInterface' && c.detectLocal.bridgeInterface === '') {
    fail(
      ['detectLocalMode', 'detectLocal.bridgeInterface'],
      'detectLocal.bridgeInterface',
      'must be set when detectLocalMode is BridgeInterface',
    );
  }
  if (c.detectLocalMode === 'InterfaceNamePrefix' && c.detectLocal.interfaceNamePrefix === '') {
    fail(
      ['detectLocalMode', 'detectLocal.interfaceNamePrefix'],
      'detectLocal.interfaceNamePrefix',
      'must be set when detectLocalMode is InterfaceNamePrefix',
    );
  }
  return out;
}

/** Every cross-field error of a configuration (run again after flags are applied). */
export function proxyConfigErrors(c: ProxyConfig): ConfigError[] {
  return crossFieldChecks(c).map((e) => e.error);
}

/** Checks that span fields (run again after flags are applied). Throws ConfigError (ConfigErrors for several). */
export function validateProxyConfig(c: ProxyConfig): void {
  const problems = new Problems();
  for (const e of proxyConfigErrors(c)) problems.add(e);
  problems.throwAny();
}
