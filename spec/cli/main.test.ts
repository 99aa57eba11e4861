// The top-level command line as an operator meets it: the built entry point run as a process
// (exit codes and output are what a DaemonSet or a shell sees), then the pure helpers.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../../lib/errors';
import { CLI_COMMANDS } from '../../lib/cli/top-help';
import { isViewCommand } from '../../lib/cli/views/views-command';
import {
  formatVersion,
  nodeSatisfies,
  PACKAGE_JSON,
  readPackageInfo,
  versionRequest,
  withoutVersionFlags,
} from '../../lib/cli/version';

// tests run from dist/spec/cli; the sources sit at the repository root
const ROOT = path.resolve(__dirname, '..', '..', '..');
const MAIN = path.join(ROOT, 'dist', 'lib', 'cli', 'main.js');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
  dependencies: Record<string, string>;
};

function kubeIpvs(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('kube-ipvs --help', () => {
  const help = kubeIpvs('--help');

  it('exits 0 and lists every command, then the proxy flags', () => {
    expect(help.status).toBe(0);
    const listed = help.stdout
      .split('\n')
      .map((l) => /^ {2}kube-ipvs ([a-z]+)/.exec(l)?.[1])
      .filter((n) => n !== undefined);
    expect(listed).toEqual(['service', 'status', 'diff', 'ipvsadm', 'cleanup', 'version', 'help']);
    expect(help.stdout).toMatch(/^ {7}kube-ipvs --version +print the version and exit$/m);
    // the proxy's own flags follow, with no second, shorter command list
    expect(help.stdout).toContain('--hostname-override');
    expect(help.stdout).not.toContain('Subcommands:');
  });

  it('every command it lists is one main.ts dispatches (each answers its own --help)', () => {
    for (const { name } of CLI_COMMANDS) {
      if (name !== 'ipvsadm' && name !== 'cleanup' && name !== 'help' && name !== 'version')
        expect({ name, view: isViewCommand(name) }).toEqual({ name, view: true });
      if (name === 'help' || name === 'version') continue;
      const own = kubeIpvs(name, '--help');
      expect({ name, status: own.status }).toEqual({ name, status: 0 });
      // the proxy's help is not what came back: the command itself answered
      expect({ name, proxyHelp: own.stdout.includes('--hostname-override') }).toEqual({ name, proxyHelp: false });
    }
  });
});

describe('commands as an operator types them (issue 41 item 8)', () => {
  const usage = "Run 'kube-ipvs --help' for usage.\n";

  it('`kube-ipvs help` is --help; `help COMMAND` is COMMAND --help', () => {
    const top = kubeIpvs('help');
    expect(top).toEqual({ status: 0, stdout: kubeIpvs('--help').stdout, stderr: '' });
    const status = kubeIpvs('help', 'status');
    expect(status).toEqual({ status: 0, stdout: kubeIpvs('status', '--help').stdout, stderr: '' });
    expect(status.stdout).toMatch(/^Usage: kube-ipvs status/);
  });

  it('`kube-ipvs version` is --version', () => {
    expect(kubeIpvs('version')).toEqual({ status: 0, stdout: `kube-ipvs v${pkg.version}\n`, stderr: '' });
  });

  it("a mistyped command is an unknown command with commander's nearest suggestion, exit 2", () => {
    expect(kubeIpvs('services', 'list')).toEqual({
      status: 2,
      stdout: '',
      stderr: `kube-ipvs: unknown command 'services'\n(Did you mean service?)\n${usage}`,
    });
    expect(kubeIpvs('help', 'stauts').stderr).toBe(
      `kube-ipvs: unknown command 'stauts'\n(Did you mean status?)\n${usage}`,
    );
    // a command after a flag is said to come first
    expect(kubeIpvs('--v=2', 'status')).toEqual({
      status: 2,
      stdout: '',
      stderr: `kube-ipvs: 'status' is a command: give it first (kube-ipvs status ...), before any flag\n${usage}`,
    });
  });

  it("flag names are normalised as kube-proxy's pflag set does: `_` is `-`", () => {
    // the file is read, so the flags parsed: the error is the missing file's, not the flag's
    const r = kubeIpvs('--hostname_override=node-a', '--init_only', '--config=/nonexistent/config.conf');
    expect(r).toEqual({
      status: 1,
      stdout: '',
      stderr: 'kube-ipvs: --config: cannot read /nonexistent/config.conf: ENOENT\n',
    });
  });
});

describe('kube-ipvs --version (kube-proxy --version in the image: the same entry point)', () => {
  it("prints package.json's version and exits 0", () => {
    expect(kubeIpvs('--version')).toEqual({ status: 0, stdout: `kube-ipvs v${pkg.version}\n`, stderr: '' });
  });

  it("is honoured whatever else is on the command line, as kube-proxy's is (no config read, no daemon)", () => {
    const r = kubeIpvs('--config=/var/lib/kube-proxy/config.conf', '--hostname-override=node-a', '--version=true');
    expect(r).toEqual({ status: 0, stdout: `kube-ipvs v${pkg.version}\n`, stderr: '' });
  });

  it('--version=raw prints every field as JSON', () => {
    const r = kubeIpvs('--version=raw');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      gitVersion: `v${pkg.version}`,
      nodeVersion: process.version,
      platform: expect.stringMatching(/^linux\//),
      engines: { node: pkg.engines.node },
    });
  });

  it('--version=false is as if absent; a value verflag refuses exits 2', () => {
    const r = kubeIpvs('--version=false', '--help');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: kube-ipvs/);
    const bad = kubeIpvs('--version=maybe');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe(
      `kube-ipvs: invalid argument "maybe" for "--version" flag: expected true, false, raw or vX.Y.Z\nRun 'kube-ipvs --help' for usage.\n`,
    );
  });

  it("belongs to the proxy's command line: `ipvsadm --version` is ipvsadm's", () => {
    expect(kubeIpvs('ipvsadm', '--version').stdout).toMatch(/^ipvsadm v1\.31/);
  });
});

describe('versionRequest', () => {
  it.each<[string[], ReturnType<typeof versionRequest>]>([
    [[], undefined],
    [['--version'], 'print'],
    [['--version=true'], 'print'],
    [['--version=T'], 'print'],
    [['--version=1'], 'print'],
    [['--version=raw'], 'raw'],
    [['--version=v1.31.0'], 'print'], // verflag: sets the reported version, then prints
    [['--version=false'], undefined],
    [['--version', '--version=false'], undefined], // the last one wins
    [['--version=false', '--version=raw'], 'raw'],
    [['--', '--version'], undefined], // after `--`, not a flag
    [['--config=x', '--version'], 'print'],
  ])('%j -> %s', (argv, want) => {
    expect(versionRequest(argv)).toBe(want);
  });

  it('throws UsageError for any other value', () => {
    expect(() => versionRequest(['--version=yes'])).toThrow(UsageError);
    expect(() => versionRequest(['--version='])).toThrow(UsageError);
  });

  it('withoutVersionFlags drops them before `--` only', () => {
    expect(withoutVersionFlags(['--version=false', '--config=x', '--', '--version'])).toEqual([
      '--config=x',
      '--',
      '--version',
    ]);
  });
});

describe('formatVersion', () => {
  it('reads like kube-proxy\'s ("Kubernetes v1.31.0")', () => {
    expect(formatVersion({ version: '1.2.3', nodeRange: '>=22.19.0' }, 'print')).toBe('kube-ipvs v1.2.3\n');
  });
});

describe('package.json engines', () => {
  it("is what the code needs: at least every production dependency's floor (undici's 22.19.0)", () => {
    const floor = (range: string): string | undefined => /^>=\s*(\d+\.\d+\.\d+)$/.exec(range.trim())?.[1];
    const ours = floor(pkg.engines.node);
    expect(ours).toBeDefined();
    // undici (lib/k8s's HTTP client) refuses to load under an older Node; client-node 2.x is
    // ESM-only and this CommonJS code require()s it, which Node does unflagged from 22.12
    const undici = JSON.parse(readFileSync(path.join(ROOT, 'node_modules', 'undici', 'package.json'), 'utf8')) as {
      engines: { node: string };
    };
    expect(nodeSatisfies(`v${ours}`, undici.engines.node)).toBe(true);
    expect(nodeSatisfies(`v${ours}`, '>=22.12.0')).toBe(true);
    // and the Node the project runs (node_modules/.bin/node, the image's) satisfies it
    expect(nodeSatisfies(process.version, pkg.engines.node)).toBe(true);
  });

  it('readPackageInfo reads the package.json beside dist/ (in the image: /opt/kube-ipvs/package.json)', () => {
    expect(PACKAGE_JSON).toBe(path.join(ROOT, 'package.json'));
    expect(readPackageInfo()).toEqual({ version: pkg.version, nodeRange: pkg.engines.node });
  });

  it.each<[string, string, boolean]>([
    ['v24.21.0', '>=22.19.0', true],
    ['v22.19.0', '>=22.19.0', true],
    ['v22.18.9', '>=22.19.0', false],
    ['v20.20.2', '>=22.19.0', false],
    ['v23.0.0', '>= 22.19.0', true],
    // a real range check (the semver package), not a hand-written >= (issue 25 item 11)
    ['v22.19.0', '^22 || >=24', true],
    ['v23.1.0', '^22.19.0 || >=24', false],
    ['v24.0.0', '^22.19.0 || >=24', true],
    ['v22.19.0', '>=22.19.0 <23', true],
    ['v24.1.0', '>=22.19.0 <23', false],
    ['v22.20.0', '22.x', true],
    ['v25.0.0-nightly20260101', '>=22.19.0', true], // a nightly of a newer major is newer
  ])('nodeSatisfies(%s, %s) = %s', (current, range, want) => {
    expect(nodeSatisfies(current, range)).toBe(want);
  });
});
