/**
 * The daemon loads only the client-node modules it uses (lib/k8s/client-node.ts): its module
 * graph, seen by a resolve hook in a child Node (jest's sandboxed loader bypasses Node's),
 * holds client-node's config.js but not the package index, the generated index, its models
 * or its API classes (together ~80 MB of RSS before any state). A value import of
 * '@kubernetes/client-node' anywhere in the daemon's graph fails this.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const DAEMON = path.resolve(__dirname, '../../lib/daemon/daemon.js');
const CLIENT_NODE = path.resolve(__dirname, '../../lib/k8s/client-node.js');
const KUBECONFIG = path.resolve(__dirname, '../../lib/k8s/kubeconfig.js');

/** Requires the daemon in a fresh Node; the client-node URLs resolved, relative to its dist/. */
function childGraph(): { loaded: string[]; headers: Record<string, string> } {
  const script = `
    const { registerHooks } = require('node:module');
    const seen = [];
    registerHooks({ resolve(s, c, next) { const r = next(s, c); seen.push(r.url); return r; } });
    require(${JSON.stringify(DAEMON)});
    const { RequestContext } = require(${JSON.stringify(CLIENT_NODE)});
    const { loadKubeConfig } = require(${JSON.stringify(KUBECONFIG)});
    const kc = loadKubeConfig({ master: 'https://127.0.0.1:1' });
    kc.users = [{ name: 'anonymous', token: 'secret' }];
    const ctx = new RequestContext('https://127.0.0.1:1/api', 'GET');
    kc.applySecurityAuthentication(ctx).then(() => {
      const loaded = seen.filter((u) => u.includes('/@kubernetes/client-node/dist/')).map((u) => u.replace(/^.*\\/@kubernetes\\/client-node\\/dist\\//, ''));
      process.stdout.write(JSON.stringify({ loaded, headers: ctx.getHeaders() }));
    });
  `;
  const r = spawnSync(process.execPath, ['-e', script], { cwd: path.resolve(__dirname, '../../..'), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`child exited ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as { loaded: string[]; headers: Record<string, string> };
}

describe("the daemon's client-node modules", () => {
  const { loaded, headers } = childGraph();

  it('include KubeConfig (config.js) and its auth providers', () => {
    expect(loaded).toContain('config.js');
    expect(loaded).toContain('exec_auth.js');
  });

  it('exclude the package index and the generated API and models', () => {
    const generated = loaded.filter(
      (u) =>
        u === 'index.js' ||
        u === 'gen/index.js' ||
        u.startsWith('gen/models/') ||
        u.startsWith('gen/types/') ||
        /^gen\/apis\/.+Api\.js$/.test(u),
    );
    expect(generated).toEqual([]);
  });

  it('leave KubeConfig working: the current user applied to a request', () => {
    expect(headers.Authorization).toBe('Bearer secret');
  });
});
