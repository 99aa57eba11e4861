// /proc/net/ip_vs as text, read with blocking reads into one buffer, in slices that give the
// event loop back.
//
// The kernel's seq_file hands the file out one page per read() (its buffer grows only for a
// single record larger than that), and ip_vs_info_seq_start walks the service table from the
// first service again for each one: a large table is well over a thousand reads, and the
// kernel's time grows with the square of the table. Through fs.promises.readFile each read is
// a thread-pool round trip, which made it about twice as slow as these blocking reads (as fast
// as `cat`). But the whole file in one go held the main thread for seconds at 10,000 x 10
// (a CPU profile of the bench's churn: 2.4 s in readSync), long enough for kube-apiserver to
// close the proxy's watch as unresponsive; so after each `sliceMs` of reading the loop gets a
// turn (setImmediate) to read its sockets, and the reads go on where they stopped.

import { closeSync, openSync, readSync } from 'node:fs';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** The kernel's IPVS table as text (net/netfilter/ipvs/ip_vs_ctl.c). */
export const PROC_NET_IP_VS = '/proc/net/ip_vs';

/** How long one slice of blocking reads may hold the event loop (ms). */
export const PROC_READ_SLICE_MS = 20;

/**
 * The whole file as latin1 text (the kernel prints ASCII), read in slices of `sliceMs` of
 * blocking reads. Rejects with the fs error (ENOENT: no ip_vs).
 */
export async function readProcText(
  path: string = PROC_NET_IP_VS,
  initialBytes = 1 << 20,
  sliceMs = PROC_READ_SLICE_MS,
): Promise<string> {
  const fd = openSync(path, 'r');
  try {
    let buf = Buffer.allocUnsafe(Math.max(initialBytes, 4096));
    let length = 0;
    let sliceStart = performance.now();
    for (;;) {
      if (buf.length - length < 4096) {
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, length);
        buf = bigger;
      }
      const n = readSync(fd, buf, length, buf.length - length, null);
      if (n === 0) return buf.toString('latin1', 0, length);
      length += n;
      if (performance.now() - sliceStart >= sliceMs) {
        await nextTurn();
        sliceStart = performance.now();
      }
    }
  } finally {
    closeSync(fd);
  }
}

/**
 * readProcText for a caller that reads the file again and again (the periodic full sync): each
 * read's buffer is sized from the last read's length, one allocation instead of a doubling
 * series (1 + 2 + 4 + 8 MB at 10,000 x 10, which malloc then kept resident).
 */
export function procTextReader(path: string = PROC_NET_IP_VS): () => Promise<string> {
  let lastLength = 0;
  return async () => {
    const text = await readProcText(path, lastLength > 0 ? lastLength + (lastLength >> 3) + 65536 : undefined);
    lastLength = text.length;
    return text;
  };
}
