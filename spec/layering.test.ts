/**
 * The layer map (DEVELOPERS.md "Layer map"), checked on the TypeScript source under lib/: which
 * folder may import which. An `import type` (or `export type ... from`, or braces whose every
 * name is `type X`) vanishes at compile time and counts as type-only.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import { REPO_ROOT } from '../testkit/repo-root';

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

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...tsFiles(p));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const ROOT = REPO_ROOT;
/** repo-relative, '/' separated */
const LIB_FILES = tsFiles(join(ROOT, 'lib')).map((p) => relative(ROOT, p).split(sep).join('/'));
const IMPORTS: Import[] = LIB_FILES.flatMap((p) => parseImports(p, readFileSync(join(ROOT, p), 'utf8')));

const within = (path: string, area: string) => path === area || path.startsWith(area + '/');
const show = (i: Import) => `${i.file}:${i.line} imports ${i.target}${i.typeOnly ? ' (type only)' : ''}`;

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

/**
 * The layer map, one row per entry of lib/: what each may import besides itself, type-only
 * imports included. DEVELOPERS.md "Layer map" prints the same rows (checked below).
 */
const LAYERS: Readonly<Record<string, readonly string[]>> = {
  uapi: [],
  errors: [],
  log: [],
  'native-addon': [],
  'bundle-flag': [],
  model: ['uapi', 'errors'],
  netlink: ['uapi', 'model', 'errors', 'native-addon'],
  kernel: ['netlink', 'uapi', 'model', 'errors', 'log'],
  plan: ['model', 'uapi', 'errors'],
  k8s: ['model', 'uapi', 'errors', 'bundle-flag'],
  tracker: ['k8s', 'model', 'errors'],
  reconcile: ['kernel', 'netlink', 'plan', 'model', 'uapi'],
  proxier: ['kernel', 'plan', 'reconcile', 'tracker', 'model', 'uapi', 'errors'],
  cleanup: ['kernel', 'model'],
  config: ['plan', 'model', 'errors', 'log'],
  daemon: ['config', 'k8s', 'kernel', 'netlink', 'plan', 'proxier', 'model', 'errors', 'log', 'native-addon'],
  cli: ['cleanup', 'config', 'daemon', 'kernel', 'model', 'uapi', 'errors', 'log', 'bundle-flag'],
};

/** The entry of lib/ a repo-relative file or import target is in: lib/kernel/link/link(.ts) -> kernel. */
const layerOf = (path: string) => path.split('/')[1]!.replace(/\.ts$/, '');

/** DEVELOPERS.md's layer map: the rows `name -> a, b, c   (why)` under its heading. */
function documentedLayers(text: string): Record<string, string[]> {
  const section = text.split('### Layer map')[1]?.split('\n- ')[0] ?? '';
  const rows: Record<string, string[]> = {};
  for (const m of section.matchAll(/^ {4}([a-z0-9-]+) +-> (.+?)(?: {2,}\(.*)?$/gm)) {
    const list = m[2]!.trim();
    rows[m[1]!] = list === '(nothing)' ? [] : list.split(/,\s*/);
  }
  return rows;
}

describe('layering of lib/', () => {
  it('every file and folder of lib/ has a row in the layer map', () => {
    const entries = readdirSync(join(ROOT, 'lib')).map((n) => n.replace(/\.ts$/, ''));
    expect(entries.filter((e) => !(e in LAYERS))).toEqual([]);
  });

  it.each(Object.entries(LAYERS))('lib/%s imports only itself and %j', (layer, allowed) => {
    const stray = IMPORTS.filter(
      (i) =>
        layerOf(i.file) === layer &&
        within(i.target, 'lib') &&
        layerOf(i.target) !== layer &&
        !allowed.includes(layerOf(i.target)),
    );
    expect(stray.map(show)).toEqual([]);
  });

  it('each allowance in the map is used (a row says what the code does, not what it might)', () => {
    const unused = Object.entries(LAYERS).flatMap(([layer, allowed]) =>
      allowed
        .filter(
          (a) => !IMPORTS.some((i) => layerOf(i.file) === layer && within(i.target, 'lib') && layerOf(i.target) === a),
        )
        .map((a) => `${layer} -> ${a}`),
    );
    expect(unused).toEqual([]);
  });

  it("DEVELOPERS.md's layer map has the same rows", () => {
    const documented = documentedLayers(readFileSync(join(ROOT, 'DEVELOPERS.md'), 'utf8'));
    const sorted = (rows: Readonly<Record<string, readonly string[]>>) =>
      Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, [...v].sort()]));
    expect(sorted(documented)).toEqual(sorted(LAYERS));
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
