/*
 * malloc-trim: gives the C heap's free pages back to the kernel.
 *
 * Node's Buffers, zlib streams and TLS records live in malloc's heap, not V8's. After an
 * endpoint churn the daemon's quiet-time collection (lib/daemon/idle-collector.ts) frees them,
 * but glibc returns only the free memory at the top of its brk heap by itself: the free pages
 * between live chunks, and in the other threads' arenas, stay resident until malloc_trim(0)
 * (glibc >= 2.8) advises the kernel to drop them.
 *
 * trim(): boolean -> whether any memory was released (false where the C library has no
 * malloc_trim: nothing to do there)
 *
 * Node-API only (ABI-stable across Node versions); built by `make build` with the C compiler.
 */
#include <node_api.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

static napi_value trim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#ifdef __GLIBC__
  released = malloc_trim(0);
#endif
  napi_value result;
  napi_get_boolean(env, released == 1, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &fn);
  napi_set_named_property(env, exports, "trim", fn);
  return exports;
}
