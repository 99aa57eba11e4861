/** scripts/fake-apiserver.ts as a process: fixtures, kubeconfig out, SIGTERM, the secure mode. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Service } from '@kubernetes/client-node';
import { apiRequest } from '../../lib/k8s/api-request';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { listRaw } from '../../lib/k8s/raw-list';
import { kubeconfigFor, UNAUTHORIZED_STATUS } from '../../testkit/fake-apiserver';
import { waitFor } from '../../testkit/wait-for';

const SCRIPT = join(__dirname, '../../scripts/fake-apiserver.js');

describe('scripts/fake-apiserver', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'fake-apiserver-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('loads fixtures, writes a kubeconfig pointing at itself, serves until SIGTERM', async () => {
    const fixtures = join(dir, 'fixtures.json');
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      fixtures,
      JSON.stringify([
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { namespace: 'demo', name: 'web' },
          spec: { clusterIP: '10.96.0.10' },
        },
        { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } },
      ]),
    );
    const child = spawn(
      process.execPath,
      [SCRIPT, '--port', '0', '--fixtures', fixtures, '--kubeconfig-out', kubeconfig],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor(
        '"listening on"',
        () => /listening on http:\/\/127\.0\.0\.1:\d+\n/.test(out) || child.exitCode !== null,
      );
      expect(err).toBe('');
      const url = /listening on (\S+)/.exec(out)![1];
      expect(loadKubeConfig({ kubeconfig }).getCurrentCluster()?.server).toBe(url);
      const list = (await (await fetch(`${url}/api/v1/services`)).json()) as {
        items: { metadata: { name: string } }[];
      };
      expect(list.items.map((i) => i.metadata.name)).toEqual(['web']);
      const stats = (await (await fetch(`${url}/fake/compact`, { method: 'POST' })).json()) as {
        objects: Record<string, number>;
      };
      expect(stats.objects).toMatchObject({ 'v1/services': 1, 'v1/nodes': 1 });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it("--tls-dir and --token-file: HTTPS with its own CA, the token file's current token accepted, the kubeconfig written uses both", async () => {
    const kubeconfig = join(dir, 'kubeconfig');
    const token = join(dir, 'token');
    writeFileSync(token, 'one');
    const child = spawn(
      process.execPath,
      [
        SCRIPT,
        '--port',
        '0',
        '--tls-dir',
        join(dir, 'pki'),
        '--token-file',
        token,
        '--token',
        'admin',
        '--kubeconfig-out',
        kubeconfig,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor(
        '"listening on"',
        () => /listening on https:\/\/127\.0\.0\.1:\d+\n/.test(out) || child.exitCode !== null,
        60_000,
      );
      const kc = loadKubeConfig({ kubeconfig });
      expect((await listRaw<V1Service>(kc, '/api/v1/services')).items).toEqual([]);
      writeFileSync(token, 'two');
      // the kubeconfig's tokenFile is the same file: the 401 re-reads it
      expect((await listRaw<V1Service>(kc, '/api/v1/services')).items).toEqual([]);
      // the rotated-out token is stale now: 401 with kube-apiserver's Status body
      const url = /listening on (\S+)/.exec(out)![1]!;
      writeFileSync(join(dir, 'stale'), kubeconfigFor(url, { caFile: join(dir, 'pki', 'ca.crt'), token: 'one' }));
      const refused = await apiRequest(loadKubeConfig({ kubeconfig: join(dir, 'stale') }), {
        method: 'GET',
        path: '/api/v1/nodes',
      });
      expect({ status: refused.status, body: JSON.parse(refused.body) }).toEqual({
        status: 401,
        body: UNAUTHORIZED_STATUS,
      });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it('refuses a bad fixture naming the object', async () => {
    const fixtures = join(dir, 'fixtures.json');
    writeFileSync(fixtures, JSON.stringify([{ apiVersion: 'v9', kind: 'Widget', metadata: { name: 'w' } }]));
    const child = spawn(process.execPath, [SCRIPT, '--port', '0', '--fixtures', fixtures], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(err).toMatch(/fixtures\.json: object 0 \(Widget \/w\): no resource for apiVersion v9 kind Widget/);
  });
});
