// scripts/install-deps.sh's profiles and the Makefile targets that use them: `make demo` installs
// what the demo uses and never builds Kubernetes (issue 41 item 2: a 38-minute Go build on a busy
// 2-core machine); `make test` and CI install everything, the lab's build included.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function profile(name: string): { packages: string[]; steps: string[] } {
  const r = spawnSync('bash', ['scripts/install-deps.sh', '--print', name], { cwd: ROOT, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const field = (f: string) => /^(\w+): (.*)$/m.exec(r.stdout.split('\n').find((l) => l.startsWith(`${f}:`))!)![2]!;
  return { packages: field('packages').split(' '), steps: field('steps').split(' ') };
}

/** the commands `make TARGET` would run (make -n: printed, nothing run) */
function makeDryRun(target: string): string {
  const r = spawnSync('make', ['-n', target], { cwd: ROOT, encoding: 'utf8' });
  expect(r.status).toBe(0);
  return r.stdout;
}

describe('scripts/install-deps.sh', () => {
  it('the demo profile: the build, the VM and the tools the demo runs; no Go, no Kubernetes build', () => {
    const demo = profile('demo');
    expect(demo.steps).toEqual(['node-modules', 'vm-image']);
    expect(demo.packages.filter((p) => p.startsWith('golang'))).toEqual([]);
    // what scripts/demo.sh and the daemon it starts run on the VM's host root: command -> package
    const used: Record<string, string> = {
      'qemu-system-x86_64': 'qemu-system-x86',
      busybox: 'busybox-static',
      ipvsadm: 'ipvsadm',
      curl: 'curl',
      ip: 'iproute2',
      ipset: 'ipset',
      'iptables-restore': 'iptables',
      cc: 'gcc',
    };
    const demoScript = readFileSync(path.join(ROOT, 'scripts', 'demo.sh'), 'utf8');
    for (const cmd of ['ipvsadm', 'curl', 'ip netns']) expect(demoScript).toContain(`${cmd} `);
    expect(demo.packages).toEqual(expect.arrayContaining(Object.values(used)));
  });

  it("all: every package and step of the demo, plus Go (Debian's, and go.mod's release) and the lab build", () => {
    const demo = profile('demo');
    const all = profile('all');
    expect(all.packages).toEqual(expect.arrayContaining(demo.packages));
    expect(all.packages).toContain('golang-go');
    // bookworm's golang-go is 1.19: the go step (scripts/install-go.sh) brings go.mod's release before the build
    expect(all.steps).toEqual([...demo.steps, 'go', 'k8s']);
    expect(profile('').steps).toEqual(all.steps);
  });

  it('refuses an unknown profile', () => {
    const r = spawnSync('bash', ['scripts/install-deps.sh', '--print', 'everything'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("unknown profile 'everything'");
  });
});

describe('the Makefile', () => {
  it('`make demo` installs the demo profile and builds no Kubernetes', () => {
    const demo = makeDryRun('demo');
    expect(demo).toContain('bash scripts/install-deps.sh demo');
    expect(demo).not.toMatch(/install-deps\.sh all|scripts\/k8s\/build\.sh/);
  });

  it('`make test` and CI install everything', () => {
    expect(makeDryRun('test')).toContain('bash scripts/install-deps.sh all');
    expect(readFileSync(path.join(ROOT, '.ci', 'run'), 'utf8')).toMatch(/^bash scripts\/install-deps\.sh all$/m);
  });
});
