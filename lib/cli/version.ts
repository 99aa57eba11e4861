/**
 * `kube-ipvs --version` (and `kube-proxy --version` in the image: the same entry script) and
 * the Node version check. Both read the package.json installed beside dist/ (the repository's,
 * or /opt/kube-ipvs/package.json in the image): its `version` is what we report and its
 * `engines.node` is what the code needs, one place for each.
 *
 * kube-proxy's --version (component-base verflag) is a tri-state: `--version` or
 * `--version=true` prints, `--version=raw` prints every field, `--version=vX.Y.Z` overrides
 * the reported version and prints, `--version=false` is as if absent; it is honoured before
 * anything else is checked. It is handled here, on the command layer, not by the proxy's flag
 * parser: printing a version must not depend on the rest of the command line.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { IN_BUNDLE } from '../bundle-flag';
import { UsageError } from '../errors';

/** What kube-ipvs reads from its package.json: the version and the Node range. */
export interface PackageInfo {
  readonly version: string;
  /** engines.node, e.g. ">=22.19.0" */
  readonly nodeRange: string;
}

/** dist/lib/cli/version.js (or the bundle, dist/bundle/kube-ipvs.js) -> the package root (dist's parent) */
export const PACKAGE_JSON = IN_BUNDLE
  ? path.resolve(__dirname, '..', '..', 'package.json')
  : path.resolve(__dirname, '..', '..', '..', 'package.json');

/** Reads the version and engines.node from package.json. */
export function readPackageInfo(file: string = PACKAGE_JSON): PackageInfo {
  const pkg = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown; engines?: { node?: unknown } };
  return {
    version: typeof pkg.version === 'string' ? pkg.version : '0.0.0',
    nodeRange: typeof pkg.engines?.node === 'string' ? pkg.engines.node : '',
  };
}

/** What --version asks for: the version line, or (--version=raw) every field of version.Info. */
export type VersionRequest = 'print' | 'raw';

/**
 * What --version asks for in argv (after the program name; flags after `--` are not flags).
 * undefined when absent or false; the last one given wins, as pflag's does. Throws UsageError
 * for a value verflag refuses.
 */
export function versionRequest(argv: readonly string[]): VersionRequest | undefined {
  const end = argv.indexOf('--');
  let want: VersionRequest | undefined;
  for (const a of end < 0 ? argv : argv.slice(0, end)) {
    if (a === '--version') want = 'print';
    else if (a.startsWith('--version=')) want = versionValue(a.slice('--version='.length));
  }
  return want;
}

// strconv.ParseBool's spellings
const TRUE = ['1', 't', 'T', 'true', 'TRUE', 'True'];
const FALSE = ['0', 'f', 'F', 'false', 'FALSE', 'False'];

function versionValue(v: string): VersionRequest | undefined {
  if (v === 'raw') return 'raw';
  if (TRUE.includes(v)) return 'print';
  if (FALSE.includes(v)) return undefined;
  // verflag: a "v..." value sets the version kube-proxy reports; ours is package.json's
  if (v.startsWith('v')) return 'print';
  throw new UsageError(`invalid argument "${v}" for "--version" flag: expected true, false, raw or vX.Y.Z`);
}

/** argv without its --version flags (a `--version=false` the proxy's parser need not know). */
export function withoutVersionFlags(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  return argv.filter((a, i) => (end >= 0 && i >= end) || !(a === '--version' || a.startsWith('--version=')));
}

const PLATFORM_ARCH: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };

/** kube-proxy prints "Kubernetes v1.31.0"; raw, every field of its version.Info. */
export function formatVersion(info: PackageInfo, request: VersionRequest, node: string = process.version): string {
  const line = `kube-ipvs v${info.version}`;
  if (request === 'print') return `${line}\n`;
  const platform = `${process.platform}/${PLATFORM_ARCH[process.arch] ?? process.arch}`;
  return `${JSON.stringify({ gitVersion: `v${info.version}`, nodeVersion: node, platform, engines: { node: info.nodeRange } }, null, 2)}\n`;
}

/**
 * Does Node `current` (process.version) satisfy `range` (package.json engines.node)? A real
 * range check (the semver package: `>=`, `^`, `||`, hyphen and x-ranges); a nightly or
 * prerelease Node counts as its version. A range semver cannot read is taken as satisfied
 * (the check is a courtesy: a clear line instead of a crash deep in undici under Node 20).
 */
export function nodeSatisfies(current: string, range: string): boolean {
  if (semver.validRange(range) === null) return true;
  const have = semver.coerce(current);
  if (have === null) return true;
  return semver.satisfies(have, range);
}
