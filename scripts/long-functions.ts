/**
 * long-functions — the functions and methods of lib/ longer than a bound, longest first:
 *
 *   node dist/scripts/long-functions.js [--max N] [DIR]      (N: 80, DIR: lib)
 *
 * A function's length is its lines from the first of its declaration to its closing brace,
 * blank and comment lines included (what a reader scrolls through); a function nested in
 * another is counted on its own too. Read from the TypeScript sources with the compiler's
 * parser (no type check). Prints one line per function, `LINES FILE:LINE NAME`, then the
 * count; exits 0 either way (a measure, not a gate).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parseArgs } from 'node:util';
import ts from 'typescript';

export interface LongFunction {
  readonly file: string;
  readonly line: number;
  readonly name: string;
  readonly lines: number;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((n) => {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) return tsFiles(p);
      return n.endsWith('.ts') && !n.endsWith('.d.ts') ? [p] : [];
    });
}

/** The name a reader would look for: `Class.method`, `function`, the variable an arrow is bound to. */
function nameOf(node: ts.Node): string {
  const own = (n: ts.Node): string | undefined => {
    if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isAccessor(n)) && n.name)
      return n.name.getText();
    if (ts.isConstructorDeclaration(n)) return 'constructor';
    if (ts.isVariableDeclaration(n) || ts.isPropertyDeclaration(n) || ts.isPropertyAssignment(n))
      return n.name.getText();
    return undefined;
  };
  let name = own(node) ?? (node.parent ? own(node.parent) : undefined) ?? '(anonymous)';
  for (let p = node.parent; p; p = p.parent)
    if ((ts.isClassDeclaration(p) || ts.isClassExpression(p)) && p.name) {
      name = `${p.name.text}.${name}`;
      break;
    }
  return name;
}

/** Every function-like node of `file` longer than `max` lines. */
export function longFunctions(file: string, text: string, max: number): LongFunction[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) out.push({ file, line: first + 1, name: nameOf(node), lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

function main(): void {
  const { values, positionals } = parseArgs({
    options: { max: { type: 'string', default: '80' } },
    allowPositionals: true,
  });
  const max = Number(values.max);
  const dir = positionals[0] ?? 'lib';
  const found = tsFiles(dir)
    .flatMap((f) => longFunctions(relative(process.cwd(), f), readFileSync(f, 'utf8'), max))
    .sort((a, b) => b.lines - a.lines || (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line));
  for (const f of found) console.log(`${String(f.lines).padStart(5)} ${f.file}:${f.line} ${f.name}`);
  console.log(`${found.length} functions over ${max} lines in ${dir}/`);
}

if (require.main === module) main();
