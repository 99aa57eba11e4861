/**
 * write-oci-layout — an OCI image layout (image-spec v1.1) from gzipped layer tars, plus the
 * `manifest.json` docker's loader reads, in one directory: the shape `docker save` writes since
 * Docker 25, which `docker load`, `podman load`, `ctr images import` and skopeo's
 * `oci-archive:` all accept once tarred.
 *
 *   node dist/scripts/image/write-oci-layout.js --out DIR --name REPO:TAG --created EPOCH_S
 *        --layer FILE.tar.gz:DIFF_ID_HEX:DESCRIPTION [--layer ...] [--arch amd64|arm64]
 *        [--entrypoint JSON_ARRAY] [--cmd JSON_ARRAY] [--title TITLE]
 *
 * Layers are given bottom first; DIFF_ID is the sha256 of the uncompressed tar (the config's
 * rootfs.diff_ids). The image runs `/usr/local/bin/kube-ipvs` (kubeadm's DaemonSet overrides
 * it with `command`, as it does for kube-proxy's image), titled kube-ipvs, with no Cmd; the
 * node's test images (scripts/node/images.sh: pause, agnhost, coredns, kube-proxy) give their
 * own entry point, Cmd and title.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, createReadStream, mkdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

export interface LayerInput {
  /** a gzipped tar */
  readonly file: string;
  /** sha256 hex of the uncompressed tar */
  readonly diffId: string;
  /** the history entry's created_by */
  readonly description: string;
}

export interface OciLayoutInput {
  readonly out: string;
  /** fully qualified, with a tag: localhost/kube-ipvs:0.1.0 */
  readonly name: string;
  readonly created: Date;
  readonly layers: readonly LayerInput[];
  /** the OCI (GOARCH) name; default amd64 */
  readonly architecture?: OciArch;
  /** the config's Entrypoint; default IMAGE_RUN_CONFIG's (kube-ipvs) */
  readonly entrypoint?: readonly string[];
  /** the config's Cmd (the entry point's default arguments); default none */
  readonly cmd?: readonly string[];
  /** the org.opencontainers.image.title label; default kube-ipvs */
  readonly title?: string;
}

export type OciArch = 'amd64' | 'arm64';

/**
 * How the image runs, in its config; Containerfile says the same (ENTRYPOINT, ENV PATH),
 * spec/scripts/image/recipes.test.ts checks it.
 */
export const IMAGE_RUN_CONFIG = {
  Entrypoint: ['/usr/local/bin/kube-ipvs'],
  Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
  WorkingDir: '/',
} as const;

export interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly annotations?: Record<string, string>;
}

export const MEDIA = {
  index: 'application/vnd.oci.image.index.v1+json',
  manifest: 'application/vnd.oci.image.manifest.v1+json',
  config: 'application/vnd.oci.image.config.v1+json',
  layerGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
} as const;

const HEX64 = /^[0-9a-f]{64}$/;

async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest('hex');
}

/** Splits REPO[:TAG]; the tag is what follows the last ':' after the last '/'. */
export function splitName(name: string): { repo: string; tag: string } {
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  if (colon <= slash) throw new Error(`image name ${name}: no tag (expected REPO:TAG)`);
  return { repo: name.slice(0, colon), tag: name.slice(colon + 1) };
}

/** Writes the layout into `out` (created); returns the manifest's descriptor. */
export async function writeOciLayout(input: OciLayoutInput): Promise<Descriptor> {
  if (input.layers.length === 0) throw new Error('an image needs at least one layer');
  const { tag } = splitName(input.name);
  const blobs = path.join(input.out, 'blobs', 'sha256');
  mkdirSync(blobs, { recursive: true });
  const blobPath = (digest: string) => `blobs/sha256/${digest.slice('sha256:'.length)}`;
  const putJson = (value: unknown, mediaType: string): Descriptor => {
    const bytes = Buffer.from(JSON.stringify(value));
    const digest = 'sha256:' + createHash('sha256').update(bytes).digest('hex');
    writeFileSync(path.join(input.out, blobPath(digest)), bytes);
    return { mediaType, digest, size: bytes.length };
  };

  const layers: Descriptor[] = [];
  for (const l of input.layers) {
    if (!HEX64.test(l.diffId)) throw new Error(`layer ${l.file}: diff id ${l.diffId} is not a sha256 hex digest`);
    const digest = 'sha256:' + (await sha256File(l.file));
    copyFileSync(l.file, path.join(input.out, blobPath(digest)));
    layers.push({ mediaType: MEDIA.layerGzip, digest, size: statSync(l.file).size });
  }
  const created = input.created.toISOString().replace(/\.000Z$/, 'Z');
  const config = putJson(
    {
      created,
      architecture: input.architecture ?? 'amd64',
      os: 'linux',
      config: {
        // (an override keeps Entrypoint's place: the default config is the same bytes as before)
        ...IMAGE_RUN_CONFIG,
        ...(input.entrypoint ? { Entrypoint: input.entrypoint } : {}),
        ...(input.cmd ? { Cmd: input.cmd } : {}),
        Labels: {
          'org.opencontainers.image.title': input.title ?? 'kube-ipvs',
          'org.opencontainers.image.version': tag,
        },
      },
      rootfs: { type: 'layers', diff_ids: input.layers.map((l) => 'sha256:' + l.diffId) },
      history: input.layers.map((l) => ({ created, created_by: l.description })),
    },
    MEDIA.config,
  );
  const manifest = putJson(
    {
      schemaVersion: 2,
      mediaType: MEDIA.manifest,
      config,
      layers,
      annotations: { 'org.opencontainers.image.created': created },
    },
    MEDIA.manifest,
  );
  const named: Descriptor = {
    ...manifest,
    // containerd names the image from the first, skopeo/podman select it by the second
    annotations: { 'io.containerd.image.name': input.name, 'org.opencontainers.image.ref.name': tag },
  };
  writeFileSync(
    path.join(input.out, 'index.json'),
    JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.index, manifests: [named] }),
  );
  writeFileSync(path.join(input.out, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  // docker load (before Docker 25 only this): config and layers by path, gzipped layers accepted
  writeFileSync(
    path.join(input.out, 'manifest.json'),
    JSON.stringify([
      { Config: blobPath(config.digest), RepoTags: [input.name], Layers: layers.map((l) => blobPath(l.digest)) },
    ]),
  );
  return named;
}

/** FILE:DIFFID:DESCRIPTION (the description may hold ':'). */
export function parseLayerArg(arg: string): LayerInput {
  const m = /^([^:]+):([^:]+):(.*)$/.exec(arg);
  if (!m) throw new Error(`--layer ${arg}: expected FILE.tar.gz:DIFF_ID_HEX:DESCRIPTION`);
  return { file: m[1]!, diffId: m[2]!, description: m[3]! };
}

/** --entrypoint / --cmd: a JSON array of strings, as a Containerfile's exec form. */
export function parseArgvArg(flag: string, arg: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(arg);
  } catch {
    throw new Error(`--${flag} ${arg}: not JSON (expected an array of strings: '["/pause"]')`);
  }
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
    throw new Error(`--${flag} ${arg}: expected a JSON array of strings`);
  return value as string[];
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: 'string' },
      name: { type: 'string' },
      created: { type: 'string' },
      layer: { type: 'string', multiple: true },
      arch: { type: 'string' },
      entrypoint: { type: 'string' },
      cmd: { type: 'string' },
      title: { type: 'string' },
    },
  });
  if (!values.out || !values.name || !values.created || !values.layer?.length) {
    process.stderr.write(
      'usage: write-oci-layout --out DIR --name REPO:TAG --created EPOCH_S --layer FILE.tar.gz:DIFF_ID:DESC...' +
        ' [--arch amd64|arm64] [--entrypoint JSON] [--cmd JSON] [--title TITLE]\n',
    );
    return 2;
  }
  const seconds = Number(values.created);
  if (!Number.isInteger(seconds) || seconds < 0)
    throw new Error(`--created ${values.created}: expected seconds since the epoch`);
  const arch = values.arch ?? 'amd64';
  if (arch !== 'amd64' && arch !== 'arm64') throw new Error(`--arch ${arch}: expected amd64 or arm64`);
  const d = await writeOciLayout({
    out: values.out,
    name: values.name,
    created: new Date(seconds * 1000),
    layers: values.layer.map(parseLayerArg),
    architecture: arch,
    ...(values.entrypoint !== undefined ? { entrypoint: parseArgvArg('entrypoint', values.entrypoint) } : {}),
    ...(values.cmd !== undefined ? { cmd: parseArgvArg('cmd', values.cmd) } : {}),
    ...(values.title !== undefined ? { title: values.title } : {}),
  });
  process.stdout.write(`${values.name} ${d.digest}\n`);
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`write-oci-layout: ${(e as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
