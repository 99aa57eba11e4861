// The watch runs on a real temporary directory; each test waits for the callback (no sleeps).
import { mkdtempSync, mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchConfigFile } from '../../lib/config/watch-config';

/** a missed event fails the test here instead of at jest's VM-sized default timeout */
const WAIT_MS = 20_000;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kube-ipvs-watch-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Lays out a ConfigMap volume: config.conf -> ..data/config.conf, ..data -> ..<version>. */
function configMapVersion(version: string, content: string): void {
  mkdirSync(join(dir, `..${version}`));
  writeFileSync(join(dir, `..${version}`, 'config.conf'), content);
  symlinkSync(`..${version}`, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data')); // the kubelet's atomic swap
}

describe('watchConfigFile', () => {
  it(
    'sees a ConfigMap update (the ..data symlink swapped, the file path unchanged)',
    async () => {
      configMapVersion('v1', 'one');
      symlinkSync('..data/config.conf', join(dir, 'config.conf'));
      let calls = 0;
      let w: { close(): void } | undefined;
      await new Promise<void>((resolve) => {
        w = watchConfigFile(
          join(dir, 'config.conf'),
          () => {
            calls++;
            resolve();
          },
          { debounceMs: 20 },
        );
        configMapVersion('v2', 'two');
      });
      w!.close();
      expect(calls).toBe(1);
    },
    WAIT_MS,
  );

  it(
    'sees a plain file rewritten in place',
    async () => {
      const path = join(dir, 'config.conf');
      writeFileSync(path, 'one');
      let w: { close(): void } | undefined;
      await new Promise<void>((resolve) => {
        w = watchConfigFile(path, resolve, { debounceMs: 20 });
        // an unrelated file first: its event leads to a comparison that finds no change
        writeFileSync(join(dir, 'other'), 'x');
        writeFileSync(path, 'two');
      });
      w!.close();
    },
    WAIT_MS,
  );
});
