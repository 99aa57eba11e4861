import { DumpMemo } from '../../lib/netlink/dump-memo';

const msg = (s: string) => Buffer.from(s);

/** a decoder that counts its calls and returns a fresh object per call */
function counting() {
  const calls: string[] = [];
  return { calls, decode: (m: Buffer) => (calls.push(m.toString()), { text: m.toString() }) };
}

describe('DumpMemo.each', () => {
  it('decodes every message of the first dump, then only the ones whose bytes changed at their position', () => {
    const memo = new DumpMemo<{ text: string }>();
    const c = counting();
    const first = memo.each([msg('a'), msg('b'), msg('c')], c.decode);
    expect(c.calls).toEqual(['a', 'b', 'c']);
    const second = memo.each([msg('a'), msg('B'), msg('c')], c.decode);
    expect(c.calls).toEqual(['a', 'b', 'c', 'B']);
    expect(second[0]).toBe(first[0]);
    expect(second[1]).toEqual({ text: 'B' });
    expect(second[2]).toBe(first[2]);
  });

  it('compares by position: a message inserted in front is decoded with every one after it', () => {
    const memo = new DumpMemo<{ text: string }>();
    const c = counting();
    memo.each([msg('a'), msg('b')], c.decode);
    memo.each([msg('z'), msg('a'), msg('b')], c.decode);
    expect(c.calls).toEqual(['a', 'b', 'z', 'a', 'b']);
  });

  it('keeps a copy: a receive buffer reused after the call cannot make other bytes match', () => {
    const memo = new DumpMemo<{ text: string }>();
    const c = counting();
    const buf = msg('a');
    memo.each([buf], c.decode);
    buf.write('x');
    const again = memo.each([msg('x')], c.decode);
    expect(again).toEqual([{ text: 'x' }]);
    expect(c.calls).toEqual(['a', 'x']);
  });

  it('a decode that throws leaves the last good dump in place', () => {
    const memo = new DumpMemo<{ text: string }>();
    const c = counting();
    const first = memo.each([msg('a')], c.decode);
    expect(() =>
      memo.each([msg('a'), msg('bad')], (m) => {
        if (m.toString() === 'bad') throw new Error('does not parse');
        return c.decode(m);
      }),
    ).toThrow('does not parse');
    expect(memo.each([msg('a')], c.decode)[0]).toBe(first[0]);
    expect(c.calls).toEqual(['a']);
  });
});

describe('DumpMemo.whole', () => {
  const decodeAll = (calls: number[]) => (ms: readonly Buffer[]) => (calls.push(ms.length), ms.map(String).join('|'));

  it('hands out the last value while every message is the same, and decodes them all once one differs', () => {
    const memo = new DumpMemo<string>();
    const calls: number[] = [];
    expect(memo.whole([msg('a'), msg('b')], decodeAll(calls))).toBe('a|b');
    expect(memo.whole([msg('a'), msg('b')], decodeAll(calls))).toBe('a|b');
    expect(calls).toEqual([2]);
    expect(memo.whole([msg('a'), msg('c')], decodeAll(calls))).toBe('a|c');
    expect(memo.whole([msg('a'), msg('c'), msg('d')], decodeAll(calls))).toBe('a|c|d');
    expect(memo.whole([msg('a'), msg('c')], decodeAll(calls))).toBe('a|c');
    expect(calls).toEqual([2, 2, 3, 2]);
  });

  it('an empty dump after a full one is decoded (no set left), not the old value', () => {
    const memo = new DumpMemo<string>();
    const calls: number[] = [];
    memo.whole([msg('a')], decodeAll(calls));
    expect(memo.whole([], decodeAll(calls))).toBe('');
  });
});
