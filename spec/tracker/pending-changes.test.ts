import { PendingChanges, Snapshot } from '../../lib/tracker/pending-changes';

/** A Snapshot of `state` that counts how often its state was read (once per digest made). */
function counted(state: unknown): Snapshot & { reads: number } {
  const s = new Snapshot(() => {
    s.reads++;
    return state;
  }) as Snapshot & { reads: number };
  s.reads = 0;
  return s;
}

describe('PendingChanges', () => {
  it('an add, and a delete, make no digest: nothing is compared with them', () => {
    const c = new PendingChanges();
    const a = counted({ eps: ['10.0.0.1:80'] });
    expect(c.record('ns/a', undefined, a)).toBe(true);
    expect(a.reads).toBe(0);
    expect(c.take()).toEqual(new Set(['ns/a']));
    expect(c.record('ns/a', a, undefined)).toBe(true);
    expect(a.reads).toBe(0);
    expect(c.pending).toBe(1);
  });

  it('an update to an equal state changes nothing, and digests each side once', () => {
    const c = new PendingChanges();
    const a = counted({ eps: ['10.0.0.1:80'] });
    const same = counted({ eps: ['10.0.0.1:80'] });
    expect(c.record('ns/a', a, same)).toBe(false);
    expect(c.pending).toBe(0);
    expect(c.changesTotal).toBe(0);
    const other = counted({ eps: ['10.0.0.2:80'] });
    expect(c.record('ns/a', same, other)).toBe(true);
    expect([a.reads, same.reads, other.reads]).toEqual([1, 1, 1]);
    expect(c.changesTotal).toBe(1);
  });

  it('a change undone before the take leaves nothing pending: add then delete, update then back', () => {
    const c = new PendingChanges();
    const a = counted({ eps: ['10.0.0.1:80'] });
    c.record('ns/a', undefined, a);
    c.record('ns/a', a, undefined);
    expect(c.pending).toBe(0);
    expect(c.take()).toEqual(new Set());

    const v1 = counted({ eps: ['10.0.0.1:80'] });
    const v2 = counted({ eps: ['10.0.0.2:80'] });
    const v1again = counted({ eps: ['10.0.0.1:80'] });
    c.record('ns/b', v1, v2);
    expect(c.pending).toBe(1);
    c.record('ns/b', v2, v1again);
    expect(c.pending).toBe(0);
    expect(c.changesTotal).toBe(4);
  });

  it('deleted, then added back different before the take: still pending', () => {
    const c = new PendingChanges();
    const a = counted({ eps: ['10.0.0.1:80'] });
    const b = counted({ eps: ['10.0.0.9:80'] });
    c.record('ns/a', a, undefined);
    c.record('ns/a', undefined, b);
    expect(c.take()).toEqual(new Set(['ns/a']));
  });
});
