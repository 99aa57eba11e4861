import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { OciArch, parseLayerArg, splitName, writeOciLayout } from '../../../scripts/image/write-oci-layout';
import { readOciLayout, unpackRootfs, verifyDiffIds } from '../../../scripts/image/oci-image';

const hex = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A gzipped tar holding `files` (path -> content), and its diff id. */
function layer(dir: string, name: string, files: Record<string, string>): { file: string; diffId: string } {
  const src = path.join(dir, `${name}.src`);
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(src, p)), { recursive: true });
    writeFileSync(path.join(src, p), text);
  }
  const file = path.join(dir, `${name}.tar.gz`);
  const r = spawnSync('tar', ['-C', src, '-czf', file, ...Object.keys(files)]);
  expect(r.status).toBe(0);
  return { file, diffId: hex(gunzipSync(readFileSync(file))) };
}

describe('writeOciLayout', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oci-layout-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function build(architecture?: OciArch) {
    const base = layer(dir, 'base', { 'etc/os-release': 'debian\n', 'usr/bin/tool': 'v1\n' });
    const app = layer(dir, 'app', { 'usr/bin/tool': 'v2\n', 'opt/app/main.js': 'run\n' });
    const out = path.join(dir, 'oci');
    const desc = await writeOciLayout({
      out,
      name: 'localhost/kube-ipvs:1.2.3',
      created: new Date(1_700_000_000_000),
      layers: [
        { ...base, description: 'debian' },
        { ...app, description: 'app' },
      ],
      ...(architecture ? { architecture } : {}),
    });
    return { out, desc, base, app };
  }

  it('writes a layout a runtime can walk: index -> manifest -> config and layers, digests matching, named for containerd and skopeo', async () => {
    const { out, desc, base, app } = await build();
    const image = await readOciLayout(out);
    expect(image).toMatchObject({ name: 'localhost/kube-ipvs:1.2.3', tag: '1.2.3', manifestDigest: desc.digest });
    expect(image.config).toMatchObject({
      architecture: 'amd64',
      os: 'linux',
      config: { Entrypoint: ['/usr/local/bin/kube-ipvs'] },
      rootfs: { type: 'layers', diff_ids: [`sha256:${base.diffId}`, `sha256:${app.diffId}`] },
    });
    expect(image.layerFiles.map((f) => path.basename(f))).toEqual([
      hex(readFileSync(base.file)),
      hex(readFileSync(app.file)),
    ]);
    await verifyDiffIds(image);
    // only blobs the manifest references
    expect(readdirSync(path.join(out, 'blobs', 'sha256'))).toHaveLength(4);
  });

  it('says the architecture it is given (make image-arm64: arm64), amd64 by default', async () => {
    const image = await readOciLayout((await build('arm64')).out);
    expect(image.config).toMatchObject({ architecture: 'arm64', os: 'linux' });
  });

  it('docker manifest.json names the same config and layers, with the repo tag', async () => {
    const { out } = await build();
    const docker = JSON.parse(readFileSync(path.join(out, 'manifest.json'), 'utf8'));
    expect(docker).toHaveLength(1);
    expect(docker[0].RepoTags).toEqual(['localhost/kube-ipvs:1.2.3']);
    expect(docker[0].Layers).toHaveLength(2);
    for (const p of [docker[0].Config, ...docker[0].Layers])
      expect(hex(readFileSync(path.join(out, p)))).toBe(path.basename(p));
  });

  it('the layers unpack bottom first: the upper layer wins', async () => {
    const { out } = await build();
    const root = path.join(dir, 'rootfs');
    mkdirSync(root);
    unpackRootfs(await readOciLayout(out), root);
    expect(readFileSync(path.join(root, 'usr/bin/tool'), 'utf8')).toBe('v2\n');
    expect(readFileSync(path.join(root, 'etc/os-release'), 'utf8')).toBe('debian\n');
    expect(readFileSync(path.join(root, 'opt/app/main.js'), 'utf8')).toBe('run\n');
  });

  it('a wrong diff id is refused when written, a changed blob when read', async () => {
    const base = layer(dir, 'base', { a: 'a' });
    await expect(
      writeOciLayout({
        out: path.join(dir, 'x'),
        name: 'a/b:1',
        created: new Date(0),
        layers: [{ ...base, diffId: 'abc', description: '' }],
      }),
    ).rejects.toThrow('diff id abc is not a sha256 hex digest');
    const { out, app } = await build();
    const blob = path.join(out, 'blobs', 'sha256', hex(readFileSync(app.file)));
    writeFileSync(blob, Buffer.concat([readFileSync(blob), Buffer.from([0])]));
    await expect(readOciLayout(out)).rejects.toThrow(/^layer sha256:[0-9a-f]{64}: size/);
  });

  it('parses --layer and image names', () => {
    expect(parseLayerArg('/x/a.tar.gz:' + 'f'.repeat(64) + ':node v24: app')).toEqual({
      file: '/x/a.tar.gz',
      diffId: 'f'.repeat(64),
      description: 'node v24: app',
    });
    expect(splitName('localhost:5000/kube-ipvs:0.1.0')).toEqual({ repo: 'localhost:5000/kube-ipvs', tag: '0.1.0' });
    expect(() => splitName('localhost:5000/kube-ipvs')).toThrow('no tag');
  });
});
