/**
 * The metrics server on metricsBindAddress, as kube-proxy serves it: `/metrics`
 * (Prometheus text), `/proxyMode` ("ipvs"), `/configz` (the effective configuration as JSON,
 * kube-proxy's {"kubeproxy.config.k8s.io": ...} shape) and a plain `/healthz`; plus
 * kube-ipvs's operator views under /kube-ipvs/ (views-server.ts) when given, for local
 * clients only (views-server.ts decides).
 */
import http from 'node:http';
import { Registry } from 'prom-client';
import type { ViewsHandler } from './views-server';

/** The metrics server: /metrics, /proxyMode, /configz, /healthz, and the /kube-ipvs/ views. */
export function createMetricsServer(registry: Registry, configz: () => unknown, views?: ViewsHandler): http.Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (views?.(path, res, req)) return;
    switch (path) {
      case '/metrics':
        registry.metrics().then(
          (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
          (e: Error) => res.writeHead(500).end(e.message),
        );
        return;
      case '/proxyMode':
        res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end('ipvs');
        return;
      case '/configz':
        res
          .writeHead(200, { 'Content-Type': 'application/json' })
          .end(JSON.stringify({ 'kubeproxy.config.k8s.io': configz() }));
        return;
      case '/healthz':
        res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end('ok');
        return;
      default:
        res.writeHead(404).end();
    }
  });
}
