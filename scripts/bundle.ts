/**
 * bundle.ts — the daemon and CLI as one file, dist/bundle/kube-ipvs.js (`make build` runs it
 * after tsc), which the image ships and the VM tests start.
 *
 * Why: a process loads one file instead of ~600 modules (a daemon start read 594 modules,
 * 4 MB of JavaScript, from node_modules and dist/lib). Everything is bundled except
 *  - `netlink` (its native binding is found by node-gyp-build from the package's own
 *    directory), so it stays in node_modules;
 *  - our Node-API addons, which lib/native-addon.ts loads from dist/native beside dist/bundle.
 * client-node's dist/config.js imports './gen/index.js' (every generated API and model) for
 * makeApiClient alone; lib/k8s/client-node.ts answers that import at run time with a resolve
 * hook, and the bundle answers it here, at build time, with the same two names.
 * Identifiers are kept (errors name themselves from their class: lib/errors.ts).
 *
 *   node dist/scripts/bundle.js [OUTFILE]   (default dist/bundle/kube-ipvs.js)
 */
import path from 'node:path';
import * as esbuild from 'esbuild';
import { REPO_ROOT } from '../testkit/repo-root';

export const BUNDLE_FILE = path.join(REPO_ROOT, 'dist', 'bundle', 'kube-ipvs.js');

/** client-node's config.js gets configuration.js and servers.js in place of gen/index.js */
const slimClientNode: esbuild.Plugin = {
  name: 'slim-client-node',
  setup(build) {
    build.onResolve({ filter: /^\.\/gen\/index\.js$/ }, (args) => {
      if (!args.importer.endsWith(path.join('@kubernetes', 'client-node', 'dist', 'config.js'))) return undefined;
      return { path: 'gen-index-slim', namespace: 'slim-client-node', pluginData: args.resolveDir };
    });
    build.onLoad({ filter: /.*/, namespace: 'slim-client-node' }, (args) => ({
      contents:
        "export { createConfiguration } from './gen/configuration.js';\n" +
        "export { ServerConfiguration } from './gen/servers.js';\n",
      resolveDir: args.pluginData as string,
      loader: 'js',
    }));
  },
};

/** Writes the bundle; returns the files it holds (repository-relative), from esbuild's metafile. */
export async function bundle(outfile = BUNDLE_FILE): Promise<string[]> {
  const result = await esbuild.build({
    entryPoints: [path.join(REPO_ROOT, 'dist', 'lib', 'cli', 'main.js')],
    outfile,
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    external: ['netlink', '*.node'],
    plugins: [slimClientNode],
    define: { KUBE_IPVS_BUNDLE: 'true' },
    minifyWhitespace: true,
    minifySyntax: true,
    keepNames: true,
    legalComments: 'none',
    logLevel: 'warning',
    // lib/k8s/client-node.ts's run-time hook resolves config.js's path: dead code in the bundle
    logOverride: { 'require-resolve-not-external': 'silent' },
    metafile: true,
  });
  return Object.keys(result.metafile.inputs);
}

if (require.main === module) {
  bundle(process.argv[2]).catch((e: unknown) => {
    console.error(`bundle: ${(e as Error).message}`);
    process.exit(1);
  });
}
