// image-size measures any OCI archive the same way: a small one written by writeOciLayout.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { imageSize, sizeTable } from '../../../scripts/image/image-size';
import { writeOciLayout } from '../../../scripts/image/write-oci-layout';

describe('imageSize', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'image-size-test-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function layer(name: string, files: Record<string, string>, level: string) {
    const src = path.join(dir, `${name}.src`);
    for (const [p, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(src, p)), { recursive: true });
      writeFileSync(path.join(src, p), text);
    }
    const tar = path.join(dir, `${name}.tar`);
    expect(spawnSync('tar', ['-C', src, '-cf', tar, ...Object.keys(files)]).status).toBe(0);
    const file = `${tar}.gz`;
    expect(spawnSync('sh', ['-c', `gzip -n ${level} < ${tar} > ${file}`]).status).toBe(0);
    const diffId = createHash('sha256')
      .update(gunzipSync(readFileSync(file)))
      .digest('hex');
    return { file, diffId, description: name };
  }

  it('counts every layer: the blobs as built, re-gzipped at one level, their tars, and the unpacked files', async () => {
    const big = 'x'.repeat(200_000) + Array.from({ length: 5000 }, (_, i) => String(i * 7919)).join(',');
    const layers = [
      layer('base', { 'etc/a': 'a\n', 'usr/bin/tool': big }, '-1'),
      layer('app', { 'opt/b': 'bb\n' }, '-9'),
    ];
    const out = path.join(dir, 'layout');
    await writeOciLayout({ out, name: 'localhost/t:1', created: new Date(0), layers, architecture: 'amd64' });
    const archive = path.join(dir, 't.oci.tar');
    expect(spawnSync('tar', ['-C', out, '-cf', archive, '.']).status).toBe(0);

    const s = await imageSize(archive);
    const fileSize = (f: string) => readFileSync(f).length;
    expect(s.name).toBe('localhost/t:1');
    expect(s.layers).toBe(2);
    expect(s.compressedBytes).toBe(fileSize(layers[0]!.file) + fileSize(layers[1]!.file));
    expect(s.layerTarBytes).toBe(fileSize(path.join(dir, 'base.tar')) + fileSize(path.join(dir, 'app.tar')));
    // level 6 compresses the -1 layer's long runs better than -1 did
    expect(s.compressedLevel6Bytes).toBeLessThan(s.compressedBytes);
    // the files' bytes plus the directories' apparent sizes
    expect(s.rootfsBytes).toBeGreaterThanOrEqual(big.length + 5);
    expect(s.rootfsBytes).toBeLessThan(big.length + 5 + 10 * 4096);
    expect(sizeTable([s]).split('\n')[1]).toMatch(/^localhost\/t:1\s+2\s/);
  });
});
