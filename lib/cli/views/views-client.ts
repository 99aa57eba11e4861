/**
 * GET one operator view from the running daemon (lib/daemon/views-server.ts) over node:http:
 * nothing of the daemon is loaded in the CLI process.
 */
import http from 'node:http';
import { KubeIpvsError } from '../../errors';
import { ViewError } from '../../model/views';

/** No kube-ipvs daemon answers at the address (not running, wrong --server, timed out, another program there). */
export class DaemonUnreachableError extends KubeIpvsError {
  readonly code = 'KIPVS_DAEMON_UNREACHABLE' as const;
}

/** The daemon answered, with an error (503 not synced yet, 500 kernel read failed, 404). */
export class DaemonViewError extends KubeIpvsError {
  readonly code = 'KIPVS_DAEMON_VIEW' as const;
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Fetches `server` + `path` as JSON. */
export type FetchView = <T>(path: string) => Promise<T>;

/** A FetchView over HTTP GET against the daemon's views server. */
export function httpFetchView(server: string, timeoutMs = 30_000): FetchView {
  return <T>(path: string) =>
    new Promise<T>((resolve, reject) => {
      let url: URL;
      try {
        url = new URL(path, server);
      } catch {
        reject(new DaemonUnreachableError(`--server ${JSON.stringify(server)} is not a URL (want http://host:port)`));
        return;
      }
      const req = http.get(url, { timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => reject(new DaemonUnreachableError(`${url.href}: ${e.message}`)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            // something else listens there (kube-proxy's own metrics server answers 404 in text)
            if (res.statusCode === 404) {
              reject(new DaemonUnreachableError(`${url.href}: HTTP 404, not a kube-ipvs daemon (kube-proxy?)`));
              return;
            }
            reject(
              new DaemonViewError(
                `${url.href}: HTTP ${res.statusCode}, not JSON: ${text.slice(0, 200)}`,
                res.statusCode ?? 0,
              ),
            );
            return;
          }
          if (res.statusCode !== 200) {
            const why = (body as Partial<ViewError>).error ?? text.slice(0, 200);
            reject(new DaemonViewError(`${url.href}: HTTP ${res.statusCode}: ${why}`, res.statusCode ?? 0));
            return;
          }
          resolve(body as T);
        });
      });
      req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on('error', (e) => reject(new DaemonUnreachableError(`${url.href}: ${e.message}`, { cause: e })));
    });
}
