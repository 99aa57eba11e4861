/**
 * The JSON watch stream's lines (reporting-watch.ts WatchLines, parseWatchLine): split as the
 * chunks come, a UTF-8 character split across chunks kept whole, a line capped at
 * WATCH_EVENT_MAX_BYTES (refused as soon as more than that has come without a newline, so no
 * more is ever held), and a line that is no watch event refused rather than skipped.
 */
import { WATCH_EVENT_MAX_BYTES } from '../../lib/k8s/protobuf';
import { WatchDecodeError, WatchLines, isWatchDecodeError, parseWatchLine } from '../../lib/k8s/reporting-watch';

describe('WatchLines', () => {
  it('returns the lines each chunk completes, across chunk boundaries, a split UTF-8 character whole', () => {
    const lines = new WatchLines();
    const text = Buffer.from('{"a":1}\n{"b":"é"}\n{"c"');
    const split = text.indexOf(Buffer.from('é')) + 1; // inside the two bytes of é
    expect(lines.push(text.subarray(0, split))).toEqual(['{"a":1}']);
    expect(lines.push(text.subarray(split))).toEqual(['{"b":"é"}']);
    expect(lines.push(Buffer.from(':3}\n\n'))).toEqual(['{"c":3}', '']);
    expect(lines.rest()).toBe('');
    lines.push(Buffer.from('{"unended":true}'));
    expect(lines.rest()).toBe('{"unended":true}');
  });

  it(`takes a line of ${WATCH_EVENT_MAX_BYTES} bytes (the cap) and refuses one byte more as it comes, before its newline`, () => {
    const atCap = new WatchLines();
    const half = Buffer.alloc(WATCH_EVENT_MAX_BYTES / 2, 'x');
    expect(atCap.push(half)).toEqual([]);
    const [whole] = atCap.push(Buffer.concat([half, Buffer.from('\n')]));
    expect(whole).toHaveLength(WATCH_EVENT_MAX_BYTES);

    const over = new WatchLines();
    over.push(half);
    over.push(half);
    // one byte more and no newline yet: refused now, not once the line ends
    expect(() => over.push(Buffer.from('x'))).toThrow(
      new WatchDecodeError(
        `a watch event line longer than ${WATCH_EVENT_MAX_BYTES} bytes, the most an event may have (at least ${WATCH_EVENT_MAX_BYTES + 1})`,
      ),
    );
    // and one whose newline comes in the same chunk as the byte too many
    const inOne = new WatchLines();
    expect(() => inOne.push(Buffer.concat([half, half, Buffer.from('x\n')]))).toThrow(WatchDecodeError);
  });

  it('a small cap bounds the pending bytes the same way', () => {
    const lines = new WatchLines(8);
    expect(lines.push(Buffer.from('12345678\n1234'))).toEqual(['12345678']);
    expect(() => lines.push(Buffer.from('56789'))).toThrow(/longer than 8 bytes/);
  });
});

describe('parseWatchLine', () => {
  it('a watch event: its type and object', () => {
    expect(parseWatchLine('{"type":"ADDED","object":{"metadata":{"name":"a"}}}')).toEqual({
      type: 'ADDED',
      object: { metadata: { name: 'a' } },
    });
  });

  it.each([
    ['not JSON', '{"type":"DELETED","object":{"metadata":', /^a watch line that is not JSON/],
    ['no type', '{"object":{}}', /^a watch line that is no watch event/],
    ['no object', '{"type":"DELETED"}', /^a watch line that is no watch event/],
    ['a JSON value that is no object', '42', /^a watch line that is no watch event/],
  ])('%s: a WatchDecodeError (the watch ends: never skipped)', (_what, text, message) => {
    let thrown: unknown;
    try {
      parseWatchLine(text);
    } catch (e) {
      thrown = e;
    }
    expect(isWatchDecodeError(thrown)).toBe(true);
    expect((thrown as Error).message).toMatch(message);
  });
});
