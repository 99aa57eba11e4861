// scripts/test-times.ts: the time table ends with every failed test by name and the first lines
// of its message, so a log cut to its head and tail (CI's) still says what failed.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');

function printTable(dir: string): string {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'dist/scripts/test-times.js'), dir], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  return r.stdout;
}

const result = (name: string, status: string, tests: object[], message = '') => ({
  name: `/x/dist/spec/${name}.js`,
  startTime: 0,
  endTime: 2000,
  status,
  message,
  assertionResults: tests,
});

describe('scripts/test-times.ts', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'test-times-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('names each failed test last, message uncoloured and cut to six lines; a file failing outside its tests too', () => {
    const failure = '\u001b[2mexpect(\u001b[22m\u001b[31mreceived\u001b[39m).toEqual\n\n1\n2\n3\n4\n5\n6\n7';
    writeFileSync(
      path.join(dir, 'unit.json'),
      JSON.stringify({
        testResults: [
          result('a.test', 'failed', [
            { status: 'passed', fullName: 'a passes' },
            { status: 'failed', fullName: 'a breaks', failureMessages: [failure] },
          ]),
          result('b.test', 'failed', [], 'Cannot find module ./gone'),
          result('c.test', 'passed', [{ status: 'passed', fullName: 'c passes' }]),
        ],
      }),
    );
    const out = printTable(dir);
    const failed = out.slice(out.indexOf('## failed'));
    expect(failed).toBe(
      [
        '## failed: 2',
        '',
        '- spec/a.test.ts: a breaks',
        '    expect(received).toEqual',
        ...['1', '2', '3', '4', '5'].map((l) => `    ${l}`),
        '- spec/b.test.ts',
        '    Cannot find module ./gone',
        '',
      ].join('\n'),
    );
    expect(out.indexOf('| spec/a.test.ts | 2.0 | 2 | 1 |')).toBeLessThan(out.indexOf('## failed'));
  });

  it('names a VM file whose jest exited non-zero without writing a failed test', () => {
    writeFileSync(path.join(dir, 'vm-1.wall'), '/x/dist/spec/vm/gone.vm.test.js 1 10.0 70.5 1 12.5\n');
    writeFileSync(path.join(dir, 'vm-2.wall'), '/x/dist/spec/vm/fine.vm.test.js 2 10.0 20.0 0 3.0\n');
    const out = printTable(dir);
    expect(out).toContain('| spec/vm/gone.vm.test.ts | 60.5 | 0 | 1 | 1 | 12.5 |');
    expect(out.slice(out.indexOf('## failed'))).toBe(
      ['## failed: 1', '', '- spec/vm/gone.vm.test.ts: jest exited 1 (no failed test in its results)', ''].join('\n'),
    );
  });

  it('prints no failed section when nothing failed', () => {
    writeFileSync(
      path.join(dir, 'unit.json'),
      JSON.stringify({ testResults: [result('c.test', 'passed', [{ status: 'passed', fullName: 'c passes' }])] }),
    );
    expect(printTable(dir)).not.toMatch(/failed:/);
  });
});
