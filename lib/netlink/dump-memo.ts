/**
 * The last dump's decoded values, kept with the bytes they came from. A full sync reads every
 * table each syncPeriod, and on a quiet node the kernel answers with the same bytes: decoding
 * them again was most of an idle node's CPU. Equal bytes decode to an equal value, so the kept
 * value is handed out again (values must be immutable: they are shared between reads).
 *
 * The bytes are copied when kept: a reply may sit in a receive buffer that is reused.
 */
export class DumpMemo<T> {
  private last: readonly { readonly bytes: Buffer; readonly value: T }[] = [];
  private lastWhole: { readonly bytes: readonly Buffer[]; readonly value: T } | undefined;

  /**
   * Message by message: a message whose bytes equal the one at the same position in the last
   * dump gets that one's value; the others are decoded. Suits a dump whose messages decode
   * alone (one address, one virtual server each), where a few of them change between reads
   * (an address's remaining lifetime, a busy service's counters).
   */
  each(messages: readonly Buffer[], decode: (message: Buffer) => T): T[] {
    const kept: { bytes: Buffer; value: T }[] = new Array(messages.length);
    const out: T[] = new Array(messages.length);
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i]!;
      const prev = this.last[i];
      const entry = prev !== undefined && prev.bytes.equals(m) ? prev : { bytes: Buffer.from(m), value: decode(m) };
      kept[i] = entry;
      out[i] = entry.value;
    }
    // only once every message decoded: a throw leaves the last good dump in place
    this.last = kept;
    return out;
  }

  /**
   * The dump as one: when every message equals the last dump's, that dump's value; else
   * `decode` over them all. Suits a dump whose decoder carries state from message to message
   * (an ipset's members run on into the next message).
   */
  whole(messages: readonly Buffer[], decode: (messages: readonly Buffer[]) => T): T {
    const prev = this.lastWhole;
    if (prev && prev.bytes.length === messages.length && prev.bytes.every((b, i) => b.equals(messages[i]!))) {
      return prev.value;
    }
    const value = decode(messages);
    this.lastWhole = { bytes: messages.map((m) => Buffer.from(m)), value };
    return value;
  }
}
