// The datapath bench's client, the same program for every side (datapath.ts runs it in the
// client's network namespace): CONCURRENCY loops, each opening a TCP connection to
// ADDRESS:PORT, timing the connect (SYN -> the SYN-ACK back through the proxy's NAT), writing
// one byte and waiting for its echo (so the backend served it), then closing, and again; for
// WARMUP_SECONDS unrecorded, then SECONDS recorded. Prints one JSON line (datapath-stats.ts
// summarize): completed connections per second and connect latency percentiles.
//
//   node datapath-client.js ADDRESS PORT SECONDS CONCURRENCY [WARMUP_SECONDS]
import net from 'node:net';
import { summarize } from './datapath-stats';

const [address = '', portArg = '80', secondsArg = '15', concurrencyArg = '8', warmupArg = '2'] = process.argv.slice(2);
const PORT = Number(portArg);
const SECONDS = Number(secondsArg);
const CONCURRENCY = Number(concurrencyArg);
const WARMUP = Number(warmupArg);
const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

/** One connection: its connect time (ms), or an error. */
function once(): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = nowMs();
    let connectMs = 0;
    const s = net.connect({ host: address, port: PORT });
    s.setTimeout(5000, () => s.destroy(new Error('timeout')));
    s.once('connect', () => {
      connectMs = nowMs() - t0;
      s.write('x');
    });
    s.once('data', () => {
      s.destroy();
      resolve(connectMs);
    });
    s.once('error', reject);
    s.once('close', () => reject(new Error('closed before the echo')));
  });
}

async function main(): Promise<void> {
  const start = nowMs();
  const from = start + WARMUP * 1000;
  const until = from + SECONDS * 1000;
  const samples: number[] = [];
  let errors = 0;
  const codes: Record<string, number> = {};
  const loop = async () => {
    while (nowMs() < until) {
      const began = nowMs();
      try {
        const ms = await once();
        if (began >= from && nowMs() <= until) samples.push(ms);
      } catch (e) {
        if (began >= from) {
          errors++;
          const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
          codes[code] = (codes[code] ?? 0) + 1;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, loop));
  console.log(JSON.stringify({ ...summarize(samples, errors, SECONDS), concurrency: CONCURRENCY, errorCodes: codes }));
}

main().catch((e) => {
  console.error(`datapath-client: ${(e as Error).stack ?? e}`);
  process.exit(1);
});
