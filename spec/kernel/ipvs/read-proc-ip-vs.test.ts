import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readProcText } from '../../../lib/kernel/ipvs/read-proc-ip-vs';

describe('readProcText', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'proc-text-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a file larger than its first buffer whole, growing the buffer as often as needed', () => {
    // 10,000 lines of 53 bytes through a 4 KiB first buffer: many doublings
    const text =
      Array.from(
        { length: 10_000 },
        (_, i) => `  -> ${i.toString(16).toUpperCase().padStart(8, '0')}:1F90      Masq    1      0          0`,
      ).join('\n') + '\n';
    const path = join(dir, 'big');
    writeFileSync(path, text, 'latin1');
    expect(readProcText(path, 4096)).toBe(text);
  });

  it('keeps bytes above 0x7f as latin1, one character each', () => {
    const path = join(dir, 'latin1');
    writeFileSync(path, Buffer.from([0x41, 0xe9, 0x0a]));
    expect(readProcText(path)).toBe('A\u00e9\n');
  });

  it('an empty file is empty text; a missing one throws the fs error', () => {
    const path = join(dir, 'empty');
    writeFileSync(path, '');
    expect(readProcText(path)).toBe('');
    expect(() => readProcText(join(dir, 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });
});
