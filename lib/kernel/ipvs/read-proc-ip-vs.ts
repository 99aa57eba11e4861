// /proc/net/ip_vs as text, read with blocking reads into one buffer.
//
// The kernel's seq_file hands the file out one page per read() (its buffer grows only for a
// single record larger than that), and ip_vs_info_seq_start walks the service table from the
// first service again for each one: a large table is well over a thousand reads. Through
// fs.promises.readFile each read is a thread-pool round trip, which made it about twice as
// slow as these blocking reads (as fast as `cat`). The event loop waits out the read, as it
// waits out the JavaScript of the sync around it.

import { closeSync, openSync, readSync } from 'node:fs';

/** The kernel's IPVS table as text (net/netfilter/ipvs/ip_vs_ctl.c). */
export const PROC_NET_IP_VS = '/proc/net/ip_vs';

/** The whole file as latin1 text (the kernel prints ASCII). Throws the fs error (ENOENT: no ip_vs). */
export function readProcText(path: string = PROC_NET_IP_VS, initialBytes = 1 << 20): string {
  const fd = openSync(path, 'r');
  try {
    let buf = Buffer.allocUnsafe(Math.max(initialBytes, 4096));
    let length = 0;
    for (;;) {
      if (buf.length - length < 4096) {
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, length);
        buf = bigger;
      }
      const n = readSync(fd, buf, length, buf.length - length, null);
      if (n === 0) return buf.toString('latin1', 0, length);
      length += n;
    }
  } finally {
    closeSync(fd);
  }
}
