// The node lab's way from the API server into the cluster (scripts/node/cluster.ts egressProxy,
// scripts/node/guest-relay.ts): HTTP CONNECT on a unix socket, as the egress selector speaks it;
// the kubelet's address to one forwarded port, anything else through the node's relay.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { egressProxy } from '../../../scripts/node/cluster';
import { relayServer } from '../../../scripts/node/guest-relay';

/** a TCP server on loopback that answers every line with `name: line` */
function namedEcho(name: string): Promise<net.Server> {
  const s = net.createServer((c) => c.on('data', (d) => c.write(`${name}: ${d.toString()}`)));
  return new Promise((r) => s.listen(0, '127.0.0.1', () => r(s)));
}
const portOf = (s: net.Server) => (s.address() as net.AddressInfo).port;

/** CONNECT `target` through the proxy's socket, then send `line`; the status line and what came back */
function tunnel(socket: string, target: string, line: string): Promise<{ status: string; reply: string }> {
  return new Promise((resolve, reject) => {
    const c = net.connect(socket, () => c.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`));
    let buf = '';
    let status = '';
    c.on('data', (d) => {
      buf += d.toString();
      if (!status && buf.includes('\r\n\r\n')) {
        status = buf.slice(0, buf.indexOf('\r\n'));
        buf = buf.slice(buf.indexOf('\r\n\r\n') + 4);
        if (status.includes(' 200 ')) c.write(line);
        else c.end();
      }
      if (status && buf.endsWith('\n')) {
        c.end();
        resolve({ status, reply: buf });
      }
    });
    c.on('close', () => resolve({ status, reply: buf }));
    c.on('error', reject);
  });
}

describe('the egress proxy and the relay', () => {
  const servers: net.Server[] = [];
  let socket: string;
  let pod: net.Server;

  beforeAll(async () => {
    const kubelet = await namedEcho('kubelet');
    pod = await namedEcho('pod');
    const relay = relayServer();
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    socket = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'egress-')), 'egress.sock');
    const proxy = egressProxy(socket, portOf(kubelet), portOf(relay));
    await new Promise((r) => proxy.once('listening', r));
    servers.push(kubelet, pod, relay, proxy);
  });
  afterAll(() => servers.forEach((s) => s.close()));

  it("sends a tunnel to the node's kubelet address to the kubelet's forwarded port", async () => {
    expect(await tunnel(socket, '10.0.2.15:10250', 'exec\n')).toEqual({
      status: 'HTTP/1.1 200 Connection established',
      reply: 'kubelet: exec\n',
    });
    expect((await tunnel(socket, 'node-1:10250', 'logs\n')).reply).toBe('kubelet: logs\n');
  });

  it('sends any other tunnel through the relay to the address asked for', async () => {
    expect(await tunnel(socket, `127.0.0.1:${portOf(pod)}`, 'GET /\n')).toEqual({
      status: 'HTTP/1.1 200 Connection established',
      reply: 'pod: GET /\n',
    });
  });

  it('answers 502 when the relay cannot reach the target, 405 to anything but CONNECT', async () => {
    const closed = await namedEcho('closed');
    const port = portOf(closed);
    await new Promise((r) => closed.close(r));
    expect((await tunnel(socket, `127.0.0.1:${port}`, 'x\n')).status).toBe('HTTP/1.1 502 Bad Gateway');
    const reply = await new Promise<string>((resolve) => {
      const c = net.connect(socket, () => c.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
      let b = '';
      c.on('data', (d) => (b += d.toString()));
      c.on('close', () => resolve(b));
    });
    expect(reply).toBe('HTTP/1.1 405 Method Not Allowed\r\n\r\n');
  });
});
