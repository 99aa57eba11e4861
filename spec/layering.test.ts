/**
 * The layer map (DEVELOPERS.md "Layout"), checked on the TypeScript source under lib/: which
 * folder may import which. An `import type` (or `export type ... from`, or braces whose every
 * name is `type X`) vanishes at compile time and counts as type-only.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';

interface Import {
  /** repo-relative, e.g. lib/kernel/link/link.ts */
  readonly file: string;
  readonly line: number;
  /** repo-relative module without extension for a relative import (lib/model/ipvs), else the package */
  readonly target: string;
  readonly typeOnly: boolean;
}

const CLAUSE = String.raw`(?:\{[^}]*\}|\*(?:\s+as\s+\w+)?|\w+(?:\s*,\s*(?:\{[^}]*\}|\*\s+as\s+\w+))?)`;
const STATIC = new RegExp(String.raw`^[ \t]*(import|export)\s+(type\s+)?(${CLAUSE})\s*from\s*['"]([^'"]+)['"]`, 'gm');
const BARE = /^[ \t]*import\s*['"]([^'"]+)['"]/gm;
const DYNAMIC = /\b(?:import|require)\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The imports of one source file; `file` is repo-relative with '/' separators. */
export function parseImports(file: string, text: string): Import[] {
  const out: Import[] = [];
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  const target = (spec: string) =>
    spec.startsWith('.') ? posix.normalize(posix.join(posix.dirname(file), spec)) : spec;
  for (const m of text.matchAll(STATIC)) {
    const clause = m[3]!;
    const braced = /^\{([^}]*)\}$/.exec(clause);
    const names = braced
      ? braced[1]!
          .split(',')
          .map((n) => n.trim())
          .filter((n) => n !== '')
      : [];
    const typeOnly = m[2] !== undefined || (names.length > 0 && names.every((n) => n.startsWith('type ')));
    out.push({ file, line: lineOf(m.index), target: target(m[4]!), typeOnly });
  }
  for (const m of text.matchAll(BARE))
    out.push({ file, line: lineOf(m.index), target: target(m[1]!), typeOnly: false });
  for (const m of text.matchAll(DYNAMIC))
    out.push({ file, line: lineOf(m.index), target: target(m[1]!), typeOnly: false });
  return out;
}

function repoRoot(): string {
  let dir = __dirname;
  while (!(existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'lib')))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no repository root (package.json + lib/) above ${__dirname}`);
    dir = up;
  }
  return dir;
}

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const ROOT = repoRoot();
/** repo-relative, '/' separated */
const LIB_FILES = tsFiles(join(ROOT, 'lib')).map((p) => relative(ROOT, p).split(sep).join('/'));
const IMPORTS: Import[] = LIB_FILES.flatMap((p) => parseImports(p, readFileSync(join(ROOT, p), 'utf8')));

const within = (path: string, area: string) => path === area || path.startsWith(area + '/');
const show = (i: Import) => `${i.file}:${i.line} imports ${i.target}${i.typeOnly ? ' (type only)' : ''}`;

/** The imports of files in `from` that reach lib/ outside `allowed` (runtime only when typeOnlyOk). */
function outside(from: string, allowed: readonly string[], typeOnlyOk = false): string[] {
  return IMPORTS.filter(
    (i) =>
      within(i.file, from) &&
      within(i.target, 'lib') &&
      !allowed.some((a) => within(i.target, a)) &&
      !(typeOnlyOk && i.typeOnly),
  ).map(show);
}

describe('parseImports', () => {
  it('reads named, default, namespace, multi-line, bare, dynamic and type-only imports', () => {
    const text = [
      "import { a } from '../model/ipvs';",
      "import type { B } from '../plan/ipsets';",
      "import { type C, type D } from '../k8s/convert';",
      "import { type E, f } from '../k8s/kubeconfig';",
      'import {',
      '  G,',
      '  h,',
      "} from './link';",
      "import * as ns from 'node:fs';",
      "import def, { x } from 'ip-address';",
      "export { y } from '../errors';",
      "export type { Z } from '../model/names';",
      "import './side-effect';",
      "const lazy = () => import('../proxier/proxier');",
      "// says something from 'somewhere' in a comment",
    ].join('\n');
    expect(
      parseImports('lib/kernel/ipvs/x.ts', text).map((i) => `${i.line} ${i.target}${i.typeOnly ? ' type' : ''}`),
    ).toEqual([
      '1 lib/kernel/model/ipvs',
      '2 lib/kernel/plan/ipsets type',
      '3 lib/kernel/k8s/convert type',
      '4 lib/kernel/k8s/kubeconfig',
      '5 lib/kernel/ipvs/link',
      '9 node:fs',
      '10 ip-address',
      '11 lib/kernel/errors',
      '12 lib/kernel/model/names type',
      '13 lib/kernel/ipvs/side-effect',
      '14 lib/kernel/proxier/proxier',
    ]);
  });

  it('finds the imports of the real tree (the rules below are not checked on nothing)', () => {
    expect(IMPORTS.length).toBeGreaterThan(300);
    expect(IMPORTS.some((i) => i.file === 'lib/kernel/link/link.ts' && i.target === 'lib/model/ip-family')).toBe(true);
  });
});

describe('layering of lib/', () => {
  it("lib/uapi (the kernel's constants, the ground floor) imports nothing but itself", () => {
    expect(outside('lib/uapi', ['lib/uapi'])).toEqual([]);
  });

  it('lib/model imports only lib/model, the uapi constants tables and lib/errors: never lib/netlink, not even for types', () => {
    expect(outside('lib/model', ['lib/model', 'lib/uapi', 'lib/errors'])).toEqual([]);
  });

  it('lib/netlink (bytes) imports only lib/netlink, lib/uapi, lib/model, lib/errors and the addon loader', () => {
    expect(outside('lib/netlink', ['lib/netlink', 'lib/uapi', 'lib/model', 'lib/errors', 'lib/native-addon'])).toEqual(
      [],
    );
  });

  it('the native addon loader (lib/native-addon.ts) is a leaf: it imports nothing of lib', () => {
    expect(outside('lib/native-addon.ts', [])).toEqual([]);
  });

  it('lib/kernel imports only lib/kernel, lib/netlink, lib/uapi, lib/model, lib/errors and lib/log: no plan, proxier, reconcile, k8s, tracker, daemon, cli, cleanup', () => {
    expect(
      outside('lib/kernel', ['lib/kernel', 'lib/netlink', 'lib/uapi', 'lib/model', 'lib/errors', 'lib/log']),
    ).toEqual([]);
  });

  it('lib/plan is pure: only lib/plan, lib/model, the uapi constants and lib/errors at run time; lib/k8s for types only; never lib/kernel', () => {
    expect(outside('lib/plan', ['lib/plan', 'lib/model', 'lib/uapi', 'lib/errors', 'lib/k8s'])).toEqual([]);
    expect(outside('lib/plan', ['lib/plan', 'lib/model', 'lib/uapi', 'lib/errors'], true)).toEqual([]);
  });

  it('lib/ never imports the test kit (testkit/: fakes of the API server, scripted execs, builders), not even for types', () => {
    expect(IMPORTS.filter((i) => within(i.target, 'testkit')).map(show)).toEqual([]);
  });

  it('only production code is under lib/ (what the image ships): the kernel fakes live in testkit/kernel, no lib file defines a Fake class', () => {
    const fakes = LIB_FILES.filter(
      (p) =>
        /(^|\/)fake-[^/]*\.ts$/.test(p) || /^export (abstract )?class Fake/m.test(readFileSync(join(ROOT, p), 'utf8')),
    );
    expect(fakes).toEqual([]);
  });

  it("only lib/k8s imports '@kubernetes/client-node' at run time; elsewhere `import type` only", () => {
    const runtime = IMPORTS.filter(
      (i) => i.target === '@kubernetes/client-node' && !i.typeOnly && !within(i.file, 'lib/k8s'),
    );
    expect(runtime.map(show)).toEqual([]);
  });

  it('every exported name under lib/ has a doc comment above it (a line ending */, or a // line)', () => {
    const undocumented = LIB_FILES.flatMap((p) => {
      const lines = readFileSync(join(ROOT, p), 'utf8').split('\n');
      return lines.flatMap((l, i) => {
        if (!/^export (async )?(function|class|interface|type|const|abstract class|enum) /.test(l)) return [];
        let j = i - 1;
        while (j >= 0 && lines[j]!.trim().startsWith('@')) j--;
        const above = j >= 0 ? lines[j]!.trim() : '';
        return above.endsWith('*/') || above.startsWith('//') ? [] : [`${p}:${i + 1}: ${l.slice(0, 80)}`];
      });
    });
    expect(undocumented).toEqual([]);
  });
});
