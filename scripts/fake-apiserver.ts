/**
 * fake-apiserver — serves testkit/fake-apiserver.ts as a process (end-to-end VM tests,
 * `make demo`, benchmarks):
 *
 *   node dist/scripts/fake-apiserver.js --port P [--host H] [--fixtures FILE.json]
 *        [--kubeconfig-out FILE] [--bookmark-interval-ms N]
 *        [--tls-dir DIR] [--token-file FILE] [--token T]...
 *
 * FILE.json holds a JSON array of objects (or a List with `items`), each with apiVersion and
 * kind. --tls-dir serves HTTPS with DIR/server.{crt,key}, made (with DIR/ca.crt and a client
 * certificate DIR/client.{crt,key}) by test-pki.ts when missing; client certificates the CA
 * signed authenticate. --token-file and --token turn on bearer-token authentication: the
 * file's current content (re-read on every request: rewrite it to rotate) and each --token
 * are accepted, anything else gets 401. The kubeconfig written points at this server over
 * plain http (which client-node accepts only with insecure-skip-tls-verify), or over https
 * with DIR/ca.crt, with the token file as `tokenFile`. Prints `listening on URL` once ready;
 * serves until SIGTERM/SIGINT. Driven from outside with curl: POST /fake/compact,
 * /fake/drop-watches, /fake/reset-history; GET /fake/stats.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { FakeApiServer, FakeApiServerOptions, FakeObject, kubeconfigFor } from '../testkit/fake-apiserver';
import { makeTestPki } from '../testkit/test-pki';

function loadFixtures(file: string): FakeObject[] {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown;
  const items = Array.isArray(parsed) ? parsed : (parsed as { items?: unknown }).items;
  if (!Array.isArray(items)) throw new Error(`${file}: expected a JSON array of objects or a List with items`);
  return items as FakeObject[];
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      fixtures: { type: 'string' },
      'kubeconfig-out': { type: 'string' },
      'bookmark-interval-ms': { type: 'string' },
      'tls-dir': { type: 'string' },
      'token-file': { type: 'string' },
      token: { type: 'string', multiple: true },
    },
  });
  const port = Number(values.port ?? 'NaN');
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    process.stderr.write(
      'usage: fake-apiserver --port P [--host H] [--fixtures FILE.json] [--kubeconfig-out FILE] [--bookmark-interval-ms N] [--tls-dir DIR] [--token-file FILE] [--token T]...\n',
    );
    return 2;
  }
  const bookmark = values['bookmark-interval-ms'];
  const options: { -readonly [K in keyof FakeApiServerOptions]: FakeApiServerOptions[K] } = {};
  if (bookmark) options.bookmarkIntervalMs = Number(bookmark);
  const pki = values['tls-dir']
    ? makeTestPki(values['tls-dir'], {
        ips: ['127.0.0.1', '::1', ...(values.host && values.host !== '127.0.0.1' ? [values.host] : [])],
      })
    : undefined;
  if (pki) options.tls = { cert: pki.serverCert, key: pki.serverKey, clientCa: pki.ca };
  if (values['token-file'] || values.token?.length)
    options.auth = { tokenFile: values['token-file'], tokens: values.token ?? [] };
  const server = new FakeApiServer(options);
  if (values.fixtures) {
    for (const [i, obj] of loadFixtures(values.fixtures).entries()) {
      try {
        server.create(obj);
      } catch (e) {
        process.stderr.write(
          `${values.fixtures}: object ${i} (${obj?.kind} ${obj?.metadata?.namespace ?? ''}/${obj?.metadata?.name}): ${(e as Error).message}\n`,
        );
        return 1;
      }
    }
  }
  const url = await server.listen(port, values.host);
  if (values['kubeconfig-out'])
    writeFileSync(
      values['kubeconfig-out'],
      kubeconfigFor(url, { caFile: pki?.caFile, tokenFile: values['token-file'] }),
    );
  process.stdout.write(`listening on ${url}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await server.close();
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`fake-apiserver: ${(e as Error).stack ?? String(e)}\n`);
      process.exit(1);
    },
  );
}
