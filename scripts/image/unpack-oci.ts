/**
 * unpack-oci — reads a `make image` archive as a runtime would (every blob against its digest,
 * every layer against its diff id) and applies its layers into a root filesystem:
 *
 *   node dist/scripts/image/unpack-oci.js ARCHIVE.tar DEST_DIR
 *
 * DEST_DIR is replaced; DEST_DIR.digest then holds the manifest digest it was unpacked from.
 * `make image` runs it on the host (the VM test chroots into DEST_DIR: unpacking 220 MB inside
 * the TCG guest takes minutes).
 */
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { readOciArchive, unpackRootfs } from './oci-image';

async function main(argv: string[]): Promise<number> {
  const [archive, dest] = argv;
  if (!archive || !dest || argv.length !== 2) {
    process.stderr.write('usage: unpack-oci ARCHIVE.tar DEST_DIR\n');
    return 2;
  }
  // never rm -rf through a mount (a chroot left with /proc or /dev bound inside it)
  const abs = path.resolve(dest);
  const mounted = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m === abs || m.startsWith(abs + '/'));
  if (mounted.length > 0) throw new Error(`${mounted.join(', ')} mounted under ${abs}: unmount first`);
  const work = mkdtempSync(path.join(path.dirname(path.resolve(dest)), '.unpack-'));
  try {
    const image = await readOciArchive(archive, work);
    const root = path.join(work, 'rootfs');
    mkdirSync(root);
    unpackRootfs(image, root);
    rmSync(dest, { recursive: true, force: true });
    rmSync(`${dest}.digest`, { force: true });
    // a rename, so a half-unpacked tree is never taken for the image
    renameSync(root, dest);
    writeFileSync(`${dest}.digest`, image.manifestDigest + '\n');
    process.stdout.write(`${image.name} ${image.manifestDigest} -> ${dest}\n`);
    return 0;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e: unknown) => {
      process.stderr.write(`unpack-oci: ${(e as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
