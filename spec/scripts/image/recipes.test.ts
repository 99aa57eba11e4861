// The two image recipes, `make image` (scripts/image/build.sh, no container runtime) and
// Containerfile (podman/docker build), must build the same image. No container build runs
// here, so this reads both and checks they are made of the same parts: the same Debian
// packages, the same `make build` (tsc and the native addon's cc rule) over every source it
// reads, the same app-layer recipe (stage-app.sh) and the same run config. What each recipe
// does inside stage-app.sh is then one thing; the VM test runs its output.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { IMAGE_RUN_CONFIG } from '../../../scripts/image/write-oci-layout';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

/** Containerfile instructions, continuation lines joined, comments dropped, split into stages. */
function containerfileStages(): string[][] {
  const lines = read('Containerfile')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const stages: string[][] = [];
  for (const l of lines) {
    if (/^FROM /.test(l)) stages.push([]);
    stages[stages.length - 1]!.push(l);
  }
  return stages;
}

const aptInstalled = (run: string): string[] =>
  /apt-get install -y --no-install-recommends ([^&]+)/.exec(run)?.[1]!.trim().split(/\s+/).sort() ?? [];

describe('Containerfile and make image (scripts/image/build.sh)', () => {
  const [build, final] = containerfileStages() as [string[], string[]];
  const buildSh = read('scripts/image/build.sh');

  it('has a build stage and a final stage on bookworm, as build.sh bootstraps', () => {
    expect(containerfileStages()).toHaveLength(2);
    expect(build[0]).toMatch(/^FROM docker\.io\/library\/node:24-bookworm-slim AS build$/);
    expect(final[0]).toBe('FROM docker.io/library/debian:bookworm-slim');
    expect(buildSh).toMatch(/^SUITE=bookworm$/m);
  });

  it("installs build.sh's BASE_PACKAGES in the final stage, nothing else", () => {
    const base = /^BASE_PACKAGES=(\S+)$/m.exec(buildSh)?.[1]?.split(',').sort();
    expect(base).toBeDefined();
    const runs = final.filter((l) => l.startsWith('RUN '));
    expect(runs).toHaveLength(1);
    expect(aptInstalled(runs[0]!)).toEqual(base);
  });

  it('runs `make build` (the Makefile compiles the native addon with cc) over every source it reads', () => {
    const runs = build.filter((l) => l.startsWith('RUN ')).join('\n');
    expect(runs).toMatch(/\bmake build\b/);
    // what `make build` reads: tsconfig's roots, and the addon rule's prerequisites
    const copied = new Set(build.filter((l) => l.startsWith('COPY ')).flatMap((l) => l.split(/\s+/).slice(1, -1)));
    const tsconfig = JSON.parse(read('tsconfig.json')) as { include: string[] };
    const makefile = read('Makefile');
    const addons = [
      ['netlink_sockopt', 'native/netlink-sockopt.c'],
      ['malloc_trim', 'native/malloc-trim.c'],
    ] as const;
    const addon: string[] = [];
    for (const [name, source] of addons) {
      const prerequisites =
        new RegExp(`^dist/native/${name}\\.node: (.+)$`, 'm').exec(makefile)?.[1]?.split(/\s+/) ?? [];
      expect(prerequisites).toContain(source);
      addon.push(...prerequisites);
      // the compiler the Containerfile's gcc provides, with the flags the arm64 image's build uses too
      expect(makefile).toMatch(
        new RegExp(`^dist/native/${name}\\.node: .*\\n.*\\n\\tcc \\$\\(ADDON_FLAGS\\) -o \\$@ \\$<$`, 'm'),
      );
      expect(makefile).toMatch(new RegExp(`^build: .*dist/native/${name}\\.node`, 'm'));
    }
    const needed = [
      'Makefile',
      'tsconfig.json',
      'package.json',
      'package-lock.json',
      ...tsconfig.include.map((g) => g.split('/')[0]!),
      ...addon.filter((p) => !p.startsWith('node_modules/')).map((p) => p.split('/')[0]!),
    ];
    for (const p of new Set(needed)) expect({ p, copied: copied.has(p) }).toEqual({ p, copied: true });
    // make and a C compiler (the Makefile's cc), binutils for stage-app.sh's readelf and strip
    expect(aptInstalled(build.find((l) => l.startsWith('RUN apt-get'))!)).toEqual(
      expect.arrayContaining(['make', 'gcc', 'libc6-dev', 'binutils']),
    );
    // the `node` package's install script runs: its Node is the one the image ships
    expect(runs).not.toMatch(/--ignore-scripts/);
  });

  it('stages the app layer with the same script, and the final stage is that tree alone', () => {
    expect(build.find((l) => l.startsWith('RUN make build'))).toBe(
      'RUN make build && bash scripts/image/stage-app.sh /stage "$(realpath node_modules/.bin/node)"',
    );
    expect(buildSh).toMatch(
      /^bash scripts\/image\/stage-app\.sh "\$STAGE" "\$NODE_BIN" "\$NODE_ARCH" "\$NATIVE_DIR" "\$RUN_TARGET"$/m,
    );
    // (for amd64, with stage-app.sh's defaults)
    expect(buildSh).toMatch(/^ {2}amd64\) .*NODE_ARCH=x64; NATIVE_DIR=dist\/native; RUN_TARGET= ;;$/m);
    expect(buildSh).toMatch(/^NODE_BIN=\$\(realpath node_modules\/\.bin\/node\)$/m);
    expect(final.filter((l) => l.startsWith('COPY '))).toEqual(['COPY --from=build /stage/ /']);
  });

  it("runs as write-oci-layout's image config says (entry point, PATH)", () => {
    expect(final).toContain(`ENTRYPOINT ${JSON.stringify(IMAGE_RUN_CONFIG.Entrypoint)}`);
    expect(final).toContain(`ENV ${IMAGE_RUN_CONFIG.Env[0]}`);
  });
});

describe('stage-app.sh', () => {
  const stage = read('scripts/image/stage-app.sh');

  it("installs /usr/local/bin/kube-proxy as the same entry point as kube-ipvs (kubeadm's DaemonSet command)", () => {
    expect(stage).toMatch(/^install -m 755 scripts\/image\/kube-ipvs\.sh "\$STAGE\/usr\/local\/bin\/kube-ipvs"$/m);
    expect(stage).toMatch(/^ln -s kube-ipvs "\$STAGE\/usr\/local\/bin\/kube-proxy"$/m);
  });

  it('ships the native addons and checks the staged tree loads them', () => {
    for (const name of ['netlink_sockopt', 'malloc_trim']) {
      expect(stage).toContain(`cp -a "$NATIVE_DIR/${name}.node" "$APP/dist/native/"`);
      expect(stage).toContain(`require('$APP/dist/native/${name}.node')`);
    }
  });
});
