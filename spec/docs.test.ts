/**
 * CONTRIBUTING.md's code map names every folder of lib/, testkit/ and scripts/, every file at
 * the top of lib/, and every folder of spec/ that does not mirror one of lib/. README.md opens
 * with the operator's quickstart, its links and docs/'s resolve, and measured figures stay in
 * scripts/bench/README.md rather than in manifests' comments.
 */
import { execFileSync } from 'node:child_process';
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

/** every `](target)` of a markdown file that points into the repository, without its #fragment */
function localLinks(markdown: string): string[] {
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z]+:/i.test(t) && !t.startsWith('#'))
    .map((t) => t.replace(/#.*$/, ''));
}

describe('README.md, for the operator first', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const lines = readme.split('\n');
  const quickAt = lines.findIndex((l) => /^## Quickstart/.test(l));
  const nextAt = lines.findIndex((l, i) => i > quickAt && l.startsWith('## '));
  const quickstart = lines.slice(quickAt + 1, nextAt).filter((l) => l.trim() !== '');

  it('opens with a quickstart: within the first 40 lines, at most 15 lines long', () => {
    expect(quickAt).toBeGreaterThanOrEqual(0);
    expect(quickAt).toBeLessThan(40);
    expect(nextAt).toBeGreaterThan(quickAt);
    expect(quickstart.length).toBeLessThanOrEqual(15);
  });

  it('the quickstart says the image, the swap, how to verify, roll back, keep kubeadm upgrade off, and links the differences', () => {
    const text = quickstart.join('\n');
    for (const s of [
      'make image',
      'localhost/kube-ipvs:0.1.0',
      'kubectl apply -k manifests/kubeadm/',
      'set image ds/kube-proxy',
      'kube-ipvs status',
      'ipvsadm -Ln',
      'rollout undo daemonset/kube-proxy',
      '--skip-phases=addon/kube-proxy',
      'proxy: {disabled: true}',
      '(docs/differences.md)',
    ])
      expect(text).toContain(s);
  });

  it("names the Kubernetes release it was tested with as the one scripts/k8s/go.mod pins, and that go.mod's Go", () => {
    const mod = readFileSync(join(ROOT, 'scripts', 'k8s', 'go.mod'), 'utf8');
    const k8s = /^require k8s\.io\/kubernetes (v\S+)$/m.exec(mod)![1]!;
    const go = /^go (\S+)$/m.exec(mod)![1]!;
    const matrix = lines.find((l) => l.startsWith('| Kubernetes |'))!;
    expect(matrix).toContain(`${k8s} (the pin in \`scripts/k8s/go.mod\`)`);
    expect(readme).toContain(`\`go ${go}\``);
    expect(readme).toContain(`go${go} toolchain`);
  });

  it('every link from README.md and docs/ to a file of the repository resolves', () => {
    const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((n) => `docs/${n}`)].filter((f) =>
      f.endsWith('.md'),
    );
    const broken: string[] = [];
    for (const f of files) {
      const dir = f.includes('/') ? f.slice(0, f.lastIndexOf('/')) : '.';
      for (const target of localLinks(readFileSync(join(ROOT, f), 'utf8')))
        if (!existsSync(join(ROOT, dir, target))) broken.push(`${f} -> ${target}`);
    }
    expect(broken).toEqual([]);
    expect(localLinks(readme).filter((t) => t.startsWith('docs/')).length).toBeGreaterThan(0);
  });

  it('README.md and docs/ speak to a reader, not to the project: no issue numbers', () => {
    const files = ['README.md', ...readdirSync(join(ROOT, 'docs')).map((n) => `docs/${n}`)];
    const insider = files.flatMap((f) =>
      readFileSync(join(ROOT, f), 'utf8')
        .split('\n')
        .filter((l) => /\bissue \d+|next issue|this session/i.test(l))
        .map((l) => `${f}: ${l}`),
    );
    expect(insider).toEqual([]);
  });
});

describe('manifests/', () => {
  it('carries no measured figure (memory, sizes) in its comments: they live in scripts/bench/README.md alone', () => {
    const figures: string[] = [];
    for (const sub of readdirSync(join(ROOT, 'manifests')))
      for (const f of readdirSync(join(ROOT, 'manifests', sub)).filter((n) => n.endsWith('.yaml')))
        for (const l of readFileSync(join(ROOT, 'manifests', sub, f), 'utf8').split('\n')) {
          const comment = l.includes('#') ? l.slice(l.indexOf('#')) : '';
          if (/\d\s*(?:[KMGT]i?B)\b/.test(comment)) figures.push(`${sub}/${f}: ${l.trim()}`);
        }
    expect(figures).toEqual([]);
  });
});

describe('the tree', () => {
  // a merge that left its conflict in a file the compiler never reads (CONTRIBUTING.md did)
  it('holds no merge-conflict markers in a tracked text file', () => {
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' })
      .split('\0')
      .filter((f) => /\.(md|ts|js|mjs|sh|ya?ml|json|txt|go|c)$|^Makefile$/.test(f) && existsSync(join(ROOT, f)));
    const marked = tracked.filter((f) => /^(<{7} |>{7} )/m.test(readFileSync(join(ROOT, f), 'utf8')));
    expect(marked).toEqual([]);
  });
});
