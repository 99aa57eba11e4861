// scripts/image/tar-layer.sh as build.sh calls it for the app layer: the layer's bytes depend on
// the files' names, contents and modes only, not on when or by whom they were written, nor on
// the order the directory lists them in (two checkouts of one commit give one digest).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');
const EPOCH = 1_700_000_000;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tar-layer-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** one tree; `order` is the order its files are created in, `time` their mtime, `uid` their owner */
function tree(name: string, order: string[], time: number, uid: number): string {
  const root = path.join(dir, name);
  mkdirSync(path.join(root, 'opt', 'app'), { recursive: true });
  for (const f of order) writeFileSync(path.join(root, 'opt', 'app', f), `content of ${f}\n`, { mode: 0o644 });
  symlinkSync('app/b.js', path.join(root, 'opt', 'link'));
  for (const f of order) {
    utimesSync(path.join(root, 'opt', 'app', f), time, time);
    if (process.getuid?.() === 0) chownSync(path.join(root, 'opt', 'app', f), uid, uid);
  }
  return root;
}

function layer(src: string, out: string): string {
  const r = spawnSync(
    'bash',
    ['-c', `. scripts/image/tar-layer.sh && tar_layer "$1" "$2" --owner=0 --group=0 --mtime=@${EPOCH}`, '-', src, out],
    { cwd: ROOT, encoding: 'utf8' },
  );
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return createHash('sha256').update(readFileSync(out)).digest('hex');
}

it('two trees of the same files, written at other times, by other owners, in another order, make one layer', () => {
  const a = tree('a', ['a.js', 'b.js', 'c.js'], 1_000_000_000, 0);
  const b = tree('b', ['c.js', 'a.js', 'b.js'], 1_800_000_000, 1000);
  expect(layer(a, path.join(dir, 'a.tar'))).toBe(layer(b, path.join(dir, 'b.tar')));
  // every entry: name-sorted, owner 0:0, mtime EPOCH
  const list = spawnSync('tar', ['--numeric-owner', '--full-time', '-tvf', path.join(dir, 'b.tar')], {
    encoding: 'utf8',
    env: { ...process.env, TZ: 'UTC' },
  });
  const rows = list.stdout.trim().split('\n');
  expect(rows.map((r) => r.split(/\s+/)[5])).toEqual([
    'opt/',
    'opt/app/',
    'opt/app/a.js',
    'opt/app/b.js',
    'opt/app/c.js',
    'opt/link',
  ]);
  for (const r of rows) expect(r.split(/\s+/)[1]).toBe('0/0');
  const stamp = new Date(EPOCH * 1000).toISOString().replace('T', ' ').slice(0, 19);
  for (const r of rows) expect(r).toContain(stamp);
});

it('a changed byte changes the layer', () => {
  const a = tree('a', ['a.js', 'b.js'], EPOCH, 0);
  const before = layer(a, path.join(dir, 'a.tar'));
  writeFileSync(path.join(a, 'opt', 'app', 'b.js'), 'content of b.jS\n');
  expect(layer(a, path.join(dir, 'a2.tar'))).not.toBe(before);
});
