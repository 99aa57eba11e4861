// The few libc address helpers ipvsadm's parsing relies on, as glibc implements them.

import { parseIPv4 } from '../../model/ipvs';

/**
 * glibc inet_aton(): "a.b.c.d", "a.b.c" (c 16-bit), "a.b" (b 24-bit), "a" (32-bit); each part
 * decimal, octal (leading 0) or hex (0x). Returns the address as an unsigned 32-bit number in
 * host order (10.0.0.1 -> 0x0a000001), or undefined when the text is not an address.
 * glibc also accepts trailing whitespace (and anything after it): "1.2.3.4 junk".
 */
export function inetAton(text: string): number | undefined {
  // the usual spelling, four decimal octets, without the general parse below
  const quad = parseIPv4(text);
  if (quad >= 0) return quad;
  const ws = text.search(/[ \t\n\v\f\r]/);
  const s = ws >= 0 ? text.slice(0, ws) : text;
  if (s === '') return undefined;
  const parts = s.split('.');
  if (parts.length > 4) return undefined;
  const nums: number[] = [];
  for (const p of parts) {
    let m: RegExpMatchArray | null;
    let v: number;
    if ((m = /^0[xX]([0-9a-fA-F]*)$/.exec(p))) v = m[1] === '' ? 0 : parseInt(m[1]!, 16);
    else if (/^0[0-7]*$/.test(p)) v = parseInt(p, 8);
    else if (/^[1-9][0-9]*$/.test(p)) v = parseInt(p, 10);
    else return undefined;
    if (!Number.isFinite(v) || v > 0xffffffff) return undefined;
    nums.push(v);
  }
  const last = nums[nums.length - 1]!;
  const head = nums.slice(0, -1);
  if (head.some((n) => n > 0xff)) return undefined;
  const lastMax = [0xffffffff, 0xffffff, 0xffff, 0xff][head.length]!;
  if (last > lastMax) return undefined;
  let v = 0;
  head.forEach((n, i) => (v += n * 2 ** (24 - 8 * i)));
  return (v + last) >>> 0;
}

/** glibc strtol(s, &end, 10) accepted as a whole string ("*end == 0 && end != s"), else undefined. */
export function strtolWhole(s: string): number | undefined {
  // the usual case, 1-9 plain digits, without a regular expression
  if (s.length > 0 && s.length < 10) {
    let n = 0;
    let i = 0;
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 48 || c > 57) break;
      n = n * 10 + (c - 48);
    }
    if (i === s.length) return n;
  }
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)$/.exec(s);
  if (!m) return undefined;
  const n = Number(m[1]);
  // strtol saturates at LONG_MAX/LONG_MIN with ERANGE: beyond 2^63 ipvsadm rejects it
  if (Math.abs(n) >= 2 ** 63) return undefined;
  return n;
}

/** ipvsadm's string_to_number(): whole decimal number within [min, max], else undefined. */
export function stringToNumber(s: string, min: number, max: number): number | undefined {
  const n = strtolWhole(s);
  if (n === undefined || n < min || n > max) return undefined;
  return n;
}

/** glibc atoi(): leading whitespace, optional sign, digits; anything else stops; 0 when none. */
export function atoi(s: string): number {
  const m = /^[ \t\n\v\f\r]*([+-]?[0-9]+)/.exec(s);
  return m ? Number(m[1]) | 0 : 0;
}
