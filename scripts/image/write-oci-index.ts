/**
 * write-oci-index — one multi-arch OCI image layout from per-arch layouts (`make image`'s amd64
 * and `make image-arm64`'s archives, unpacked): every blob of each image copied, and an image
 * index (image-spec v1.1) listing their manifests by platform, named in index.json for
 * containerd (`io.containerd.image.name`) and skopeo/podman (`org.opencontainers.image.ref.name`),
 * so `ctr images import`, `podman load` and `skopeo copy oci-archive:...` take both
 * architectures and a runtime pulls the node's. docker's manifest.json can name one image
 * only: it names the first layout's (amd64), which a classic docker store loads.
 *
 *   node dist/scripts/image/write-oci-index.js --out DIR --layout AMD64_DIR --layout ARM64_DIR
 *
 * Each layout is read and checked as a runtime would (scripts/image/oci-image.ts); the images
 * must share one name and differ in architecture.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readOciLayout } from './oci-image';
import { Descriptor, MEDIA, splitName } from './write-oci-layout';

export interface OciIndexInput {
  readonly out: string;
  /** unpacked per-arch layouts (write-oci-layout's), the one docker's manifest.json names first */
  readonly layouts: readonly string[];
}

/** Writes the multi-arch layout into `out`; returns the named image index's descriptor. */
export async function writeOciIndex(input: OciIndexInput): Promise<Descriptor> {
  if (input.layouts.length === 0) throw new Error('an image index needs at least one image');
  const blobs = path.join(input.out, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const manifests: (Descriptor & { platform: { architecture: string; os: string } })[] = [];
  let name: string | undefined;
  for (const dir of input.layouts) {
    const image = await readOciLayout(dir);
    if (name !== undefined && image.name !== name)
      throw new Error(`${dir}: image ${image.name}, the first layout's is ${name}`);
    name = image.name;
    const { architecture, os } = image.config;
    if (manifests.some((m) => m.platform.architecture === architecture))
      throw new Error(`${dir}: ${architecture} twice`);
    const index = JSON.parse(readFileSync(path.join(dir, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
    const entry = index.manifests[0]!;
    // the manifest, its config and layers: every blob the image has (re-checked by readOciLayout)
    const manifest = JSON.parse(readFileSync(path.join(dir, 'blobs', 'sha256', entry.digest.slice(7)), 'utf8')) as {
      config: Descriptor;
      layers: Descriptor[];
    };
    for (const d of [entry, manifest.config, ...manifest.layers]) {
      const to = path.join(blobs, d.digest.slice(7));
      if (!existsSync(to)) copyFileSync(path.join(dir, 'blobs', 'sha256', d.digest.slice(7)), to);
    }
    manifests.push({
      mediaType: MEDIA.manifest,
      digest: entry.digest,
      size: entry.size,
      platform: { architecture, os },
    });
  }
  const bytes = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.index, manifests }));
  const digest = 'sha256:' + createHash('sha256').update(bytes).digest('hex');
  writeFileSync(path.join(blobs, digest.slice(7)), bytes);
  const { tag } = splitName(name!);
  const named: Descriptor = {
    mediaType: MEDIA.index,
    digest,
    size: bytes.length,
    annotations: { 'io.containerd.image.name': name!, 'org.opencontainers.image.ref.name': tag },
  };
  writeFileSync(
    path.join(input.out, 'index.json'),
    JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.index, manifests: [named] }),
  );
  writeFileSync(path.join(input.out, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  copyFileSync(path.join(input.layouts[0]!, 'manifest.json'), path.join(input.out, 'manifest.json'));
  return named;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { out: { type: 'string' }, layout: { type: 'string', multiple: true } },
  });
  if (!values.out || !values.layout?.length) {
    process.stderr.write('usage: write-oci-index --out DIR --layout DIR [--layout DIR ...]\n');
    return 2;
  }
  const d = await writeOciIndex({ out: values.out, layouts: values.layout });
  process.stdout.write(`${d.annotations?.['io.containerd.image.name']} ${d.digest}\n`);
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`write-oci-index: ${(e as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
