// Notices changes of the --config file. A ConfigMap volume mounts `config.conf` as a symlink
// to `..data/config.conf` and updates by swapping the `..data` symlink, so a watch on the
// file itself misses updates: the DIRECTORY is watched, and after a quiet period the file is
// re-read and onChange is called only when its content differs from the last content seen.
import { watch, readFileSync, FSWatcher } from 'node:fs';
import { dirname } from 'node:path';

/** Options of watchConfigFile. */
export interface WatchOptions {
  /** quiet period after the last event before the file is compared (default 500 ms) */
  readonly debounceMs?: number;
  /** called when the directory watch fails (directory removed, ...) */
  readonly onError?: (e: Error) => void;
}

function contentOf(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined; // mid-swap or removed: the next event compares again
  }
}

/** Calls onChange when the file's content changes (see the file comment); close() stops watching. */
export function watchConfigFile(path: string, onChange: () => void, options: WatchOptions = {}): { close(): void } {
  const debounceMs = options.debounceMs ?? 500;
  let last = contentOf(path);
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const check = (): void => {
    timer = undefined;
    if (closed) return;
    const now = contentOf(path);
    if (now === undefined || now === last) return;
    last = now;
    onChange();
  };
  const watcher: FSWatcher = watch(dirname(path), { persistent: false }, () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(check, debounceMs);
  });
  watcher.on('error', (e) => options.onError?.(e));
  return {
    close(): void {
      closed = true;
      if (timer) clearTimeout(timer);
      watcher.close();
    },
  };
}
