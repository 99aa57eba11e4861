import { createHealthServer, listen, parseBindAddress, proxyHealth } from '../../lib/daemon/health-server';
import { FakeClock } from '../../testkit/fake-clock';
import { HALF_OPEN_REQUEST, rawConnection } from '../../testkit/raw-http';

describe('proxyHealth', () => {
  it.each([
    { name: 'starting up, nothing queued', lastSyncAt: 0, lastQueuedAt: 0, now: 1000, healthy: true },
    { name: 'synced after the last queued change', lastSyncAt: 500, lastQueuedAt: 400, now: 100_000, healthy: true },
    { name: 'queued, within the timeout', lastSyncAt: 500, lastQueuedAt: 1000, now: 60_000, healthy: true },
    { name: 'queued, just within the timeout', lastSyncAt: 500, lastQueuedAt: 1000, now: 60_999, healthy: true },
    // kube-proxy: unhealthy once now - oldest queued >= the timeout
    { name: 'queued, at the timeout', lastSyncAt: 500, lastQueuedAt: 1000, now: 61_000, healthy: false },
    { name: 'queued, past the timeout', lastSyncAt: 500, lastQueuedAt: 1000, now: 61_001, healthy: false },
  ])('$name', ({ lastSyncAt, lastQueuedAt, now, healthy }) => {
    expect(proxyHealth({ lastSyncAt, lastQueuedAt }, now, 60_000).healthy).toBe(healthy);
  });
});

describe('health server', () => {
  it('answers /healthz with node eligibility and /livez without it', async () => {
    const clock = new FakeClock(1_000_000);
    const src = { lastSyncAt: 999_000, lastQueuedAt: 0, initialSyncDone: true };
    let eligible = true;
    const seen: string[] = [];
    const server = createHealthServer({
      source: src,
      timeoutMs: 60_000,
      clock,
      nodeEligible: () => eligible,
      onRequest: (p, c) => seen.push(`${p} ${c}`),
    });
    const { port } = await listen(server, '127.0.0.1:0');
    try {
      const get = async (p: string) => {
        const r = await fetch(`http://127.0.0.1:${port}${p}`);
        return {
          code: r.status,
          body: (await r.json()) as Record<string, unknown>,
          type: r.headers.get('content-type'),
        };
      };
      const h = await get('/healthz');
      expect(h).toEqual({
        code: 200,
        type: 'application/json',
        body: {
          lastUpdated: new Date(1_000_000).toISOString(),
          currentTime: new Date(1_000_000).toISOString(),
          nodeEligible: true,
        },
      });
      eligible = false;
      expect((await get('/healthz')).code).toBe(503);
      expect((await get('/livez')).code).toBe(200);
      src.lastQueuedAt = 1_000_000;
      await clock.advance(60_001);
      expect((await get('/livez')).code).toBe(503);
      expect(seen).toEqual(['healthz 200', 'healthz 503', 'livez 200', 'livez 503']);
    } finally {
      server.close();
    }
  });

  it('answers /healthz 503 until the initial sync is done; /livez is healthy while starting, as kube-proxy', async () => {
    const clock = new FakeClock(1_000_000);
    const src = { lastSyncAt: 0, lastQueuedAt: 0, initialSyncDone: false };
    const server = createHealthServer({ source: src, timeoutMs: 60_000, clock, nodeEligible: () => true });
    const { port } = await listen(server, '127.0.0.1:0');
    try {
      const get = async (p: string) => {
        const r = await fetch(`http://127.0.0.1:${port}${p}`);
        return { code: r.status, body: (await r.json()) as Record<string, unknown> };
      };
      expect(await get('/healthz')).toEqual({
        code: 503,
        body: expect.objectContaining({ initialSync: 'pending', nodeEligible: true }),
      });
      expect((await get('/livez')).code).toBe(200);
      src.initialSyncDone = true;
      src.lastSyncAt = 1_000_000;
      const h = await get('/healthz');
      expect(h.code).toBe(200);
      expect(h.body).not.toHaveProperty('initialSync');
    } finally {
      server.close();
    }
  });

  it.each([
    ['0.0.0.0:10256', { host: '0.0.0.0', port: 10256 }],
    ['[::]:10256', { host: '::', port: 10256 }],
    [':10249', { host: '0.0.0.0', port: 10249 }],
  ])('parses bind address %s', (bind, want) => {
    expect(parseBindAddress(bind)).toEqual(want);
  });
  it('/healthz stays 200 while informers have no open watch, however long (a control-plane outage must not drain every node: KEP-3836, issue 39 item 7); the body names them; /livez is 200 too', async () => {
    const clock = new FakeClock(1_000_000);
    const src = { lastSyncAt: 999_000, lastQueuedAt: 0, initialSyncDone: true };
    let notWatching: { resource: string; sinceMs: number }[] = [];
    const server = createHealthServer({
      source: src,
      timeoutMs: 60_000,
      clock,
      nodeEligible: () => true,
      notWatching: () => notWatching,
    });
    const { port } = await listen(server, '127.0.0.1:0');
    try {
      const get = async (p: string) => {
        const r = await fetch(`http://127.0.0.1:${port}${p}`);
        return { code: r.status, body: (await r.json()) as Record<string, unknown> };
      };
      // a watch being re-established is normal: not even named
      notWatching = [{ resource: 'services', sinceMs: 1_000_000 }];
      await clock.advance(60_000);
      expect(await get('/healthz')).toEqual({
        code: 200,
        body: {
          lastUpdated: new Date(1_060_000).toISOString(),
          currentTime: new Date(1_060_000).toISOString(),
          nodeEligible: true,
        },
      });
      // the API server gone for an hour: named, for the operator, and still 200
      notWatching = [
        { resource: 'services', sinceMs: 1_000_000 },
        { resource: 'endpointslices', sinceMs: 1_000_000 },
      ];
      await clock.advance(3_600_000);
      const now = new Date(4_660_000).toISOString();
      expect(await get('/healthz')).toEqual({
        code: 200,
        body: {
          lastUpdated: now,
          currentTime: now,
          nodeEligible: true,
          notWatching: {
            services: new Date(1_000_000).toISOString(),
            endpointslices: new Date(1_000_000).toISOString(),
          },
        },
      });
      expect((await get('/livez')).code).toBe(200);
      // what does turn it 503 is kube-proxy's: a queued change not applied within the timeout
      src.lastQueuedAt = 4_660_000;
      await clock.advance(60_000);
      expect((await get('/healthz')).code).toBe(503);
      expect((await get('/livez')).code).toBe(503);
      notWatching = [];
      src.lastSyncAt = 4_720_000;
      expect((await get('/healthz')).code).toBe(200);
    } finally {
      server.close();
    }
  });

  describe('bounded (issue 39 item 8)', () => {
    const healthy = { lastSyncAt: 999_000, lastQueuedAt: 0, initialSyncDone: true };
    /** resolves once the server counts `n` open connections (polled every 5 ms: I/O goes on between) */
    const connectionsReach = async (server: import('node:http').Server, n: number) => {
      for (;;) {
        const open = await new Promise<number>((r) => server.getConnections((_e, k) => r(k)));
        if (open === n) return;
        await new Promise((r) => setTimeout(r, 5));
      }
    };

    const serverWith = (limits: Parameters<typeof createHealthServer>[0]['limits']) =>
      createHealthServer({
        source: healthy,
        timeoutMs: 60_000,
        clock: new FakeClock(1_000_000),
        nodeEligible: () => true,
        limits,
      });

    it('half-open requests at the connection cap: one more is closed at once, unanswered; once one closes a probe gets through', async () => {
      // the header timeout is long here: nothing but the cap closes a connection
      const server = serverWith({ maxConnections: 5, headersTimeoutMs: 600_000, requestTimeoutMs: 600_000 });
      const { port } = await listen(server, '127.0.0.1:0');
      try {
        const held = Array.from({ length: 5 }, () => rawConnection(port, HALF_OPEN_REQUEST));
        await connectionsReach(server, 5);
        expect(await rawConnection(port, HALF_OPEN_REQUEST).closed).toBe('');
        expect(held.map((c) => c.received())).toEqual(['', '', '', '', '']);
        held[0]!.socket.destroy();
        await connectionsReach(server, 4);
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      } finally {
        server.close();
        server.closeAllConnections();
      }
    }, 30_000);

    it('half-open requests are answered 408 and closed once their headers are late (Node: a minute or more)', async () => {
      const server = serverWith({ maxConnections: 5, headersTimeoutMs: 300, requestTimeoutMs: 300, checkEveryMs: 50 });
      const { port } = await listen(server, '127.0.0.1:0');
      try {
        const held = Array.from({ length: 5 }, () => rawConnection(port, HALF_OPEN_REQUEST));
        for (const c of held) expect(await c.closed).toMatch(/^HTTP\/1\.1 408 /);
        await connectionsReach(server, 0);
        expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      } finally {
        server.close();
        server.closeAllConnections();
      }
    }, 30_000);

    it('request headers beyond 8 KB are refused (431), not parsed', async () => {
      const server = createHealthServer({
        source: healthy,
        timeoutMs: 60_000,
        clock: new FakeClock(1_000_000),
        nodeEligible: () => true,
      });
      const { port } = await listen(server, '127.0.0.1:0');
      try {
        const big = rawConnection(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(9 * 1024)}\r\n\r\n`);
        expect(await big.closed).toMatch(/^HTTP\/1\.1 431 /);
        const small = rawConnection(
          port,
          `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Small: ${'a'.repeat(7 * 1024)}\r\nConnection: close\r\n\r\n`,
        );
        expect(await small.closed).toMatch(/^HTTP\/1\.1 200 /);
      } finally {
        server.close();
      }
    });
  });
});
