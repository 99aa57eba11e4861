/**
 * image-size — the sizes of OCI image archives, each measured the same way, whatever built it
 * (scripts/image/build.sh's kube-ipvs, scripts/node/images.sh's kube-proxy):
 *
 *   node dist/scripts/image/image-size.js ARCHIVE.tar...
 *
 * Per image, over its layers: compressed as built (the gzip blobs a pull transfers; the builds
 * differ in gzip level: build.sh -6, images.sh -1), compressed again at one level for all
 * (every layer's tar re-gzipped at level 6, Go's and docker's default), and unpacked (the
 * layers' tar bytes, and the root filesystem they unpack to, apparent size: du -sb
 * --apparent-size). Blobs and diff ids are checked as a runtime would (oci-image.ts).
 */
import { spawnSync } from 'node:child_process';
import { createReadStream, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { createGunzip, createGzip } from 'node:zlib';
import { readOciArchive, unpackRootfs } from './oci-image';

export interface ImageSize {
  readonly name: string;
  readonly layers: number;
  /** the gzip layer blobs as built */
  readonly compressedBytes: number;
  /** the layers' tars re-gzipped at level 6 */
  readonly compressedLevel6Bytes: number;
  /** the layers' tar bytes */
  readonly layerTarBytes: number;
  /** du -sb --apparent-size of the unpacked root filesystem */
  readonly rootfsBytes: number;
}

/** Bytes a stream carries. */
function counter(): { sink: Writable; bytes: () => number } {
  let n = 0;
  return {
    sink: new Writable({
      write(chunk: Buffer, _enc, cb) {
        n += chunk.length;
        cb();
      },
    }),
    bytes: () => n,
  };
}

/** A layer blob's own size, its tar's, and that tar gzipped at level 6. */
export async function layerSizes(file: string): Promise<{ gz: number; tar: number; gz6: number }> {
  const tar = counter();
  await pipeline(createReadStream(file), createGunzip(), tar.sink);
  const gz6 = counter();
  await pipeline(createReadStream(file), createGunzip(), createGzip({ level: 6 }), gz6.sink);
  return { gz: statSync(file).size, tar: tar.bytes(), gz6: gz6.bytes() };
}

export async function imageSize(archive: string): Promise<ImageSize> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'image-size-'));
  try {
    const image = await readOciArchive(archive, work);
    const sizes: { gz: number; tar: number; gz6: number }[] = [];
    for (const f of image.layerFiles) sizes.push(await layerSizes(f));
    const root = path.join(work, 'rootfs');
    mkdirSync(root);
    unpackRootfs(image, root);
    const du = spawnSync('du', ['-sb', '--apparent-size', root], { encoding: 'utf8' });
    if (du.status !== 0) throw new Error(`du ${root}: ${du.stderr}`);
    const sum = (k: 'gz' | 'tar' | 'gz6') => sizes.reduce((a, s) => a + s[k], 0);
    return {
      name: image.name,
      layers: sizes.length,
      compressedBytes: sum('gz'),
      compressedLevel6Bytes: sum('gz6'),
      layerTarBytes: sum('tar'),
      rootfsBytes: Number(du.stdout.split('\t')[0]),
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The table the command prints (MB = 10^6 bytes). */
export function sizeTable(sizes: readonly ImageSize[]): string {
  const mb = (b: number) => (b / 1e6).toFixed(1);
  const head = ['image', 'layers', 'compressed MB (as built)', 'compressed MB (gzip -6)', 'layer tars MB', 'rootfs MB'];
  const rows = sizes.map((s) => [
    s.name,
    String(s.layers),
    mb(s.compressedBytes),
    mb(s.compressedLevel6Bytes),
    mb(s.layerTarBytes),
    mb(s.rootfsBytes),
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [head, ...rows]
    .map((r) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '))
    .join('\n');
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    process.stderr.write('usage: image-size ARCHIVE.tar...\n');
    return 2;
  }
  const sizes: ImageSize[] = [];
  for (const a of argv) sizes.push(await imageSize(a));
  console.log(sizeTable(sizes));
  return 0;
}

if (require.main === module)
  main(process.argv.slice(2)).then(
    (c) => process.exit(c),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
