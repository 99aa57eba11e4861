/**
 * CONTRIBUTING.md's code map names every folder of lib/, testkit/ and scripts/, every file at
 * the top of lib/, and every folder of spec/ that does not mirror one of lib/.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../testkit/repo-root';

const ROOT = REPO_ROOT;

/** `tree` and every folder under it, repo-relative with a trailing '/'. */
function folders(tree: string): string[] {
  const out = [`${tree}/`];
  for (const name of readdirSync(join(ROOT, tree)))
    if (statSync(join(ROOT, tree, name)).isDirectory()) out.push(...folders(`${tree}/${name}`));
  return out;
}

describe('CONTRIBUTING.md', () => {
  const map = readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8');

  it('names every folder of lib/, testkit/ and scripts/ and every file at the top of lib/', () => {
    const libFiles = readdirSync(join(ROOT, 'lib'))
      .filter((n) => n.endsWith('.ts') && !n.endsWith('.d.ts'))
      .map((n) => `lib/${n}`);
    const paths = [...folders('lib'), ...folders('testkit'), ...folders('scripts'), ...libFiles];
    expect(paths.filter((p) => !map.includes(p))).toEqual([]);
  });

  it("names every folder at the top of spec/ that does not mirror lib/'s", () => {
    const own = readdirSync(join(ROOT, 'spec')).filter(
      (n) => statSync(join(ROOT, 'spec', n)).isDirectory() && !existsSync(join(ROOT, 'lib', n)),
    );
    expect(own.filter((n) => !map.includes(`spec/${n}/`))).toEqual([]);
  });
});
