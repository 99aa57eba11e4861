// scripts/bundle.ts: the one file the image ships and the VM tests start
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundle, BUNDLE_FILE } from '../../scripts/bundle';
import { REPO_ROOT } from '../../testkit/repo-root';

describe('the bundle (dist/bundle/kube-ipvs.js)', () => {
  let dir: string;
  let inputs: string[];
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'kube-ipvs-bundle-'));
    // from node_modules/ on (a checkout whose node_modules is a symlink names them by the target)
    inputs = (await bundle(path.join(dir, 'kube-ipvs.js'))).map((f) => f.replace(/^.*?(?=node_modules\/)/, ''));
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("holds client-node's KubeConfig without the generated API clients and models", () => {
    const clientNode = inputs.filter((f) => f.startsWith('node_modules/@kubernetes/client-node/dist/'));
    expect(clientNode).toContain('node_modules/@kubernetes/client-node/dist/config.js');
    expect(clientNode.filter((f) => /\/dist\/gen\/(index|apis\/(?!exception)|models\/)/.test(f))).toEqual([]);
  });

  it('leaves netlink (its binding is found from its own folder) and the addons outside', () => {
    expect(inputs.filter((f) => f.startsWith('node_modules/netlink/') || f.endsWith('.node'))).toEqual([]);
  });

  it("make build's bundle starts, reads package.json from the package root and reports its version", () => {
    const { version } = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    const r = spawnSync(process.execPath, [BUNDLE_FILE, '--version'], { encoding: 'utf8' });
    expect({ status: r.status, stdout: r.stdout }).toEqual({ status: 0, stdout: `kube-ipvs v${version}\n` });
  });
});
