import { PendingChanges, sameStructure } from '../../lib/tracker/pending-changes';

interface State {
  readonly eps: readonly string[];
}

/** PendingChanges over structural equality, counting the comparisons it makes. */
function counted(): PendingChanges<State> & { compares: number } {
  const c = new PendingChanges<State>((a, b) => {
    c.compares++;
    return sameStructure(a, b);
  }) as PendingChanges<State> & { compares: number };
  c.compares = 0;
  return c;
}

const st = (...eps: string[]): State => ({ eps });

describe('PendingChanges', () => {
  it('an add, and a delete, compare nothing: there is no state on one side', () => {
    const c = counted();
    const a = st('10.0.0.1:80');
    expect(c.record('ns/a', undefined, a)).toBe(true);
    expect(c.compares).toBe(0);
    expect(c.take()).toEqual(new Set(['ns/a']));
    expect(c.record('ns/a', a, undefined)).toBe(true);
    expect(c.compares).toBe(0);
    expect(c.pending).toBe(1);
  });

  it('an update to an equal state changes nothing; the same object is equal without a comparison', () => {
    const c = counted();
    const a = st('10.0.0.1:80');
    const same = st('10.0.0.1:80');
    expect(c.record('ns/a', a, same)).toBe(false);
    expect(c.pending).toBe(0);
    expect(c.changesTotal).toBe(0);
    expect(c.record('ns/a', same, same)).toBe(false);
    expect(c.compares).toBe(1);
    const other = st('10.0.0.2:80');
    expect(c.record('ns/a', same, other)).toBe(true);
    expect(c.changesTotal).toBe(1);
  });

  it('a change undone before the take leaves nothing pending: add then delete, update then back', () => {
    const c = counted();
    const a = st('10.0.0.1:80');
    c.record('ns/a', undefined, a);
    c.record('ns/a', a, undefined);
    expect(c.pending).toBe(0);
    expect(c.take()).toEqual(new Set());

    const v1 = st('10.0.0.1:80');
    const v2 = st('10.0.0.2:80');
    const v1again = st('10.0.0.1:80');
    c.record('ns/b', v1, v2);
    expect(c.pending).toBe(1);
    c.record('ns/b', v2, v1again);
    expect(c.pending).toBe(0);
    expect(c.changesTotal).toBe(4);
  });

  it('undone by structure over several steps: new objects equal to the state at the take clear it, anything else keeps it', () => {
    const c = counted();
    const atTake = { eps: ['10.0.0.1:80', '10.0.0.2:80'], hints: { zone: 'a' } };
    const steps = [
      { eps: ['10.0.0.1:80'], hints: { zone: 'a' } }, // one removed
      { eps: ['10.0.0.1:80', '10.0.0.3:80'], hints: { zone: 'a' } }, // another added: same length, differs
      { eps: ['10.0.0.1:80', '10.0.0.2:80'], hints: { zone: 'b' } }, // endpoints back, a nested field differs
    ];
    let prev: State = atTake;
    for (const s of steps) {
      expect(c.record('ns/a', prev, s)).toBe(true);
      expect(c.pending).toBe(1);
      prev = s;
    }
    // back to what it was at the take, as a new object with its keys in another order
    expect(c.record('ns/a', prev, { hints: { zone: 'a' }, eps: ['10.0.0.1:80', '10.0.0.2:80'] } as State)).toBe(true);
    expect(c.pending).toBe(0);
    expect(c.take()).toEqual(new Set());
  });

  it('deleted, then added back different before the take: still pending', () => {
    const c = counted();
    const a = st('10.0.0.1:80');
    const b = st('10.0.0.9:80');
    c.record('ns/a', a, undefined);
    c.record('ns/a', undefined, b);
    expect(c.take()).toEqual(new Set(['ns/a']));
  });
});

describe('sameStructure', () => {
  it('equal values of every JSON shape, Maps in order, object keys in any order, undefined as absent', () => {
    expect(sameStructure(1, 1)).toBe(true);
    expect(sameStructure('a', 'a')).toBe(true);
    expect(sameStructure(null, null)).toBe(true);
    expect(sameStructure([1, [2, { a: 3 }]], [1, [2, { a: 3 }]])).toBe(true);
    expect(sameStructure({ a: 1, b: 'x' }, { b: 'x', a: 1 })).toBe(true);
    expect(sameStructure({ a: 1, z: undefined }, { a: 1 })).toBe(true);
    expect(sameStructure({ a: 1 }, { a: 1, z: undefined })).toBe(true);
    expect(sameStructure(new Map([['p', [{ ip: '10.0.0.1' }]]]), new Map([['p', [{ ip: '10.0.0.1' }]]]))).toBe(true);
  });

  it('different values: length, element, field, key set, type, Map order', () => {
    expect(sameStructure(1, 2)).toBe(false);
    expect(sameStructure(1, '1')).toBe(false);
    expect(sameStructure(null, {})).toBe(false);
    expect(sameStructure([], {})).toBe(false);
    expect(sameStructure({}, [])).toBe(false);
    expect(sameStructure([1, 2], [1, 2, 3])).toBe(false);
    expect(sameStructure([1, 2], [1, 3])).toBe(false);
    expect(sameStructure({ a: 1 }, { a: 1, b: 2 })).toBe(false);
    expect(sameStructure({ a: 1, b: 2 }, { a: 1 })).toBe(false);
    expect(sameStructure({ a: 1 }, { b: 1 })).toBe(false);
    expect(sameStructure({ a: { ready: true } }, { a: { ready: false } })).toBe(false);
    expect(sameStructure({ a: [] }, { a: undefined })).toBe(false);
    expect(
      sameStructure(
        new Map([
          ['a', 1],
          ['b', 2],
        ]),
        new Map([
          ['b', 2],
          ['a', 1],
        ]),
      ),
    ).toBe(false);
    expect(sameStructure(new Map([['a', 1]]), new Map([['a', 2]]))).toBe(false);
    expect(sameStructure(new Map([['a', 1]]), { a: 1 })).toBe(false);
    expect(sameStructure({ a: 1 }, new Map([['a', 1]]))).toBe(false);
  });
});
