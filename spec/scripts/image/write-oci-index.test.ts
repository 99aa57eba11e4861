// The multi-arch image index (issue 25 item 12): two per-arch layouts as `make image` and
// `make image-arm64` write them, assembled into one OCI layout whose index names one image
// index listing both manifests by platform. The JSON shape is checked here; the real archives
// (mmdebstrap, qemu for arm64) are not built by the unit tests.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { writeOciLayout, OciArch } from '../../../scripts/image/write-oci-layout';
import { writeOciIndex } from '../../../scripts/image/write-oci-index';

const hex = (b: Buffer) => createHash('sha256').update(b).digest('hex');

function layer(dir: string, name: string, files: Record<string, string>): { file: string; diffId: string } {
  const src = path.join(dir, `${name}.src`);
  for (const [p, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(src, p)), { recursive: true });
    writeFileSync(path.join(src, p), text);
  }
  const file = path.join(dir, `${name}.tar.gz`);
  expect(spawnSync('tar', ['-C', src, '-czf', file, ...Object.keys(files)]).status).toBe(0);
  return { file, diffId: hex(gunzipSync(readFileSync(file))) };
}

describe('writeOciIndex', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'oci-index-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function image(arch: OciArch) {
    const out = path.join(dir, arch);
    const desc = await writeOciLayout({
      out,
      name: 'localhost/kube-ipvs:1.2.3',
      created: new Date(1_700_000_000_000),
      layers: [{ ...layer(dir, `base-${arch}`, { 'etc/arch': `${arch}\n` }), description: `debian ${arch}` }],
      architecture: arch,
    });
    return { out, desc };
  }

  const json = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
  const blob = (out: string, digest: string) =>
    readFileSync(path.join(out, 'blobs', 'sha256', digest.slice('sha256:'.length)));

  it('one named image index listing the amd64 and arm64 manifests by platform, every blob copied and matching its digest', async () => {
    const amd64 = await image('amd64');
    const arm64 = await image('arm64');
    const out = path.join(dir, 'multi');
    const named = await writeOciIndex({ out, layouts: [amd64.out, arm64.out] });

    expect(json(path.join(out, 'oci-layout'))).toEqual({ imageLayoutVersion: '1.0.0' });
    const index = json(path.join(out, 'index.json'));
    expect(index).toEqual({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.index.v1+json',
          digest: named.digest,
          size: named.size,
          annotations: {
            'io.containerd.image.name': 'localhost/kube-ipvs:1.2.3',
            'org.opencontainers.image.ref.name': '1.2.3',
          },
        },
      ],
    });
    const inner = blob(out, named.digest);
    expect('sha256:' + hex(inner)).toBe(named.digest);
    expect(inner.length).toBe(named.size);
    expect(JSON.parse(inner.toString('utf8'))).toEqual({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.index.v1+json',
      manifests: [
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: amd64.desc.digest,
          size: amd64.desc.size,
          platform: { architecture: 'amd64', os: 'linux' },
        },
        {
          mediaType: 'application/vnd.oci.image.manifest.v1+json',
          digest: arm64.desc.digest,
          size: arm64.desc.size,
          platform: { architecture: 'arm64', os: 'linux' },
        },
      ],
    });
    // every manifest, config and layer of both images is there, byte for byte
    for (const d of [amd64.desc, arm64.desc]) {
      const manifest = JSON.parse(blob(out, d.digest).toString('utf8'));
      for (const b of [d, manifest.config, ...manifest.layers]) {
        expect('sha256:' + hex(blob(out, b.digest))).toBe(b.digest);
      }
      const config = JSON.parse(blob(out, manifest.config.digest).toString('utf8'));
      expect(config.architecture).toBe(d === amd64.desc ? 'amd64' : 'arm64');
    }
    // docker's manifest.json (a classic store loads one image): the amd64 one
    const docker = json(path.join(out, 'manifest.json'));
    expect(docker).toEqual(json(path.join(amd64.out, 'manifest.json')));
    expect(existsSync(path.join(out, docker[0].Config))).toBe(true);
  });

  it('refuses two images of one architecture, or of different names', async () => {
    const amd64 = await image('amd64');
    await expect(writeOciIndex({ out: path.join(dir, 'x'), layouts: [amd64.out, amd64.out] })).rejects.toThrow(
      /amd64 twice/,
    );
    const other = path.join(dir, 'other');
    await writeOciLayout({
      out: other,
      name: 'localhost/other:1.2.3',
      created: new Date(0),
      layers: [{ ...layer(dir, 'o', { a: 'b' }), description: 'o' }],
      architecture: 'arm64',
    });
    await expect(writeOciIndex({ out: path.join(dir, 'y'), layouts: [amd64.out, other] })).rejects.toThrow(
      /localhost\/other:1\.2\.3.*localhost\/kube-ipvs:1\.2\.3|localhost\/kube-ipvs:1\.2\.3.*localhost\/other:1\.2\.3/,
    );
  });
});
