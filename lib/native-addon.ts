/**
 * The project's Node-API addons (native/*.c), compiled by `make build` into dist/native/, which
 * sits beside dist/lib/.
 */
import path from 'node:path';

/** dist/native/ */
export const NATIVE_DIR = path.join(__dirname, '..', 'native');

/** Loads dist/native/FILE once; an Error saying why when it cannot be loaded (not built, wrong platform). */
export function nativeAddonLoader<T>(file: string): () => T | Error {
  let addon: T | Error | undefined;
  return () => {
    if (addon === undefined) {
      const at = path.join(NATIVE_DIR, file);
      try {
        addon = require(at) as T;
      } catch (e) {
        addon = new Error(`native addon not loadable (${at}): ${(e as Error).message.split('\n')[0]}`);
      }
    }
    return addon;
  };
}
