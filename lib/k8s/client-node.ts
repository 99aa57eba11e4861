/**
 * The values kube-ipvs takes from @kubernetes/client-node, each from the one module that
 * defines it. The package's index (and the generated API clients and models behind it) is
 * never loaded: it cost a large share of the daemon's RSS and start-up before any state existed.
 * The package has no "exports" map, so its dist/ modules can be required one by one; types
 * come from '@kubernetes/client-node' with `import type` (erased at compile time).
 *
 * One module still reaches the whole generated code: dist/config.js (KubeConfig) imports
 * `createConfiguration` and `ServerConfiguration` from './gen/index.js', which re-exports
 * every API class and model, for its makeApiClient alone. slimClientNode() registers a
 * resolve hook (node:module registerHooks, in-thread) that answers that one import, made by
 * that one file, with a module re-exporting just those two names from the generated
 * modules that define them (gen/configuration.js, gen/servers.js). KubeConfig is the same
 * class with the same behaviour (makeApiClient included); any other import of
 * './gen/index.js' (the package index, for instance) is untouched. Without registerHooks
 * (Node < 22.15) or where it throws (jest's sandboxed loader refuses hooks), the full index
 * loads as before.
 */
import { registerHooks } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { IN_BUNDLE } from '../bundle-flag';

let registered = false;

/** Registers the resolve hook once; true when it is in place. */
export function slimClientNode(): boolean {
  if (registered) return true;
  // the bundle answers that import at build time (scripts/bundle/build.mjs)
  if (IN_BUNDLE) return true;
  if (typeof registerHooks !== 'function') return false;
  const dist = path.dirname(require.resolve('@kubernetes/client-node/dist/config.js'));
  const configUrl = pathToFileURL(path.join(dist, 'config.js')).href;
  const gen = pathToFileURL(path.join(dist, 'gen')).href;
  const shim =
    'data:text/javascript,' +
    encodeURIComponent(
      `export { createConfiguration } from ${JSON.stringify(`${gen}/configuration.js`)};\n` +
        `export { ServerConfiguration } from ${JSON.stringify(`${gen}/servers.js`)};\n`,
    );
  try {
    registerHooks({
      resolve(specifier, context, next) {
        if (specifier === './gen/index.js' && context.parentURL === configUrl)
          return { url: shim, format: 'module', shortCircuit: true };
        return next(specifier, context);
      },
    });
  } catch {
    return false; // jest refuses hooks on its sandboxed loader
  }
  registered = true;
  return true;
}

slimClientNode();

/** client-node's KubeConfig class, from dist/config.js alone. */
export const { KubeConfig } =
  require('@kubernetes/client-node/dist/config.js') as typeof import('@kubernetes/client-node/dist/config.js');
/** client-node's KubeConfig (the type). */
export type KubeConfig = import('@kubernetes/client-node/dist/config.js').KubeConfig;
/** client-node's HttpMethod enum and RequestContext class, from dist/gen/http/http.js. */
export const { HttpMethod, RequestContext } =
  require('@kubernetes/client-node/dist/gen/http/http.js') as typeof import('@kubernetes/client-node/dist/gen/http/http.js');
/** client-node's HttpMethod (the type). */
export type HttpMethod = import('@kubernetes/client-node/dist/gen/http/http.js').HttpMethod;
/** client-node's RequestContext (the type). */
export type RequestContext = import('@kubernetes/client-node/dist/gen/http/http.js').RequestContext;
/** client-node's ApiException class, from dist/gen/apis/exception.js. */
export const { ApiException } =
  require('@kubernetes/client-node/dist/gen/apis/exception.js') as typeof import('@kubernetes/client-node/dist/gen/apis/exception.js');
/** client-node's ApiException (the type): an API error with its HTTP status as `code`. */
export type ApiException<T> = import('@kubernetes/client-node/dist/gen/apis/exception.js').ApiException<T>;
