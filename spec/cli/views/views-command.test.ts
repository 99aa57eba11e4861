// `kube-ipvs service list / status / diff` with a scripted daemon and the IPVS fake: the
// kernel fallback, what each command does when the daemon does not answer or answers an
// error, exit codes, and that the commands load nothing of the daemon.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { DaemonUnreachableError, DaemonViewError, FetchView, httpFetchView } from '../../../lib/cli/views/views-client';
import { ViewsEnv, isViewCommand, runViews } from '../../../lib/cli/views/views-command';
import { FakeIpvs } from '../../../testkit/kernel/fake-ipvs';
import { DiffResponse, ServiceListResponse, VIEW_PATHS } from '../../../lib/model/views';
import { AF_INET, IPPROTO_TCP } from '../../../lib/uapi/inet';
import { IP_VS_CONN_F } from '../../../lib/uapi/ip_vs';

const vs = { af: AF_INET, protocol: IPPROTO_TCP, address: '10.96.0.10', port: 80, fwmark: 0 } as const;

/** An env whose daemon answers `views` by path (an Error value is thrown), kernel = a fake. */
function env(views: Record<string, unknown>, kernel?: { ipvs?: FakeIpvs; fails?: Error }) {
  const out: string[] = [];
  const err: string[] = [];
  const asked: string[] = [];
  const e: ViewsEnv = {
    fetchView: (server) =>
      (async (p: string) => {
        asked.push(server + p);
        const v = views[p];
        if (v instanceof Error) throw v;
        if (v === undefined) throw new DaemonUnreachableError(`${server}${p}: connect ECONNREFUSED`);
        return v;
      }) as FetchView,
    readKernel: async () => {
      if (kernel?.fails) throw kernel.fails;
      return {
        entries: await (kernel?.ipvs ?? new FakeIpvs()).listAll(),
        sets: new Map([['KUBE-CLUSTER-IP', { members: new Set(['10.96.0.10,tcp:80']) }]]),
      };
    },
    stdout: { write: (s: string) => out.push(s) },
    stderr: { write: (s: string) => err.push(s) },
    now: () => 0,
  };
  return { e, out: () => out.join(''), err: () => err.join(''), asked };
}

async function fake(): Promise<FakeIpvs> {
  const ipvs = new FakeIpvs();
  await ipvs.apply({ kind: 'newService', vs: { ...vs, scheduler: 'rr' } });
  await ipvs.apply({
    kind: 'newDest',
    vs,
    rs: { af: AF_INET, address: '10.244.1.2', port: 8080, fwdMethod: IP_VS_CONN_F.MASQ, weight: 0 },
  });
  return ipvs;
}

describe('kube-ipvs service list', () => {
  it('reads the daemon at --server (default 127.0.0.1:10249)', async () => {
    const list: ServiceListResponse = { source: 'daemon', frontends: [] };
    const t = env({ [VIEW_PATHS.services]: list });
    expect(await runViews(['service', 'list', '-o', 'json'], t.e)).toBe(0);
    expect(JSON.parse(t.out())).toEqual(list);
    expect(t.asked).toEqual(['http://127.0.0.1:10249/kube-ipvs/services']);
    const u = env({ [VIEW_PATHS.services]: list });
    await runViews(['service', 'list', '--server', 'http://10.0.0.1:9999'], u.e);
    expect(u.asked).toEqual(['http://10.0.0.1:9999/kube-ipvs/services']);
  });

  it('no daemon: the kernel alone, and says so (text: first line; json: stderr)', async () => {
    const t = env({}, { ipvs: await fake() });
    expect(await runViews(['service', 'list'], t.e)).toBe(0);
    const lines = t.out().split('\n');
    expect(lines[0]).toMatch(
      /^# kube-ipvs daemon not reachable \(.*ECONNREFUSED\): rows from the kernel's IPVS table alone; Service names unknown/,
    );
    expect(lines[2]).toMatch(
      /^1\s+10\.96\.0\.10:80\/TCP\s+ClusterIP\s+-\s+rr\s+None\s+1 => 10\.244\.1\.2:8080 \(draining, weight 0\)$/,
    );
    const j = env({}, { ipvs: await fake() });
    expect(await runViews(['service', 'list', '-o', 'json'], j.e)).toBe(0);
    expect(j.err()).toMatch(/daemon not reachable/);
    expect(JSON.parse(j.out())).toMatchObject({
      source: 'kernel',
      frontends: [{ id: 1, type: 'ClusterIP', service: null }],
    });
  });

  it('no daemon and no kernel: exit 1 naming both', async () => {
    const t = env({}, { fails: new Error('IPVS generic netlink family not found (ENOENT)') });
    expect(await runViews(['service', 'list'], t.e)).toBe(1);
    expect(t.err()).toMatch(
      /the daemon does not answer \(.*ECONNREFUSED\) and the kernel cannot be read: IPVS generic netlink family not found/,
    );
    expect(t.out()).toBe('');
  });

  it('a daemon that answers an error is not bypassed: exit 1, no fallback', async () => {
    const t = env(
      { [VIEW_PATHS.services]: new DaemonViewError('http://127.0.0.1:10249/kube-ipvs/services: HTTP 500: boom', 500) },
      { ipvs: await fake() },
    );
    expect(await runViews(['service', 'list'], t.e)).toBe(1);
    expect(t.err()).toBe('kube-ipvs service list: http://127.0.0.1:10249/kube-ipvs/services: HTTP 500: boom\n');
    expect(t.out()).toBe('');
  });
});

describe('kube-ipvs status and diff', () => {
  it('status without a daemon: exit 1', async () => {
    const t = env({});
    expect(await runViews(['status'], t.e)).toBe(1);
    expect(t.err()).toMatch(/^kube-ipvs status: .*ECONNREFUSED/);
  });

  it('diff: exit 0 without changes, 1 with, 2 without a daemon', async () => {
    const none: DiffResponse = { changes: [] };
    const t = env({ [VIEW_PATHS.diff]: none });
    expect(await runViews(['diff'], t.e)).toBe(0);
    expect(t.out()).toBe('');
    const some: DiffResponse = {
      changes: [
        { kind: 'delService', vs },
        { kind: 'newService', vs: { ...vs, port: 81, scheduler: 'rr' } },
      ],
    };
    const u = env({ [VIEW_PATHS.diff]: some });
    expect(await runViews(['diff'], u.e)).toBe(1);
    expect(u.out()).toBe('-D -t 10.96.0.10:80\n-A -t 10.96.0.10:81 -s rr\n');
    const v = env({});
    expect(await runViews(['diff'], v.e)).toBe(2);
    expect(v.err()).toMatch(/the diff needs the running daemon/);
  });

  it('a bad command line exits 2; --help exits 0', async () => {
    expect(await runViews(['status', '--bogus'], env({}).e)).toBe(2);
    expect(await runViews(['service', 'frobnicate'], env({}).e)).toBe(2);
    expect(await runViews(['service', 'list', '-o', 'yaml'], env({}).e)).toBe(2);
    const h = env({});
    expect(await runViews(['diff', '--help'], h.e)).toBe(0);
    expect(h.out()).toMatch(/ipvsadm commands/);
  });

  it('dispatches only its own words', () => {
    expect(['service', 'status', 'diff', 'ipvsadm', '--config', undefined].map(isViewCommand)).toEqual([
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });
});

describe('the CLI process', () => {
  it('loads nothing of the daemon (no lib/k8s, no client-node, no daemon.js)', () => {
    const main = path.resolve(__dirname, '../../../lib/cli/main.js');
    const script =
      `require(${JSON.stringify(main)});` +
      'console.log(JSON.stringify(Object.keys(require.cache).filter((k) => /client-node|[\\/]lib[\\/]k8s[\\/]|[\\/]daemon[\\/]daemon\\.js$/.test(k))))';
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual([]);
    // the probe would see them: requiring the daemon does load lib/k8s
    const probe = spawnSync(process.execPath, ['-e', script.replace('main.js', '../daemon/daemon.js')], {
      encoding: 'utf8',
    });
    expect(JSON.parse(probe.stdout).length).toBeGreaterThan(0);
  });
});

describe('httpFetchView', () => {
  it('a server that is not kube-ipvs (a text 404, as kube-proxy answers) counts as no daemon', async () => {
    const http = await import('node:http');
    const server = http.createServer((_req, res) =>
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('404 page not found\n'),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}`;
      await expect(httpFetchView(url)('/kube-ipvs/services')).rejects.toThrow(
        new DaemonUnreachableError(`${url}/kube-ipvs/services: HTTP 404, not a kube-ipvs daemon (kube-proxy?)`),
      );
      await expect(httpFetchView('not a url')('/x')).rejects.toBeInstanceOf(DaemonUnreachableError);
    } finally {
      server.close();
    }
  });
});
