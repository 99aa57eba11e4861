// The files a release needs (issue 41 item 4): the licence package.json names, a changelog, and
// the release note's commands, each existing where it says.
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');

describe('release files', () => {
  it('LICENSE is the full text of the licence package.json declares', () => {
    const pkg = JSON.parse(read('package.json')) as { license: string };
    expect(pkg.license).toBe('Apache-2.0');
    const text = read('LICENSE');
    expect(text).toContain('Apache License\n                           Version 2.0, January 2004');
    expect(text).toContain('END OF TERMS AND CONDITIONS');
    expect(text).toContain('APPENDIX: How to apply the Apache License to your work.');
  });

  it('CHANGELOG.md starts with an Unreleased section while no version is tagged', () => {
    expect(read('CHANGELOG.md')).toMatch(/^# Changelog\n[\s\S]*?\n## Unreleased\n/);
  });

  it("RELEASING.md's make targets and scripts exist", () => {
    const text = read('RELEASING.md');
    const makefile = read('Makefile');
    const targets = [...text.matchAll(/`make ([a-z-]+)`/g)].map((m) => m[1]!);
    expect(targets).toEqual(expect.arrayContaining(['image', 'image-reproducible', 'test']));
    for (const t of targets) expect(makefile).toMatch(new RegExp(`^${t}:`, 'm'));
    for (const m of text.matchAll(/`(scripts\/[\w/.-]+\.sh)`/g)) expect(() => read(m[1]!)).not.toThrow();
  });
});
