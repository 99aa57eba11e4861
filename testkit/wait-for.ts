/**
 * Polls `condition` until it holds (every 5 ms, bounded by `timeoutMs`, default 10 s) and
 * rejects naming `what` when it never does. For tests that wait on another process or a
 * server: they wait for a state, never for a fixed time.
 */
export async function waitFor(what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Polls `f` (sync or async; every 250 ms, bounded by `timeoutMs`) until `ok` holds of its value, and returns
 * that value; rejects naming `what` and the last value. For VM tests that wait on the daemon
 * applying a change (its watch event, then a sync) or on the kernel.
 */
export async function eventually<T>(
  what: string,
  f: () => T | Promise<T>,
  ok: (v: T) => boolean,
  timeoutMs = 120_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: T = await f();
  while (!ok(last)) {
    if (Date.now() > end)
      throw new Error(
        `${what}: not reached within ${timeoutMs} ms; last value:\n${JSON.stringify(last, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x), 1)}`,
      );
    await new Promise((r) => setTimeout(r, 250));
    last = await f();
  }
  return last;
}
