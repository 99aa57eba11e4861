/** `ipset save` parsing and `ipset restore` formatting. Pure. */
import { IpsetState, ObservedSet } from './ipset';
import { IpFamily } from '../../model/ip-family';
import { IpsetType } from '../../model/ipset';

/** kube-proxy's create options (pkg/proxy/ipvs/ipset/types.go defaults). */
export const IPSET_CREATE_DEFAULTS = { hashsize: 1024, maxelem: 65536, portRange: '0-65535' } as const;

/** The `family` keyword of ipset for an IP family: inet or inet6. */
export function familyKeyword(f: IpFamily): 'inet' | 'inet6' {
  return f === 'ipv4' ? 'inet' : 'inet6';
}

/** The `create` line kube-proxy's options amount to (no `-exist`: restore gets it as a flag). */
export function formatCreate(name: string, type: IpsetType, family: IpFamily): string {
  if (type === 'bitmap:port') return `create ${name} ${type} range ${IPSET_CREATE_DEFAULTS.portRange}`;
  return `create ${name} ${type} family ${familyKeyword(family)} hashsize ${IPSET_CREATE_DEFAULTS.hashsize} maxelem ${IPSET_CREATE_DEFAULTS.maxelem}`;
}

/** Parses `ipset save` output (create and add lines; anything else is ignored). */
export function parseIpsetSave(text: string): Map<string, ObservedSet> {
  const sets = new Map<
    string,
    {
      name: string;
      type: string;
      family?: IpFamily;
      options: string;
      members: Set<string>;
      comments?: Map<string, string>;
    }
  >();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('create ')) {
      const [, name, type, ...opts] = line.split(/\s+/);
      if (!name || !type) continue;
      const fi = opts.indexOf('family');
      const fam = fi >= 0 ? opts[fi + 1] : undefined;
      const family: IpFamily | undefined = fam === 'inet' ? 'ipv4' : fam === 'inet6' ? 'ipv6' : undefined;
      sets.set(name, {
        name,
        type,
        ...(family ? { family } : {}),
        options: opts.join(' '),
        members: new Set(),
        ...(opts.includes('comment') ? { comments: new Map() } : {}),
      });
    } else if (line.startsWith('add ')) {
      // "add NAME ENTRY [timeout N] [comment ...]": the entry is the third token
      const sp1 = line.indexOf(' ', 4);
      if (sp1 < 0) continue;
      const name = line.slice(4, sp1);
      const rest = line.slice(sp1 + 1);
      const sp2 = rest.indexOf(' ');
      const set = sets.get(name);
      const member = sp2 < 0 ? rest : rest.slice(0, sp2);
      set?.members.add(member);
      // ipset prints a comment last, quoted: `comment "rr/0x0000/0"`
      if (set?.comments) set.comments.set(member, /\scomment "([^"]*)"$/.exec(rest)?.[1] ?? '');
    }
  }
  return sets;
}

/** The state as sorted `ipset save`-like text (no header options beyond type/family), for assertions. */
export function formatIpsetState(state: IpsetState): string {
  const out: string[] = [];
  for (const name of [...state.keys()].sort()) {
    const s = state.get(name)!;
    out.push(`create ${name} ${s.type}${s.family ? ` family ${familyKeyword(s.family)}` : ''}`);
    for (const m of [...s.members].sort()) {
      const c = s.comments?.get(m);
      out.push(`add ${name} ${m}${c ? ` comment "${c}"` : ''}`);
    }
  }
  return out.join('\n') + (out.length ? '\n' : '');
}

/** "Error in line 3: ..." -> 3 */
export function ipsetErrorLine(stderr: string): number | undefined {
  const m = /Error in line (\d+):/.exec(stderr);
  return m ? Number(m[1]) : undefined;
}
