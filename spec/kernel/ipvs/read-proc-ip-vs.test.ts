import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { procTextReader, readProcText } from '../../../lib/kernel/ipvs/read-proc-ip-vs';

describe('readProcText', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'proc-text-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a file larger than its first buffer whole, growing the buffer as often as needed', async () => {
    // 10,000 lines of 53 bytes through a 4 KiB first buffer: many doublings
    const text =
      Array.from(
        { length: 10_000 },
        (_, i) => `  -> ${i.toString(16).toUpperCase().padStart(8, '0')}:1F90      Masq    1      0          0`,
      ).join('\n') + '\n';
    const path = join(dir, 'big');
    writeFileSync(path, text, 'latin1');
    expect(await readProcText(path, 4096)).toBe(text);
  });

  it('gives the event loop a turn after each slice of reads, and none within one (the watch sockets are read meanwhile)', async () => {
    const text = 'x'.repeat(64 * 1024);
    const path = join(dir, 'sliced');
    writeFileSync(path, text, 'latin1');
    // a slice of 0 ms: a turn after every read (4 KiB first buffer, doubled: several reads)
    let turned = false;
    const sliced = readProcText(path, 4096, 0);
    setImmediate(() => (turned = true));
    expect(await sliced).toBe(text);
    expect(turned).toBe(true);
    // an endless slice: the file in one go, the loop waits
    turned = false;
    const whole = readProcText(path, 4096, Infinity);
    setImmediate(() => (turned = true));
    expect(await whole).toBe(text);
    expect(turned).toBe(false);
  });

  it('keeps bytes above 0x7f as latin1, one character each', async () => {
    const path = join(dir, 'latin1');
    writeFileSync(path, Buffer.from([0x41, 0xe9, 0x0a]));
    expect(await readProcText(path)).toBe('A\u00e9\n');
  });

  it('an empty file is empty text; a missing one rejects with the fs error', async () => {
    const path = join(dir, 'empty');
    writeFileSync(path, '');
    expect(await readProcText(path)).toBe('');
    await expect(readProcText(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('procTextReader', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'proc-reader-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('sizes each read from the last one: one buffer for a file of the same size, whole text when it grew', async () => {
    const path = join(dir, 'table');
    const text = (n: number): string => 'TCP  0A000001:0050 rr \n'.repeat(n);
    writeFileSync(path, text(200_000), 'latin1');
    const read = procTextReader(path);
    const allocs = jest.spyOn(Buffer, 'allocUnsafe');
    try {
      // the first read starts at 1 MiB: 4.6 MB of text takes three doublings
      expect(await read()).toBe(text(200_000));
      const first = allocs.mock.calls.filter(([n]) => n >= 65536).length;
      expect(first).toBe(4);
      allocs.mockClear();
      expect(await read()).toBe(text(200_000));
      expect(allocs.mock.calls.filter(([n]) => n >= 65536)).toHaveLength(1);
      // a table that grew past the guess is still read whole
      writeFileSync(path, text(400_000), 'latin1');
      expect(await read()).toBe(text(400_000));
    } finally {
      allocs.mockRestore();
    }
  });
});
