// The HealthCheckNodePort servers over real HTTP on loopback: kube-proxy's status codes,
// headers and body bytes; servers opened and closed as the Service map changes; a port in use
// fails that Service alone (logged once, one Event) and is retried on the next sync.
import net from 'node:net';
import winston from 'winston';
import Transport from 'winston-transport';
import { ServiceHealthServer, healthCheckBody } from '../../lib/daemon/service-health-server';
import { ProbeServerLimits } from '../../lib/daemon/probe-server';
import { HALF_OPEN_REQUEST, KEEP_ALIVE_REQUEST, rawConnection } from '../../testkit/raw-http';

interface Line {
  level: string;
  message: string;
  service?: string;
  port?: number;
}

class Recorder extends Transport {
  readonly lines: Line[] = [];
  override log(info: Line, next: () => void): void {
    this.lines.push({ level: info.level, message: info.message, service: info.service, port: info.port });
    next();
  }
}

/** A port the OS says is free now (bound to port 0, then released). */
async function freePort(host = '127.0.0.1'): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, host, r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

type Reply = { status: number; headers: Record<string, string | null>; body: string } | { error: string };

async function get(port: number, host = '127.0.0.1', path = '/'): Promise<Reply> {
  try {
    const r = await fetch(`http://${host}:${port}${path}`, { headers: { connection: 'close' } });
    const headers: Record<string, string | null> = {};
    for (const h of ['content-type', 'x-content-type-options', 'x-load-balancing-endpoint-weight'])
      headers[h] = r.headers.get(h);
    return { status: r.status, headers, body: await r.text() };
  } catch (e) {
    return { error: String((e as { cause?: { code?: string } }).cause?.code ?? e) };
  }
}

function setup(addresses: readonly string[] = ['127.0.0.1'], limits?: Partial<ProbeServerLimits>) {
  const rec = new Recorder();
  const log = winston.createLogger({ level: 'debug', transports: [rec] });
  const events: string[] = [];
  let healthy = true;
  const server = new ServiceHealthServer({
    nodeName: 'node-a',
    log,
    addresses,
    proxyHealthy: () => healthy,
    ...(limits ? { limits } : {}),
    events: {
      warn: (ref, reason, message) => events.push(`${ref.kind} ${ref.namespace}/${ref.name} ${reason}: ${message}`),
    },
  });
  return { server, rec, events, setHealthy: (h: boolean) => void (healthy = h) };
}

describe('healthCheckBody', () => {
  it("is kube-proxy's dedented template, byte for byte", () => {
    expect(healthCheckBody('default', 'web', 2, true)).toBe(
      '{\n\t"service": {\n\t\t"namespace": "default",\n\t\t"name": "web"\n\t},\n\t"localEndpoints": 2,\n\t"serviceProxyHealthy": true\n}',
    );
  });
});

describe('ServiceHealthServer', () => {
  let t: ReturnType<typeof setup>;
  afterEach(async () => {
    await t.server.close();
  });

  it('answers 200 with local endpoints, 503 without, 503 when the proxy is unhealthy; any path', async () => {
    t = setup();
    const port = await freePort();
    t.server.syncServices(new Map([['default/web', port]]));
    t.server.syncEndpoints(new Map([['default/web', 2]]));
    await t.server.settled();
    expect(await get(port)).toEqual({
      status: 200,
      headers: {
        'content-type': 'application/json',
        'x-content-type-options': 'nosniff',
        'x-load-balancing-endpoint-weight': '2',
      },
      body: '{\n\t"service": {\n\t\t"namespace": "default",\n\t\t"name": "web"\n\t},\n\t"localEndpoints": 2,\n\t"serviceProxyHealthy": true\n}',
    });
    expect(await get(port, '127.0.0.1', '/healthz?x=1')).toMatchObject({ status: 200 });

    t.setHealthy(false);
    expect(await get(port)).toEqual({
      status: 503,
      headers: {
        'content-type': 'application/json',
        'x-content-type-options': 'nosniff',
        'x-load-balancing-endpoint-weight': '2',
      },
      body: healthCheckBody('default', 'web', 2, false),
    });

    t.setHealthy(true);
    t.server.syncEndpoints(new Map()); // no local endpoint left
    expect(await get(port)).toEqual({
      status: 503,
      headers: {
        'content-type': 'application/json',
        'x-content-type-options': 'nosniff',
        'x-load-balancing-endpoint-weight': '0',
      },
      body: healthCheckBody('default', 'web', 0, true),
    });
  });

  it('opens and closes servers as Services come, go and change port', async () => {
    t = setup();
    const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
    t.server.syncServices(
      new Map([
        ['default/a', p1],
        ['ns2/b', p2],
      ]),
    );
    t.server.syncEndpoints(
      new Map([
        ['default/a', 1],
        ['ns2/b', 3],
        ['default/unknown', 5],
      ]),
    );
    await t.server.settled();
    expect(await get(p1)).toMatchObject({ status: 200, body: healthCheckBody('default', 'a', 1, true) });
    expect(await get(p2)).toMatchObject({ status: 200, body: healthCheckBody('ns2', 'b', 3, true) });

    // b moves to p3 and keeps its count until the next syncEndpoints; a is gone
    t.server.syncServices(new Map([['ns2/b', p3]]));
    await t.server.settled();
    expect(await get(p1)).toEqual({ error: 'ECONNREFUSED' });
    expect(await get(p2)).toEqual({ error: 'ECONNREFUSED' });
    expect(await get(p3)).toMatchObject({ status: 503, body: healthCheckBody('ns2', 'b', 0, true) });
    t.server.syncEndpoints(new Map([['ns2/b', 1]]));
    expect(await get(p3)).toMatchObject({ status: 200 });
    expect(t.server.openPorts()).toEqual(new Map([['ns2/b', p3]]));

    await t.server.close();
    expect(await get(p3)).toEqual({ error: 'ECONNREFUSED' });
    t.server.syncServices(new Map([['ns2/b', p3]])); // after close: nothing opens
    await t.server.settled();
    expect(await get(p3)).toEqual({ error: 'ECONNREFUSED' });
  });

  it('a port in use fails that Service only, logged once with its name and port, and is retried on later syncs', async () => {
    t = setup();
    const [busy, free] = [await freePort(), await freePort()];
    const squatter = net.createServer((c) => c.end('squatter\n'));
    await new Promise<void>((r) => squatter.listen(busy, '127.0.0.1', r));
    const services = new Map([
      ['default/a', busy],
      ['default/b', free],
    ]);
    const endpoints = new Map([
      ['default/a', 1],
      ['default/b', 1],
    ]);
    try {
      t.server.syncServices(services);
      t.server.syncEndpoints(endpoints);
      await t.server.settled();
      expect(await get(free)).toMatchObject({ status: 200, body: healthCheckBody('default', 'b', 1, true) });
      expect(t.server.openPorts()).toEqual(new Map([['default/b', free]]));
      const errors = () => t.rec.lines.filter((l) => l.level === 'error');
      expect(errors()).toEqual([
        {
          level: 'error',
          message: expect.stringMatching(
            new RegExp(`^node node-a failed to start healthcheck "default/a" on port ${busy}: .*EADDRINUSE`),
          ),
          service: 'default/a',
          port: busy,
        },
      ]);
      expect(t.events).toEqual([
        expect.stringMatching(
          new RegExp(
            `^Service default/a FailedToStartServiceHealthcheck: node node-a failed to start healthcheck "default/a" on port ${busy}`,
          ),
        ),
      ]);

      // the next sync tries again: same failure, not reported again
      t.server.syncServices(services);
      t.server.syncEndpoints(endpoints);
      await t.server.settled();
      expect(errors()).toHaveLength(1);
      expect(t.events).toHaveLength(1);
      expect(t.rec.lines.filter((l) => l.service === 'default/a' && /failed to start/.test(l.message))).toHaveLength(2);
    } finally {
      await new Promise<void>((r) => squatter.close(() => r()));
    }
    // the port is free now: the next sync opens it
    t.server.syncServices(services);
    t.server.syncEndpoints(endpoints);
    await t.server.settled();
    expect(await get(busy)).toMatchObject({ status: 200, body: healthCheckBody('default', 'a', 1, true) });
  });

  it('listens on the node-port addresses only, and moves when they change', async () => {
    t = setup(['127.0.0.1']);
    const port = await freePort();
    t.server.syncServices(new Map([['default/web', port]]));
    t.server.syncEndpoints(new Map([['default/web', 1]]));
    await t.server.settled();
    expect(await get(port, '127.0.0.1')).toMatchObject({ status: 200 });
    expect(await get(port, '127.0.0.2')).toEqual({ error: 'ECONNREFUSED' });

    t.server.setNodePortAddresses(['127.0.0.2', '127.0.0.3']);
    await t.server.settled();
    expect(await get(port, '127.0.0.1')).toEqual({ error: 'ECONNREFUSED' });
    expect(await get(port, '127.0.0.2')).toMatchObject({
      status: 200,
      body: healthCheckBody('default', 'web', 1, true),
    });
    expect(await get(port, '127.0.0.3')).toMatchObject({ status: 200 });

    // every address: one wildcard listener
    t.server.setNodePortAddresses(undefined);
    await t.server.settled();
    expect(await get(port, '127.0.0.1')).toMatchObject({ status: 200 });
    expect(await get(port, '127.0.0.4')).toMatchObject({ status: 200 });
  });

  const twoServices = async (limits: Partial<ProbeServerLimits>) => {
    t = setup(['127.0.0.1'], limits);
    const [a, b] = [await freePort(), await freePort()];
    t.server.syncServices(
      new Map([
        ['default/a', a],
        ['default/b', b],
      ]),
    );
    t.server.syncEndpoints(
      new Map([
        ['default/a', 1],
        ['default/b', 1],
      ]),
    );
    await t.server.settled();
    return { a, b };
  };
  /** resolves once `c` got a whole 200 answer, its chunked body ended (polled every 5 ms) */
  const answered = async (c: ReturnType<typeof rawConnection>) => {
    while (!/^HTTP\/1\.1 200 [^]*\r\n0\r\n\r\n$/.test(c.received())) await new Promise((r) => setTimeout(r, 5));
  };

  it('bounded (issue 39 item 8): one connection budget for every Service; one beyond it is closed at once, unanswered', async () => {
    // the timeouts are long here: nothing but the cap closes a connection
    const { a, b } = await twoServices({
      maxConnections: 3,
      keepAliveTimeoutMs: 600_000,
      headersTimeoutMs: 600_000,
      requestTimeoutMs: 600_000,
    });
    // three kept-alive connections, answered (so counted), spend the budget of both Services
    const kept = [
      rawConnection(a, KEEP_ALIVE_REQUEST),
      rawConnection(a, KEEP_ALIVE_REQUEST),
      rawConnection(b, KEEP_ALIVE_REQUEST),
    ];
    for (const c of kept) await answered(c);
    expect(await rawConnection(b, KEEP_ALIVE_REQUEST).closed).toBe('');
    expect(await rawConnection(a, HALF_OPEN_REQUEST).closed).toBe('');
    // one closed by its client: a probe gets through again (the server counts the close a
    // moment after the client made it)
    kept[0]!.socket.destroy();
    let answer = await get(b);
    while ('error' in answer) answer = await get(b);
    expect(answer).toMatchObject({ status: 200 });
    for (const c of kept) c.socket.destroy();
  }, 30_000);

  it('bounded (issue 39 item 8): an idle kept-alive connection is closed after the keep-alive timeout, a half-open request answered 408 and closed', async () => {
    const { a, b } = await twoServices({
      keepAliveTimeoutMs: 300,
      headersTimeoutMs: 300,
      requestTimeoutMs: 300,
      checkEveryMs: 50,
    });
    const idle = rawConnection(b, KEEP_ALIVE_REQUEST);
    expect(await idle.closed).toMatch(/^HTTP\/1\.1 200 /);
    expect(await rawConnection(a, HALF_OPEN_REQUEST).closed).toMatch(/^HTTP\/1\.1 408 /);
  }, 30_000);
});
