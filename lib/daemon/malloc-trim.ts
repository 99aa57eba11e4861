/**
 * glibc's malloc_trim(0) through native/malloc-trim.c: the free pages of the C heap (Buffers,
 * zlib and TLS state live there, not in V8's heap) given back to the kernel. The quiet-time
 * collection (idle-collector.ts) calls it after V8 has freed what held them.
 */
import { nativeAddonLoader } from '../native-addon';

const loadAddon = nativeAddonLoader<{ trim(): boolean }>('malloc_trim.node');

/** malloc_trim(0) (true: memory was released), or an Error saying why it is not available. */
export function mallocTrim(): (() => boolean) | Error {
  const a = loadAddon();
  return a instanceof Error ? a : () => a.trim();
}
