/**
 * Every API request names kube-ipvs in its User-Agent, in client-go's shape, so an API
 * server's audit log and metrics tell it from kube-proxy and from any other Node.js client
 * (the real kube-apiserver's audit log showed undici's `node` before).
 */
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { goPlatform, userAgent } from '../../lib/model/build-info';
import { apiRequest } from '../../lib/k8s/api-request';
import { loadKubeConfig } from '../../lib/k8s/kubeconfig';
import { listRaw } from '../../lib/k8s/raw-list';

describe('User-Agent', () => {
  it("is client-go's shape with Go's architecture names", () => {
    expect(userAgent({ version: '0.1.0', platform: goPlatform('linux', 'x64') })).toBe(
      'kube-ipvs/v0.1.0 (linux/amd64) kube-ipvs',
    );
    expect(userAgent({ version: '1.2.3', platform: goPlatform('linux', 'arm64') })).toBe(
      'kube-ipvs/v1.2.3 (linux/arm64) kube-ipvs',
    );
  });

  it('is sent with a list and a watch when the kubeconfig was loaded with one; absent, the HTTP stack picks its own', async () => {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.url!.includes('watch=true') ? 'watch' : 'list'} ${req.headers['user-agent']}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        req.url!.includes('watch=true')
          ? ''
          : JSON.stringify({ kind: 'ServiceList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }),
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const kc = loadKubeConfig({ master: url, userAgent: userAgent({ version: '0.1.0', platform: 'linux/amd64' }) });
      await listRaw(kc, '/api/v1/services');
      const w = await apiRequest(kc, { method: 'GET', path: '/api/v1/services', query: { watch: true } }, true);
      await w.stream?.text();
      await listRaw(loadKubeConfig({ master: url }), '/api/v1/services');
      expect(seen.slice(0, 2)).toEqual([
        'list kube-ipvs/v0.1.0 (linux/amd64) kube-ipvs',
        'watch kube-ipvs/v0.1.0 (linux/amd64) kube-ipvs',
      ]);
      expect(seen[2]).not.toContain('kube-ipvs');
    } finally {
      server.close();
    }
  });
});
