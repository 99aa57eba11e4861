import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { KUBE_IPVS_NODE_FLAGS } from '../../lib/cli/node-flags';

// tests run from dist/spec/cli; the sources sit at the repository root
const ROOT = path.resolve(__dirname, '..', '..', '..');
const firstLine = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8').split('\n')[0]!;

describe('the node flags kube-ipvs runs with', () => {
  it('are in the shebang of the installed entry point', () => {
    expect(firstLine('lib/cli/main.ts')).toBe(`#!/usr/bin/env -S node ${KUBE_IPVS_NODE_FLAGS.join(' ')}`);
    // tsc keeps the shebang: what npm links as `kube-ipvs` starts node with the flags
    expect(firstLine('dist/lib/cli/main.js')).toBe(firstLine('lib/cli/main.ts'));
    // and esbuild keeps it in the bundle (package.json's bin, the image's entry point)
    expect(firstLine('dist/bundle/kube-ipvs.js')).toBe(firstLine('lib/cli/main.ts'));
  });

  it("are given by the image's entry script", () => {
    const exec = readFileSync(path.join(ROOT, 'scripts/image/kube-ipvs.sh'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('exec '));
    expect(exec).toBe(
      `exec /usr/local/bin/node ${KUBE_IPVS_NODE_FLAGS.join(' ')} /opt/kube-ipvs/dist/bundle/kube-ipvs.js "$@"`,
    );
  });

  it('give the process the full collection the idle collector calls (globalThis.gc)', () => {
    const probe = 'process.stdout.write(typeof globalThis.gc)';
    const run = (flags: readonly string[]) =>
      spawnSync(process.execPath, [...flags, '-e', probe], { encoding: 'utf8' }).stdout;
    expect(run(KUBE_IPVS_NODE_FLAGS)).toBe('function');
    expect(run([])).toBe('undefined');
  });
});
