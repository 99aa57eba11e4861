import { AttrWriter } from './attr';
import { NLMSG_HDRLEN } from '../uapi/netlink';

/** One datagram of a batch: messages first..first+count-1, their nlmsghdrs at `offsets`. */
export interface BatchDatagram {
  readonly datagram: Buffer;
  readonly first: number;
  readonly count: number;
  readonly offsets: number[];
}

/**
 * Writes `count` messages into datagrams of at most `batchMessages` messages and about
 * `batchBytes` bytes (a single message larger than that gets a datagram of its own).
 * `write(i, w, at)` appends message i's body after its nlmsghdr (at `at`) and the
 * `extraHeader` bytes after it, and sets the header's type and flags; the length is set here,
 * the sequence number zeroed (GenlSocket numbers a datagram's messages when it sends it).
 */
export function writeBatchDatagrams(
  count: number,
  extraHeader: number,
  batchMessages: number,
  batchBytes: number,
  write: (i: number, w: AttrWriter, at: number) => void,
): BatchDatagram[] {
  const datagrams: BatchDatagram[] = [];
  // one writer builds every datagram; each is kept as an exact-size copy (a batch is all
  // written before the first send, and most datagrams are far below batchBytes)
  const w = new AttrWriter(batchBytes + 512);
  for (let i = 0; i < count;) {
    const first = i;
    w.reset();
    const offsets: number[] = [];
    while (i < count && i - first < batchMessages) {
      const at = w.skip(NLMSG_HDRLEN + extraHeader);
      write(i, w, at);
      if (i > first && w.length > batchBytes) {
        // it goes first in the next datagram
        w.truncate(at);
        break;
      }
      const b = w.buffer;
      b.writeUInt32LE(w.length - at, at);
      b.writeUInt32LE(0, at + 12);
      offsets.push(at);
      i++;
    }
    datagrams.push({ datagram: Buffer.from(w.finish()), first, count: i - first, offsets });
  }
  return datagrams;
}
