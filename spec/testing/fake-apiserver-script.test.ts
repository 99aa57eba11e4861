/** scripts/fake-apiserver.ts as a process: fixtures, kubeconfig out, SIGTERM. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { waitFor } from '../../lib/testing/wait-for';

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
        { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'demo', name: 'web' }, spec: { clusterIP: '10.96.0.10' } },
        { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } },
      ]),
    );
    const child = spawn(process.execPath, [SCRIPT, '--port', '0', '--fixtures', fixtures, '--kubeconfig-out', kubeconfig], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor('"listening on"', () => /listening on http:\/\/127\.0\.0\.1:\d+\n/.test(out) || child.exitCode !== null);
      expect(err).toBe('');
      const url = /listening on (\S+)/.exec(out)![1];
      expect(loadKubeConfig({ kubeconfig }).getCurrentCluster()?.server).toBe(url);
      const list = (await (await fetch(`${url}/api/v1/services`)).json()) as { items: { metadata: { name: string } }[] };
      expect(list.items.map((i) => i.metadata.name)).toEqual(['web']);
      const stats = (await (await fetch(`${url}/fake/compact`, { method: 'POST' })).json()) as { objects: Record<string, number> };
      expect(stats.objects).toMatchObject({ 'v1/services': 1, 'v1/nodes': 1 });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });

  it('refuses a bad fixture naming the object', async () => {
    const fixtures = join(dir, 'fixtures.json');
    writeFileSync(fixtures, JSON.stringify([{ apiVersion: 'v9', kind: 'Widget', metadata: { name: 'w' } }]));
    const child = spawn(process.execPath, [SCRIPT, '--port', '0', '--fixtures', fixtures], { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(err).toMatch(/fixtures\.json: object 0 \(Widget \/w\): no resource for apiVersion v9 kind Widget/);
  });
});
