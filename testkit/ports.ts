/** Free loopback ports for the lab's servers (scripts/lab/, scripts/node/). */
import fs from 'node:fs';
import net from 'node:net';

/** Whether `port` can be bound on loopback now. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** The kernel's range of ephemeral ports (the local ports of outgoing connections). */
function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (lo! > 0 && hi! >= lo!) return [lo!, hi!];
  } catch {
    // not Linux: the default range
  }
  return [32768, 60999];
}

/**
 * A port free now, below the ephemeral range: a port the kernel hands out (listen on 0) is
 * released before its user binds it seconds later, and meanwhile an outgoing connection (the
 * API server's to etcd) may take it as its local port: one `make test` lost its lab to
 * EADDRINUSE that way. `taken` are the ports already chosen for this lab.
 */
export async function freePort(taken: readonly number[] = []): Promise<number> {
  const [lo, hi] = ephemeralRange();
  const [from, to] = lo > 20_000 ? [10_000, lo - 1] : [hi + 1, 65_535];
  for (let i = 0; i < 1000; i++) {
    const port = from + Math.floor(Math.random() * (to - from + 1));
    if (!taken.includes(port) && (await bindable(port))) return port;
  }
  throw new Error(`no free port in ${from}-${to}`);
}
