import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { KUBE_IPVS_NODE_FLAGS } from '../../lib/cli/node-flags';
import { MEMORY_REDUCING_GC } from '../../lib/daemon/idle-collector';
import { mallocTrim } from '../../lib/daemon/malloc-trim';

const MB = 2 ** 20;
const MODULE = path.join(__dirname, '..', '..', 'lib', 'daemon', 'malloc-trim.js');

// the reason for the trim, on the node that runs these tests: 100,000 Buffers of 2,000 bytes
// (malloc's memory, not V8's), one in ten kept alive, the rest collected; the free chunks
// between the kept ones stay resident after the collection and go with malloc_trim
function rssAround(trim: boolean): { before: number; after: number; released: boolean } {
  const script = `
    const { mallocTrim } = require(${JSON.stringify(MODULE)});
    const kept = [];
    let all = [];
    for (let i = 0; i < 100000; i++) {
      const b = Buffer.allocUnsafeSlow(2000).fill(1);
      all.push(b);
      if (i % 10 === 0) kept.push(b);
    }
    all = undefined;
    gc(${JSON.stringify(MEMORY_REDUCING_GC)});
    const before = process.memoryUsage().rss;
    const released = ${trim ? 'mallocTrim()()' : 'false'};
    process.stdout.write(JSON.stringify({ before, after: process.memoryUsage().rss, released, kept: kept.length }));`;
  const r = spawnSync(process.execPath, [...KUBE_IPVS_NODE_FLAGS, '-e', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as { before: number; after: number; released: boolean };
}

describe('mallocTrim', () => {
  it('loads the addon make build compiled', () => {
    expect(mallocTrim()).toBeInstanceOf(Function);
  });

  it("gives back the C heap's free pages, which a memory-reducing collection leaves resident", () => {
    const collected = rssAround(false);
    const trimmed = rssAround(true);
    expect(collected.before).toBeGreaterThan(150 * MB);
    expect(collected.after).toBeGreaterThan(collected.before - 20 * MB);
    expect(trimmed.released).toBe(true);
    expect(trimmed.after).toBeLessThan(trimmed.before - 80 * MB);
  });
});
