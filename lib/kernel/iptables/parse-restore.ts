/** Tokenizing and parsing iptables-restore / iptables-save text. Pure. */

/** Splits a rule line like a shell would for iptables-restore: whitespace, "double quotes". */
export function tokenize(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inQuote = false;
  let has = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (c === '"') {
      inQuote = !inQuote;
      has = true;
    } else if (!inQuote && (c === ' ' || c === '\t')) {
      if (has) out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += c;
      has = true;
    }
  }
  if (inQuote) throw new SyntaxError(`unterminated quote in: ${line}`);
  if (has) out.push(cur);
  return out;
}

/** Joins tokens back, quoting those with spaces (as iptables-save prints comments). */
export function joinTokens(tokens: readonly string[]): string {
  return tokens.map((t) => (t === '' || /[\s"]/.test(t) ? `"${t}"` : t)).join(' ');
}

/** One line of restore text, classified. */
export type RestoreLine =
  | { readonly kind: 'table'; readonly table: string; readonly line: number }
  | { readonly kind: 'chain'; readonly chain: string; readonly policy: string; readonly line: number }
  | { readonly kind: 'commit'; readonly line: number }
  | {
      readonly kind: 'rule';
      readonly op: '-A' | '-I' | '-D' | '-N' | '-X' | '-F';
      readonly chain?: string;
      readonly position?: number;
      readonly spec: readonly string[];
      readonly line: number;
    };

const OPS: Readonly<Record<string, '-A' | '-I' | '-D' | '-N' | '-X' | '-F'>> = {
  '-A': '-A',
  '--append': '-A',
  '-I': '-I',
  '--insert': '-I',
  '-D': '-D',
  '--delete': '-D',
  '-N': '-N',
  '--new-chain': '-N',
  '-X': '-X',
  '--delete-chain': '-X',
  '-F': '-F',
  '--flush': '-F',
};

/** Parses restore text into lines (comments and blank lines dropped). Throws SyntaxError with the line. */
export function parseRestore(text: string): RestoreLine[] {
  const out: RestoreLine[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = i + 1;
    const s = lines[i]!.trim();
    if (s === '' || s.startsWith('#')) continue;
    if (s.startsWith('*')) out.push({ kind: 'table', table: s.slice(1), line });
    else if (s === 'COMMIT') out.push({ kind: 'commit', line });
    else if (s.startsWith(':')) {
      const [chain, policy] = s.slice(1).split(/\s+/);
      out.push({ kind: 'chain', chain: chain ?? '', policy: policy ?? '-', line });
    } else {
      const tokens = tokenize(s);
      const op = OPS[tokens[0] ?? ''];
      if (!op) throw Object.assign(new SyntaxError(`unknown command ${tokens[0]}`), { line });
      let rest = tokens.slice(1);
      const chain = rest[0];
      rest = rest.slice(1);
      let position: number | undefined;
      if (op === '-I' && rest[0] !== undefined && /^\d+$/.test(rest[0])) {
        position = Number(rest[0]);
        rest = rest.slice(1);
      }
      out.push({
        kind: 'rule',
        op,
        ...(chain !== undefined ? { chain } : {}),
        ...(position !== undefined ? { position } : {}),
        spec: rest,
        line,
      });
    }
  }
  return out;
}

/** `-A CHAIN spec` lines of an iptables-save dump, as chain -> rule specs (token-joined). */
export function parseSaveRules(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const raw of text.split('\n')) {
    if (!raw.startsWith('-A ')) continue;
    const t = tokenize(raw);
    const chain = t[1]!;
    if (!out.has(chain)) out.set(chain, []);
    out.get(chain)!.push(joinTokens(t.slice(2)));
  }
  return out;
}
