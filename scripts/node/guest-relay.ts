/**
 * guest-relay — in the node's VM (scripts/node/guest-node.sh): carries the API server's tunnels
 * to pods and Services (pods/proxy, services/proxy) from the host, which cannot reach the pod
 * network, to their address on the node. The host's egress proxy (cluster.ts) connects through a
 * QEMU host forward and sends one line, `HOST:PORT\n`; the relay answers `ok\n` once it has
 * connected there (or closes), then carries the bytes both ways.
 *
 *   node dist/scripts/node/guest-relay.js LISTEN_ADDRESS PORT
 */
import net from 'node:net';

export function relayServer(): net.Server {
  return net.createServer((client) => {
    let head = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      head = Buffer.concat([head, d]);
      const nl = head.indexOf('\n');
      if (nl < 0) return;
      client.off('data', onData);
      const m = /^\[?([0-9a-fA-F.:]+)\]?:(\d+)$/.exec(head.subarray(0, nl).toString().trim());
      if (!m) return void client.destroy();
      const upstream = net.connect(Number(m[2]), m[1]!, () => {
        client.write('ok\n');
        const rest = head.subarray(nl + 1);
        if (rest.length) upstream.write(rest);
        client.pipe(upstream).pipe(client);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    };
    client.on('data', onData);
  });
}

if (require.main === module) {
  const [address, port] = process.argv.slice(2);
  relayServer().listen(Number(port), address);
}
