import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The checkout's root: the nearest folder above this file with package.json and lib/ (from dist/ as from the source). */
function findRepoRoot(from: string): string {
  let dir = from;
  while (!(existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'lib')))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no repository root (package.json + lib/) above ${from}`);
    dir = up;
  }
  return dir;
}

export const REPO_ROOT = findRepoRoot(__dirname);
