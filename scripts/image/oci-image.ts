// Reads an OCI image layout (an unpacked `make image` archive) the way a runtime would: index ->
// manifest -> config and layers, every blob checked against its digest and size, docker's
// manifest.json against the same blobs; then unpacks the layers into a root filesystem.
// Layers are applied in order with plain tar (our layers carry no whiteouts).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { createGunzip } from 'node:zlib';

export interface ImageConfig {
  readonly architecture: string;
  readonly os: string;
  readonly config: {
    Entrypoint?: string[];
    Cmd?: string[];
    Env?: string[];
    WorkingDir?: string;
    Labels?: Record<string, string>;
  };
  readonly rootfs: { type: string; diff_ids: string[] };
}

export interface OciImage {
  /** io.containerd.image.name of the index entry */
  readonly name: string;
  /** org.opencontainers.image.ref.name */
  readonly tag: string;
  readonly manifestDigest: string;
  readonly config: ImageConfig;
  /** the gzipped layer blobs, bottom first */
  readonly layerFiles: readonly string[];
}

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

const sha256 = (bytes: Buffer) => 'sha256:' + createHash('sha256').update(bytes).digest('hex');

async function sha256Stream(stream: NodeJS.ReadableStream): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of stream) h.update(chunk as Buffer);
  return 'sha256:' + h.digest('hex');
}

function blobFile(dir: string, d: Descriptor): string {
  const m = /^sha256:([0-9a-f]{64})$/.exec(d.digest);
  if (!m) throw new Error(`descriptor digest ${d.digest} is not sha256`);
  return path.join(dir, 'blobs', 'sha256', m[1]!);
}

/** A JSON blob, checked against its descriptor. */
function jsonBlob<T>(dir: string, d: Descriptor, mediaType: string): T {
  if (d.mediaType !== mediaType) throw new Error(`${d.digest}: media type ${d.mediaType}, expected ${mediaType}`);
  const bytes = readFileSync(blobFile(dir, d));
  if (bytes.length !== d.size) throw new Error(`${d.digest}: ${bytes.length} bytes, descriptor says ${d.size}`);
  if (sha256(bytes) !== d.digest) throw new Error(`${d.digest}: content digest is ${sha256(bytes)}`);
  return JSON.parse(bytes.toString('utf8')) as T;
}

/** Reads and checks the layout in `dir` (one image). Throws naming the first inconsistency. */
export async function readOciLayout(dir: string): Promise<OciImage> {
  const layout = JSON.parse(readFileSync(path.join(dir, 'oci-layout'), 'utf8')) as { imageLayoutVersion?: string };
  if (layout.imageLayoutVersion !== '1.0.0')
    throw new Error(`oci-layout: imageLayoutVersion ${layout.imageLayoutVersion}`);
  const index = JSON.parse(readFileSync(path.join(dir, 'index.json'), 'utf8')) as {
    schemaVersion: number;
    manifests: Descriptor[];
  };
  if (index.schemaVersion !== 2 || index.manifests.length !== 1)
    throw new Error(`index.json: expected schemaVersion 2 and one manifest`);
  const entry = index.manifests[0]!;
  const name = entry.annotations?.['io.containerd.image.name'];
  const tag = entry.annotations?.['org.opencontainers.image.ref.name'];
  if (!name || !tag || !name.endsWith(':' + tag))
    throw new Error(`index.json: name ${name} and ref.name ${tag} disagree`);
  const manifest = jsonBlob<{ schemaVersion: number; config: Descriptor; layers: Descriptor[] }>(
    dir,
    entry,
    'application/vnd.oci.image.manifest.v1+json',
  );
  const config = jsonBlob<ImageConfig>(dir, manifest.config, 'application/vnd.oci.image.config.v1+json');
  if (config.rootfs.diff_ids.length !== manifest.layers.length) {
    throw new Error(`config: ${config.rootfs.diff_ids.length} diff ids for ${manifest.layers.length} layers`);
  }
  const layerFiles: string[] = [];
  for (const l of manifest.layers) {
    if (l.mediaType !== 'application/vnd.oci.image.layer.v1.tar+gzip')
      throw new Error(`layer ${l.digest}: media type ${l.mediaType}`);
    const file = blobFile(dir, l);
    if (statSync(file).size !== l.size)
      throw new Error(`layer ${l.digest}: size ${statSync(file).size}, descriptor says ${l.size}`);
    const digest = await sha256Stream(createReadStream(file));
    if (digest !== l.digest) throw new Error(`layer ${l.digest}: content digest is ${digest}`);
    layerFiles.push(file);
  }
  // docker's manifest.json names the same blobs
  const docker = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as {
    Config: string;
    RepoTags: string[];
    Layers: string[];
  }[];
  const rel = (f: string) => path.relative(dir, f);
  const want = [{ Config: rel(blobFile(dir, manifest.config)), RepoTags: [name], Layers: layerFiles.map(rel) }];
  if (JSON.stringify(docker) !== JSON.stringify(want))
    throw new Error(`manifest.json ${JSON.stringify(docker)} does not match the OCI manifest ${JSON.stringify(want)}`);
  return { name, tag, manifestDigest: entry.digest, config, layerFiles };
}

/** Checks every layer's uncompressed digest against the config's diff_ids. */
export async function verifyDiffIds(image: OciImage): Promise<void> {
  for (const [i, file] of image.layerFiles.entries()) {
    const got = await sha256Stream(createReadStream(file).pipe(createGunzip()));
    if (got !== image.config.rootfs.diff_ids[i])
      throw new Error(`layer ${i}: diff id ${got}, config says ${image.config.rootfs.diff_ids[i]}`);
  }
}

/** Extracts `archive` (a tar) into `dir`. */
export function untar(archive: string, dir: string, gzip = false): void {
  const r = spawnSync('tar', ['-C', dir, gzip ? '-xzf' : '-xf', archive], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tar -x ${archive}: ${r.stderr || r.error?.message}`);
}

/** Extracts an OCI archive into `work`/oci and reads it back, its layers checked against the config's diff_ids. */
export async function readOciArchive(archive: string, work: string): Promise<OciImage> {
  const oci = path.join(work, 'oci');
  mkdirSync(oci);
  untar(archive, oci);
  const image = await readOciLayout(oci);
  await verifyDiffIds(image);
  return image;
}

/** Applies the layers, bottom first, into `dir` (owners and modes kept: run as root). */
export function unpackRootfs(image: OciImage, dir: string): void {
  for (const f of image.layerFiles) untar(f, dir, true);
}
